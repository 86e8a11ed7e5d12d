/**
 * Refusals on POST / over real HTTP: every bad request gets HTTP 200 with a JSON-RPC error
 * envelope (the right code, the request id echoed, a message naming the field), before any
 * SSE is written. Also the Host/Origin guard and both forms of the agent card.
 */
import t from 'tap';
import http from 'node:http';
import path from 'node:path';
import { rpc } from '../support/sse.js';
import type { PostResult } from '../support/sse.js';
import type { FastifyInstance } from 'fastify';
import { buildServer, confirmMessage, dataOf, startServer, URI, userMessage } from '../support/server.js';

/** The subtest type (the last `t.test` overload takes just the callback). */
type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Asserts a plain JSON-RPC error answer and returns its error object. */
function rpcError(t: Test, res: PostResult, code: number, mentions?: RegExp): { code: number; message: string } {
  t.equal(res.status, 200, 'HTTP 200');
  t.match(res.contentType, /^application\/json/, 'a JSON body, not a stream');
  t.equal(res.json?.jsonrpc, '2.0');
  t.equal(res.json?.result, undefined, 'no result');
  t.equal(res.json?.error?.code, code, `code ${code}`);
  t.type(res.json?.error?.message, 'string');
  if (mentions) t.match(res.json?.error?.message, mentions, `the message names ${mentions}`);
  return res.json?.error;
}

