/**
 * The A2A v1.0 HTTP+JSON binding (§11), driven by the real @a2a-js/sdk 1.3.0 client with its
 * REST transport (ClientFactory, preferredTransports ['HTTP+JSON']): every method round trip,
 * the development-tool flow (a ToolCall card, then a confirmation over message:stream), and
 * raw HTTP checks of the error statuses and google.rpc.Status bodies (§11.6, §5.4).
 *
 * What the SDK client does (found while writing these tests): RestTransport appends the §11.3
 * paths (`/message:send`, `/tasks/{id}:cancel`, …) to the interface URL the card gives, so the
 * `/v1` prefix is the card's business; it POSTs `:subscribe` (the proto says GET: both served);
 * errors come back as typed SDK errors rebuilt from the body's ErrorInfo `reason`.
 */
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { StreamResponse, Task } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { startServer, URI } from '../support/server.js';
import type { TestServer } from '../support/server.js';
import { dataPart, sdkMessage as message, sendRequest as request, textPart } from '../support/sdk-messages.js';
import { collect, pathOf, rejection, sdkClient, stateOf, toolCallOf } from '../support/sdk-client.js';
import { WebhookReceiver } from '../support/webhook.js';
import type { Test } from '../support/tool-call-watch.js';

function summary(events: StreamResponse[]): unknown[] {
  return events.map((r) => {
    if (r.payload?.$case === 'task') return ['task', stateOf(r.payload.value.status?.state)];
    if (r.payload?.$case === 'statusUpdate') {
      const u = r.payload.value;
      return ['statusUpdate', stateOf(u.status?.state), u.metadata?.[URI]?.kind ?? null, toolCallOf(r)?.status ?? null];
    }
    return [r.payload?.$case ?? 'none'];
  });
}

/** A REST client from the card, every request's method and path recorded. */
async function restClient(srv: TestServer): Promise<{ client: Client; seen: string[] }> {
  const seen: string[] = [];
  const fetchImpl: typeof fetch = (input, init) => {
    seen.push(`${init?.method ?? 'GET'} ${pathOf(input)}`);
    return fetch(input, init);
  };
  const client = await sdkClient(srv.url, 'HTTP+JSON', fetchImpl);
  seen.length = 0; // the card fetch
  return { client, seen };
}

/** Starts the greeting task and reads its stream up to the pause: [task, card event, all events]. */
async function pausedTask(client: Client, srv: TestServer): Promise<{ task: Task; card: any; events: StreamResponse[] }> {
  const settings = { [URI]: { workspace_path: srv.workspace } };
  const events = await collect(client.sendMessageStream(request(message([textPart('write a greeting')], { metadata: settings }))));
  return { task: events[0].payload!.value as Task, card: toolCallOf(events[2]), events };
}

/** A request to the binding, speaking v1.0 (§3.6.1: clients send A2A-Version) unless `init` says otherwise. */
const raw = (srv: TestServer, p: string, init: RequestInit = {}) =>
  fetch(new URL(`v1${p}`, srv.url), {
    ...init,
    headers: { 'a2a-version': '1.0', ...(init.headers as Record<string, string> | undefined) },
  });

t.test('the card declares the HTTP+JSON interface at /v1, beside JSON-RPC', async (t) => {
  const srv = await startServer(t);
  const { client } = await restClient(srv);
  t.equal(client.transport.protocolName, 'HTTP+JSON');
  t.equal(client.protocolVersion, '1.0');
  const card = await client.getAgentCard();
  t.same(
    card.supportedInterfaces.map((i) => [i.url, i.protocolBinding, i.protocolVersion]),
    [
      [srv.url, 'JSONRPC', '1.0'],
      [`${srv.url}v1`, 'HTTP+JSON', '1.0'],
      [srv.url, 'HTTP+JSON', '0.3'],
      [srv.url, 'JSONRPC', '0.3'],
    ],
  );
});

