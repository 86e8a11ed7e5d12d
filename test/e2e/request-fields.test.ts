/**
 * One check of ids and text for every method and route (validate-params.ts checkRequestFields):
 * the extension methods (`command/execute`, `audit/list`), the legacy REST routes (`POST /tasks`,
 * `POST /executeCommand`, `GET /tasks/:taskId/metadata`), the HTTP+JSON binding's path and query,
 * and the A2A methods beyond send and get (push configs). An id longer than 256 characters, an id
 * with a control character, a NUL or a lone surrogate in any text is refused with -32602 / HTTP 400
 * naming the field; nothing is stored, and a good request afterwards works.
 */
import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../support/server.js';
import { rpc } from '../support/sse.js';
import { MemoryTaskStore } from '../../src/store/memory-store.js';

const HOST = { host: '127.0.0.1' };
const JSON_TYPE = { 'content-type': 'application/json' };

async function rest(app: FastifyInstance, method: 'GET' | 'POST', url: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await app.inject({
    method,
    url,
    headers: { ...HOST, ...(body === undefined ? {} : JSON_TYPE), ...headers },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
  return { status: res.statusCode, body: res.body === '' ? undefined : JSON.parse(res.body) };
}

/** Bad ids, each with what the refusal says. */
const BAD_IDS: Array<[string, string, RegExp]> = [
  ['4 MiB', 'x'.repeat(4 * 1024 * 1024), /is 4194304 characters long; at most 256 are accepted/],
  ['257 characters', 'x'.repeat(257), /is 257 characters long; at most 256/],
  ['a NUL', 'ctx\u0000x', /control character|NUL/],
  ['a newline', 'ctx\nx', /control character/],
  ['a lone surrogate', 'ctx\ud800x', /unpaired UTF-16 surrogate/],
];

async function ownServer(t: Parameters<typeof buildServer>[0]) {
  const store = new MemoryTaskStore();
  const { app } = await buildServer(t, { app: { store } });
  return { app, store };
}

t.test('legacy POST /tasks: a bad contextId is 400 naming body.contextId; nothing is stored', async (t) => {
  const { app, store } = await ownServer(t);
  for (const [what, id, says] of BAD_IDS) {
    const res = await rest(app, 'POST', '/tasks', { contextId: id });
    t.equal(res.status, 400, `contextId with ${what} → 400`);
    t.match(res.body?.error, /^body\.contextId /, 'names the field');
    t.match(res.body?.error, says);
    t.equal(await store.loadContext(id), undefined, 'no context was stored');
  }
  const nul = await rest(app, 'POST', '/tasks', { agentSettings: { kind: 'agent-settings', workspacePath: '/tmp\u0000' } });
  t.equal(nul.status, 400, 'a NUL anywhere in the body → 400');
  t.match(nul.body?.error, /body\.agentSettings\.workspacePath contains a NUL/);
  t.equal((await store.listTasks({ limit: 10, offset: 0 })).total, 0, 'no task was stored');
  const ok = await rest(app, 'POST', '/tasks', { contextId: 'ctx-good' });
  t.equal(ok.status, 201, 'a good request afterwards works');
});

t.test('legacy POST /executeCommand and GET /tasks/:taskId/metadata', async (t) => {
  const { app, store } = await ownServer(t);
  const nul = await rest(app, 'POST', '/executeCommand', { command: 'memory add', args: ['use\u0000pnpm'] });
  t.equal(nul.status, 400, 'a NUL in an argument → 400');
  t.match(nul.body?.error, /body\.args\[0\] contains a NUL/);
  const lone = await rest(app, 'POST', '/executeCommand', { command: 'memory add', args: ['\udc00'] });
  t.match([lone.status, lone.body?.error], [400, /body\.args\[0\] contains an unpaired UTF-16 surrogate/]);
  const long = await rest(app, 'POST', '/executeCommand', { command: 'memory add', args: ['x'.repeat(70_000)] });
  t.match([long.status, long.body?.error], [400, /body\.args\[0\] is 70000 characters long; at most 65536/]);
  t.equal((await store.listTasks({ limit: 10, offset: 0 })).total, 0, 'no task was stored');
  for (const [url, says] of [
    ['/tasks/a%00b/metadata', /^taskId contains a control character/],
    ['/tasks/a%0Ab/metadata', /^taskId contains a control character/],
  ] as const) {
    const res = await rest(app, 'GET', url);
    t.match([res.status, res.body?.error], [400, says], `GET ${url.slice(0, 20)}… → 400`);
  }
  const added = await rest(app, 'POST', '/executeCommand', { command: 'memory add', args: ['use', 'pnpm'] });
  t.match(added, { status: 200, body: { data: { status: 'AWAITING_ACTION_CONFIRMATION' } } }, 'a good request afterwards works');
});

t.test('extension methods: command/execute and audit/list refuse bad ids and text with -32602', async (t) => {
  const { app, store } = await ownServer(t);
  for (const [what, id, says] of BAD_IDS) {
    const res = await rpc(app, 'command/execute', { command_path: ['memory', 'show'], args: '', context_id: id });
    t.equal(res.json?.error?.code, -32602, `context_id with ${what} → -32602`);
    t.match(res.json?.error?.message, /params\.context_id /, 'names the field');
    t.match(res.json?.error?.message, says);
    t.equal(await store.loadContext(id), undefined, 'no context was stored');
  }
  const nul = await rpc(app, 'command/execute', { command_path: ['memory', 'add'], args: 'use\u0000pnpm' });
  t.match(nul.json?.error, { code: -32602, message: /params\.args contains a NUL/ }, '/memory add with a NUL → -32602');
  const audit = await rpc(app, 'audit/list', { task_id: 'a\u0000b' });
  t.match(audit.json?.error, { code: -32602, message: /params\.task_id contains a NUL/ });
  t.equal((await store.listTasks({ limit: 10, offset: 0 })).total, 0, 'no task was stored');
  const ok = await rpc(app, 'command/execute', { command_path: ['memory', 'add'], args: 'use pnpm', context_id: 'ctx-ok' });
  t.match(ok.json?.result, { execution_id: String }, 'a good request afterwards works');
});

t.test('A2A methods and the HTTP+JSON binding: ids in params, paths and queries', async (t) => {
  const { app } = await ownServer(t);
  const long = await rpc(app, 'tasks/get', { id: 'x'.repeat(300) });
  t.match(long.json?.error, { code: -32602, message: /params\.id is 300 characters long/ });
  const push = await rpc(app, 'tasks/pushNotificationConfig/set', {
    taskId: 't\u0000',
    pushNotificationConfig: { url: 'https://example.com/hook' },
  });
  t.match(push.json?.error, { code: -32602, message: /params\.taskId contains a NUL/ });
  const v1 = { 'a2a-version': '1.0' };
  const path = await rest(app, 'GET', '/v1/tasks/a%00b', undefined, v1);
  t.match([path.status, path.body?.error?.message], [400, /^id contains a control character/], 'v1.0 GET /v1/tasks/{id}');
  const query = await rest(app, 'GET', '/v1/tasks?contextId=a%00b', undefined, v1);
  t.match([query.status, query.body?.error?.message], [400, /^query\.contextId contains a NUL/], 'v1.0 ListTasks');
  const v03 = await rest(app, 'GET', '/v1/tasks/a%0Ab:cancel');
  t.match([v03.status, v03.body?.message], [400, /^id contains a control character/], 'v0.3 GET /v1/tasks/{id}');
  const tooLong = await rest(app, 'GET', `/v1/tasks/${'y'.repeat(300)}`);
  t.equal(tooLong.status, 414, 'a path segment over 100 characters is refused by the router itself');
  const good = await rest(app, 'GET', '/v1/tasks?contextId=ctx-none', undefined, v1);
  t.equal(good.status, 200, 'a good request afterwards works');
});
