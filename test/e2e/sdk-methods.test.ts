/**
 * Every A2A method, round-tripped by the real @a2a-js/sdk 1.3.0 client over each transport the
 * server offers: v1.0 JSON-RPC and v1.0 HTTP+JSON (ClientFactory from the card), and v0.3
 * JSON-RPC (`LegacyJsonRpcTransport`) and v0.3 HTTP+JSON (`LegacyRestTransport`, no A2A-Version
 * header). Typed SDK errors are checked with their wire code: the JSON-RPC `envelopeCode`, or the
 * HTTP status for HTTP+JSON.
 *
 * What the SDK does (found while writing these tests):
 * - `LegacyJsonRpcTransport.listTasks` never reaches the server: it rejects with a
 *   `JsonRpcTransportError` of code -32601 (`tasks/list` has no v0.3 binding).
 * - `Client.getAgentCard()` fetches the extended card only when the card it was made from says
 *   `capabilities.extendedAgentCard`; the transport's `getExtendedAgentCard` asks regardless, which
 *   is how a server without one is seen to refuse.
 * - Credentials go in through the SDK's `createAuthenticatingFetchWithRetry`.
 */
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AgentCard, Message, StreamResponse, Task } from '@a2a-js/sdk';
import { createAuthenticatingFetchWithRetry } from '@a2a-js/sdk/client';
import type { Transport } from '@a2a-js/sdk/client';
import { LegacyJsonRpcTransport, LegacyRestTransport } from '@a2a-js/sdk/compat/v0_3/client';
import { CONFORMANCE_SCRIPT_FILE, loadModelScript } from '../../src/agent/model/scripted-model-client.js';
import { startServer, URI } from '../support/server.js';
import type { TestServer } from '../support/server.js';
import { dataPart, sdkMessage as message, sendRequest as request, textPart } from '../support/sdk-messages.js';
import { collect, pathOf, rejection, sdkClient, stateOf, toolCallOf } from '../support/sdk-client.js';
import type { Test } from '../support/tool-call-watch.js';

type Methods =
  | 'sendMessage'
  | 'sendMessageStream'
  | 'getTask'
  | 'listTasks'
  | 'cancelTask'
  | 'resubscribeTask'
  | 'createTaskPushNotificationConfig'
  | 'getTaskPushNotificationConfig'
  | 'listTaskPushNotificationConfig'
  | 'deleteTaskPushNotificationConfig';

/** The A2A methods of one transport, plus how it reads the extended card. */
type Api = Pick<Transport, Methods> & {
  /** The transport's own GetExtendedAgentCard call (asks even if the card says there is none). */
  extendedCard(): Promise<AgentCard>;
  /** What an application calls: v1.0 `Client.getAgentCard()`; v0.3 has only the transport call. */
  agentCard(): Promise<AgentCard>;
};

interface Leg {
  name: string;
  version: '1.0' | '0.3';
  connect(url: string, key?: string): Promise<Api>;
  /** Every call this leg's clients made (see callOf). */
  seen: Set<string>;
  /** What the leg must have called by the end: every method of its binding. */
  calls: string[];
  /** The wire code a typed error carries on this transport. */
  code(err: any): number | undefined;
  codes: { taskNotFound: number; taskNotCancelable: number; unsupported: number; noExtendedCard: number };
}

const KEY = 'sdk-methods-key-0123456789abcdef';

/** What a request was, by binding: the JSON-RPC method, or the HTTP method and path template. */
async function callOf(input: string | URL | Request, init?: RequestInit): Promise<string> {
  if (init?.method === 'POST' && new URL(input instanceof Request ? input.url : String(input)).pathname === '/') {
    return (JSON.parse(typeof init.body === 'string' ? init.body : await new Response(init.body).text()) as { method: string }).method;
  }
  const template = pathOf(input)
    .replace(/\/tasks\/[^/:]+/, '/tasks/{id}')
    .replace(/pushNotificationConfigs\/.+$/, 'pushNotificationConfigs/{configId}');
  return `${init?.method ?? 'GET'} ${template}`;
}

