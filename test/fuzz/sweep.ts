/**
 * No task is left wedged: after a run, every task is terminal, or paused with cards its owner
 * can answer — and answering them (proceed_once) ends the turn. A task still `working` once the
 * server has settled, a pause whose answer is refused, or an answer whose stream does not end is
 * reported; so is a context holding tasks of two principals.
 */
import { stateName } from '../../src/protocol/a2a.js';
import type { Harness } from './harness.js';
import { streamAs, v03Data, v03Text } from './harness.js';

const TERMINAL = new Set(['completed', 'canceled', 'failed', 'rejected']);
const PRINCIPALS: Record<string, 'a' | 'b'> = { 'key:alice': 'a', 'key:bob': 'b' };

async function states(h: Harness): Promise<Map<string, string>> {
  const { tasks } = await h.store.listTasks({ limit: 100_000, offset: 0 });
  return new Map(tasks.map((t) => [t.id, stateName(t.status?.state)]));
}

/** Waits (bounded) until no task is submitted or working; the ids still running then. */
async function settle(h: Harness, ms = 10_000): Promise<string[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const running = [...(await states(h))].filter(([, s]) => s === 'working' || s === 'submitted').map(([id]) => id);
    if (running.length === 0 || Date.now() > deadline) return running;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Answers every pending card of a paused task as its owner; a problem, or undefined when the turn went on. */
async function answerPaused(h: Harness, taskId: string): Promise<string | undefined> {
  const stored = await h.store.loadTask(taskId);
  const who = stored?.principal === undefined ? undefined : PRINCIPALS[stored.principal];
  if (!stored || who === undefined) return `task ${taskId}: paused with no known owner (${stored?.principal})`;
  const awaiting = (await h.store.loadTurn(taskId)).filter((c) => c.phase === 'awaiting');
  const ids = { taskId, contextId: stored.task.contextId };
  const message =
    awaiting.length === 0
      ? v03Text('carry on', ids)
      : stored.dialect === 'legacy'
        ? v03Data(
            awaiting.map((c) => ({ callId: c.id, outcome: 'proceed_once' })),
            ids,
          )
        : v03Data(
            awaiting.map((c) => ({ tool_call_id: c.id, selected_option_id: 'proceed_once' })),
            ids,
          );
  try {
    const results = await streamAs(h, who, message);
    const last = results.at(-1) as { status?: { state?: string }; final?: boolean } | undefined;
    if (!last?.final) return `task ${taskId}: the answer's stream ended without a final event`;
  } catch (err) {
    const state = stateName((await h.store.loadTask(taskId))?.task.status?.state);
    return `task ${taskId} (${stored.dialect}, stored ${stateName(stored.task.status?.state)}, now ${state}): answering its ${awaiting.length} card(s) failed: ${(err as Error).message.slice(0, 300)}`;
  }
  return undefined;
}

/** A context holds the tasks of one principal only: another's message naming it is refused (-32010). */
async function mixedContexts(h: Harness): Promise<string[]> {
  const { tasks } = await h.store.listTasks({ limit: 100_000, offset: 0 });
  const owners = new Map<string, Set<string>>();
  for (const t of tasks) {
    const principal = (await h.store.loadTask(t.id))?.principal ?? '(none)';
    owners.set(t.contextId, (owners.get(t.contextId) ?? new Set()).add(principal));
  }
  return [...owners].filter(([, p]) => p.size > 1).map(([id, p]) => `context ${id}: tasks of ${[...p].join(' and ')}`);
}

/**
 * Settles the server, then answers every paused task (up to `rounds` times: an answer may lead
 * to the next card). The problems found: tasks still working, pauses that cannot be answered.
 */
export async function sweepWedged(h: Harness, rounds = 3): Promise<string[]> {
  const problems: string[] = await mixedContexts(h);
  for (let round = 0; round < rounds; round++) {
    const running = await settle(h);
    if (running.length > 0) return [...problems, ...running.map((id) => `task ${id}: still working after the run settled`)];
    const paused = [...(await states(h))].filter(([, s]) => !TERMINAL.has(s));
    if (paused.length === 0) return problems;
    // A legacy task ends every turn paused: it is answerable once no card waits.
    const waiting: string[] = [];
    for (const [id, state] of paused) {
      const stored = await h.store.loadTask(id);
      const cards = (await h.store.loadTurn(id)).filter((c) => c.phase === 'awaiting').length;
      if (state === 'input-required' && stored?.dialect === 'legacy' && cards === 0) continue;
      waiting.push(id);
    }
    if (waiting.length === 0) return problems;
    for (const id of waiting) {
      const problem = await answerPaused(h, id);
      if (problem !== undefined) problems.push(problem);
    }
  }
  for (const [id, state] of await states(h)) {
    const cards = (await h.store.loadTurn(id)).filter((c) => c.phase === 'awaiting').length;
    if (!TERMINAL.has(state) && cards > 0) problems.push(`task ${id}: ${state} with ${cards} card(s) after ${rounds} rounds of answers`);
  }
  return problems;
}
