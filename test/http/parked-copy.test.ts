/**
 * A paused task is kept in memory and its next message goes on with that copy without reading
 * the store back. When the copy is behind (another process moved the task on and this one has
 * not heard yet), the write the message makes is refused — the claim names the last seq the copy
 * knows — and the message is applied again to a fresh copy: the client sees the normal flow.
 */
import t from 'tap';
import { MemoryTaskStore } from '../../src/store/memory-store.js';
import { stateName } from '../../src/protocol/a2a.js';
import type { ModelScript } from '../../src/agent/model/scripted-model-client.js';
import { buildServer, confirmMessage, dataOf, textOf, URI, userMessage } from '../support/server.js';
import { rpc } from '../support/sse.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

/**
 * A connection to `db` for a server whose store notifications can be held back (`deaf`): what
 * another process commits meanwhile reaches it as a notification that has not arrived yet would
 * (the window the writes' checks close).
 */
function deafenable(db: MemoryTaskStore) {
  const store = db.connect();
  const state = { deaf: false };
  const subscribe: MemoryTaskStore['subscribe'] = (listener) => store.subscribe((...note) => (state.deaf ? undefined : listener(...note)));
  const heard = new Proxy(store, {
    get: (target, prop) => (prop === 'subscribe' ? subscribe : (Reflect.get(target, prop, target) as unknown)),
  });
  return { store, heard, state };
}

/**
 * Two servers on one store running `script`: A on a deafenable connection (it can be kept from
 * hearing what B commits), B on a plain one.
 */
async function twoInstances(t: Test, script: ModelScript) {
  const db = new MemoryTaskStore();
  t.teardown(() => db.close());
  const { heard, state } = deafenable(db);
  const a = await buildServer(t, { script, app: { store: heard, sweepMs: 60_000 } });
  const b = await buildServer(t, { script, app: { store: db.connect(), sweepMs: 60_000 } });
  return { db, state, a, b };
}

/** A server on a deafenable connection, paused on a write: `unheard` logs an event its hub does not hear of. */
async function pausedOn(t: Test) {
  const db = new MemoryTaskStore();
  t.teardown(() => db.close());
  const { store, heard, state } = deafenable(db);
  const { app } = await buildServer(t, { app: { store: heard, sweepMs: 60_000 } });
  const first = await rpc(app, 'message/stream', { message: userMessage('write a file') });
  const task = first.events?.[0]?.data?.result;
  const card = first.events?.map((e) => dataOf(e.data?.result)).find((d) => d?.confirmation_request);
  const taskId = task.id as string;
  const unheard = async () => {
    state.deaf = true;
    await store.appendEvent((await store.loadTask(taskId))!.task, { payload: undefined }, false);
    await new Promise((resolve) => setImmediate(resolve)); // the memory store notifies on the next turn
    state.deaf = false;
  };
  return { app, store, unheard, taskId, contextId: task.contextId as string, callId: card.tool_call_id as string };
}

t.test('a kept copy behind the store: the answer is applied to a fresh copy, and the flow completes', async (t) => {
  const { app, store, unheard, taskId, contextId, callId } = await pausedOn(t);
  await unheard();
  const loads: string[] = [];
  const loadTask = store.loadTask.bind(store);
  store.loadTask = (id) => (loads.push(id), loadTask(id));

  const second = await rpc(app, 'message/stream', {
    message: confirmMessage(taskId, contextId, { tool_call_id: callId, selected_option_id: 'proceed_once' }),
  });
  t.equal(second.json?.error, undefined, 'no error');
  const results = second.events?.map((e) => e.data?.result) ?? [];
  t.same(
    results.filter((r) => dataOf(r)?.tool_call_id === callId).map((r) => dataOf(r).status),
    ['EXECUTING', 'SUCCEEDED'],
    'the call ran once',
  );
  t.equal(results.at(-1)?.status?.state, 'completed');
  t.ok(textOf(results.at(-1)) !== undefined);
  t.same(loads, [taskId], 'the task was read afresh once');
  const authorized = (await store.listAudit({ taskId })).filter((a) => a.decision === 'authorized');
  t.equal(authorized.length, 1, 'one authorized record');
});

t.test('a kept copy behind the store with a message that is no answer: re-prompted from a fresh copy', async (t) => {
  const { app, unheard, taskId, contextId } = await pausedOn(t);
  await unheard();
  const reply = await rpc(app, 'message/stream', { message: userMessage('hmm?', { taskId, contextId }) });
  t.equal(reply.json?.error, undefined, 'no error');
  t.equal(reply.events?.at(-1)?.data?.result?.status?.state, 'input-required', 'still waiting, asked again');
});

