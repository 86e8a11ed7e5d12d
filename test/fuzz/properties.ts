/**
 * The fuzzer's properties, shared by the short tap run (test/fuzz/fuzz.test.ts) and the long
 * one (scripts/fuzz.ts):
 * - `requests`: any generated or mutated request to any route, in process; every answer keeps
 *   the invariants (harness.ts);
 * - `answers`: a fresh task paused at input-required (RFC or legacy dialect), fuzzed answers to
 *   it by its owner and by the other principal, then a valid answer by its owner must still
 *   end the turn (no wedged task);
 * - `streams`: streams over a real socket (resubscriptions with Last-Event-ID, message/stream,
 *   REST :subscribe); each must end within the client's timeout.
 * After the properties, {@link sweepWedged} answers every paused task left.
 */
import fc from 'fast-check';
import type { FuzzRequest, Harness } from './harness.js';
import { CaseFailure, checkCase, pausedLegacy, pausedRfc, reseed, streamAs, v03Data } from './harness.js';
import { answerTo, anyRequest, poolOf, sseRequest } from './requests.js';
import { sweepWedged } from './sweep.js';

export interface RunOptions {
  seed: number;
  /** Cases of the `requests` property; the others run a tenth (answers: sequences) and a fifth (streams). */
  numRuns: number;
}

export interface PropertyResult {
  property: string;
  cases: number;
  failure?: { seed: number; path?: string; requests: FuzzRequest[]; problems: string[]; error: string };
}

const PLACEHOLDER = { taskId: 'fuzz-task-placeholder', contextId: 'fuzz-context-placeholder', callId: 'fuzz-call-placeholder' };

function fill(req: FuzzRequest, task: typeof PLACEHOLDER): FuzzRequest {
  const body = req.body
    ?.replaceAll(PLACEHOLDER.taskId, task.taskId)
    .replaceAll(PLACEHOLDER.contextId, task.contextId)
    .replaceAll(PLACEHOLDER.callId, task.callId);
  return { ...req, body };
}

/** Ends the turn of a paused task as its owner (`a`) with valid answers; throws unless the turn ended. */
async function answerValidly(h: Harness, task: typeof PLACEHOLDER, legacy: boolean, fuzzed: FuzzRequest[]): Promise<void> {
  const stored = await h.store.loadTask(task.taskId);
  const awaiting = (await h.store.loadTurn(task.taskId)).filter((c) => c.phase === 'awaiting');
  const state = stored?.task.status?.state;
  if (awaiting.length === 0) {
    // Only an answer of the owner's may end the wait: the other principal's are refused (-32010).
    if (fuzzed.every((r) => r.who !== 'a'))
      throw new CaseFailure(fuzzed[0], ["the other principal's answers ended the wait of a task it does not own"]);
    return; // a fuzzed answer of the owner's was valid and ended the wait
  }
  const ids = { taskId: task.taskId, contextId: task.contextId };
  const data = awaiting.map((c) =>
    legacy ? { callId: c.id, outcome: 'proceed_once' } : { tool_call_id: c.id, selected_option_id: 'proceed_once' },
  );
  const results = await streamAs(h, 'a', v03Data(data, ids));
  const last = results.at(-1) as { status?: { state?: string }; final?: boolean } | undefined;
  const expected = legacy ? 'input-required' : 'completed';
  const left = (await h.store.loadTurn(task.taskId)).filter((c) => c.phase === 'awaiting').length;
  if (!last?.final || last.status?.state !== expected || left > 0) {
    throw new CaseFailure({ method: 'POST', url: '/', headers: {}, body: JSON.stringify(data), who: 'a' }, [
      `a valid answer did not end the turn (state before ${state}, last event ${JSON.stringify(last).slice(0, 300)}, ${left} card(s) still waiting)`,
    ]);
  }
}

function result<T extends unknown[]>(property: string, details: fc.RunDetails<T>): PropertyResult {
  if (!details.failed) return { property, cases: details.numRuns };
  const err = details.errorInstance;
  const failure = err instanceof CaseFailure ? err : undefined;
  const requests = ((details.counterexample ?? []) as unknown[])
    .flat()
    .filter((x): x is FuzzRequest => typeof x === 'object' && x !== null && 'url' in x);
  return {
    property,
    cases: details.numRuns,
    failure: {
      seed: details.seed,
      path: details.counterexamplePath ?? undefined,
      requests: failure ? [failure.request] : requests,
      problems: failure?.problems ?? [],
      error: err instanceof Error ? err.message : String(err),
    },
  };
}

/** Runs the three properties on `h`; their results (a failure carries the request that shows it). */
export async function runProperties(h: Harness, opts: RunOptions): Promise<PropertyResult[]> {
  await reseed(h);
  const pool = poolOf(h);
  const check = async <T extends [unknown, ...unknown[]]>(property: string, prop: fc.IAsyncPropertyWithHooks<T>, numRuns: number) => {
    return result(property, await fc.check(prop, { seed: opts.seed, numRuns: Math.max(1, Math.round(numRuns)) }));
  };
  const out: PropertyResult[] = [];
  const requests = fc.asyncProperty(anyRequest(pool), async (req) => void (await checkCase(h, req)));
  out.push(await check('requests', requests, opts.numRuns));

  // Sent one after the other, or all at once (racing answers, the owner's and the other principal's).
  const answers = fc.asyncProperty(
    fc.boolean(),
    fc.boolean(),
    fc.array(answerTo(pool, PLACEHOLDER), { minLength: 1, maxLength: 4 }),
    async (legacy, together, fuzzed) => {
      const task = legacy ? await pausedLegacy(h, 'a', 'sequence') : await pausedRfc(h, 'a', 'sequence');
      if (together) await Promise.all(fuzzed.map((req) => checkCase(h, fill(req, task))));
      else for (const req of fuzzed) await checkCase(h, fill(req, task));
      await answerValidly(h, task, legacy, fuzzed);
    },
  );
  out.push(await check('answers', answers, opts.numRuns / 10));

  const streams = fc.asyncProperty(sseRequest(pool), async (req) => void (await checkCase(h, req, 'http')));
  out.push(await check('streams', streams, opts.numRuns / 5));
  return out;
}
