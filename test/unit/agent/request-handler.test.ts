/**
 * The A2A methods (request-handler.ts), in process through buildServer and app.inject:
 * tasks/get, tasks/cancel, tasks/resubscribe (SSE ids, Last-Event-ID, paused / working /
 * finished tasks), ListTasks paging under A2A-Version 1.0, push config errors, audit/list.
 */
import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { ScriptedModelClient } from '../../../src/agent/model/scripted-model-client.js';
import { TEST_SCRIPT } from '../../fixtures/test-script.js';
import { HoldingModel, openStream, until } from '../../support/core.js';
import { buildServer, confirmMessage, dataOf, textOf, userMessage } from '../../support/server.js';
import { rpc } from '../../support/sse.js';
import type { PostResult, SseEvent } from '../../support/sse.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const model = new HoldingModel(new ScriptedModelClient(TEST_SCRIPT));
let app: FastifyInstance;

t.before(async () => {
  ({ app } = await buildServer(t, { model }));
});

const results = (events: SseEvent[] | undefined): any[] => (events ?? []).map((e) => e.data.result);
const idsOf = (events: SseEvent[] | undefined) => (events ?? []).map((e) => (e.id === undefined ? null : Number(e.id)));
const shapeOf = (events: SseEvent[] | undefined) =>
  results(events).map((r) =>
    r.kind === 'task' ? `task:${r.status.state}` : `${dataOf(r)?.status ?? r.status.state}${r.final ? '!' : ''}`,
  );
const lastEventId = (id: number) => ({ headers: { 'Last-Event-ID': String(id) } });

function refused(t: Test, res: PostResult, code: number, pattern: RegExp): void {
  t.equal(res.events, undefined, 'no SSE');
  t.equal(res.json?.error?.code, code, `code ${code}: ${res.json?.error?.message}`);
  t.match(res.json?.error?.message, pattern);
}

/** A v0.3 resubscription refused: one SSE event carrying the error (v0.3 clients read it only as a stream). */
function refusedInStream(t: Test, res: PostResult, code: number, pattern: RegExp): void {
  t.equal(res.events?.length, 1, 'one SSE event');
  t.equal(res.events?.[0]?.data.error?.code, code, `code ${code}: ${res.events?.[0]?.data.error?.message}`);
  t.match(res.events?.[0]?.data.error?.message, pattern);
}

async function newTask(text: string, extra: Record<string, unknown> = {}): Promise<{ id: string; contextId: string; events: SseEvent[] }> {
  const res = await rpc(app, 'message/stream', { message: userMessage(text, extra) });
  const first = results(res.events)[0];
  if (first?.kind !== 'task') throw new Error(`expected a task: ${res.raw}`);
  return { id: first.id, contextId: first.contextId, events: res.events ?? [] };
}

/** A task that stays working until model.release(); its log: 1 task, 2 working, 3 text `holding`. */
async function holding(extra: Record<string, unknown> = {}): Promise<{ id: string; contextId: string }> {
  const held = model.held;
  const res = await rpc(app, 'message/send', { message: userMessage('hold on', extra), configuration: { blocking: false } });
  const task = res.json?.result;
  if (task?.kind !== 'task') throw new Error(`expected a task: ${res.raw}`);
  await until('the model to hold', () => model.held > held);
  return { id: task.id, contextId: task.contextId };
}

const getTask = async (id: string, params: Record<string, unknown> = {}) => rpc(app, 'tasks/get', { id, ...params });

t.test('tasks/get: the current task; historyLength keeps the latest messages', async (t) => {
  const task = await newTask('hello');
  const full = (await getTask(task.id)).json.result;
  t.match(full, { kind: 'task', id: task.id, contextId: task.contextId, status: { state: 'completed' } });
  t.same(
    full.history.map((m: any) => [m.role, m.parts[0].text]),
    [
      ['user', 'hello'],
      ['agent', 'You said: hello'],
    ],
  );
  t.same((await getTask(task.id, { historyLength: 0 })).json.result.history ?? [], [], 'historyLength 0: none');
  t.same(
    (await getTask(task.id, { historyLength: 1 })).json.result.history.map((m: any) => m.parts[0].text),
    ['You said: hello'],
    'historyLength 1: the latest',
  );
  t.equal((await getTask(task.id, { historyLength: 10 })).json.result.history.length, 2);
  refused(t, await getTask(task.id, { historyLength: -1 }), -32602, /historyLength/);
  refused(t, await getTask('no-such-task'), -32001, /Task no-such-task not found/);
  const working = await holding();
  t.equal((await getTask(working.id)).json.result.status.state, 'working', 'a working task is read from memory');
  model.release();
  await until('the held task to complete', async () => (await getTask(working.id)).json?.result?.status?.state === 'completed');
});

