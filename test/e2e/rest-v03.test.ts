/**
 * A2A v0.3's HTTP+JSON binding on the wire, as a client without the SDK sees it: requests that
 * name no A2A-Version on the `/v1/...` paths speak 0.3 (v1.0 §3.6.2), with the v0.3 proto's JSON
 * bodies (`content`, `ROLE_USER`, `TASK_STATE_INPUT_REQUIRED`, parts as a oneof), proto field
 * names accepted beside the JSON names, `{code, message}` error bodies under the HTTP status of
 * the code, and SSE frames with event ids that a `:subscribe` resumes after. The SDK's
 * LegacyRestTransport round trip of every method is in sdk-methods.test.ts.
 */
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startServer, URI } from '../support/server.js';
import type { TestServer } from '../support/server.js';
import { parseSse } from '../support/sse.js';

const JSON_TYPE = { 'content-type': 'application/json' };

/** A v0.3 request (no A2A-Version header) to the binding. */
const v03 = (srv: TestServer, p: string, init: RequestInit = {}) => fetch(new URL(`v1${p}`, srv.url), init);

const post = (srv: TestServer, p: string, body: unknown, headers: Record<string, string> = {}) =>
  v03(srv, p, { method: 'POST', headers: { ...JSON_TYPE, ...headers }, body: JSON.stringify(body) });

let n = 0;
const greeting = (srv: TestServer, extra: Record<string, unknown> = {}) => ({
  message: {
    messageId: `m-${++n}`,
    role: 'ROLE_USER',
    content: [{ text: 'write a greeting' }],
    metadata: { [URI]: { workspace_path: srv.workspace } },
    ...extra,
  },
});

/** The ToolCall of a v0.3 StreamResponse frame's status update, if it carries one. */
const toolCallOf = (frame: any): any => frame?.statusUpdate?.status?.message?.content?.find((p: any) => p.data)?.data?.data;

t.test('message:send: a proto-JSON SendMessageRequest, a SendMessageResponse {task} at the pause', async (t) => {
  const srv = await startServer(t);
  const res = await post(srv, '/message:send', greeting(srv));
  t.equal(res.status, 200);
  const body = (await res.json()) as any;
  t.same(Object.keys(body), ['task'], 'the oneof: task');
  const task = body.task;
  t.equal(task.status.state, 'TASK_STATE_INPUT_REQUIRED', 'a blocking send returns at the pause (no configuration: it waits)');
  t.equal(task.history[0].role, 'ROLE_USER');
  t.same(task.history[0].content, [{ text: 'write a greeting' }], 'parts as `content`, a text part as {text}');
  const card = task.history.flatMap((m: any) => m.content).find((p: any) => p.data)?.data?.data;
  t.match(
    card,
    { tool_name: 'write_file', status: 'PENDING' },
    'the ToolCall DataPart as {data: {data: …}}, its fields as the RFC names them',
  );
  t.notOk('kind' in task || 'kind' in task.history[0], 'no JSON-RPC `kind` discriminators');

  const get = await v03(srv, `/tasks/${task.id}?history_length=1`);
  t.equal(get.status, 200);
  const got = (await get.json()) as any;
  t.equal(got.id, task.id);
  t.equal(got.history.length, 1, 'the proto field name history_length is read too');

  const cancel = await v03(srv, `/tasks/${task.id}:cancel`, { method: 'POST' });
  t.equal(((await cancel.json()) as any).status.state, 'TASK_STATE_CANCELLED', 'the v0.3 proto spelling');
});