/** fetch that records each call in `seen` and, given a key, sends it through the SDK's authenticating fetch. */
function recordingFetch(seen: Set<string>, key: string | undefined): typeof fetch {
  const recording: typeof fetch = async (input, init) => {
    seen.add(await callOf(input, init));
    return fetch(input, init);
  };
  if (!key) return recording;
  return createAuthenticatingFetchWithRetry(recording, {
    headers: () => Promise.resolve({ authorization: `Bearer ${key}` }),
    shouldRetryWithHeaders: () => Promise.resolve(undefined),
  });
}

/** The A2A methods of a Client or a Transport (both have them under the same names). */
function methodsOf(x: Pick<Transport, Methods>): Pick<Transport, Methods> {
  return {
    sendMessage: (p) => x.sendMessage(p),
    sendMessageStream: (p) => x.sendMessageStream(p),
    getTask: (p) => x.getTask(p),
    listTasks: (p) => x.listTasks(p),
    cancelTask: (p) => x.cancelTask(p),
    resubscribeTask: (p) => x.resubscribeTask(p),
    createTaskPushNotificationConfig: (p) => x.createTaskPushNotificationConfig(p),
    getTaskPushNotificationConfig: (p) => x.getTaskPushNotificationConfig(p),
    listTaskPushNotificationConfig: (p) => x.listTaskPushNotificationConfig(p),
    deleteTaskPushNotificationConfig: (p) => x.deleteTaskPushNotificationConfig(p),
  };
}

const V1 = { serviceParameters: { 'A2A-Version': '1.0' } };

function v1Leg(binding: 'JSONRPC' | 'HTTP+JSON', calls: string[]): Leg {
  const seen = new Set<string>();
  return {
    seen,
    calls,
    name: `v1.0 ${binding}`,
    version: '1.0',
    async connect(url, key) {
      const client = await sdkClient(url, binding, recordingFetch(seen, key));
      if (client.transport.protocolName !== binding || client.protocolVersion !== '1.0') {
        throw new Error(`the factory chose ${client.transport.protocolName} ${client.protocolVersion}, not ${binding} 1.0`);
      }
      return {
        ...methodsOf(client),
        extendedCard: () => client.transport.getExtendedAgentCard({ tenant: '' }, V1),
        agentCard: () => client.getAgentCard(),
      };
    },
    code: binding === 'JSONRPC' ? (err) => err?.envelopeCode : (err) => err?.statusCode,
    codes:
      binding === 'JSONRPC'
        ? { taskNotFound: -32001, taskNotCancelable: -32002, unsupported: -32004, noExtendedCard: -32007 }
        : { taskNotFound: 404, taskNotCancelable: 409, unsupported: 400, noExtendedCard: 400 },
  };
}

const legacyLeg: Leg = {
  name: 'v0.3 JSON-RPC',
  version: '0.3',
  seen: new Set(),
  calls: [
    'message/send',
    'message/stream',
    'tasks/get',
    'tasks/cancel',
    'tasks/resubscribe',
    'tasks/pushNotificationConfig/set',
    'tasks/pushNotificationConfig/get',
    'tasks/pushNotificationConfig/list',
    'tasks/pushNotificationConfig/delete',
    'agent/getAuthenticatedExtendedCard',
  ],
  connect(url, key) {
    const transport = new LegacyJsonRpcTransport({ endpoint: url, fetchImpl: recordingFetch(this.seen, key) });
    return Promise.resolve({
      ...methodsOf(transport),
      extendedCard: () => transport.getExtendedAgentCard({ tenant: '' }),
      agentCard: () => transport.getExtendedAgentCard({ tenant: '' }),
    });
  },
  code: (err) => err?.envelopeCode,
  codes: { taskNotFound: -32001, taskNotCancelable: -32002, unsupported: -32004, noExtendedCard: -32007 },
};

