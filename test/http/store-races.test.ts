/**
 * Store blips and races around a task's end: whatever fails or interleaves, a task's log ends
 * with exactly one end (`completed`, `failed` or `canceled`) and nothing after it, the stored
 * task says the same, and the conversation stays usable.
 */
import t from 'tap';
import type { FastifyInstance } from 'fastify';
import type { StoredEvent } from '../../src/agent/task-store.js';
import { stateName } from '../../src/protocol/a2a.js';
import { MemoryTaskStore } from '../../src/store/memory-store.js';
import { until } from '../support/core.js';
import { faultyStore } from '../support/faulty-store.js';
import { buildServer, confirmMessage, dataOf, userMessage } from '../support/server.js';
import { rpc } from '../support/sse.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

// In-process apps have no listening socket: keep this process alive while a stream waits on a
// re-send timer (those are unref'd so that they never hold a server's exit up).
const alive = setInterval(() => undefined, 1_000);
t.teardown(() => clearInterval(alive));

const ENDS = new Set(['completed', 'failed', 'canceled']);

function stateOf(ev: StoredEvent): string {
  const p = ev.response.payload;
  return p?.$case === 'statusUpdate' ? stateName(p.value.status?.state) : p?.$case === 'task' ? stateName(p.value.status?.state) : '';
}

/** The log ends once, at its last event, and the stored task agrees with it. */
async function endsOnce(t: Test, store: MemoryTaskStore, taskId: string, end: string | RegExp): Promise<void> {
  const log = await store.eventsAfter(taskId, 0);
  const states = log.map(stateOf);
  const ends = log.flatMap((ev, i) => (ev.final && ENDS.has(stateOf(ev)) ? [i] : []));
  t.same(ends, [log.length - 1], `one end, the last event (log: ${states.join(', ')})`);
  t.match(states.at(-1), end);
  t.equal(stateName((await store.loadTask(taskId))?.task.status?.state), states.at(-1), 'the stored task says the same');
}

async function server(t: Test, store: Parameters<typeof faultyStore>[0] | ReturnType<typeof faultyStore>['store']) {
  return buildServer(t, { app: { store, sweepMs: 60_000 } });
}

async function paused(app: FastifyInstance) {
  const first = await rpc(app, 'message/stream', { message: userMessage('write a file') });
  const task = first.events?.[0]?.data?.result;
  const card = first.events?.map((e) => dataOf(e.data?.result)).find((d) => d?.confirmation_request);
  return { taskId: task.id as string, contextId: task.contextId as string, callId: card.tool_call_id as string };
}

t.test('a cancel whose commit fails is stored once the store takes it; the conversation is free again', async (t) => {
  const inner = new MemoryTaskStore();
  t.teardown(() => inner.close());
  const faulty = faultyStore(inner);
  const { app } = await server(t, faulty.store);
  const { taskId, contextId } = await paused(app);
  faulty.failAt(1, 'commit');
  const cancel = await rpc(app, 'tasks/cancel', { id: taskId });
  t.equal(cancel.json?.result?.status?.state, 'canceled');
  t.strictSame(faulty.fired, ['commit'], 'the fault fired');
  await until('the cancel is stored', async () => stateName((await inner.loadTask(taskId))?.task.status?.state) === 'canceled');
  await endsOnce(t, inner, taskId, 'canceled');
  t.equal((await rpc(app, 'tasks/cancel', { id: taskId })).json?.error?.code, -32002, 'a second cancel: already canceled');
  const next = await rpc(app, 'message/stream', { message: userMessage('hello', { contextId }) });
  t.equal(next.events?.at(-1)?.data?.result?.status?.state, 'completed', 'a new task in the conversation runs');
});

/** `inner`, whose claims that carry an answer's writes (claimAndCommit) wait on their way to it until `decide()`. */
function slowClaims(inner: MemoryTaskStore): { store: MemoryTaskStore; sent: () => boolean; decide: () => void } {
  let sent = false;
  let decide!: () => void;
  const decided = new Promise<void>((resolve) => (decide = resolve));
  const store = Object.assign(Object.create(inner) as MemoryTaskStore, {
    claimAndCommit: async (...args: Parameters<MemoryTaskStore['claimAndCommit']>) => {
      sent = true;
      await decided;
      return inner.claimAndCommit(...args);
    },
  });
  return { store, sent: () => sent, decide };
}

t.test('a cancel that lands while an answer is being claimed: the call never runs, and the task ends canceled only', async (t) => {
  const inner = new MemoryTaskStore();
  t.teardown(() => inner.close());
  // The claim's statement (the claim with the answer's effects and the EXECUTING card) is held on
  // its way to the store until the cancel is in.
  const slow = slowClaims(inner);
  const { app, workspace } = await server(t, slow.store);
  const { taskId, contextId, callId } = await paused(app);
  const answering = rpc(app, 'message/stream', {
    message: confirmMessage(taskId, contextId, { tool_call_id: callId, selected_option_id: 'proceed_once' }),
  });
  await until('the claim is under way', async () => slow.sent());
  const cancelling = rpc(app, 'tasks/cancel', { id: taskId });
  // The cancel changes this process's copy at once and then waits for the claim in flight (so does
  // tasks/get, which flushes the copy): nothing here can be polled, so the claim is held 300 ms,
  // far longer than an in-process request takes to reach the copy.
  await new Promise((resolve) => setTimeout(resolve, 300));
  slow.decide();
  t.equal((await cancelling).json?.result?.status?.state, 'canceled');
  await answering;
  await endsOnce(t, inner, taskId, 'canceled');
  t.match(await inner.loadCall(callId), { phase: 'done', snapshot: { status: 'CANCELLED' } }, 'the call ends cancelled');
  t.notOk(await import('node:fs').then((fs) => fs.existsSync(`${workspace}/hello.txt`)), 'it never ran: nothing was written');
});

