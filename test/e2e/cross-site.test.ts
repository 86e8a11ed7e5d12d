/**
 * What a page on another site can send without a preflight (a "simple" request: GET/HEAD/POST
 * with text/plain, a form or multipart, no custom header; from a sandboxed frame with
 * `Origin: null`) changes nothing here:
 * - `Origin: null` is refused by the Host/Origin guard (403), on every route;
 * - every route reads JSON bodies only: any other declared media type is 415, before the body
 *   is read — legacy `POST /tasks` and `POST /executeCommand` included, and the body-less
 *   `POST /v1/tasks/{id}:cancel` (a form can send that with text/plain);
 * - a body-less request without a Content-Type (what the SDK clients send on `:cancel`) still works.
 */
import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../support/server.js';
import { MemoryTaskStore } from '../../src/store/memory-store.js';

const HOST = { host: '127.0.0.1' };

/** A server on a store of its own: GET /tasks/metadata (no authentication) lists every task in it. */
const ownServer = (t: Parameters<typeof buildServer>[0]) => buildServer(t, { app: { store: new MemoryTaskStore() } });

async function inject(
  app: FastifyInstance,
  method: 'GET' | 'POST' | 'DELETE',
  url: string,
  headers: Record<string, string>,
  payload?: string,
) {
  const res = await app.inject({ method, url, headers: { ...HOST, ...headers }, ...(payload === undefined ? {} : { payload }) });
  return { status: res.statusCode, body: res.body === '' ? undefined : JSON.parse(res.body) };
}

/** A legacy task with no message yet (POST /tasks as JSON): cancelable, and visible in GET /tasks/metadata. */
async function idleTask(app: FastifyInstance): Promise<string> {
  const res = await inject(app, 'POST', '/tasks', { 'content-type': 'application/json' }, '{}');
  if (res.status !== 201) throw new Error(`POST /tasks: ${res.status}`);
  return res.body as string;
}

const SIMPLE_TYPES = ['text/plain', 'text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x'];

t.test('Origin: null is refused on every route', async (t) => {
  const { app } = await ownServer(t);
  const rpc = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'x' } });
  const json = { 'content-type': 'application/json', origin: 'null' };
  for (const [method, url, payload] of [
    ['POST', '/', rpc],
    ['POST', '/tasks', '{}'],
    ['POST', '/executeCommand', '{"command":"memory show"}'],
    ['GET', '/.well-known/agent-card.json', undefined],
    ['POST', '/v1/message:send', '{}'],
  ] as const) {
    const res = await inject(app, method, url, method === 'GET' ? { origin: 'null' } : json, payload);
    t.equal(res.status, 403, `${method} ${url} with Origin: null → 403`);
    t.match(res.body?.error, /Origin "null"/, 'the refusal names the origin');
  }
  t.equal((await inject(app, 'GET', '/tasks/metadata', {})).status, 204, 'no task was created');
  t.equal((await inject(app, 'POST', '/', { 'content-type': 'application/json' }, rpc)).status, 200, 'without it: answered');
});

t.test('legacy POST /tasks and /executeCommand read JSON only (415), and nothing is created', async (t) => {
  const { app } = await ownServer(t);
  for (const type of SIMPLE_TYPES) {
    const created = await inject(app, 'POST', '/tasks', { 'content-type': type }, 'contextId=x');
    t.equal(created.status, 415, `POST /tasks as ${type} → 415`);
    t.match(created.body?.error, /Unsupported Content-Type .*application\/json/, 'the refusal says what to send');
    const executed = await inject(app, 'POST', '/executeCommand', { 'content-type': type }, '{"command":"memory add","args":["x"]}');
    t.equal(executed.status, 415, `POST /executeCommand as ${type} → 415`);
  }
  t.equal((await inject(app, 'GET', '/tasks/metadata', {})).status, 204, 'no task was created');
  const ok = await inject(app, 'POST', '/tasks', { 'content-type': 'application/json' }, '{}');
  t.equal(ok.status, 201, 'as JSON: created');
  t.equal((await inject(app, 'POST', '/tasks', {})).status, 201, 'with no body and no Content-Type: created (as before)');
});

t.test('POST /v1/tasks/{id}:cancel with a simple-request media type is refused; without a body and type it cancels', async (t) => {
  const { app } = await ownServer(t);
  for (const version of [{ 'a2a-version': '1.0' }, {}] as Array<Record<string, string>>) {
    const id = await idleTask(app);
    for (const type of SIMPLE_TYPES) {
      const res = await inject(app, 'POST', `/v1/tasks/${id}:cancel`, { 'content-type': type, ...version });
      t.equal(res.status, 415, `:cancel as ${type} (${version['a2a-version'] ?? '0.3'}) → 415`);
    }
    const [task] = (await inject(app, 'GET', '/tasks/metadata', {})).body.filter((m: any) => m.id === id);
    t.equal(task.taskState, 'input-required', 'the task was not canceled (an idle legacy task waits for its first message)');
    const res = await inject(app, 'POST', `/v1/tasks/${id}:cancel`, version);
    t.equal(res.status, 200, 'no body, no Content-Type: canceled');
  }
  const id = await idleTask(app);
  const del = await inject(app, 'DELETE', `/v1/tasks/${id}/pushNotificationConfigs/x`, {
    'content-type': 'text/plain',
    'a2a-version': '1.0',
  });
  t.equal(del.status, 415, 'DELETE of a push config as text/plain → 415');
});
