/**
 * The web console's routes: the page at GET / beside JSON-RPC at POST /, its bundle under
 * /console/, the security headers (CSP without inline script or style, nosniff, no framing), the
 * Host guard, revalidation by ETag; the bundle served from a build or bundled in memory from the
 * sources, and what a missing or broken bundle answers.
 */
import t from 'tap';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Fastify from 'fastify';
import { buildServer } from '../support/server.js';
import { bundleConsole, loadConsole, readConsole } from '../../src/transport/http/console-assets.js';
import { CONSOLE_CSP, consoleRoutes } from '../../src/transport/http/console-route.js';
import type { ConsoleAssets } from '../../src/transport/http/console-assets.js';

const SOURCES = fileURLToPath(new URL('../../src/console/', import.meta.url));
const local = { host: '127.0.0.1' };

t.test('GET / is the console page; POST / is still JSON-RPC', async (t) => {
  const { app } = await buildServer(t);
  const page = await app.inject({ method: 'GET', url: '/', headers: local });
  t.equal(page.statusCode, 200);
  t.match(page.headers['content-type'], /^text\/html/);
  t.match(page.body, /<script type="module" src="\/console\/console\.js"><\/script>/, 'the page loads its script from this origin');
  t.notMatch(page.body, /<script>|<style|style=/, 'no inline script or style in the page');
  const csp = String(page.headers['content-security-policy']);
  t.equal(csp, CONSOLE_CSP);
  for (const d of ["default-src 'self'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"]) {
    t.ok(csp.split('; ').includes(d), d);
  }
  t.notMatch(csp, /unsafe-inline|unsafe-eval|\*/, 'nothing inline, no eval, no wildcard');
  t.equal(page.headers['x-content-type-options'], 'nosniff');
  t.equal(page.headers['x-frame-options'], 'DENY');

  const rpc = await app.inject({
    method: 'POST',
    url: '/',
    headers: { ...local, 'content-type': 'application/json' },
    payload: { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'none' } },
  });
  t.equal(rpc.json().error.code, -32001, 'JSON-RPC answers at POST /');
});

t.test('the bundle: script and style, ETag revalidation, unknown names 404', async (t) => {
  const { app } = await buildServer(t);
  const js = await app.inject({ method: 'GET', url: '/console/console.js', headers: local });
  t.equal(js.statusCode, 200);
  t.match(js.headers['content-type'], /^text\/javascript/);
  t.equal(js.headers['cache-control'], 'no-cache');
  t.ok(js.body.length > 1000, 'a bundled script');
  const css = await app.inject({ method: 'GET', url: '/console/console.css', headers: local });
  t.match(css.headers['content-type'], /^text\/css/);
  const again = await app.inject({
    method: 'GET',
    url: '/console/console.js',
    headers: { ...local, 'if-none-match': String(js.headers.etag) },
  });
  t.equal(again.statusCode, 304, 'a current copy is not sent again');
  for (const url of ['/console/nope.js', '/console/..%2Fapp.ts', '/console/main.tsx']) {
    const res = await app.inject({ method: 'GET', url, headers: local });
    t.equal(res.statusCode, 404, url);
  }
});

t.test('the Host/Origin guard covers the console', async (t) => {
  const { app } = await buildServer(t);
  const res = await app.inject({ method: 'GET', url: '/', headers: { host: 'evil.example:41242' } });
  t.equal(res.statusCode, 403);
  const cross = await app.inject({ method: 'GET', url: '/console/console.js', headers: { ...local, origin: 'https://evil.example' } });
  t.equal(cross.statusCode, 403);
});

/** A bare Fastify with only the console routes over `load`. */
async function consoleOnly(t: { teardown(fn: () => unknown): void }, load: () => Promise<ConsoleAssets | undefined>) {
  const app = Fastify({ logger: false });
  await app.register(consoleRoutes, { load });
  t.teardown(() => app.close());
  return app;
}

t.test('a built console (npm run build) is read from its directory', async (t) => {
  const dir = t.testdir({ empty: {} });
  const out = path.join(dir, 'console');
  const built = await bundleConsole(SOURCES, out);
  const read = readConsole(out);
  t.same([...read.keys()].sort(), ['console.css', 'console.js', 'index.html']);
  t.same(read.get('console.js')?.etag, built.get('console.js')?.etag, 'the written files are the bundle');
  t.equal((await loadConsole(out))?.get('index.html')?.etag, read.get('index.html')?.etag, 'loadConsole prefers the built files');
  t.equal(await loadConsole(path.join(dir, 'empty')), undefined, 'neither built nor sources');
  const app = await consoleOnly(t, async () => read);
  const page = await app.inject({ method: 'GET', url: '/' });
  t.equal(page.statusCode, 200);
});

t.test('no console, or one that fails to bundle: a plain answer, and the next request tries again', async (t) => {
  const missing = await consoleOnly(t, async () => undefined);
  const none = await missing.inject({ method: 'GET', url: '/' });
  t.equal(none.statusCode, 404);
  t.match(none.body, /npm run build/);
  const absent = path.join(t.testdir({}), 'absent');
  let calls = 0;
  const flaky = await consoleOnly(t, async () => {
    if (++calls === 1) throw new Error('syntax error in main.tsx');
    return readConsole(absent);
  });
  const failed = await flaky.inject({ method: 'GET', url: '/' });
  t.equal(failed.statusCode, 500);
  t.match(failed.body, /could not be built/);
  t.equal(failed.headers['content-security-policy'], CONSOLE_CSP, 'errors carry the same headers');
  const retried = await flaky.inject({ method: 'GET', url: '/' });
  t.equal(retried.statusCode, 500, 'tried again (and failed again: the directory is empty)');
  t.equal(calls, 2);
});