t.test('the development-tool flow over message:stream, then get and cancel', async (t) => {
  const srv = await startServer(t);
  const { client, seen } = await restClient(srv);
  const { task, card, events } = await pausedTask(client, srv);
  t.same(summary(events), [
    ['task', 'submitted'],
    ['statusUpdate', 'working', 'STATE_CHANGE', null],
    ['statusUpdate', 'working', 'TOOL_CALL_UPDATE', 'PENDING'],
    ['statusUpdate', 'input-required', 'STATE_CHANGE', null],
  ]);
  t.match(card, { tool_name: 'write_file', status: 'PENDING', confirmation_request: { file_edit_details: { file_name: 'hello.txt' } } });
  const confirmation = message([dataPart({ tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' })], {
    taskId: task.id,
    contextId: task.contextId,
  });
  const second = await collect(client.sendMessageStream(request(confirmation)));
  t.same(summary(second), [
    ['statusUpdate', 'working', 'TOOL_CALL_UPDATE', 'EXECUTING'],
    ['statusUpdate', 'working', 'TOOL_CALL_UPDATE', 'SUCCEEDED'],
    ['statusUpdate', 'working', 'TEXT_CONTENT', null],
    ['statusUpdate', 'working', 'TEXT_CONTENT', null],
    ['statusUpdate', 'completed', 'STATE_CHANGE', null],
  ]);
  t.equal(toolCallOf(second[1]).tool_call_id, card.tool_call_id, 'the same tool_call_id on every update');
  t.equal(readFileSync(path.join(srv.workspace, 'hello.txt'), 'utf8'), 'hello world\n', 'the file was written');

  const got = await client.getTask({ tenant: '', id: task.id, historyLength: 1 });
  t.equal(stateOf(got.status?.state), 'completed');
  t.ok(got.history.length <= 1, 'historyLength is honoured');
  const err = await rejection(client.cancelTask({ tenant: '', id: task.id, metadata: undefined }));
  t.equal(err?.name, 'TaskNotCancelableError', 'cancel on a completed task: the typed SDK error');
  t.equal(err?.statusCode, 409, 'HTTP 409 (§5.4)');
  t.same(seen, ['POST /v1/message:stream', 'POST /v1/message:stream', `GET /v1/tasks/${task.id}`, `POST /v1/tasks/${task.id}:cancel`]);
});

t.test('message:send, list, subscribe and cancel of a paused task', async (t) => {
  const srv = await startServer(t);
  const { client } = await restClient(srv);
  const settings = { [URI]: { workspace_path: srv.workspace } };
  const sent = await client.sendMessage(request(message([textPart('write a greeting')], { metadata: settings })));
  t.ok('status' in sent, 'a Task');
  const task = sent as Task;
  t.equal(stateOf(task.status?.state), 'input-required', 'message:send waits until the task pauses');

  const listed = await client.listTasks({ tenant: '', contextId: task.contextId, status: 0, pageToken: '' } as never);
  t.same(
    listed.tasks.map((x) => x.id),
    [task.id],
    'ListTasks by context',
  );

  // A v1.0 subscription lasts until the task is in a terminal state: here, until it is canceled.
  const subscription = client.resubscribeTask({ tenant: '', id: task.id });
  const again: StreamResponse[] = [];
  for (let i = 0; i < 3; i++) again.push((await subscription.next()).value as StreamResponse);
  t.same(
    summary(again).map((s) => (s as unknown[]).slice(0, 2)),
    [
      ['task', 'input-required'],
      ['statusUpdate', 'working'],
      ['statusUpdate', 'input-required'],
    ],
    'subscribe to a paused task: the snapshot, the waiting card and the pause again',
  );
  t.equal(toolCallOf(again[1])?.status, 'PENDING');

  const canceled = await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
  t.equal(stateOf(canceled.status?.state), 'canceled');
  const rest = summary(await collect(subscription)).map((s) => (s as unknown[]).slice(0, 2));
  t.same(rest.at(-1), ['statusUpdate', 'canceled'], 'the subscription went on past the pause and ended at the terminal state');
  const got = await client.getTask({ tenant: '', id: task.id });
  t.equal(stateOf(got.status?.state), 'canceled');
});

t.test('SSE ids and Last-Event-ID resume on :subscribe (GET, as the proto has it)', async (t) => {
  const srv = await startServer(t);
  const res = await raw(srv, '/message:stream', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({
      message: {
        messageId: randomUUID(),
        role: 'ROLE_USER',
        parts: [{ text: 'write a greeting' }],
        metadata: { [URI]: { workspace_path: srv.workspace } },
      },
    }),
  });
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^text\/event-stream/);
  const text = await res.text();
  const frames = text.split('\n\n').filter((f) => f.includes('data:'));
  const ids = frames.map((f) => /^id: (\d+)$/m.exec(f)?.[1]);
  t.ok(
    ids.every((id) => id !== undefined),
    'every event of a new task is logged and carries its SSE id',
  );
  const first = JSON.parse(/^data: (.*)$/m.exec(frames[0])![1]);
  t.match(first, { task: { status: { state: 'TASK_STATE_SUBMITTED' } } }, 'StreamResponse JSON, proto enum names');
  const taskId = first.task.id as string;

  const resumed = await raw(srv, `/tasks/${taskId}:subscribe`, { headers: { 'last-event-id': ids[1]! } });
  t.equal(resumed.status, 200);
  // The task is paused: the subscription lasts until it ends (cancel it once the stream is open).
  const cancel = await raw(srv, `/tasks/${taskId}:cancel`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  t.equal(cancel.status, 200);
  const again = (await resumed.text()).split('\n\n').filter((f) => f.includes('data:'));
  const againIds = again.map((f) => /^id: (\d+)$/m.exec(f)?.[1]);
  t.same(againIds.slice(0, ids.length - 1), [undefined, ...ids.slice(2)], 'the snapshot, then what came after the given id');
  t.ok(againIds.length > ids.length - 1, 'then what the cancel produced');
  t.match(JSON.parse(/^data: (.*)$/m.exec(again.at(-1)!)![1]), { statusUpdate: { status: { state: 'TASK_STATE_CANCELED' } } });
  const bad = await raw(srv, `/tasks/${taskId}:subscribe`, { headers: { 'last-event-id': 'x' } });
  t.equal(bad.status, 400, 'a bad Last-Event-ID is a 400 before any SSE byte');
});

t.test('push notification config CRUD', async (t) => {
  const srv = await startServer(t, { env: { PUSH_ALLOW_PRIVATE: '1', PUSH_MAX_ATTEMPTS: '1' } });
  const hook = await WebhookReceiver.start(t);
  const { client, seen } = await restClient(srv);
  const { task } = await pausedTask(client, srv);
  seen.length = 0;
  const cfg = { tenant: '', id: 'cfg-rest', taskId: task.id, url: hook.url('/rest'), token: 'tok', authentication: undefined };
  const created = await client.createTaskPushNotificationConfig(cfg);
  t.match(created, { id: 'cfg-rest', taskId: task.id, url: hook.url('/rest'), token: 'tok' });
  const got = await client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'cfg-rest' });
  t.match(got, { id: 'cfg-rest', url: hook.url('/rest') });
  const listed = await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
  t.same(
    listed.configs.map((c) => c.id),
    ['cfg-rest'],
  );
  await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'cfg-rest' });
  const after = await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
  t.same(after.configs, [], 'deleted');
  t.same(seen, [
    `POST /v1/tasks/${task.id}/pushNotificationConfigs`,
    `GET /v1/tasks/${task.id}/pushNotificationConfigs/cfg-rest`,
    `GET /v1/tasks/${task.id}/pushNotificationConfigs`,
    `DELETE /v1/tasks/${task.id}/pushNotificationConfigs/cfg-rest`,
    `GET /v1/tasks/${task.id}/pushNotificationConfigs`,
  ]);
  await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
});