t.test('configuration without blocking: proto3 reads it as false, so the send returns before the pause', async (t) => {
  const srv = await startServer(t);
  const res = await post(srv, '/message:send', { ...greeting(srv), configuration: { acceptedOutputModes: ['text/plain'] } });
  const { task } = (await res.json()) as any;
  t.ok(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING'].includes(task.status.state), `returned at ${task.status.state}`);
  const blocking = await post(srv, '/message:send', { ...greeting(srv), configuration: { blocking: true } });
  t.equal(((await blocking.json()) as any).task.status.state, 'TASK_STATE_INPUT_REQUIRED', 'blocking: true waits');
});

t.test('message:stream: the development-tool flow with a confirmation, proto names in, SSE ids out', async (t) => {
  const srv = await startServer(t);
  // Proto field names (message_id, request) are as good as the JSON names.
  const first = await post(srv, '/message:stream', {
    request: {
      message_id: 'm-proto-names',
      role: 'ROLE_USER',
      content: [{ text: 'write a greeting' }],
      metadata: { [URI]: { workspace_path: srv.workspace } },
    },
  });
  t.equal(first.status, 200);
  t.match(first.headers.get('content-type'), /^text\/event-stream/);
  const frames = parseSse(await first.text());
  t.same(
    frames.map((f) => Object.keys(f.data)[0]),
    ['task', 'statusUpdate', 'statusUpdate', 'statusUpdate'],
  );
  t.ok(
    frames.every((f) => /^\d+$/.test(f.id ?? '')),
    'every frame has an event id',
  );
  const pause = frames.at(-1)!.data.statusUpdate;
  t.equal(pause.status.state, 'TASK_STATE_INPUT_REQUIRED');
  t.equal(pause.final, true, 'a pause ends the v0.3 stream: final');
  const card = toolCallOf(frames[2].data);
  t.match(card, { tool_name: 'write_file', status: 'PENDING' });
  const { id: taskId, contextId } = frames[0].data.task;

  // Resume after the second frame: the task as it is now (a snapshot, not a logged event), then exactly the frames after it.
  const resumed = await v03(srv, `/tasks/${taskId}:subscribe`, { headers: { 'last-event-id': frames[1].id! } });
  const after = parseSse(await resumed.text());
  t.match(after[0], { id: undefined, data: { task: { id: taskId, status: { state: 'TASK_STATE_INPUT_REQUIRED' } } } });
  t.same(
    after.slice(1).map((f) => f.id),
    frames.slice(2).map((f) => f.id),
    'subscribe with Last-Event-ID: the frames after it, no duplicate, no gap',
  );

  const confirmation = {
    message: {
      messageId: 'm-confirm',
      role: 'ROLE_USER',
      taskId,
      contextId,
      content: [{ data: { data: { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' } } }],
    },
  };
  const second = parseSse(await (await post(srv, '/message:stream', confirmation)).text());
  t.same(second.map((f) => toolCallOf(f.data)?.status).filter(Boolean), ['EXECUTING', 'SUCCEEDED']);
  t.equal(second.at(-1)!.data.statusUpdate.status.state, 'TASK_STATE_COMPLETED');
  t.equal(second.at(-1)!.data.statusUpdate.final, true);
  t.equal(readFileSync(path.join(srv.workspace, 'hello.txt'), 'utf8'), 'hello world\n', 'the file was written');
});

t.test('push configs: named tasks/{id}/pushNotificationConfigs/{configId}', async (t) => {
  const srv = await startServer(t);
  const { task } = (await (await post(srv, '/message:send', greeting(srv))).json()) as any;
  const url = 'https://hooks.invalid/a2a';
  const created = await post(srv, `/tasks/${task.id}/pushNotificationConfigs`, { pushNotificationConfig: { url, token: 'tok' } });
  t.equal(created.status, 201);
  t.same(await created.json(), {
    name: `tasks/${task.id}/pushNotificationConfigs/default`,
    pushNotificationConfig: { id: 'default', url, token: 'tok' },
  });
  const other = await post(srv, `/tasks/${task.id}/pushNotificationConfigs`, {
    name: 'tasks/another-task/pushNotificationConfigs/x',
    pushNotificationConfig: { url },
  });
  t.equal(other.status, 400, 'a name for another task than the path’s is refused');
  t.match(await other.json(), { code: -32602, message: /is not a config of this path's task/ });
  const listed = (await (await v03(srv, `/tasks/${task.id}/pushNotificationConfigs`)).json()) as any;
  t.same(
    listed.configs.map((c: any) => c.name),
    [`tasks/${task.id}/pushNotificationConfigs/default`],
  );
  const gone = await v03(srv, `/tasks/${task.id}/pushNotificationConfigs/default`, { method: 'DELETE' });
  t.equal(gone.status, 204);
  const again = await v03(srv, `/tasks/${task.id}/pushNotificationConfigs/default`);
  t.equal(again.status, 400, 'a config id the task does not have: invalid params, as on JSON-RPC');
  t.match(await again.json(), { code: -32602 });
});

t.test('errors: {code, message} under the HTTP status of the code', async (t) => {
  const srv = await startServer(t);
  const expectError = async (res: Response, status: number, code: number, mentions?: RegExp) => {
    t.equal(res.status, status, `HTTP ${status}`);
    const body = (await res.json()) as any;
    t.equal(body.code, code, `code ${code}`);
    if (mentions) t.match(body.message, mentions);
  };
  await expectError(await v03(srv, '/tasks/no-such-task'), 404, -32001, /no-such-task/);
  await expectError(await v03(srv, '/tasks/no-such-task:cancel', { method: 'POST' }), 404, -32001);
  await expectError(await v03(srv, '/tasks/no-such-task:subscribe'), 404, -32001, undefined);
  const badRole = { message: { messageId: 'm-bad', role: 'user', content: [{ text: 'hi' }] } };
  await expectError(await post(srv, '/message:send', badRole), 400, -32602, /message\.role must be "ROLE_USER" or "ROLE_AGENT"/);
  await expectError(
    await post(srv, '/message:send', { message: { role: 'ROLE_USER', content: [{ image: 'x' }] } }),
    400,
    -32602,
    /content\[0\]/,
  );
  await expectError(
    await post(srv, '/message:send', { message: { role: 'ROLE_USER', content: [{ text: 'hi' }] } }),
    400,
    -32602,
    /messageId/,
  );
  const text = await v03(srv, '/message:send', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hello' });
  await expectError(text, 415, -32005);
  await expectError(await v03(srv, '/tasks/x?historyLength=-1'), 400, -32602, /historyLength/);
  await expectError(await v03(srv, '/card'), 400, -32007, undefined);
  // v1.0-only routes, asked without a version: the v0.3 binding has none, and says which header to send.
  await expectError(await v03(srv, '/tasks'), 404, -32601, /A2A-Version: 1\.0/);
  await expectError(await v03(srv, '/extendedAgentCard'), 404, -32601, /A2A-Version: 1\.0/);
  await expectError(await v03(srv, '/nowhere'), 404, -32601);
  // Hostile paths: a broken percent-escape is refused; an escaped slash or dot-dot is only a task id that does not exist.
  // (Fastify refuses a broken escape itself, before any route: its own body.)
  const broken = await v03(srv, '/tasks/%E0%A4%A');
  t.equal(broken.status, 400);
  t.match(await broken.json(), { message: /is not a valid url component/ });
  await expectError(await v03(srv, '/tasks/..%2F..%2Fetc%2Fpasswd'), 404, -32001, /\.\.\/\.\.\/etc\/passwd/);
  await expectError(await v03(srv, '/tasks/constructor/pushNotificationConfigs/__proto__'), 404, -32001);
  // A named 0.3 is the same binding; a version nobody speaks is refused.
  await expectError(await v03(srv, '/tasks/no-such-task', { headers: { 'a2a-version': '0.3' } }), 404, -32001);
  const unknown = await v03(srv, '/tasks/no-such-task', { headers: { 'a2a-version': '0.9' } });
  t.equal(unknown.status, 400, 'A2A-Version 0.9: 400');
  t.match(await unknown.json(), { error: { details: [{ reason: 'VERSION_NOT_SUPPORTED' }] } });
});

t.test('the card offers it: v0.3 additionalInterfaces and a 0.3 HTTP+JSON interface at the root', async (t) => {
  const srv = await startServer(t);
  const card = (await (await fetch(new URL('.well-known/agent-card.json', srv.url))).json()) as any;
  t.same(card.additionalInterfaces, [
    { url: srv.url, transport: 'HTTP+JSON' },
    { url: srv.url, transport: 'JSONRPC' },
  ]);
  t.match(card.supportedInterfaces, [
    { protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    { protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', url: `${srv.url}v1` },
    { protocolBinding: 'HTTP+JSON', protocolVersion: '0.3', url: srv.url },
    { protocolBinding: 'JSONRPC', protocolVersion: '0.3', url: srv.url },
  ]);
  t.equal(card.supportedInterfaces.length, 4, 'those four, no more');
});

t.test('authentication: 401 with a challenge and the v0.3 body; a key gets through', async (t) => {
  const dir = t.testdir({});
  const file = path.join(dir, 'auth.json');
  writeFileSync(file, JSON.stringify({ api_keys: [{ key: 'v03-key-0123456789abcdef', principal: 'alice', roles: ['approver'] }] }));
  const srv = await startServer(t, { env: { AUTH_CONFIG: file } });
  const refused = await post(srv, '/message:send', greeting(srv));
  t.equal(refused.status, 401);
  t.ok(refused.headers.get('www-authenticate'), 'a challenge');
  t.match(await refused.json(), { code: -32011, message: /^Unauthorized: / });
  const key = { authorization: 'Bearer v03-key-0123456789abcdef' };
  const sent = await post(srv, '/message:send', greeting(srv), key);
  t.equal(((await sent.json()) as any).task.status.state, 'TASK_STATE_INPUT_REQUIRED');
  const card = (await (await v03(srv, '/card', { headers: key })).json()) as any;
  t.ok(
    card.skills.some((s: any) => s.id === 'tool:write_file'),
    'GET /v1/card: the extended card, tools as skills',
  );
  const schemes = Object.values(card.securitySchemes as Record<string, object>);
  t.ok(schemes.length > 0, 'security schemes are declared');
  t.ok(
    schemes.every((s) => Object.keys(s).length === 1 && /SecurityScheme$/.test(Object.keys(s)[0])),
    'each in the proto oneof form ({apiKeySecurityScheme: …}, {httpAuthSecurityScheme: …})',
  );
});
