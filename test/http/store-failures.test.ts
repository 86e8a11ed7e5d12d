/**
 * A database blip fails one task, never the process. The whole confirm flow (new task →
 * write_file card → input-required → proceed_once → the write runs → the model answers →
 * completed) is run once to record every store call it makes; then once per call, with that
 * call rejected as a lost connection. Whatever fails, the process lives (an unhandled
 * rejection would end this test file), no stream hangs, the task either ends `failed` with a
 * reason the client can read or gets a JSON-RPC error and stays consistent, and the next
 * task on the same server works.
 */
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { stateName } from '../../src/protocol/a2a.js';
import { MemoryTaskStore } from '../../src/store/memory-store.js';
import { faultyStore } from '../support/faulty-store.js';
import type { FaultyStore } from '../support/faulty-store.js';
import { buildServer, confirmMessage, dataOf, tempDir, textOf, URI, userMessage } from '../support/server.js';
import { rpc } from '../support/sse.js';
import type { PostResult } from '../support/sse.js';
import type { FastifyInstance } from 'fastify';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

type Outcome =
  { kind: 'completed' } | { kind: 'failed'; text: string } | { kind: 'refused'; at: 'start' | 'confirm'; code: number; message: string };

/** `p`, or a rejection after `ms`; the timer also keeps this process alive while an in-process stream waits. */
async function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not end within ${ms} ms`)), ms)));
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls the store (not the faulty wrapper) until the task pauses or ends. */
async function settledState(store: MemoryTaskStore, taskId: string): Promise<{ state: string; text: string }> {
  for (let i = 0; i < 500; i++) {
    const stored = await store.loadTask(taskId);
    const status = stored?.task.status;
    const state = stateName(status?.state) ?? '';
    if (['completed', 'failed', 'canceled', 'input-required'].includes(state)) {
      const text = (status?.message?.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
      return { state, text };
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`task ${taskId} neither paused nor ended`);
}

function lastEvent(res: PostResult): any {
  return res.events?.at(-1)?.data?.result;
}

/** Answers `toolCallId` proceed_once on a stream of its own (failing past 10 s). */
function proceedOnce(app: FastifyInstance, taskId: string, contextId: string, toolCallId: string): Promise<PostResult> {
  return within(
    10_000,
    'the answer stream',
    rpc(app, 'message/stream', {
      message: confirmMessage(taskId, contextId, { tool_call_id: toolCallId, selected_option_id: 'proceed_once' }),
    }),
  );
}

/** One confirm flow; a refused confirmation is sent once more (the task must still be waiting). */
async function confirmFlow(app: FastifyInstance, inner: MemoryTaskStore, workspace?: string): Promise<Outcome> {
  const metadata = workspace === undefined ? {} : { metadata: { [URI]: { workspace_path: workspace } } };
  const message = userMessage('write a file', metadata);
  const first = await within(10_000, 'the first stream', rpc(app, 'message/stream', { message }));
  if (first.json?.error) return { kind: 'refused', at: 'start', code: first.json.error.code, message: first.json.error.message };
  const taskEvent = first.events?.[0]?.data?.result;
  const taskId: string = taskEvent?.id ?? taskEvent?.taskId;
  const contextId: string = taskEvent?.contextId;
  const paused = await settledState(inner, taskId);
  if (paused.state !== 'input-required') return paused.state === 'failed' ? { kind: 'failed', text: paused.text } : { kind: 'completed' };
  const card = first.events?.map((e) => dataOf(e.data?.result)).find((d) => d?.confirmation_request);
  const answer = () => proceedOnce(app, taskId, contextId, card.tool_call_id);
  let second = await answer();
  let refused: Outcome | undefined;
  if (second.json?.error) {
    refused = { kind: 'refused', at: 'confirm', code: second.json.error.code, message: second.json.error.message };
    second = await answer(); // a refused answer leaves the task waiting: answering again works
    if (second.json?.error) return refused;
  }
  void lastEvent(second);
  const end = await settledState(inner, taskId);
  if (end.state === 'failed') return { kind: 'failed', text: end.text };
  if (end.state !== 'completed') throw new Error(`unexpected end state ${end.state}`);
  return refused ?? { kind: 'completed' };
}

/** A fresh in-memory store (closed with the test) and a faulty wrapper around it. */
function faultyMemory(t: Test): { inner: MemoryTaskStore; faulty: FaultyStore } {
  const inner = new MemoryTaskStore();
  t.teardown(() => inner.close());
  return { inner, faulty: faultyStore(inner) };
}

async function serverOn(t: Parameters<Parameters<typeof tap.test>[0]>[0], faulty: FaultyStore) {
  return buildServer(t, { app: { store: faulty.store, sweepMs: 60_000 } });
}

const tap = t;

t.test('the clean flow completes and shows which store calls it makes', async (t) => {
  const { inner, faulty } = faultyMemory(t);
  const { app, workspace } = await serverOn(t, faulty);
  faulty.calls.length = 0;
  t.same(await confirmFlow(app, inner), { kind: 'completed' });
  t.equal(readFileSync(path.join(workspace, 'hello.txt'), 'utf8'), 'hello world\n');
  // A start is one commit (context, task, events, history); the answer's claim and commits follow;
  // the paused copy is kept and not read back, and the turn settles without a read.
  for (const m of ['commit', 'claimAndCommit']) t.ok(faulty.calls.includes(m), `the flow calls ${m}`);
  for (const m of ['createContext', 'createTask', 'loadTurn', 'loadVersion', 'settleTurn', 'loadTask']) {
    t.notOk(faulty.calls.includes(m), `the flow does not call ${m}`);
  }
});

t.test('a store call that fails at any point of the flow fails at most that task', async (t) => {
  const probe = new MemoryTaskStore();
  const counting = faultyStore(probe);
  const probeApp = await serverOn(t, counting);
  counting.calls.length = 0;
  await confirmFlow(probeApp.app, probe);
  await probeApp.app.close();
  const total = counting.calls.length;
  t.ok(total >= 10, `${total} store calls in one flow`);
  const seen = new Map<string, number>();
  for (let n = 1; n <= total; n++) {
    const method = counting.calls[n - 1];
    const nth = (seen.get(method) ?? 0) + 1;
    seen.set(method, nth);
    await t.test(`call ${n} (${method} #${nth}) fails`, async (t) => {
      const { inner, faulty } = faultyMemory(t);
      const { app } = await serverOn(t, faulty);
      faulty.failAt(nth, method);
      const outcome = await confirmFlow(app, inner);
      t.strictSame(faulty.fired, [method], 'the fault fired');
      if (outcome.kind === 'failed') {
        t.match(
          outcome.text,
          /The task store became unavailable while .+ \(reference [0-9a-f]{8} in the server log\)/,
          'the reason names what failed and a log reference',
        );
      } else if (outcome.kind === 'refused') {
        t.equal(outcome.code, -32050, 'a request that hit the blip gets the retryable "store unavailable" error');
        t.notMatch(outcome.message, /test blip/, 'the JSON-RPC message does not carry the database error');
      } else t.pass('the blip was absorbed (a read retried, or work that does not decide the outcome)');
      // In a workspace of its own: the failed task's approved write may still land after its task
      // failed (its run had started), and an approved edit asks again when its file changed.
      const next = await confirmFlow(app, inner, tempDir());
      t.same(next, { kind: 'completed' }, 'the next task on the same server works');
    });
  }
});