/** A raw request over node:http, so Host and Origin can be set freely. */
function rawRequest(
  url: string,
  opts: { method: string; path: string; headers: Record<string, string>; body?: string },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: opts.method, path: opts.path, headers: opts.headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

async function completedTask(srv: { app: FastifyInstance }): Promise<{ id: string; contextId: string }> {
  const res = await rpc(srv.app, 'message/stream', { message: userMessage('hello there') });
  const last = res.events!.at(-1)!.data.result;
  if (last.status.state !== 'completed') throw new Error(`expected completed, got ${last.status.state}`);
  return { id: last.taskId, contextId: last.contextId };
}

t.test('params validation: -32602 naming the field', async (t) => {
  const srv = await buildServer(t);

  t.test('empty parts', async (t) => {
    const res = await rpc(srv.app, 'message/send', { message: userMessage('x', { parts: [] }) });
    rpcError(t, res, -32602, /params\.message\.parts must not be empty/);
    const stream = await rpc(srv.app, 'message/stream', { message: userMessage('x', { parts: [] }) });
    rpcError(t, stream, -32602, /parts/);
  });

  t.test('text the store cannot keep is refused before anything is stored, naming the field', async (t) => {
    const nul = await rpc(srv.app, 'message/stream', { message: userMessage('a\u0000b') });
    rpcError(t, nul, -32602, /params\.message\.parts\[0\]\.text contains a NUL character/);
    const lone = await rpc(srv.app, 'message/stream', { message: userMessage('x \ud800 y') });
    rpcError(t, lone, -32602, /params\.message\.parts\[0\]\.text contains an unpaired UTF-16 surrogate/);
    const deepData = await rpc(srv.app, 'message/stream', {
      message: userMessage('x', { parts: [{ kind: 'data', data: { ok: ['fine', { bad: '\udc00' }] } }] }),
    });
    rpcError(t, deepData, -32602, /params\.message\.parts\[0\]\.data\.ok\[1\]\.bad contains an unpaired/);
    const key = await rpc(srv.app, 'message/stream', { message: userMessage('x', { metadata: { 'k\u0000': 1 } }) });
    rpcError(t, key, -32602, /params\.message\.metadata \(a key\) contains a NUL/);
    // 5,000 levels: built as text (JSON.stringify itself runs out of stack on it).
    const message = JSON.stringify(userMessage('x', { parts: [{ kind: 'data', data: { nested: 'NESTED' } }] }));
    const body = `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":${message.replace('"NESTED"', `${'['.repeat(5000)}1${']'.repeat(5000)}`)}}}`;
    const deep = await rpc(srv.app, 'message/stream', undefined, { body });
    rpcError(t, deep, -32602, /nests deeper than 64 levels/);
    const longId = await rpc(srv.app, 'message/stream', { message: userMessage('x', { messageId: 'm'.repeat(300) }) });
    rpcError(t, longId, -32602, /params\.message\.messageId is 300 characters long; at most 256/);
    t.equal(
      await srv.app
        .inject({ method: 'GET', url: '/.well-known/agent-card.json', headers: { host: '127.0.0.1' } })
        .then((r) => r.statusCode),
      200,
    );
  });

  t.test('a follow-up the store cannot keep leaves the completed task as it was, and usable', async (t) => {
    const task = await completedTask(srv);
    const bad = await rpc(srv.app, 'message/stream', {
      message: userMessage('more \ud800', { taskId: task.id, contextId: task.contextId }),
    });
    rpcError(t, bad, -32602, /unpaired UTF-16 surrogate/);
    t.equal((await rpc(srv.app, 'tasks/get', { id: task.id })).json.result.status.state, 'completed', 'still completed');
    const good = await rpc(srv.app, 'message/stream', {
      message: userMessage('hello again', { taskId: task.id, contextId: task.contextId }),
    });
    t.equal(good.events?.at(-1)?.data?.result?.status?.state, 'completed', 'the next follow-up works');
  });

  t.test('negative configuration.historyLength', async (t) => {
    const res = await rpc(srv.app, 'message/send', { message: userMessage('x'), configuration: { historyLength: -1 } });
    rpcError(t, res, -32602, /params\.configuration\.historyLength/);
  });

  t.test('message.role "agent"', async (t) => {
    const res = await rpc(srv.app, 'message/stream', { message: userMessage('x', { role: 'agent' }) });
    rpcError(t, res, -32602, /params\.message\.role must be "user", got "agent"/);
  });

  t.test('parts[0].text a number', async (t) => {
    const res = await rpc(srv.app, 'message/stream', { message: userMessage('x', { parts: [{ kind: 'text', text: 42 }] }) });
    rpcError(t, res, -32602, /params\.message\.parts\[0\]\.text must be a string/);
  });

  t.test('messageId missing', async (t) => {
    const message = userMessage('x');
    delete message.messageId;
    const res = await rpc(srv.app, 'message/stream', { message });
    rpcError(t, res, -32602, /params\.message\.messageId/);
  });

  t.test('v1.0: empty parts and a v0.3 role', async (t) => {
    const empty = await rpc(srv.app, 'SendMessage', { message: { messageId: 'v1-e', role: 'ROLE_USER', parts: [] } }, { version: '1.0' });
    rpcError(t, empty, -32602, /parts must not be empty/);
    const role = await rpc(
      srv.app,
      'SendMessage',
      { message: { messageId: 'v1-r', role: 'user', parts: [{ text: 'x' }] } },
      { version: '1.0' },
    );
    rpcError(t, role, -32602, /role must be "ROLE_USER"/);
  });

  t.test('tasks/get with a negative historyLength', async (t) => {
    const task = await completedTask(srv);
    const res = await rpc(srv.app, 'tasks/get', { id: task.id, historyLength: -2 });
    rpcError(t, res, -32602, /historyLength/);
  });

  t.test('tasks/get without an id', async (t) => {
    const res = await rpc(srv.app, 'tasks/get', {});
    rpcError(t, res, -32602, /params\.id/);
  });
});

t.test('envelope-level errors', async (t) => {
  const srv = await buildServer(t);

  t.test('unparsable JSON: -32700 with id null', async (t) => {
    const res = await rpc(srv.app, 'x', undefined, { body: '{"jsonrpc":"2.0","id":5,"method":' });
    const err = rpcError(t, res, -32700, /not valid JSON/);
    t.ok(err);
    t.equal(res.json.id, null);
  });

  t.test('a batch (array body): -32600', async (t) => {
    const res = await rpc(srv.app, 'x', undefined, { body: '[]' });
    rpcError(t, res, -32600);
  });

  t.test('unknown method: -32601, id echoed', async (t) => {
    const res = await rpc(srv.app, 'tasks/frobnicate', { id: 'x' });
    rpcError(t, res, -32601, /tasks\/frobnicate/);
    t.type(res.json.id, 'number');
  });

  t.test('a v1.0 method name without the A2A-Version header: -32601', async (t) => {
    const get = await rpc(srv.app, 'GetTask', { id: 'x' });
    rpcError(t, get, -32601, /GetTask/);
    // What a v1.0 client that forgot the header really sends: a v1.0-shaped message.
    const send = await rpc(srv.app, 'SendStreamingMessage', {
      message: { messageId: 'v1-no-header', role: 'ROLE_USER', parts: [{ text: 'hello' }] },
    });
    rpcError(t, send, -32601, /SendStreamingMessage/);
  });

  t.test('a v0.3 method name under A2A-Version: 1.0: -32601', async (t) => {
    const send = await rpc(srv.app, 'message/send', { message: userMessage('hello') }, { version: '1.0' });
    rpcError(t, send, -32601, /message\/send/);
  });

  t.test('an unsupported A2A-Version: -32009', async (t) => {
    const res = await rpc(srv.app, 'message/send', { message: userMessage('hello') }, { headers: { 'A2A-Version': '9.9' } });
    rpcError(t, res, -32009, /9\.9/);
  });

  t.test('A2A-Version: Major.Minor counts, a patch is ignored, anything else is -32009 (never a 500)', async (t) => {
    const list = (version: string) =>
      srv.app.inject({
        method: 'POST',
        url: '/',
        headers: { 'content-type': 'application/json', 'A2A-Version': version },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ListTasks', params: {} }),
      });
    t.match((await list('1.0.2')).json(), { id: 9, result: { tasks: Array } }, '1.0.2 is 1.0');
    t.match((await list('1')).json(), { id: 9, result: { tasks: Array } }, '1 is 1.0');
    t.match((await list('0.3.1')).json(), { id: 9, error: { code: -32601 } }, '0.3.1 is 0.3 (which has no ListTasks)');
    for (const version of ['constructor', '__proto__', 'toString', '2.0', '1.1', '1.0-beta']) {
      const res = await list(version);
      t.equal(res.statusCode, 200, `${version}: answered`);
      const { error } = res.json<{ error: { code: number; message: string } }>();
      t.equal(error.code, -32009);
      t.ok(error.message.includes(`"${version}" is not supported`), error.message);
    }
  });

  t.test('the version as a query parameter (§3.6.1): ?A2A-Version=1.0 speaks v1.0', async (t) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'ListTasks', params: {} });
    const post = (url: string) => srv.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, body });
    const v1 = await post('/?A2A-Version=1.0');
    t.match(v1.json(), { id: 8, result: { tasks: Array } }, 'a v1.0 method, answered');
    t.match(
      (await post('/')).json(),
      { id: 8, error: { code: -32601, message: /A2A-Version: 1\.0/ } },
      'without it: 0.3, which has no ListTasks',
    );
    t.match((await post('/?A2A-Version=9.9')).json(), { error: { code: -32009 } });
  });

  t.test('a body that is not JSON by its Content-Type: -32005, HTTP 415, nothing run', async (t) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'message/send', params: { message: userMessage('hello') } });
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml; charset=utf-8']) {
      const res = await srv.app.inject({ method: 'POST', url: '/', headers: { 'content-type': type, 'A2A-Version': '1.0' }, body });
      t.equal(res.statusCode, 415, `${type}: 415`);
      const json = res.json();
      t.equal(json.error.code, -32005);
      t.match(json.error.message, `Unsupported Content-Type "${type}"; send application/json or application/a2a+json`);
      t.equal(json.id, null, 'the body was not read, so its id is unknown');
    }
    const a2a = await srv.app.inject({
      method: 'POST',
      url: '/',
      headers: { 'content-type': 'application/a2a+json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tasks/get', params: { id: 'no-such-task' } }),
    });
    t.equal(a2a.json().error.code, -32001, 'application/a2a+json is read as JSON');
    const broken = await srv.app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'application/a2a+json' }, body: '{' });
    t.equal(broken.json().error.code, -32700, 'and an unparsable one is a parse error');
  });
});