/** The v0.3 HTTP+JSON leg: its typed errors carry no code, so the HTTP status of the last refused call stands for it. */
function legacyRestLeg(): Leg {
  const seen = new Set<string>();
  let lastRefusal: number | undefined;
  const watching =
    (inner: typeof fetch): typeof fetch =>
    async (input, init) => {
      const res = await inner(input, init);
      if (!res.ok) lastRefusal = res.status;
      return res;
    };
  return {
    name: 'v0.3 HTTP+JSON',
    version: '0.3',
    seen,
    calls: [
      'POST /v1/message:send',
      'POST /v1/message:stream',
      'GET /v1/tasks/{id}',
      'POST /v1/tasks/{id}:cancel',
      'GET /v1/tasks/{id}:subscribe',
      'POST /v1/tasks/{id}/pushNotificationConfigs',
      'GET /v1/tasks/{id}/pushNotificationConfigs/{configId}',
      'GET /v1/tasks/{id}/pushNotificationConfigs',
      'DELETE /v1/tasks/{id}/pushNotificationConfigs/{configId}',
      'GET /v1/card',
    ],
    connect(url, key) {
      const transport = new LegacyRestTransport({ endpoint: url, fetchImpl: watching(recordingFetch(seen, key)) });
      return Promise.resolve({
        ...methodsOf(transport),
        extendedCard: () => transport.getExtendedAgentCard({ tenant: '' }),
        agentCard: () => transport.getExtendedAgentCard({ tenant: '' }),
      });
    },
    code: () => lastRefusal,
    codes: { taskNotFound: 404, taskNotCancelable: 409, unsupported: 400, noExtendedCard: 400 },
  };
}

const LEGS = [
  v1Leg('JSONRPC', [
    'GET /.well-known/agent-card.json',
    'SendMessage',
    'SendStreamingMessage',
    'GetTask',
    'ListTasks',
    'CancelTask',
    'SubscribeToTask',
    'CreateTaskPushNotificationConfig',
    'GetTaskPushNotificationConfig',
    'ListTaskPushNotificationConfigs',
    'DeleteTaskPushNotificationConfig',
    'GetExtendedAgentCard',
  ]),
  v1Leg('HTTP+JSON', [
    'GET /.well-known/agent-card.json',
    'POST /v1/message:send',
    'POST /v1/message:stream',
    'GET /v1/tasks/{id}',
    'GET /v1/tasks',
    'POST /v1/tasks/{id}:cancel',
    'POST /v1/tasks/{id}:subscribe',
    'POST /v1/tasks/{id}/pushNotificationConfigs',
    'GET /v1/tasks/{id}/pushNotificationConfigs/{configId}',
    'GET /v1/tasks/{id}/pushNotificationConfigs',
    'DELETE /v1/tasks/{id}/pushNotificationConfigs/{configId}',
    'GET /v1/extendedAgentCard',
  ]),
  legacyLeg,
  legacyRestLeg(),
];

const greeting = (srv: TestServer, config?: Parameters<typeof request>[1]) =>
  request(message([textPart('write a greeting')], { metadata: { [URI]: { workspace_path: srv.workspace } } }), config);

const NON_BLOCKING = { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true };

/** [case, state, ToolCall status] per event. */
function summary(events: StreamResponse[]): unknown[] {
  return events.map((r) => {
    const v = r.payload?.value as { status?: Task['status'] } | undefined;
    return [r.payload?.$case ?? 'none', stateOf(v?.status?.state), toolCallOf(r)?.status ?? null];
  });
}

/** The ToolCall DataParts of a task's history. */
function cardsOf(task: Task): any[] {
  return task.history.flatMap((m) => m.parts).flatMap((p) => (p.content?.$case === 'data' ? [p.content.value] : []));
}

