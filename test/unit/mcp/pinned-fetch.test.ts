/**
 * DNS rebinding against client-given HTTP MCP servers (issue 10, finding 11): the URL is
 * checked and its host resolved once when the server connects, and every request of the
 * connection goes to that address — a lookup that answers differently the second time is
 * never asked again.
 */
import t from 'tap';
import { McpManager } from '../../../src/mcp/index.js';
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