t.test('task-state errors', async (t) => {
  const srv = await buildServer(t);

  t.test('tasks/get on an unknown id: -32001', async (t) => {
    const res = await rpc(srv.app, 'tasks/get', { id: 'no-such-task' });
    rpcError(t, res, -32001, /no-such-task/);
  });

  t.test('tasks/cancel on a completed task: -32002', async (t) => {
    const task = await completedTask(srv);
    const res = await rpc(srv.app, 'tasks/cancel', { id: task.id });
    rpcError(t, res, -32002, new RegExp(task.id));
    t.equal((await rpc(srv.app, 'tasks/get', { id: task.id })).json.result.status.state, 'completed', 'still completed');
  });

  t.test('message/stream to a task that is still working: -32004', async (t) => {
    const first = await rpc(srv.app, 'message/stream', {
      message: userMessage('shell slow for the busy test', { metadata: { [URI]: { workspace_path: srv.workspace } } }),
    });
    const ev = first.events!.map((e) => e.data.result);
    const task = ev[0];
    const card = dataOf(ev[2]);
    const running = rpc(srv.app, 'message/stream', {
      message: confirmMessage(task.id, task.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' }),
    });
    let state = '';
    for (let i = 0; i < 100 && state !== 'working'; i++) {
      state = (await rpc(srv.app, 'tasks/get', { id: task.id })).json.result.status.state;
      if (state !== 'working') await sleep(20);
    }
    t.equal(state, 'working');
    const busy = await rpc(srv.app, 'message/stream', {
      message: userMessage('are you done?', { taskId: task.id, contextId: task.contextId }),
    });
    rpcError(t, busy, -32004, /still working/);
    const done = await running;
    t.equal(done.events!.at(-1)!.data.result.status.state, 'completed', 'the busy task was not disturbed');
  });

  t.test('a contextId that does not match the task: -32602', async (t) => {
    const task = await completedTask(srv);
    const res = await rpc(srv.app, 'message/stream', { message: userMessage('again', { taskId: task.id, contextId: 'another-context' }) });
    rpcError(t, res, -32602, /contextId "another-context" does not match/);
  });
});

t.test('AgentSettings refusals', async (t) => {
  const srv = await buildServer(t);
  const withSettings = (settings: unknown) => ({ message: userMessage('hello', { metadata: { [URI]: settings } }) });

  t.test('workspace_path that does not exist', async (t) => {
    const missing = path.join(srv.workspace, 'no', 'such', 'dir');
    const res = await rpc(srv.app, 'message/stream', withSettings({ workspace_path: missing }));
    rpcError(t, res, -32602, /workspace_path/);
    t.match(res.json.error.message, /does not exist/);
  });

  t.test('a relative workspace_path', async (t) => {
    const res = await rpc(srv.app, 'message/stream', withSettings({ workspace_path: 'relative/dir' }));
    rpcError(t, res, -32602, /workspace_path must be an absolute path/);
  });

  t.test('workspace_path not a string', async (t) => {
    const res = await rpc(srv.app, 'message/stream', withSettings({ workspace_path: 7 }));
    rpcError(t, res, -32602, /workspace_path/);
  });

  t.test('an unknown field', async (t) => {
    const res = await rpc(srv.app, 'message/stream', withSettings({ workspace_path: srv.workspace, autoExecute: true }));
    rpcError(t, res, -32602, /autoExecute/);
  });

  t.test('nothing was created by the refusals', async (t) => {
    const ok = await rpc(srv.app, 'message/stream', withSettings({ workspace_path: srv.workspace }));
    t.equal(ok.events!.at(-1)!.data.result.status.state, 'completed', 'a valid AgentSettings is accepted');
  });
});

t.test('Host and Origin guard', async (t) => {
  const srv = await startServer(t);
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'x' } });
  const port = new URL(srv.url).port;
  const post = (headers: Record<string, string>) =>
    rawRequest(srv.url, { method: 'POST', path: '/', headers: { 'content-type': 'application/json', ...headers }, body });

  const control = await post({ host: `127.0.0.1:${port}` });
  t.equal(control.status, 200, 'a local Host passes');
  t.equal(JSON.parse(control.body).error.code, -32001);
  t.equal((await post({ host: `localhost:${port}`, origin: `http://localhost:${port}` })).status, 200, 'a local Origin passes');

  const evilHost = await post({ host: 'evil.example' });
  t.equal(evilHost.status, 403, 'Host: evil.example is refused');
  t.match(evilHost.body, /evil\.example/, 'the refusal names the host');
  const evilHostPort = await post({ host: `evil.example:${port}` });
  t.equal(evilHostPort.status, 403, 'with a port too');

  const evilOrigin = await post({ host: `127.0.0.1:${port}`, origin: 'http://evil.example' });
  t.equal(evilOrigin.status, 403, 'Origin: http://evil.example is refused');
  t.match(evilOrigin.body, /evil\.example/, 'the refusal names the origin');

  const card = await rawRequest(srv.url, { method: 'GET', path: '/.well-known/agent-card.json', headers: { host: 'evil.example' } });
  t.equal(card.status, 403, 'the card too');
});

