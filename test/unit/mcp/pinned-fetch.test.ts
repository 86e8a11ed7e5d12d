/**
 * DNS rebinding against client-given HTTP MCP servers (issue 10, finding 11): the URL is
 * checked and its host resolved once when the server connects, and every request of the
 * connection goes to that address — a lookup that answers differently the second time is
 * never asked again.
 */
import t from 'tap';
import nodeHttp from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpManager, pinnedFetch } from '../../../src/mcp/index.js';
import type { HttpResolver } from '../../../src/mcp/index.js';
import { checkPushUrl } from '../../../src/push/ssrf-guard.js';
import type { LookupFn } from '../../../src/push/ssrf-guard.js';
import { startHttpMcpServer } from '../../fixtures/mcp/http-server.js';

/** The SSRF guard (private addresses allowed, as without AUTH_CONFIG) over `lookup`, as app.ts builds it. */
function resolverOver(lookup: LookupFn): HttpResolver {
  return async (url) => {
    const r = await checkPushUrl(url, { allowPrivate: true, lookup, purpose: 'mcp', field: 'url' });
    return r.ok ? { ok: true, address: r.addresses[0] } : { ok: false, message: r.message };
  };
}

t.test('a rebinding lookup: the first (checked) answer is used for the whole connection', async (t) => {
  const http = await startHttpMcpServer();
  t.teardown(() => http.close());
  const port = new URL(http.url).port;
  const asked: string[] = [];
  // First answer: the real server (loopback, allowed here). Every later one: the metadata address.
  const lookup: LookupFn = async (host) => {
    asked.push(host);
    return [{ address: asked.length === 1 ? '127.0.0.1' : '169.254.169.254', family: 4 }];
  };
  const manager = new McpManager({ web: { url: `http://rebind.test:${port}/mcp` } }, { resolveHttp: resolverOver(lookup) });
  t.teardown(() => manager.close());
  await manager.start();
  t.match(manager.status()[0], { name: 'web', status: 'connected' }, 'connected to the checked address');
  const echo = manager.tools().find((x) => x.name === 'web__echo');
  if (!echo) throw new Error('no web__echo tool');
  const out = await echo.run({ text: 'pinned' }, { workspace: '/tmp', signal: new AbortController().signal });
  t.match(out, { llmContent: /pinned/ }, 'a tool call works (more requests on the same pinned connection)');
  t.same(asked, ['rebind.test'], 'the host was looked up once: later requests never asked DNS again');
  t.ok(
    http.requests.length >= 3,
    `every request reached the checked server (${http.requests.length}: initialize, tools/list, tools/call, …)`,
  );
  t.ok(
    http.requests.every((r) => r.host === `rebind.test:${port}`),
    'with the URL host as Host header',
  );
});

t.test('a URL the guard refuses at connect time is not connected to', async (t) => {
  const lookup: LookupFn = async () => [{ address: '169.254.169.254', family: 4 }];
  const manager = new McpManager({ web: { url: 'http://rebind.test:1/mcp' } }, { resolveHttp: resolverOver(lookup) });
  t.teardown(() => manager.close());
  await manager.start();
  t.match(manager.status()[0], { status: 'failed', error: /169\.254\.169\.254.*cloud metadata endpoints are always refused/ });
});

t.test('pinnedFetch: connects to the pinned address whatever the URL host; empty and non-string bodies', async (t) => {
  const seen: Array<{ method?: string; host?: string; body: string }> = [];
  const server = nodeHttp.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (c: string) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method, host: req.headers.host, body });
      if (req.method === 'DELETE') res.writeHead(204).end();
      else res.writeHead(200, { 'content-type': 'text/plain', 'set-cookie': ['a=1', 'b=2'] }).end(`got ${body}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  const { port } = server.address() as AddressInfo;
  const fetch = pinnedFetch('127.0.0.1');
  const res = await fetch(`http://nowhere.invalid:${port}/x`, { method: 'POST', body: 'hi', headers: { 'x-a': '1' } });
  t.equal(res.status, 200);
  t.equal(await res.text(), 'got hi');
  t.equal(res.headers.get('set-cookie'), 'a=1, b=2', 'repeated headers are kept');
  const gone = await fetch(new URL(`http://nowhere.invalid:${port}/x`), { method: 'DELETE' });
  t.equal(gone.status, 204);
  t.equal(gone.body, null, 'no body for 204');
  t.same(
    seen.map((s) => [s.method, s.host]),
    [
      ['POST', `nowhere.invalid:${port}`],
      ['DELETE', `nowhere.invalid:${port}`],
    ],
    'both reached the pinned address, naming the URL host',
  );
  await t.rejects(fetch(`http://nowhere.invalid:${port}/x`, { method: 'POST', body: new Uint8Array([1]) }), /only string bodies/);
  await t.rejects(fetch(`http://nowhere.invalid:1/x`), { message: 'fetch failed' }, 'a refused connection fails like fetch');
});
