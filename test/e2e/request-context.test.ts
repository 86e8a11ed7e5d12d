/**
 * The transport's one request context (src/transport/http/request-context.ts), seen from the
 * three A2A routes: JSON-RPC, HTTP+JSON v1.0 and HTTP+JSON v0.3 read Last-Event-ID and hand out
 * SSE ids the same way, and a bad header is refused with the same words on each.
 */
import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { parseSse, rpc } from '../support/sse.js';
import { buildServer, URI, userMessage } from '../support/server.js';

const BAD_HEADER = 'Invalid Last-Event-ID header "x": expected an event id (a non-negative integer)';

/** One HTTP+JSON request through app.inject: status, SSE ids (snapshot: '-') or the JSON body. */
async function rest(app: FastifyInstance, url: string, headers: Record<string, string>) {
  const res = await app.inject({ method: 'GET', url, headers: { host: '127.0.0.1', ...headers } });
  const sse = String(res.headers['content-type'] ?? '').startsWith('text/event-stream');
  return { status: res.statusCode, ids: sse ? parseSse(res.body).map((e) => e.id ?? '-') : [], json: sse ? undefined : res.json() };
}

t.test('Last-Event-ID and SSE ids: one reading on every binding', async (t) => {
  const { app, workspace } = await buildServer(t);
  const started = await rpc(app, 'message/stream', {
    message: userMessage('write for the request context test', { metadata: { [URI]: { workspace_path: workspace } } }),
  });
  const live = started.events!.map((e) => e.id ?? '-');
  t.ok(live.length > 2 && live.every((id) => /^\d+$/.test(id)), 'the live stream: every event has its SSE id');
  const taskId = started.events![0].data.result.id as string;
  t.equal((await rpc(app, 'tasks/cancel', { id: taskId })).json?.result?.status?.state, 'canceled');

  // The whole log again, from each binding, with Last-Event-ID: 0; the task has ended, so each replay ends.
  const jsonRpc = await rpc(app, 'tasks/resubscribe', { id: taskId }, { headers: { 'last-event-id': '0' } });
  const jsonRpcIds = jsonRpc.events!.map((e) => e.id ?? '-');
  const v10 = await rest(app, `/v1/tasks/${taskId}:subscribe`, { 'last-event-id': '0', 'a2a-version': '1.0' });
  const v03 = await rest(app, `/v1/tasks/${taskId}:subscribe`, { 'last-event-id': '0' });
  t.equal(jsonRpcIds[0], '-', 'the snapshot first, without an id');
  t.same(jsonRpcIds.slice(1, live.length + 1), live, 'then the logged events, under the ids they went out with live');
  t.ok(jsonRpcIds.length > live.length + 1, 'and what the cancel added');
  t.same([v10.status, v10.ids], [200, jsonRpcIds], 'HTTP+JSON v1.0: the same ids');
  t.same([v03.status, v03.ids], [200, jsonRpcIds], 'HTTP+JSON v0.3: the same ids');

  const after = live.at(-1)!;
  const tail = await rpc(app, 'tasks/resubscribe', { id: taskId }, { headers: { 'last-event-id': after } });
  const tailIds = tail.events!.map((e) => e.id ?? '-');
  t.same(tailIds, ['-', ...jsonRpcIds.filter((id) => id !== '-' && Number(id) > Number(after))], 'only what came after the id');
  const v10tail = await rest(app, `/v1/tasks/${taskId}:subscribe`, { 'last-event-id': after, 'a2a-version': '1.0' });
  t.same(v10tail.ids, tailIds, 'HTTP+JSON v1.0 reads the header the same way');

  // A header that is no event id: refused before any SSE byte, in each binding's error shape, with the same words.
  const bad = await rpc(app, 'tasks/resubscribe', { id: taskId }, { headers: { 'last-event-id': 'x' } });
  t.same(bad.json?.error, { code: -32602, message: BAD_HEADER }, 'JSON-RPC: -32602');
  const badV10 = await rest(app, `/v1/tasks/${taskId}:subscribe`, { 'last-event-id': 'x', 'a2a-version': '1.0' });
  t.same([badV10.status, badV10.json?.error?.message], [400, BAD_HEADER], 'HTTP+JSON v1.0: 400');
  const badV03 = await rest(app, `/v1/tasks/${taskId}:subscribe`, { 'last-event-id': 'x' });
  t.same([badV03.status, badV03.json], [400, { code: -32602, message: BAD_HEADER }], 'HTTP+JSON v0.3: 400 with the JSON-RPC code');
});