t.test('agent card', async (t) => {
  const srv = await startServer(t);
  const cardUrl = new URL('/.well-known/agent-card.json', srv.url);

  t.test('v0.3 form by default', async (t) => {
    const res = await fetch(cardUrl);
    t.equal(res.status, 200);
    const card: any = await res.json();
    t.equal(card.protocolVersion, '0.3.0');
    t.type(card.url, 'string');
    t.match(card.url, /\/$/, 'url ends in /');
    t.equal(card.url, srv.url, 'url is where the server listens');
    t.equal(card.preferredTransport, 'JSONRPC');
    t.equal(card.capabilities.streaming, true);
    t.equal(card.capabilities.pushNotifications, true, 'push notifications are offered');
    t.same(
      card.capabilities.extensions.map((e: any) => [e.uri, e.required]),
      [[URI, true]],
      'the development-tool extension, required',
    );
    t.ok(Array.isArray(card.supportedInterfaces), "and v1.0's supportedInterfaces, for clients that read it before they know the version");
  });

  t.test('v1.0 form under A2A-Version: 1.0', async (t) => {
    const res = await fetch(cardUrl, { headers: { 'A2A-Version': '1.0' } });
    t.equal(res.status, 200);
    const card: any = await res.json();
    t.ok(Array.isArray(card.supportedInterfaces), 'supportedInterfaces');
    t.same(
      card.supportedInterfaces.map((i: any) => [i.protocolBinding, i.protocolVersion]),
      [
        ['JSONRPC', '1.0'],
        ['HTTP+JSON', '1.0'],
        ['HTTP+JSON', '0.3'],
        ['JSONRPC', '0.3'],
      ],
    );
    t.notOk('protocolVersion' in card, 'no v0.3 top-level protocolVersion');
    t.equal(card.capabilities.streaming, true);
    t.same(
      card.capabilities.extensions.map((e: any) => [e.uri, e.required]),
      [[URI, true]],
    );
  });

  t.test('the pre-0.3 location answers the same card', async (t) => {
    const a: unknown = await (await fetch(cardUrl)).json();
    const b: unknown = await (await fetch(new URL('/.well-known/agent.json', srv.url))).json();
    t.same(b, a);
  });
});
