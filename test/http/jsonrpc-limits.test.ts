/**
 * Issue 10, finding 11, over HTTP: JSON-RPC notifications get no answer (HTTP 204) yet take
 * effect where that makes sense; oversized ids and metadata and deep nesting are refused with
 * -32602 naming the field, before anything is stored.
 */
import t from 'tap';
import { rpc } from '../support/sse.js';
import { buildServer, dataOf, URI, userMessage } from '../support/server.js';

/** A raw JSON-RPC body posted through app.inject. */
async function post(app: Awaited<ReturnType<typeof buildServer>>['app'], body: unknown) {
  const res = await app.inject({
    method: 'POST',
    url: '/',
    headers: { host: '127.0.0.1', 'content-type': 'application/json' },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.statusCode, body: res.body, type: String(res.headers['content-type'] ?? '') };
}

/** `{"d":{"d":…"x"…}}` nested `levels` deep, as JSON text (JSON.stringify of such a value overflows the test's stack). */
const nested = (levels: number): string => '{"d":'.repeat(levels) + '"x"' + '}'.repeat(levels);

/** A request's JSON with `"<key>": <raw JSON>` added to its params. */
const withRaw = (method: string, params: Record<string, unknown>, key: string, raw: string): string =>
  `{"jsonrpc":"2.0","id":1,"method":"${method}","params":${JSON.stringify(params).slice(0, -1)},"${key}":${raw}}}`;

t.test('notifications (no id member): no answer, HTTP 204, the effect happens', async (t) => {
  const srv = await buildServer(t);
  const paused = await rpc(srv.app, 'message/stream', {
    message: userMessage('write for the notification test', { metadata: { [URI]: { workspace_path: srv.workspace } } }),
  });
  const task = paused.events![0].data.result;
  t.ok(dataOf(paused.events!.at(-2)!.data.result)?.tool_call_id, 'paused on a card');

  const get = await post(srv.app, { jsonrpc: '2.0', method: 'tasks/get', params: { id: task.id } });
  t.same([get.status, get.body], [204, ''], 'tasks/get as a notification: 204, no body');
  // One that cannot be carried out at all is answered (id null): A2A's conformance suite makes
  // that a MUST (v0.3 mandatory test_rejects_invalid_json_rpc_requests).
  const unknown = await post(srv.app, { jsonrpc: '2.0', method: 'tasks/frobnicate', params: {} });
  t.equal(unknown.status, 200, 'an unknown method as a notification is answered');
  t.match(JSON.parse(unknown.body), { id: null, error: { code: -32601 } });
  const unparsable = await post(srv.app, { jsonrpc: '2.0', method: 'message/send', params: { '': 'not_a_dict' } });
  t.match(JSON.parse(unparsable.body), { id: null, error: { code: -32602 } }, 'so are params that do not parse');
  const badId = await post(srv.app, { jsonrpc: '2.0', id: { bad: 'type' }, method: 'message/send', params: {} });
  t.match(JSON.parse(badId.body), { id: null, error: { code: -32600, message: /id must be a string, a number or null/ } });
  const badVersion = await post(srv.app, { jsonrpc: 'aaa', id: 3, method: 'message/send', params: {} });
  t.match(JSON.parse(badVersion.body), { id: 3, error: { code: -32600, message: /jsonrpc must be "2.0"/ } }, 'checked before params');
  const bad = await post(srv.app, { jsonrpc: '2.0', method: 'tasks/get', params: { id: 'no-such-task' } });
  t.same([bad.status, bad.body], [204, ''], 'nor a task-not-found');

  const nullId = await post(srv.app, { jsonrpc: '2.0', id: null, method: 'tasks/get', params: { id: task.id } });
  t.equal(nullId.status, 200, '"id": null is a request, not a notification');
  t.equal(JSON.parse(nullId.body).id, null);
  t.equal(JSON.parse(nullId.body).result?.status?.state, 'input-required');

  const cancel = await post(srv.app, { jsonrpc: '2.0', method: 'tasks/cancel', params: { id: task.id } });
  t.same([cancel.status, cancel.body], [204, ''], 'tasks/cancel as a notification: 204');
  t.equal((await rpc(srv.app, 'tasks/get', { id: task.id })).json?.result?.status?.state, 'canceled', '…and the task was canceled');

  const started = await post(srv.app, {
    jsonrpc: '2.0',
    method: 'message/stream',
    params: { message: userMessage('hello from a notification', { contextId: 'ctx-notified' }) },
  });
  t.same([started.status, started.body], [204, ''], 'message/stream as a notification: 204, no stream');
  const list = await rpc(srv.app, 'ListTasks', { contextId: 'ctx-notified' }, { version: '1.0' });
  t.equal(list.json?.result?.tasks?.length, 1, '…and its message started a task, which goes on');

  const invalid = await post(srv.app, { method: 'tasks/get', params: { id: task.id } });
  t.equal(invalid.status, 200, 'without jsonrpc "2.0" it is no valid request, so no notification: an error is answered');
  t.equal(JSON.parse(invalid.body).error?.code, -32600);
});

t.test('sizes and nesting: -32602 naming the field, nothing stored', async (t) => {
  const srv = await buildServer(t);
  const before = (await rpc(srv.app, 'ListTasks', {}, { version: '1.0' })).json?.result?.totalSize;
  const big = 'x'.repeat(20_000_000);
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['a 20 MB messageId', { message: { ...userMessage('hi'), messageId: big } }, /params\.message\.messageId is 20000000 characters long/],
    ['a 1 MB contextId', { message: userMessage('hi', { contextId: 'c'.repeat(1_000_000) }) }, /params\.message\.contextId is 1000000/],
    [
      '20 MB of message metadata',
      { message: userMessage('hi', { metadata: { big } }) },
      /params\.message\.metadata is 20000010 bytes of JSON; at most 65536/,
    ],
    [
      '20 MB of request metadata',
      { message: userMessage('hi'), metadata: { big } },
      /params\.metadata is 20000010 bytes of JSON; at most 65536/,
    ],
  ];
  for (const [what, params, mentions] of cases) {
    const res = await rpc(srv.app, 'message/send', params);
    t.equal(res.json?.error?.code, -32602, `${what}: -32602`);
    t.match(res.json?.error?.message, mentions, `${what}: names the field`);
  }
  const message = userMessage('hi');
  const send = (messageJson: string) => `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":${messageJson}}}`;
  const deep: Array<[string, string, RegExp]> = [
    [
      'message metadata',
      send(`${JSON.stringify(message).slice(0, -1)},"metadata":${nested(5000)}}`),
      /params\.message\.metadata(\.d)+ nests deeper than 64 levels/,
    ],
    [
      'a data part',
      send(JSON.stringify(message).replace(/"parts":\[.*?\]/, `"parts":[{"kind":"data","data":${nested(5000)}}]`)),
      /params\.message\.parts\[0\]\.data(\.d)+ nests deeper than 64 levels/,
    ],
    [
      'request metadata',
      withRaw('message/send', { message }, 'metadata', nested(5000)),
      /params\.metadata(\.d)+ nests deeper than 64 levels/,
    ],
    ['tasks/get params', withRaw('tasks/get', { id: 'x' }, 'metadata', nested(5000)), /params\.metadata(\.d)+ nests deeper than 64 levels/],
  ];
  for (const [what, body, mentions] of deep) {
    const res = await post(srv.app, body);
    const error = (JSON.parse(res.body) as { error?: { code: number; message: string } }).error;
    t.equal(error?.code, -32602, `${what} nested 5,000 levels: -32602`);
    t.match(error?.message, mentions, `${what}: names the field`);
  }
  const after = (await rpc(srv.app, 'ListTasks', {}, { version: '1.0' })).json?.result?.totalSize;
  t.equal(after, before, 'no task was created by the refusals');
});