t.test('tasks/cancel: a paused or working task is canceled; a finished one answers -32002', async (t) => {
  const paused = await newTask('write something');
  const canceled = await rpc(app, 'tasks/cancel', { id: paused.id });
  t.equal(canceled.json?.result?.status?.state, 'canceled');
  t.match(canceled.json.result.status.message.parts[0].text, /canceled by the client/);
  const replay = await rpc(app, 'tasks/resubscribe', { id: paused.id }, lastEventId(4));
  t.same(shapeOf(replay.events), ['task:canceled', 'CANCELLED', 'canceled!'], 'the waiting card was closed, then the task');
  refused(
    t,
    await rpc(app, 'tasks/cancel', { id: paused.id }),
    -32002,
    new RegExp(`^Task ${paused.id} is already canceled; only working or input-required tasks can be canceled$`),
  );

  const done = await newTask('hi');
  refused(t, await rpc(app, 'tasks/cancel', { id: done.id }), -32002, /is already completed/);
  refused(t, await rpc(app, 'tasks/cancel', { id: 'no-such-task' }), -32001, /not found/);

  const working = await holding();
  t.equal((await rpc(app, 'tasks/cancel', { id: working.id })).json?.result?.status?.state, 'canceled');
  await until('the model to be aborted', () => model.held === 0);
  const log = await rpc(app, 'tasks/resubscribe', { id: working.id }, lastEventId(0));
  t.same(shapeOf(log.events), ['task:canceled', 'task:submitted', 'working', 'working', 'canceled!'], 'nothing after canceled');
});