/** A script whose answer to the first call proposes a second one: the task pauses twice. */
const TWICE = {
  model: 'scripted-twice',
  scripts: [
    {
      when: '^twice',
      steps: [
        { chunks: [[{ functionCall: { name: 'write_file', args: { file_path: 'one.txt', content: '1\n' } } }]] },
        { chunks: [[{ functionCall: { name: 'write_file', args: { file_path: 'two.txt', content: '2\n' } } }]] },
        { chunks: [[{ text: 'Both written.' }]] },
      ],
    },
  ],
};

t.test('a kept copy behind the store is not cancelled as it is: the calls of the pause the store holds are closed', async (t) => {
  const { db, state, a, b } = await twoInstances(t, TWICE);
  const cardOf = (events: Array<{ data?: any }> | undefined) =>
    events?.map((e) => dataOf(e.data?.result)).find((d) => d?.confirmation_request);

  const first = await rpc(a.app, 'message/stream', { message: userMessage('twice') });
  const taskId = first.events?.[0]?.data?.result?.id as string;
  const contextId = first.events?.[0]?.data?.result?.contextId as string;
  const one = cardOf(first.events).tool_call_id as string;

  // Answered on B, which runs the call and pauses on the next one; A does not hear of it yet.
  state.deaf = true;
  const second = await rpc(b.app, 'message/stream', {
    message: confirmMessage(taskId, contextId, { tool_call_id: one, selected_option_id: 'proceed_once' }),
  });
  const two = cardOf(second.events)?.tool_call_id as string;
  t.ok(two, 'B paused on the second call');
  await new Promise((resolve) => setImmediate(resolve));
  state.deaf = false;

  const canceled = await rpc(a.app, 'tasks/cancel', { id: taskId });
  t.equal(canceled.json?.result?.status?.state, 'canceled');
  const store = db.connect();
  const [first1, second2] = [await store.loadCall(one), await store.loadCall(two)];
  t.equal(first1?.snapshot.status, 'SUCCEEDED', 'the call that ran stays as it ran');
  t.equal(second2?.phase, 'done', 'the waiting call is closed');
  t.equal(second2?.snapshot.status, 'CANCELLED');
  const history = (await store.loadContext(contextId))!.history;
  const answered = history.flatMap((h) => h.parts.flatMap((p) => (p.functionResponse ? [p.functionResponse.id] : [])));
  const asked = history.flatMap((h) => h.parts.flatMap((p) => (p.functionCall ? [p.functionCall.id] : [])));
  t.same([...answered].sort(), [...asked].sort(), 'every function call answered once');
});

/** The model asks a question (a pause without calls); a follow-up's answer streams slowly. */
const ASKS = {
  model: 'scripted-asks',
  scripts: [
    { when: '^ask', steps: [{ chunks: [[{ text: 'Which file?' }]], outcome: { state: 'input-required' as const } }] },
    { when: '^slow', steps: [{ chunks: [[{ text: 'Working on it.' }]], delayMs: 1500 }] },
    { steps: [{ chunks: [[{ text: 'ok' }]] }] },
  ],
};

t.test('a follow-up to a kept copy behind the store is refused and changes nothing: not the settings', async (t) => {
  const { db, state, a, b } = await twoInstances(t, ASKS);
  const settings = (mode: string) => ({ [URI]: { approval_mode: mode } });
  const first = await rpc(a.app, 'message/stream', { message: userMessage('ask me', { metadata: settings('YOLO') }) });
  const task = first.events?.[0]?.data?.result;
  t.equal(first.events?.at(-1)?.data?.result?.status?.state, 'input-required', 'the model asked');
  const store = db.connect();

  state.deaf = true;
  const onB = rpc(b.app, 'message/stream', {
    message: userMessage('slow please', { taskId: task.id, contextId: task.contextId, metadata: settings('DEFAULT') }),
  });
  while (stateName((await store.loadTask(task.id))?.task.status?.state) !== 'working') await new Promise((r) => setTimeout(r, 5));
  const onA = await rpc(a.app, 'message/stream', {
    message: userMessage('stale follow-up', { taskId: task.id, contextId: task.contextId, metadata: settings('AUTO_EDIT') }),
  });
  state.deaf = false;
  t.not(onA.json?.error, undefined, 'the follow-up to a working task is refused');
  t.equal((await store.loadContext(task.contextId))?.settings.approvalMode, 'DEFAULT', "B's settings stay");
  t.equal((await onB).events?.at(-1)?.data?.result?.status?.state, 'completed');
});