async function expectError(t: Test, leg: Leg, p: Promise<unknown>, name: string, code: number, what: string): Promise<void> {
  const err = await rejection(p);
  t.equal(err?.name, name, `${what}: ${name}`);
  t.equal(leg.code(err), code, `${what}: code ${code}`);
}

/** A task paused at the write_file approval, by a blocking sendMessage. */
async function pausedTask(api: Api, srv: TestServer): Promise<Task> {
  const task = (await api.sendMessage(greeting(srv))) as Task;
  if (stateOf(task.status?.state) !== 'input-required') throw new Error(`expected a paused task, got ${stateOf(task.status?.state)}`);
  return task;
}

async function sends(t: Test, srv: TestServer, api: Api): Promise<void> {
  const blocking = await api.sendMessage(greeting(srv));
  t.ok('status' in blocking, 'blocking sendMessage: a Task');
  const task = blocking as Task;
  t.equal(stateOf(task.status?.state), 'input-required', 'it returns once the task pauses');
  t.match(cardsOf(task).at(-1), { tool_name: 'write_file', status: 'PENDING' }, 'the pending card is in the history');

  const quick = (await api.sendMessage(greeting(srv, NON_BLOCKING))) as Task;
  t.not(stateOf(quick.status?.state), 'input-required', 'returnImmediately: back before the pause');
  t.ok(['submitted', 'working'].includes(stateOf(quick.status?.state)), 'a non-final state');
  // Follow the task to its pause through a subscription (the snapshot may already show it).
  for await (const ev of api.resubscribeTask({ tenant: '', id: quick.id })) {
    if (stateOf((ev.payload?.value as Task).status?.state) === 'input-required') break;
  }
  t.equal(stateOf((await api.getTask({ tenant: '', id: quick.id })).status?.state), 'input-required', 'then it pauses');
  for (const id of [task.id, quick.id]) await api.cancelTask({ tenant: '', id, metadata: undefined });
}