/**
 * Pauses a write on `app`, then answers it with the store down for three commits from the
 * answer's `nth` on (the failure's own events wait for it to come back); the answer stream.
 */
async function answerWhileDown(
  t: Test,
  app: FastifyInstance,
  faulty: FaultyStore,
  nth: number,
): Promise<{ second: PostResult; taskId: string }> {
  const first = await rpc(app, 'message/stream', { message: userMessage('write a file') });
  const task = first.events?.[0]?.data?.result;
  const card = first.events?.map((e) => dataOf(e.data?.result)).find((d) => d?.confirmation_request);
  faulty.failAt(nth, 'commit', 3);
  const answered = rpc(app, 'message/stream', {
    message: confirmMessage(task.id, task.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' }),
  });
  const second = await within(15_000, 'the answer stream', answered);
  t.strictSame(faulty.fired, ['commit', 'commit', 'commit'], 'the store was down for three commits');
  return { second, taskId: task.id as string };
}

t.test('a failed task says so on its stream, and its failure is stored once the store is back', async (t) => {
  const { inner, faulty } = faultyMemory(t);
  const { app, workspace } = await serverOn(t, faulty);
  const first = await rpc(app, 'message/stream', { message: userMessage('write a file') });
  const taskId = first.events?.[0]?.data?.result?.id as string;
  const card = first.events?.map((e) => dataOf(e.data?.result)).find((d) => d?.confirmation_request);
  // The answer's statements: its claim with its effects and EXECUTING (claimAndCommit); then
  // commit 1, the result with the turn's close and the model's turn.
  faulty.failAt(1, 'commit');
  const second = await within(
    10_000,
    'the answer stream',
    rpc(app, 'message/stream', {
      message: confirmMessage(taskId, first.events?.[0]?.data?.result?.contextId, {
        tool_call_id: card.tool_call_id,
        selected_option_id: 'proceed_once',
      }),
    }),
  );
  t.strictSame(faulty.fired, ['commit'], 'the fault fired');
  const end = lastEvent(second);
  t.equal(end?.status?.state, 'failed', 'the stream ends with the failure');
  t.equal(end?.final, true);
  t.match(textOf(end), /The task store became unavailable while saving its events \(reference/);
  t.ok(existsSync(path.join(workspace, 'hello.txt')), 'the approved write had run before the failure');
  const stored = await inner.loadTask(taskId);
  t.equal(stateName(stored?.task.status?.state), 'failed', 'the failure is stored');
  // The result's call row went with the lost commit; it is sent again (an upsert cannot land
  // twice), so the row does not stay `executing` under this process's lease beside a failed task.
  const row = async () => (await inner.loadCall(card.tool_call_id))?.phase;
  for (let i = 0; i < 300 && (await row()) !== 'done'; i++) await new Promise((r) => setTimeout(r, 20));
  t.equal(await row(), 'done', "the call's row is stored done once the store is back");
  const audit = await inner.listAudit({ taskId });
  t.same(
    audit.map((a) => a.decision),
    ['proposed', 'authorized', 'executed', 'succeeded'],
    'the audit keeps what was committed before the tool ran, and its result once sent again after the failure',
  );
});

t.test('writes refused while the store is down: the task fails, and its failure is committed when the store is back', async (t) => {
  const { faulty } = faultyMemory(t);
  const { app } = await serverOn(t, faulty);
  // The answer's first commit after its claim (the result) fails, and the two after it too: the
  // failure's own events wait for the store. (A commit that carries a pause is sent again instead:
  // the task stays paused; a claim that fails leaves the call waiting: see the first test.)
  const { second } = await answerWhileDown(t, app, faulty, 1);
  const end = lastEvent(second);
  t.equal(end?.status?.state, 'failed', 'the stream ends with the failure');
  t.match(textOf(end), /The task store became unavailable while saving its events \(reference [0-9a-f]{8}/);
});

t.test('a stream whose log cannot be read while the store is down ends with the retryable error event', async (t) => {
  const { faulty } = faultyMemory(t);
  const { app } = await serverOn(t, faulty);
  const first = await rpc(app, 'message/stream', { message: userMessage('write a file') });
  const taskId = first.events?.[0]?.data?.result?.id as string;
  // Every read of the log fails (the follower's retries included): the store stays down.
  faulty.failAt(1, 'eventsAfter', 10);
  const res = await within(
    10_000,
    'the resubscribe stream',
    rpc(app, 'tasks/resubscribe', { id: taskId }, { headers: { 'last-event-id': '1' } }),
  );
  t.ok(faulty.fired.length > 0 && faulty.fired.every((m) => m === 'eventsAfter'), `the fault fired (${faulty.fired.length} reads refused)`);
  const last = res.events?.at(-1);
  t.equal(last?.event, 'error', 'the stream ends with an error event, not a hang');
  t.equal(last?.data?.error?.code, -32050, 'the store-unavailable code, not -32603');
  t.same(last?.data?.error?.data, { retryable: true });
});

t.test(
  "the store goes down as a call's result commits with its turn's close: the task fails, and its failure lands once the store is back",
  async (t) => {
    const { inner, faulty } = faultyMemory(t);
    const { app } = await serverOn(t, faulty);
    // The answer's first commit after its claim (the result, the turn's close, the model's turn) and the two after it fail.
    const { second, taskId } = await answerWhileDown(t, app, faulty, 1);
    const end = lastEvent(second);
    t.equal(end?.status?.state, 'failed', 'the stream ends with the failure');
    t.equal(stateName((await inner.loadTask(taskId))?.task.status?.state), 'failed', 'the failure is stored');
    t.equal(await inner.closeTurn(taskId, 0), true, 'the turn was not closed by a close sent again after the failure');
  },
);

t.test(
  'a claim that commits while its reply is lost: the retry is told it was answered, and the call, which nothing here runs, ends interrupted once its lease lapses',
  async (t) => {
    const { inner, faulty } = faultyMemory(t);
    const { app, workspace } = await buildServer(t, { env: { LEASE_MS: '1000' }, app: { store: faulty.store, sweepMs: 100 } });
    const first = await rpc(app, 'message/stream', { message: userMessage('write a file') });
    const task = first.events?.[0]?.data?.result;
    const card = first.events?.map((e) => dataOf(e.data?.result)).find((d) => d?.confirmation_request);
    const answer = () => proceedOnce(app, task.id, task.contextId, card.tool_call_id);
    faulty.loseReplyAt(1, 'claimAndCommit');
    const lost = await answer();
    t.strictSame(faulty.fired, ['claimAndCommit'], 'the fault fired');
    t.equal(lost.json?.error?.code, -32050, 'the answer is refused as retryable: its outcome is unknown');
    // The claim carries the call's EXECUTING card (one statement), so the store holds it executing,
    // and the recovery cannot tell that its run never began: it says the call may not have finished.
    t.equal((await inner.loadCall(card.tool_call_id))?.phase, 'executing', 'yet the claim was stored, with its EXECUTING card');
    const again = await answer();
    t.equal(again.json?.error?.code, -32602);
    t.match(again.json?.error?.message, /was already answered \(proceed_once; status EXECUTING\)/);
    // Nothing in this process runs the call, so its lease is not renewed: it lapses, and the sweep ends it.
    const end = await within(15_000, 'the task to end', settledFinal(inner, task.id));
    t.equal(end.state, 'failed', 'the task does not wait forever on a claim nobody runs');
    t.match(end.text, /^Interrupted: the server stopped while write_file ran; the task cannot go on\.$/);
    const call = await inner.loadCall(card.tool_call_id);
    t.match(call, {
      phase: 'done',
      snapshot: {
        status: 'FAILED',
        error: {
          type: 'interrupted',
          message: /^The server stopped while write_file was running \(lease of .* lapsed\); it may not have finished\.$/,
        },
      },
    });
    t.notOk(existsSync(path.join(workspace, 'hello.txt')), 'the write never ran');
  },
);

/** Polls the store until the task is completed, failed or canceled. */
async function settledFinal(store: MemoryTaskStore, taskId: string): Promise<{ state: string; text: string }> {
  for (;;) {
    const end = await settledState(store, taskId);
    if (end.state !== 'input-required') return end;
    await new Promise((r) => setTimeout(r, 50));
  }
}
