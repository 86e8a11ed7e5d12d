/** McpManager against real MCP servers: the stdio echo fixture and the streamable HTTP fixture. */
import fs from 'node:fs';
import net from 'node:net';
import t from 'tap';
import { McpManager } from '../../../src/mcp/index.js';
import type { AnyTool, ToolContext } from '../../../src/tools/tool.js';
import { startHttpMcpServer } from '../../fixtures/mcp/http-server.js';
import { echoServer, failingServer } from '../../fixtures/mcp/servers.js';

function ctx(workspace: string, signal = new AbortController().signal, onLiveOutput?: (s: string) => void): ToolContext {
  return { workspace, signal, onLiveOutput };
}

function toolNamed(tools: AnyTool[], name: string): AnyTool {
  const tool = tools.find((x) => x.name === name);
  if (!tool) throw new Error(`no tool ${name} among ${tools.map((x) => x.name).join(', ')}`);
  return tool;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitFor(check: () => boolean, ms = 3000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end;) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return check();
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

t.test('stdio + HTTP servers, one failing', async (t) => {
  const workspace = fs.realpathSync(t.testdir({}));
  const http = await startHttpMcpServer({ token: 's3cret' });
  t.teardown(() => http.close());
  const stderr: string[] = [];
  const manager = new McpManager(
    {
      echo: echoServer({ env: { FIXTURE_VAR: 'from-config' } }),
      bad: failingServer(),
      web: { url: http.url, headers: { Authorization: 'Bearer s3cret' } },
      noauth: { url: http.url },
    },
    { cwd: workspace, onStderr: (name, chunk) => stderr.push(`${name}: ${chunk}`) },
  );
  t.teardown(() => manager.close());
  t.same(manager.tools(), [], 'no tools before start');
  t.equal(manager.status()[0].status, 'disconnected');
  await Promise.all([manager.start(), manager.start()]);
  const tools = manager.tools();
  const c = ctx(workspace);

  t.test('status reports each server', async (t) => {
    const [echo, bad, web, noauth] = manager.status();
    t.match(echo, { name: 'echo', transport: 'stdio', status: 'connected' });
    t.notOk('error' in echo);
    t.same(echo.tools.slice(0, 4), ['echo', 'add', 'fail', 'slow']);
    t.match(bad, { name: 'bad', transport: 'stdio', status: 'failed' });
    t.strictSame(bad.tools, [], 'a failed server offers no tools');
    t.equal(bad.error, 'the server closed the connection during startup (it probably exited); stderr: boom: missing token');
    t.match(web, { name: 'web', transport: 'http', status: 'connected' });
    t.same(web.tools, echo.tools);
    t.match(noauth, { name: 'noauth', transport: 'http', status: 'failed', error: /^the server answered HTTP 401$/ });
    t.ok(
      stderr.some((s) => s.startsWith('bad: boom: missing token')),
      'stderr is handed to onStderr',
    );
  });

  t.test('tools are prefixed, de-duplicated and converted', async (t) => {
    t.ok(tools.every((x) => x.name.length <= 64 && /^[A-Za-z_][A-Za-z0-9_.-]*$/.test(x.name)));
    t.equal(new Set(tools.map((x) => x.name)).size, tools.length, 'names are unique');
    const names = tools.map((x) => x.name);
    t.same(names.slice(0, 4), ['echo__echo', 'echo__add', 'echo__fail', 'echo__slow']);
    t.ok(names.includes('web__echo'));
    const longOnes = names.filter((n) => n.startsWith('echo__aaaa'));
    t.equal(longOnes.length, 2);
    t.match(longOnes[1], /_2$/, 'a name clash after cutting gets a suffix');
    t.same(toolNamed(tools, longOnes[1]).mcp?.toolName, `${'a'.repeat(40)}_two_${'z'.repeat(31)}`);
    const echo = toolNamed(tools, 'echo__echo');
    t.same(echo.parameters, { type: 'object', properties: { text: { type: 'string', description: 'Text to echo' } }, required: ['text'] });
    t.same(toolNamed(tools, 'echo__structured').parameters, {
      type: 'object',
      properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
      required: ['city'],
    });
    t.notMatch(JSON.stringify(tools.map((x) => x.parameters)), /\$schema|additionalProperties/);
    t.equal(echo.kind, 'other');
    t.equal(echo.description, 'Echoes the text back.');
    t.same(echo.mcp, { serverName: 'echo', toolName: 'echo' });
    t.equal(echo.describe({ text: 'x' }), 'echo: echo');
    t.same(await echo.propose?.({ text: 'x' }, c), { type: 'mcp', serverName: 'echo', toolName: 'echo' });
    t.match(echo.validate({}, c), { ok: false, error: { message: 'Missing required argument "text" for echo__echo' } });
  });

  t.test('calls over stdio', async (t) => {
    t.same(await toolNamed(tools, 'echo__echo').run({ text: 'hello' }, c), {
      llmContent: 'hello',
      display: { type: 'text', text: 'hello' },
    });
    t.same(await toolNamed(tools, 'echo__add').run({ a: 2, b: 40 }, c), { llmContent: '42', display: { type: 'text', text: '42' } });
    t.same(await toolNamed(tools, 'echo__fail').run({}, c), {
      isError: true,
      error: { type: 'mcp_tool_error', message: 'this tool always fails' },
      llmContent: 'this tool always fails',
    });
    t.same(await toolNamed(tools, 'echo__structured').run({ city: 'Oslo' }, c), {
      llmContent: '{"city":"Oslo","temperature":21}',
      display: { type: 'structured', data: { city: 'Oslo', temperature: 21 } },
    });
    t.match(await toolNamed(tools, 'echo__image').run({}, c), { llmContent: 'a pixel\n[image/png, 1234 bytes]' });
    t.match(
      await toolNamed(tools, 'echo__env').run({ name: 'FIXTURE_VAR' }, c),
      { llmContent: 'from-config' },
      'config env reaches the child',
    );
    t.match(await toolNamed(tools, 'echo__cwd').run({}, c), { llmContent: workspace }, 'the workspace is the default cwd');
    t.match(await toolNamed(tools, 'echo__add').run({ a: 'x', b: 1 }, c), {
      isError: true,
      error: { type: 'mcp_tool_error', message: /a/ },
    });
  });

  t.test('abort cancels a slow call on the server', async (t) => {
    const controller = new AbortController();
    const live: string[] = [];
    const started = Date.now();
    const pending = toolNamed(tools, 'echo__slow').run(
      { ms: 10_000 },
      ctx(workspace, controller.signal, (s) => live.push(s)),
    );
    t.ok(await waitFor(() => live.length > 0), 'progress arrives as live output');
    t.same(live, ['waiting (1/2)']);
    controller.abort();
    t.match(await pending, { isError: true, error: { type: 'cancelled' } });
    t.ok(Date.now() - started < 5000, 'returns promptly');
    t.ok(await waitFor(() => stderr.some((s) => s.includes('slow: cancelled'))), 'the server saw notifications/cancelled');
  });

  t.test('calls over HTTP carry the configured headers', async (t) => {
    t.same(await toolNamed(tools, 'web__add').run({ a: 1, b: 2 }, c), { llmContent: '3', display: { type: 'text', text: '3' } });
    t.match(await toolNamed(tools, 'web__fail').run({}, c), { isError: true, error: { type: 'mcp_tool_error' } });
    const authorized = http.requests.filter((r) => r.authorization === 'Bearer s3cret');
    const anonymous = http.requests.filter((r) => r.authorization === undefined);
    t.ok(authorized.length >= 3, 'initialize, tools/list and tools/call were authorized');
    t.equal(anonymous.length, 1, 'only the noauth server came without the header, and was refused');
    t.ok(
      authorized.some((r) => r.sessionId !== undefined),
      'the session id is sent back',
    );
  });

  t.test('close ends the child and the HTTP session', async (t) => {
    const pidResult = await toolNamed(tools, 'echo__pid').run({}, c);
    const pid = Number((pidResult as { llmContent: string }).llmContent);
    t.ok(isAlive(pid), 'the stdio child runs');
    await manager.close();
    t.ok(await waitFor(() => !isAlive(pid)), 'the stdio child is gone');
    t.ok(
      http.requests.some((r) => r.method === 'DELETE' && r.sessionId !== undefined),
      'the HTTP session was terminated',
    );
    t.same(
      manager.status().map((s) => s.status),
      ['disconnected', 'failed', 'disconnected', 'failed'],
    );
    t.same(manager.tools(), []);
    t.same(await toolNamed(tools, 'echo__echo').run({ text: 'x' }, c), {
      isError: true,
      error: { type: 'mcp_call_failed', message: 'Call to MCP tool "echo" of server "echo" failed: MCP server "echo" has been shut down' },
    });
    await manager.close();
    await manager.start();
    t.equal(manager.status()[0].status, 'disconnected', 'a closed manager does not restart');
  });
});

t.test('a call without an answer fails at the call timeout', async (t) => {
  const workspace = fs.realpathSync(t.testdir({}));
  const manager = new McpManager({ echo: echoServer() }, { cwd: workspace, callTimeoutMs: 300 });
  t.teardown(() => manager.close());
  await manager.start();
  t.match(await toolNamed(manager.tools(), 'echo__slow').run({ ms: 5000 }, ctx(workspace)), {
    isError: true,
    error: { type: 'mcp_call_failed', message: 'Call to MCP tool "slow" of server "echo" failed: no answer within 300 ms' },
  });
  t.equal(manager.status()[0].status, 'connected', 'a timed-out call leaves the server connected');
});

// The default call timeout: the crash must be seen as the connection closing, however slowly
// a loaded machine lets the child exit (a 300 ms timeout here raced the exit under CI load).
t.test('a server that dies after start is marked disconnected; its tools fail with the cause', async (t) => {
  const workspace = fs.realpathSync(t.testdir({}));
  const manager = new McpManager({ echo: echoServer() }, { cwd: workspace });
  t.teardown(() => manager.close());
  await manager.start();
  const tools = manager.tools();
  const c = ctx(workspace);

  const crash = await toolNamed(tools, 'echo__crash').run({}, c);
  t.match(crash, {
    isError: true,
    error: {
      type: 'mcp_call_failed',
      message:
        /MCP server "echo" is disconnected: the server closed the connection \(it may have exited\); stderr: .*crash: exiting on request/s,
    },
  });
  const [status] = manager.status();
  t.equal(status.status, 'disconnected');
  t.match(status.error, /crash: exiting on request/);
  t.same(status.tools, []);
  t.same(manager.tools(), [], 'a dead server offers no tools');
  t.match(await toolNamed(tools, 'echo__echo').run({ text: 'x' }, c), { error: { type: 'mcp_call_failed', message: /is disconnected/ } });
});

t.test('start failures: timeout, missing command, unreachable URL', async (t) => {
  const port = await closedPort();
  const manager = new McpManager(
    {
      hung: { command: process.execPath, args: ['-e', 'setInterval(() => {}, 1000)'], timeout: 300 },
      missing: { command: 'definitely-not-an-mcp-server' },
      down: { url: `http://127.0.0.1:${port}/mcp` },
      badcwd: { command: process.execPath, cwd: 'no/such/dir' },
    },
    { cwd: fs.realpathSync(t.testdir({})) },
  );
  t.teardown(() => manager.close());
  const started = Date.now();
  await manager.start();
  t.ok(Date.now() - started < 3000, `failures are quick (${Date.now() - started} ms)`);
  const [hung, missing, down, badcwd] = manager.status();
  t.match(hung, { status: 'failed', error: 'timed out after 300 ms waiting for the server to connect and list its tools' });
  t.match(missing, {
    status: 'failed',
    error: 'cannot run "definitely-not-an-mcp-server": command not found, or its working directory does not exist',
  });
  t.match(down, {
    transport: 'http',
    status: 'failed',
    error: `cannot reach http://127.0.0.1:${port}/mcp: connect ECONNREFUSED 127.0.0.1:${port}`,
  });
  t.match(badcwd, { status: 'failed', error: /command not found, or its working directory does not exist/ });
  t.same(manager.tools(), []);
});

t.test('an HTTP server that goes away makes calls fail with the cause', async (t) => {
  const http = await startHttpMcpServer();
  const manager = new McpManager({ web: { url: http.url } });
  t.teardown(() => manager.close());
  await manager.start();
  const echo = toolNamed(manager.tools(), 'web__echo');
  t.match(await echo.run({ text: 'up' }, ctx('/')), { llmContent: 'up' });
  await http.close();
  const prefix = `Call to MCP tool "echo" of server "web" failed: cannot reach ${http.url}: `;
  const first = await echo.run({ text: 'down' }, ctx('/'));
  t.match(first, { isError: true, error: { type: 'mcp_call_failed' } });
  t.ok((first as { error: { message: string } }).error.message.startsWith(prefix), 'names the URL and the network cause');
  const second = await echo.run({ text: 'again' }, ctx('/'));
  t.ok((second as { error: { message: string } }).error.message.startsWith(prefix), 'and again');
});

t.test('close during start leaves servers disconnected, not failed', async (t) => {
  const manager = new McpManager({ echo: echoServer() }, { cwd: fs.realpathSync(t.testdir({})) });
  const starting = manager.start();
  await manager.close();
  await starting;
  t.match(manager.status(), [{ name: 'echo', status: 'disconnected' }]);
  t.equal(manager.status().length, 1, 'one server, one status');
  t.notOk(manager.status()[0].error);
  t.same(manager.tools(), []);
});