t.test('tasks/get while an answer is claimed that then loses: it shows the stored task, not the losing copy', async (t) => {
  const inner = new MemoryTaskStore();
  t.teardown(() => inner.close());
  const slow = slowClaims(inner);
  const { app } = await server(t, slow.store);
  const { taskId, contextId, callId } = await paused(app);
  const message = confirmMessage(taskId, contextId, { tool_call_id: callId, selected_option_id: 'proceed_once' });
  const answering = rpc(app, 'message/stream', { message });
  await until('the claim is under way', async () => slow.sent());
  // Another process answers first; tasks/get reaches this process's copy (which applied the
  // answer ahead of its claim) and waits for the claim with it. Held 300 ms, as above.
  t.match(await inner.claimCalls(taskId, [{ id: callId, answer: 'cancel' }], 'peer', new Date(Date.now() + 30_000)), { ok: true });
  const reading = rpc(app, 'tasks/get', { id: taskId });
  await new Promise((resolve) => setTimeout(resolve, 300));
  slow.decide();
  const refused = await answering;
  t.match(
    refused.json?.error?.message ?? refused.events?.at(-1)?.data?.error?.message,
    /already answered \(another answer arrived first\)/,
  );
  const got = (await reading).json?.result;
  t.equal(got?.status?.state, 'input-required', "the state stored, not the losing copy's working");
  t.notOk(
    (got?.history ?? []).some((m: { messageId?: string }) => m.messageId === message.messageId),
    'the losing answer is not in the history shown',
  );
  t.same(got?.history?.length, (await inner.loadTask(taskId))?.task.history.length, 'the stored history');
});

/** The task's id once it ended in the store; or the error answered when its start could not be stored. */
async function shortAnswer(
  app: FastifyInstance,
  inner: MemoryTaskStore,
): Promise<{ id: string } | { error: { code: number; message: string } }> {
  const res = await rpc(app, 'message/stream', { message: userMessage('hello') });
  const error = res.json?.error ?? res.events?.find((e) => e.data?.error)?.data?.error;
  if (error !== undefined) return { error };
  const taskId = res.events?.find((e) => e.data?.result?.kind === 'task' || e.data?.result?.taskId)?.data?.result;
  const id = (taskId?.id ?? taskId?.taskId) as string;
  await until('the task ended in the store', async () => ENDS.has(stateName((await inner.loadTask(id))?.task.status?.state)));
  return { id };
}

t.test('commit k of a short answer fails: nothing follows the end, and the store agrees', async (t) => {
  // As many cases as the clean flow makes commits (a fault armed past the last one never fires).
  const probe = new MemoryTaskStore();
  const counting = faultyStore(probe);
  const probeApp = await server(t, counting.store);
  await shortAnswer(probeApp.app, probe);
  await probeApp.app.close();
  await probe.close();
  const commits = counting.calls.filter((c) => c === 'commit').length;
  t.ok(commits >= 3, `the clean flow makes ${commits} commits`);
  for (let k = 1; k <= commits; k++) {
    await t.test(`commit ${k} of ${commits} fails`, async (t) => {
      const inner = new MemoryTaskStore();
      t.teardown(() => inner.close());
      const faulty = faultyStore(inner);
      const { app } = await server(t, faulty.store);
      faulty.failAt(k, 'commit');
      const outcome = await shortAnswer(app, inner);
      t.strictSame(faulty.fired, ['commit'], 'the fault fired');
      if ('id' in outcome) return endsOnce(t, inner, outcome.id, /^(completed|failed)$/);
      // The start (context, task, first events) is one commit: lost, it answers an error and leaves nothing.
      t.equal(k, 1, 'only the start answers an error');
      t.match(outcome.error.message, /task store/i);
      t.equal((await inner.listTasks({ limit: 10, offset: 0 })).total, 0, 'no task was stored');
    });
  }
});

t.test('closing the app while a command runs: it is stopped, closing is prompt, nothing is written after', async (t) => {
  const inner = new MemoryTaskStore();
  t.teardown(() => inner.close());
  const { app } = await buildServer(
    { teardown: () => undefined },
    { env: { APPROVAL_TIMEOUT: 'off' }, app: { store: inner, sweepMs: 60_000 } },
  );
  const first = await rpc(app, 'message/stream', { message: userMessage('shell slow', { metadata: {} }) });
  const task = first.events?.[0]?.data?.result;
  const card = first.events?.map((e) => dataOf(e.data?.result)).find((d) => d?.confirmation_request);
  const answer = rpc(app, 'message/stream', {
    message: confirmMessage(task.id, task.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' }),
  });
  await until('the command runs', async () =>
    (await inner.eventsAfter(task.id, 0)).some((ev) => JSON.stringify(ev.response).includes('EXECUTING')),
  );
  const started = Date.now();
  await app.close();
  t.ok(Date.now() - started < 3_000, `closed in ${Date.now() - started} ms`);
  await answer.catch(() => undefined);
  const logged = (await inner.eventsAfter(task.id, 0)).length;
  await new Promise((r) => setTimeout(r, 1_200)); // the command would have printed and finished by now
  t.equal((await inner.eventsAfter(task.id, 0)).length, logged, 'nothing was written after close');
});