async function streamFlow(t: Test, leg: Leg, srv: TestServer, api: Api): Promise<void> {
  const first = await collect(api.sendMessageStream(greeting(srv)));
  t.same(
    summary(first),
    [
      ['task', 'submitted', null],
      ['statusUpdate', 'working', null],
      ['statusUpdate', 'working', 'PENDING'],
      ['statusUpdate', 'input-required', null],
    ],
    'the stream ends at the pause, after the PENDING card',
  );
  const task = first[0].payload!.value as Task;
  const card = toolCallOf(first[2]);
  t.match(card, { tool_name: 'write_file', confirmation_request: { file_edit_details: { file_name: 'hello.txt' } } });
  const confirmation = message([dataPart({ tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' })], {
    taskId: task.id,
    contextId: task.contextId,
  });
  const second = await collect(api.sendMessageStream(request(confirmation)));
  t.same(
    summary(second).map((s) => (s as unknown[])[2]),
    ['EXECUTING', 'SUCCEEDED', null, null, null],
  );
  t.same(summary(second).at(-1), ['statusUpdate', 'completed', null], 'the confirmation resumes it to completion');
  t.equal(readFileSync(path.join(srv.workspace, 'hello.txt'), 'utf8'), 'hello world\n', 'the file was written');

  const full = await api.getTask({ tenant: '', id: task.id });
  t.equal(stateOf(full.status?.state), 'completed');
  t.ok(full.history.length > 2, `the whole history: ${full.history.length} messages`);
  const short = await api.getTask({ tenant: '', id: task.id, historyLength: 2 });
  t.equal(short.history.length, 2, 'historyLength 2: two messages');
  t.same(short.history, full.history.slice(-2), 'the latest ones');

  await expectError(
    t,
    leg,
    api.cancelTask({ tenant: '', id: task.id, metadata: undefined }),
    'TaskNotCancelableError',
    leg.codes.taskNotCancelable,
    'cancel a completed task',
  );
  if (leg.version === '1.0') {
    await expectError(
      t,
      leg,
      collect(api.resubscribeTask({ tenant: '', id: task.id })),
      'UnsupportedOperationError',
      leg.codes.unsupported,
      'subscribe to a completed task',
    );
  } else {
    const again = await collect(api.resubscribeTask({ tenant: '', id: task.id }));
    t.same(summary(again), [['task', 'completed', null]], 'v0.3 resubscribe to a completed task: its snapshot, then the end');
  }
}

async function pausedFlow(t: Test, leg: Leg, srv: TestServer, api: Api): Promise<void> {
  const task = await pausedTask(api, srv);
  if (leg.version === '1.0') {
    const listed = await api.listTasks({
      tenant: '',
      contextId: task.contextId,
      status: 0,
      pageToken: '',
      statusTimestampAfter: undefined,
    });
    t.same(
      listed.tasks.map((x) => [x.id, stateOf(x.status?.state)]),
      [[task.id, 'input-required']],
      'listTasks by context',
    );
    const subscription = api.resubscribeTask({ tenant: '', id: task.id });
    const head: StreamResponse[] = [];
    for (let i = 0; i < 3; i++) head.push((await subscription.next()).value as StreamResponse);
    t.same(
      summary(head),
      [
        ['task', 'input-required', null],
        ['statusUpdate', 'working', 'PENDING'],
        ['statusUpdate', 'input-required', null],
      ],
      'subscribe to a paused task: the snapshot, the waiting card, the pause',
    );
    const canceled = await api.cancelTask({ tenant: '', id: task.id, metadata: undefined });
    t.equal(stateOf(canceled.status?.state), 'canceled', 'cancelTask of a paused task');
    const rest = await collect(subscription);
    t.same(summary(rest).at(-1), ['statusUpdate', 'canceled', null], 'the subscription stayed open and ended at canceled');
  } else {
    const err = await rejection(
      api.listTasks({ tenant: '', contextId: task.contextId, status: 0, pageToken: '', statusTimestampAfter: undefined }),
    );
    if (leg.name === 'v0.3 HTTP+JSON') {
      t.equal(err?.name, 'UnsupportedOperationError', 'v0.3 listTasks: the SDK refuses it itself (no v0.3 REST route)');
    } else {
      t.equal(err?.name, 'JsonRpcTransportError', 'v0.3 listTasks: the SDK refuses it itself');
      t.equal(err?.envelopeCode, -32601, 'Method not found');
    }
    const again = await collect(api.resubscribeTask({ tenant: '', id: task.id }));
    t.same(summary(again).at(-1), ['statusUpdate', 'input-required', null], 'v0.3 resubscribe ends at the pause');
    t.same(summary(again)[0], ['task', 'input-required', null], 'after the snapshot');
    const canceled = await api.cancelTask({ tenant: '', id: task.id, metadata: undefined });
    t.equal(stateOf(canceled.status?.state), 'canceled', 'cancelTask of a paused task');
  }
  t.equal(stateOf((await api.getTask({ tenant: '', id: task.id })).status?.state), 'canceled');
  const unknown = collect(api.resubscribeTask({ tenant: '', id: 'no-such-task' }));
  if (leg.version === '1.0' || leg.name === 'v0.3 HTTP+JSON') {
    // HTTP+JSON refuses before the stream opens: an HTTP error the client reads as the typed error.
    await expectError(t, leg, unknown, 'TaskNotFoundError', leg.codes.taskNotFound, 'subscribe to an unknown task');
  } else {
    // The refusal comes as the stream's one event; the SDK wraps the typed error it rebuilds from it.
    const err = await rejection(unknown);
    t.match(err?.message, /^SSE event contained an error: .* \(Code: -32001\)/, 'v0.3 resubscribe to an unknown task: an SSE error event');
    t.equal(err?.cause?.name, 'TaskNotFoundError', 'its cause: TaskNotFoundError');
    t.equal(leg.code(err?.cause), leg.codes.taskNotFound, 'code -32001');
  }
  await expectError(
    t,
    leg,
    api.getTask({ tenant: '', id: 'no-such-task' }),
    'TaskNotFoundError',
    leg.codes.taskNotFound,
    'get an unknown task',
  );
}

async function pushConfigs(t: Test, srv: TestServer, api: Api): Promise<void> {
  const task = await pausedTask(api, srv);
  const url = 'https://hooks.invalid/a2a';
  const base = { tenant: '', taskId: task.id, url, token: 'tok', authentication: undefined };
  const plain = await api.createTaskPushNotificationConfig({ ...base, id: '' });
  t.match(plain, { id: 'default', taskId: task.id, url, token: 'tok' }, 'no id given: the stable id "default"');
  const named = await api.createTaskPushNotificationConfig({ ...base, id: 'cfg-named', url: `${url}/named` });
  t.match(named, { id: 'cfg-named', url: `${url}/named` });
  t.match(await api.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'cfg-named' }), { id: 'cfg-named', taskId: task.id });
  t.match(await api.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'default' }), { id: 'default', url });
  const listed = await api.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
  t.same(listed.configs.map((c) => c.id).sort(), ['cfg-named', 'default'], 'both listed');
  await api.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'cfg-named' });
  const after = await api.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
  t.same(
    after.configs.map((c) => c.id),
    ['default'],
    'deleted',
  );
  await api.cancelTask({ tenant: '', id: task.id, metadata: undefined });
}