t.test('tasks/resubscribe', async (t) => {
  t.test('a paused task: the snapshot (no id), its waiting cards and the pause, with or without Last-Event-ID', async (t) => {
    const paused = await newTask('write this');
    t.same(idsOf(paused.events), [1, 2, 3, 4]);
    const plain = await rpc(app, 'tasks/resubscribe', { id: paused.id });
    t.same(idsOf(plain.events), [null, 3, 4]);
    t.same(shapeOf(plain.events), ['task:input-required', 'PENDING', 'input-required!']);
    t.same(results(plain.events).slice(1), results(paused.events).slice(2), 'the same card and pause as were streamed');
    const from1 = await rpc(app, 'tasks/resubscribe', { id: paused.id }, lastEventId(1));
    t.same(idsOf(from1.events), [null, 2, 3, 4], 'what was missed, then the pause');
    const from4 = await rpc(app, 'tasks/resubscribe', { id: paused.id }, lastEventId(4));
    t.same(idsOf(from4.events), [null, 3, 4], 'the waiting card and the pause are always re-sent');
    refusedInStream(
      t,
      await rpc(app, 'tasks/resubscribe', { id: paused.id }, lastEventId(5)),
      -32602,
      /Last-Event-ID 5 is beyond the last event of task .* \(4\)/,
    );
    refused(
      t,
      await rpc(app, 'SubscribeToTask', { id: paused.id }, { version: '1.0', ...lastEventId(5) }),
      -32602,
      /Last-Event-ID 5 is beyond the last event of task .* \(4\)/,
    );
  });

  t.test('a finished task: the snapshot, then exactly what came after Last-Event-ID', async (t) => {
    const done = await newTask('hi again');
    const plain = await rpc(app, 'tasks/resubscribe', { id: done.id });
    t.same(idsOf(plain.events), [null], 'without Last-Event-ID only the snapshot');
    t.equal(results(plain.events)[0].status.state, 'completed');
    const from2 = await rpc(app, 'tasks/resubscribe', { id: done.id }, lastEventId(2));
    t.same(idsOf(from2.events), [null, 3, 4]);
    t.same(results(from2.events).slice(1), results(done.events).slice(2), 'the same events as were streamed live');
    const from0 = await rpc(app, 'tasks/resubscribe', { id: done.id }, lastEventId(0));
    t.same(idsOf(from0.events), [null, 1, 2, 3, 4]);
    refusedInStream(t, await rpc(app, 'tasks/resubscribe', { id: 'no-such-task' }), -32001, /not found/);
    refused(t, await rpc(app, 'SubscribeToTask', { id: 'no-such-task' }, { version: '1.0' }), -32001, /not found/);
  });

  t.test('v1.0: a task in a terminal state cannot be subscribed to, except to replay what was missed', async (t) => {
    const done = await newTask('hi again');
    refused(
      t,
      await rpc(app, 'SubscribeToTask', { id: done.id }, { version: '1.0' }),
      -32004,
      /is completed: a task in a terminal state has no updates to subscribe to; read it with GetTask/,
    );
    const from2 = await rpc(app, 'SubscribeToTask', { id: done.id }, { version: '1.0', ...lastEventId(2) });
    t.same(idsOf(from2.events), [null, 3, 4], 'with Last-Event-ID: the snapshot and what was missed');
    t.equal(from2.events?.at(-1)?.data.result.statusUpdate.status.state, 'TASK_STATE_COMPLETED');
  });

  t.test('v1.0: a subscription to a paused task lasts through the answer to the terminal state', async (t) => {
    const paused = await newTask('write this');
    const card = dataOf(results(paused.events)[2]);
    // Last-Event-ID 4 (the pause): whichever comes first, the subscription or the answer, it ends terminal.
    const subscribed = rpc(app, 'SubscribeToTask', { id: paused.id }, { version: '1.0', ...lastEventId(4) });
    const answer = await rpc(app, 'message/stream', {
      message: confirmMessage(paused.id, paused.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' }),
    });
    t.equal(results(answer.events).at(-1)?.status.state, 'completed');
    const sub = await subscribed;
    const states = (sub.events ?? []).map((e) => e.data.result.statusUpdate?.status.state ?? e.data.result.task?.status.state);
    t.equal(states.at(-1), 'TASK_STATE_COMPLETED', 'the stream ends at the terminal state');
    t.ok(states.includes('TASK_STATE_INPUT_REQUIRED') || states[0] === 'TASK_STATE_COMPLETED', 'and passed through the pause');
    t.equal(sub.events?.at(-1)?.id, answer.events?.at(-1)?.id, 'its last event is the last event of the task');
  });

  t.test('a working task without Last-Event-ID: the snapshot, then live events until the end', async (t) => {
    const task = await holding();
    const stream = await openStream(app, 'tasks/resubscribe', { id: task.id });
    const first = await stream.next();
    t.equal(first?.id, undefined, 'the snapshot has no id');
    t.equal(first?.data.result.status.state, 'working');
    model.release();
    const rest = await stream.rest();
    t.same(idsOf(rest), [4, 5], 'only what came after the snapshot');
    t.same(
      results(rest).map((r) => [textOf(r), r.status.state, r.final]),
      [
        [' released', 'working', false],
        ['', 'completed', true],
      ],
    );
  });

  t.test('a working task with Last-Event-ID: the missed events, then live ones until the end', async (t) => {
    const task = await holding();
    const stream = await openStream(app, 'tasks/resubscribe', { id: task.id }, { 'Last-Event-ID': '1' });
    const replayed = [await stream.next(), await stream.next(), await stream.next()];
    t.same(idsOf(replayed as SseEvent[]), [null, 2, 3], 'the snapshot, then 2 and 3 from the log');
    model.release();
    t.same(idsOf(await stream.rest()), [4, 5], 'then the live events to the end, no gap, no duplicate');
  });

  t.test('a paused task with a follow-up: Last-Event-ID from before the pause replays through it and follows on', async (t) => {
    const done = await newTask('hello once more');
    const again = await rpc(app, 'message/send', {
      message: userMessage('hold on', { taskId: done.id, contextId: done.contextId }),
      configuration: { blocking: false },
    });
    t.equal(again.json?.result?.id, done.id);
    await until('the model to hold', () => model.held > 0);
    const stream = await openStream(app, 'tasks/resubscribe', { id: done.id }, { 'Last-Event-ID': '3' });
    const replayed = [await stream.next(), await stream.next(), await stream.next(), await stream.next()];
    t.same(idsOf(replayed as SseEvent[]), [null, 4, 5, 6], 'the old end (4), the new working (5), the held text (6)');
    model.release();
    t.same(idsOf(await stream.rest()), [7, 8]);
  });
});

t.test('ListTasks (v1.0): pages of the most recent first, with a page token', async (t) => {
  const first = await newTask('one');
  const ctx = first.contextId;
  const second = await newTask('two', { contextId: ctx });
  const third = await newTask('three', { contextId: ctx });
  const list = (params: Record<string, unknown>) => rpc(app, 'ListTasks', { contextId: ctx, ...params }, { version: '1.0' });
  const page1 = (await list({ pageSize: 2 })).json?.result;
  t.same(
    page1.tasks.map((x: any) => x.id),
    [third.id, second.id],
    'most recently updated first',
  );
  t.equal(page1.nextPageToken, '2');
  t.equal(page1.totalSize, 3);
  t.equal(page1.pageSize, 2);
  const page2 = (await list({ pageSize: 2, pageToken: '2' })).json?.result;
  t.same(
    page2.tasks.map((x: any) => x.id),
    [first.id],
  );
  t.notOk(page2.nextPageToken, 'the last page has no next token');
  const all = (await list({})).json?.result;
  t.equal(all.pageSize, 50, 'the default page size');
  t.equal(all.tasks.length, 3);
  t.ok(
    all.tasks.every((x: any) => x.status.state === 'TASK_STATE_COMPLETED'),
    'v1.0 state names',
  );
  const noHistory = (await list({ historyLength: 0 })).json?.result;
  t.ok(
    noHistory.tasks.every((x: any) => (x.history ?? []).length === 0),
    'historyLength 0 applies to every task',
  );
  t.equal((await list({ pageSize: 1000 })).json?.result?.pageSize, 100, 'the page size is capped at 100');
  const paused = await newTask('write into it');
  const byState = (await rpc(app, 'ListTasks', { status: 'TASK_STATE_INPUT_REQUIRED', contextId: paused.contextId }, { version: '1.0' }))
    .json?.result;
  t.same(
    byState.tasks.map((x: any) => x.id),
    [paused.id],
    'filtered by state',
  );
  refused(t, await list({ pageToken: 'abc' }), -32602, /pageToken "abc" is not a page token from a previous ListTasks answer/);
});

t.test('ListTasks without A2A-Version: 1.0 is a JSON-RPC -32601 naming the header, like every other v1.0 method name', async (t: Test) => {
  const res = await rpc(app, 'ListTasks', {});
  t.equal(res.status, 200, `HTTP 200 (got ${res.status}: ${res.raw})`);
  t.equal(res.json?.jsonrpc, '2.0', 'a JSON-RPC envelope');
  t.equal(res.json?.error?.code, -32601);
  t.match(res.json?.error?.message, /ListTasks is an A2A v1\.0 method; send the header A2A-Version: 1\.0/);
});

t.test('push notification configs: CRUD and its refusals', async (t) => {
  const task = await newTask('hi push');
  const url = 'https://93.184.215.14/hook'; // a public address literal: no DNS lookup
  const set = await rpc(app, 'tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { id: 'cfg-1', url } });
  t.match(set.json?.result, { taskId: task.id, pushNotificationConfig: { id: 'cfg-1', url } }, `set: ${set.raw}`);
  const got = await rpc(app, 'tasks/pushNotificationConfig/get', { id: task.id, pushNotificationConfigId: 'cfg-1' });
  t.match(got.json?.result, { taskId: task.id, pushNotificationConfig: { id: 'cfg-1', url } });
  const listed = await rpc(app, 'tasks/pushNotificationConfig/list', { id: task.id });
  t.same(
    listed.json?.result?.map((c: any) => c.pushNotificationConfig.id),
    ['cfg-1'],
  );

  refused(
    t,
    await rpc(app, 'tasks/pushNotificationConfig/set', { taskId: 'no-such-task', pushNotificationConfig: { url } }),
    -32001,
    /not found/,
  );
  refused(
    t,
    await rpc(app, 'tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { url: 'http://10.1.2.3/hook' } }),
    -32602,
    /pushNotificationConfig\.url .* private/,
  );
  refused(
    t,
    await rpc(app, 'tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { url: 'ftp://x/y' } }),
    -32602,
    /must use http or https/,
  );
  refused(
    t,
    await rpc(app, 'tasks/pushNotificationConfig/get', { id: task.id, pushNotificationConfigId: 'nope' }),
    -32602,
    new RegExp(`task ${task.id} has no push notification config "nope"`),
  );
  refused(t, await rpc(app, 'tasks/pushNotificationConfig/get', { id: 'no-such-task' }), -32001, /not found/);
  refused(t, await rpc(app, 'tasks/pushNotificationConfig/list', { id: 'no-such-task' }), -32001, /not found/);
  refused(
    t,
    await rpc(app, 'GetTaskPushNotificationConfig', { taskId: task.id, id: 'nope' }, { version: '1.0' }),
    -32602,
    /has no push notification config "nope"/,
  );

  const deleted = await rpc(app, 'tasks/pushNotificationConfig/delete', { id: task.id, pushNotificationConfigId: 'cfg-1' });
  t.equal(deleted.json?.error, undefined, `delete: ${deleted.raw}`);
  const again = await rpc(app, 'tasks/pushNotificationConfig/delete', { id: task.id, pushNotificationConfigId: 'cfg-1' });
  t.equal(again.json?.result, null, 'deleting it again succeeds (idempotent)');
  refused(
    t,
    await rpc(app, 'DeleteTaskPushNotificationConfig', { taskId: 'no-such-task', id: 'x' }, { version: '1.0' }),
    -32001,
    /not found/,
  );
  t.same((await rpc(app, 'tasks/pushNotificationConfig/list', { id: task.id })).json?.result, [], 'nothing left');
});

t.test('audit/list: argument errors, and the decisions of a task', async (t) => {
  const paused = await newTask('write for the audit');
  const card = dataOf(results(paused.events)[2]);
  await rpc(app, 'message/stream', {
    message: confirmMessage(paused.id, paused.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' }),
  });
  const cases: Array<[string, unknown, RegExp]> = [
    ['no filter', {}, /^audit\/list needs params\.task_id or params\.context_id$/],
    [
      'an unknown field',
      { task_id: paused.id, user: 'x' },
      /^params\.user is not a field of audit\/list \(expected task_id or context_id\)$/,
    ],
    ['a task_id that is not a string', { task_id: 42 }, /^params\.task_id must be a non-empty string$/],
    ['an empty context_id', { context_id: '' }, /^params\.context_id must be a non-empty string$/],
    ['params that are not an object', ['x'], /needs params\.task_id or params\.context_id/],
  ];
  for (const [name, params, pattern] of cases) {
    const res = await rpc(app, 'audit/list', params);
    t.equal(res.json?.error?.code, -32602, `${name}: -32602`);
    t.match(res.json?.error?.message, pattern, name);
  }
  const entries = (await rpc(app, 'audit/list', { task_id: paused.id })).json?.result?.entries;
  t.same(
    entries.map((e: any) => e.decision),
    ['proposed', 'authorized', 'executed', 'succeeded'],
  );
  t.match(entries[1], {
    task_id: paused.id,
    context_id: paused.contextId,
    tool_call_id: card.tool_call_id,
    option_id: 'proceed_once',
    principal: null,
  });
  t.match(entries[0].shown_hash, /^[0-9a-f]{64}$/);
  t.match(entries[0].at, /^\d{4}-\d\d-\d\dT/);
  const byContext = (await rpc(app, 'audit/list', { contextId: paused.contextId })).json?.result?.entries;
  t.equal(byContext.length, 4, 'camelCase spelling and a context filter');
  t.same((await rpc(app, 'audit/list', { task_id: 'no-such-task' })).json?.result, { entries: [] });
});
