/**
 * Liveness and readiness (GET /healthz, GET /readyz) as an orchestrator probes them: over real
 * HTTP, without credentials even when authentication is on; readiness fails with a reason when
 * the store does not answer and once shutdown began; liveness fails after the event loop stalled.
 */
import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import { MemoryTaskStore } from '../../src/store/memory-store.js';
import { healthRoutes } from '../../src/transport/http/health-routes.js';
import { startServer } from '../support/server.js';

async function get(url: string, route: string): Promise<{ status: number; body: any; cache: string | null }> {
  const res = await fetch(new URL(route, url));
  return { status: res.status, body: await res.json(), cache: res.headers.get('cache-control') };
}

t.test('a serving instance is alive and ready, and says so without credentials', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'health-auth-'));
  const auth = path.join(dir, 'auth.json');
  writeFileSync(auth, JSON.stringify({ api_keys: [{ key: 'alice-key-0123456789abcdef-x', principal: 'alice', roles: ['approver'] }] }));
  const srv = await startServer(t, { env: { AUTH_CONFIG: auth } });
  const live = await get(srv.url, '/healthz');
  t.equal(live.status, 200);
  t.match(live.body, { status: 'ok', eventLoopDelayMs: { maxMs: Number, p99Ms: Number } });
  t.equal(live.cache, 'no-store');
  const ready = await get(srv.url, '/readyz');
  t.equal(ready.status, 200);
  t.match(ready.body, { status: 'ready', storeMs: Number });
  const rpc = await fetch(srv.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  t.equal(rpc.status, 401, 'the A2A routes still want credentials');
});

t.test('not ready while the store does not answer; ready again when it does', async (t) => {
  const inner = new MemoryTaskStore();
  t.teardown(() => inner.close());
  let down: 'refuses' | 'hangs' | undefined;
  const store = new Proxy(inner, {
    get(target, key, receiver) {
      if (key === 'ping' && down === 'refuses') return () => Promise.reject(new Error('connect ECONNREFUSED postgres://u:secret@db:5432'));
      if (key === 'ping' && down === 'hangs') return () => new Promise(() => undefined);
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
  const srv = await startServer(t, { app: { store } });
  down = 'refuses';
  const refused = await get(srv.url, '/readyz');
  t.equal(refused.status, 503);
  t.same(refused.body, { status: 'unavailable', reason: 'the store cannot be reached' }, 'the reason carries no address or secret');
  t.equal((await get(srv.url, '/healthz')).status, 200, 'still alive: an orchestrator must not restart it for that');
  down = 'hangs';
  const slow = await get(srv.url, '/readyz');
  t.equal(slow.status, 503);
  t.match(slow.body, { reason: /the store did not answer within 2000 ms/ });
  down = undefined;
  t.equal((await get(srv.url, '/readyz')).status, 200);
});

t.test('readiness goes 503 once shutdown begins; liveness after the event loop stalled', async (t) => {
  const app = Fastify();
  let draining = false;
  await app.register(healthRoutes, { pingStore: async () => undefined, draining: () => draining, maxLoopDelayMs: 100 });
  t.equal((await app.inject('/readyz')).statusCode, 200);
  draining = true;
  const closing = await app.inject('/readyz');
  t.equal(closing.statusCode, 503);
  t.same(closing.json(), { status: 'unavailable', reason: 'shutting down' });

  t.equal((await app.inject('/healthz')).statusCode, 200);
  await new Promise((r) => setTimeout(r, 100)); // the monitor measures from its first sample on
  const until = Date.now() + 400;
  while (Date.now() < until); // the loop is blocked, as a runaway synchronous task would block it
  await new Promise((r) => setTimeout(r, 50)); // the histogram samples the delay once the loop turns again
  const stalled = await app.inject('/healthz');
  t.equal(stalled.statusCode, 503);
  t.match(stalled.json(), { status: 'unhealthy', reason: /the event loop was blocked for \d+ ms \(more than 100 ms\)/ });
  await app.close();
});