async function extendedCard(t: Test, leg: Leg, open: Api): Promise<void> {
  const dir = t.testdir({});
  const file = path.join(dir, 'auth.json');
  writeFileSync(file, JSON.stringify({ api_keys: [{ key: KEY, principal: 'alice', roles: ['approver'] }] }));
  const srv = await startServer(t, { env: { AUTH_CONFIG: file } });
  const api = await leg.connect(srv.url, KEY);
  const card = await api.agentCard();
  const skills = card.skills.map((s) => s.id);
  t.ok(skills.includes('tool:write_file') && skills.includes('development'), 'the extended card: the tools as skills');
  t.same(
    (await api.extendedCard()).skills.map((s) => s.id),
    skills,
  );
  await expectError(t, leg, open.extendedCard(), 'ExtendedAgentCardNotConfiguredError', leg.codes.noExtendedCard, 'without authentication');
}

async function directMessage(t: Test, leg: Leg): Promise<void> {
  const srv = await startServer(t, { script: loadModelScript(CONFORMANCE_SCRIPT_FILE) });
  const api = await leg.connect(srv.url);
  const result = await api.sendMessage(request(message([textPart('Hello')], { messageId: `tck-message-response-${leg.name}` })));
  t.notOk('status' in result, 'not a Task');
  const reply = result as Message;
  t.same(
    reply.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : p.content?.$case)),
    ['Direct message response'],
    'a Message',
  );
  t.ok(reply.taskId, 'naming the task it is kept in');
}

for (const leg of LEGS) {
  t.test(`every method with the SDK over ${leg.name}`, async (t) => {
    const srv = await startServer(t);
    const api = await leg.connect(srv.url);
    await t.test('sendMessage: blocking and returnImmediately', (t) => sends(t, srv, api));
    await t.test('sendMessageStream with a confirmation; getTask; cancel and subscribe when completed', (t) =>
      streamFlow(t, leg, srv, api),
    );
    await t.test('a paused task: listTasks, resubscribe, cancel; unknown tasks', (t) => pausedFlow(t, leg, srv, api));
    await t.test('push notification configs: create, get, list, delete', (t) => pushConfigs(t, srv, api));
    await t.test('getExtendedAgentCard', (t) => extendedCard(t, leg, api));
    await t.test('a direct Message answer', (t) => directMessage(t, leg));
    t.same([...leg.seen].sort(), [...leg.calls].sort(), 'every method of the binding went over the wire, and nothing else');
  });
}