const errorBody = (status: number, name: string, reason?: string) => ({
  error: {
    code: status,
    status: name,
    message: String,
    details: reason ? [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-protocol.org' }] : [],
  },
});

async function expectError(t: Test, res: Response, status: number, name: string, reason?: string): Promise<void> {
  t.equal(res.status, status, `HTTP ${status}`);
  t.match(res.headers.get('content-type'), /^application\/json/);
  t.match(await res.json(), errorBody(status, name, reason));
}

t.test('errors: HTTP statuses and google.rpc.Status bodies (§11.6, §5.4)', async (t) => {
  const srv = await startServer(t);
  const json = { 'content-type': 'application/json' };
  const send = (body: string, headers: Record<string, string> = json) => raw(srv, '/message:send', { method: 'POST', headers, body });
  await expectError(t, await raw(srv, '/tasks/no-such-task'), 404, 'NOT_FOUND', 'TASK_NOT_FOUND');
  await expectError(t, await raw(srv, '/tasks/no-such-task:cancel', { method: 'POST' }), 404, 'NOT_FOUND', 'TASK_NOT_FOUND');
  await expectError(t, await raw(srv, '/tasks/no-such-task:subscribe', { method: 'POST' }), 404, 'NOT_FOUND', 'TASK_NOT_FOUND');
  await expectError(t, await send('{"message": {"role": "ROLE_USER"'), 400, 'INVALID_ARGUMENT', 'INVALID_PARAMS');
  await expectError(t, await send('{}'), 400, 'INVALID_ARGUMENT', 'INVALID_PARAMS');
  await expectError(t, await send('hello', { 'content-type': 'text/plain' }), 415, 'INVALID_ARGUMENT', 'CONTENT_TYPE_NOT_SUPPORTED');
  await expectError(t, await send('<a/>', { 'content-type': 'application/xml' }), 415, 'INVALID_ARGUMENT', 'CONTENT_TYPE_NOT_SUPPORTED');
  await expectError(t, await raw(srv, '/tasks', { headers: { 'a2a-version': '9.9' } }), 400, 'UNIMPLEMENTED', 'VERSION_NOT_SUPPORTED');
  await expectError(t, await raw(srv, '/tasks?pageSize=0'), 400, 'INVALID_ARGUMENT', 'INVALID_PARAMS');
  await expectError(t, await raw(srv, '/tasks?status=sleeping'), 400, 'INVALID_ARGUMENT', 'INVALID_PARAMS');
  await expectError(t, await raw(srv, '/extendedAgentCard'), 400, 'FAILED_PRECONDITION', 'EXTENDED_AGENT_CARD_NOT_CONFIGURED');
  await expectError(t, await raw(srv, '/nowhere'), 404, 'NOT_FOUND');
  await expectError(t, await raw(srv, '/tasks/x:explode', { method: 'POST' }), 404, 'NOT_FOUND');
  const ok = await raw(srv, '/tasks', { headers: { 'a2a-version': '1.0' } });
  t.equal(ok.status, 200, 'A2A-Version 1.0 is accepted');
  t.match(await ok.json(), { pageSize: Number });
});

t.test('authentication: 401 with a challenge in this binding’s body, the same keys as JSON-RPC', async (t) => {
  const dir = t.testdir({});
  const file = path.join(dir, 'auth.json');
  writeFileSync(file, JSON.stringify({ api_keys: [{ key: 'alice-key-0123456789abcdef', principal: 'alice', roles: ['approver'] }] }));
  const srv = await startServer(t, { env: { AUTH_CONFIG: file } });
  const res = await raw(srv, '/tasks');
  t.equal(res.status, 401);
  t.ok(res.headers.get('www-authenticate'), 'a challenge');
  t.match(await res.json(), errorBody(401, 'UNAUTHENTICATED'));
  const ok = await raw(srv, '/tasks', { headers: { authorization: 'Bearer alice-key-0123456789abcdef' } });
  t.equal(ok.status, 200, 'a known key passes');
});
