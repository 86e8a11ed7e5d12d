/**
 * MCP tools end to end: a real stdio MCP server (test/fixtures/mcp/echo-server.ts) configured
 * per context in AgentSettings.mcp_servers and for the whole server in SETTINGS_FILE. Its
 * tools are offered as `<server>__<tool>`, ask with mcp_details, offer proceed_always_tool and
 * proceed_always_server, report tool errors in the text part, and a server that fails to
 * start is reported once while the rest work.
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ModelScript } from '../../src/agent/model/scripted-model-client.js';
import { rpc } from '../support/sse.js';
import type { SseEvent } from '../support/sse.js';
import { confirmMessage, dataOf, devtool, sharedStore, startServer, tempDir, textOf, URI, userMessage } from '../support/server.js';
import { echoServer, failingServer } from '../fixtures/mcp/servers.js';

const call = (name: string, args: Record<string, unknown>) => ({ functionCall: { name, args } });
const say = (text: string) => ({ chunks: [[{ text }]] });

const SCRIPT: ModelScript = {
  model: 'scripted-mcp',
  scripts: [
    { when: '^echo once', steps: [{ chunks: [[call('echo__echo', { text: 'hi there' })]] }, say('Echoed.')] },
    {
      when: '^echo twice',
      steps: [{ chunks: [[call('echo__echo', { text: 'one' })]] }, { chunks: [[call('echo__add', { a: 2, b: 3 })]] }, say('Both.')],
    },
    { when: '^add', steps: [{ chunks: [[call('echo__add', { a: 20, b: 22 })]] }, say('Added.')] },
    { when: '^fail', steps: [{ chunks: [[call('echo__fail', {})]] }, say('It failed.')] },
    { when: '^global', steps: [{ chunks: [[call('shared__echo', { text: 'from settings file' })]] }, say('Done.')] },
    { when: '^hello', steps: [say('Hello.')] },
    { when: '^where', steps: [{ chunks: [[call('echo__cwd', {})]] }, say('There.')] },
  ],
};

const results = (events: SseEvent[] | undefined) => (events ?? []).map((e) => e.data.result);
const cards = (events: SseEvent[] | undefined) =>
  results(events)
    .map(dataOf)
    .filter((d) => d?.tool_call_id);

t.test('MCP servers from AgentSettings and SETTINGS_FILE', async (t) => {
  const settingsDir = tempDir('devtool-settings-');
  const settingsFile = path.join(settingsDir, 'settings.json');
  writeFileSync(settingsFile, JSON.stringify({ mcpServers: { shared: echoServer() }, theme: 'ignored' }));
  const srv = await startServer(t, { script: SCRIPT, env: { SETTINGS_FILE: settingsFile } });
  const store = await sharedStore();
  const settings = (extra: Record<string, unknown> = {}) => ({
    metadata: { [URI]: { workspace_path: srv.workspace, mcp_servers: { echo: echoServer() }, ...extra } },
  });

  await t.test('a call asks with mcp_details and the MCP options; approving runs it on the server', async (t) => {
    const first = await rpc(srv.url, 'message/stream', { message: userMessage('echo once', settings()) });
    const ev = results(first.events);
    t.equal(ev.at(-1).status.state, 'input-required');
    const card = cards(first.events).at(-1);
    t.match(card, { tool_name: 'echo__echo', status: 'PENDING', input_parameters: { text: 'hi there' } });
    t.same(card.confirmation_request.mcp_details, { server_name: 'echo', tool_name: 'echo' });
    t.same(
      card.confirmation_request.options.map((o: { id: string }) => o.id),
      ['proceed_once', 'proceed_always_tool', 'proceed_always_server', 'cancel'],
    );
    const task = ev[0];
    const second = await rpc(srv.url, 'message/stream', {
      message: confirmMessage(task.id, task.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' }),
    });
    const done = cards(second.events).at(-1);
    t.match(done, { status: 'SUCCEEDED', output: { text: 'hi there' } });
    t.equal(results(second.events).at(-1).status.state, 'completed');
  });

  await t.test('proceed_always_tool trusts that tool, not the server; proceed_always_server trusts every tool', async (t) => {
    const first = await rpc(srv.url, 'message/stream', { message: userMessage('echo twice', settings()) });
    const task = results(first.events)[0];
    const echo = cards(first.events).at(-1);
    const second = await rpc(srv.url, 'message/stream', {
      message: confirmMessage(task.id, task.contextId, { tool_call_id: echo.tool_call_id, selected_option_id: 'proceed_always_tool' }),
    });
    const add = cards(second.events).at(-1);
    t.match(add, { tool_name: 'echo__add', status: 'PENDING' }, 'another tool of the same server still asks');
    const third = await rpc(srv.url, 'message/stream', {
      message: confirmMessage(task.id, task.contextId, { tool_call_id: add.tool_call_id, selected_option_id: 'proceed_always_server' }),
    });
    t.match(cards(third.events).at(-1), { tool_name: 'echo__add', status: 'SUCCEEDED', output: { text: '5' } });

    // A later task of the same context: the server is trusted, so its tools run without asking.
    const later = await rpc(srv.url, 'message/stream', { message: userMessage('add', { contextId: task.contextId }) });
    const states = cards(later.events).map((c) => c.status);
    t.same(states, ['PENDING', 'EXECUTING', 'SUCCEEDED'], 'runs at once');
    t.notOk(cards(later.events)[0].confirmation_request, 'no confirmation asked');
    t.equal(results(later.events).at(-1).status.state, 'completed');
    const audit = (await store.listAudit({ taskId: task.id })).map((a) => [a.decision, a.optionId ?? null]);
    t.strictSame(audit, [
      ['proposed', null],
      ['authorized', 'proceed_always_tool'],
      ['executed', 'proceed_always_tool'],
      ['succeeded', null],
      ['proposed', null],
      ['authorized', 'proceed_always_server'],
      ['executed', 'proceed_always_server'],
      ['succeeded', null],
    ]);
  });

  await t.test("a context's stdio server starts outside the workspace (nothing planted there is run by its command)", async (t) => {
    const res = await rpc(srv.url, 'message/stream', { message: userMessage('where', settings({ approval_mode: 'YOLO' })) });
    const done = cards(res.events).at(-1);
    t.equal(done?.status, 'SUCCEEDED');
    const cwd: string = done?.output?.text ?? '';
    t.ok(cwd !== '' && !cwd.startsWith(srv.workspace), `its working directory (${cwd}) is not in the workspace`);
  });

  await t.test('an MCP tool error reaches the text part and the model', async (t) => {
    const first = await rpc(srv.url, 'message/stream', { message: userMessage('fail', settings({ approval_mode: 'YOLO' })) });
    const failed = cards(first.events).find((c) => c.status === 'FAILED');
    t.match(failed, { tool_name: 'echo__fail', error: { type: 'mcp_tool_error', message: /this tool always fails/ } });
    const withText = results(first.events).find((r) => dataOf(r)?.status === 'FAILED');
    t.match(textOf(withText), /echo__fail failed: .*this tool always fails/);
    t.equal(results(first.events).at(-1).status.state, 'completed');
    const ctx = await store.loadContext(results(first.events)[0].contextId);
    t.match(JSON.stringify(ctx?.history), /this tool always fails/, 'the model was told');
  });

  await t.test('operator servers from SETTINGS_FILE are offered to every context', async (t) => {
    const first = await rpc(srv.url, 'message/stream', {
      message: userMessage('global', { metadata: { [URI]: { approval_mode: 'yolo' } } }),
    });
    t.match(cards(first.events).at(-1), { tool_name: 'shared__echo', status: 'SUCCEEDED', output: { text: 'from settings file' } });
  });

  await t.test('a server that fails to start is reported once, clearly; the other servers work', async (t) => {
    const meta = {
      [URI]: {
        workspace_path: srv.workspace,
        approval_mode: 'YOLO',
        mcp_servers: { echo: echoServer(), broken: failingServer('boom: missing token') },
      },
    };
    const first = await rpc(srv.url, 'message/stream', { message: userMessage('echo once', { metadata: meta }) });
    const texts = results(first.events)
      .filter((r) => devtool(r)?.kind === 'TEXT_CONTENT')
      .map(textOf);
    const notices = texts.filter((s) => s.includes('MCP server "broken"'));
    t.equal(notices.length, 1, 'reported in the stream');
    t.match(notices[0], /MCP server "broken" is unavailable: .*boom: missing token/);
    t.match(cards(first.events).at(-1), { tool_name: 'echo__echo', status: 'SUCCEEDED' }, 'the working server is used');
    const contextId = results(first.events)[0].contextId;
    const again = await rpc(srv.url, 'message/stream', { message: userMessage('hello', { contextId }) });
    t.notOk(results(again.events).map(textOf).join('').includes('broken'), 'not reported a second time in the context');

    const mcp = await rpc(srv.url, 'command/execute', { command_path: ['mcp'], context_id: contextId });
    t.equal(mcp.json?.result?.status, 'STARTED');
    const replay = await rpc(srv.url, 'tasks/resubscribe', { id: mcp.json.result.execution_id }, { headers: { 'Last-Event-ID': '0' } });
    const listing = results(replay.events).map(textOf).join('');
    t.match(listing, /broken \(stdio\): failed — .*boom: missing token/);
    t.match(listing, /echo \(stdio\): connected — \d+ tools: .*echo__echo/);
    t.match(listing, /shared \(stdio\): connected/);
  });

  await t.test('bad mcp_servers are refused before anything starts', async (t) => {
    const bad = await rpc(srv.url, 'message/stream', {
      message: userMessage('hello', { metadata: { [URI]: { mcp_servers: { 'bad name': { command: 'x' } } } } }),
    });
    t.equal(bad.json?.error?.code, -32602);
    t.match(bad.json?.error?.message, /mcp_servers/);
    const both = await rpc(srv.url, 'message/stream', {
      message: userMessage('hello', { metadata: { [URI]: { mcp_servers: { x: { command: 'node', url: 'http://127.0.0.1:1/mcp' } } } } }),
    });
    t.equal(both.json?.error?.code, -32602);
    const metadata = await rpc(srv.url, 'message/stream', {
      message: userMessage('hello', { metadata: { [URI]: { mcp_servers: { cloud: { url: 'http://169.254.169.254/mcp' } } } } }),
    });
    t.equal(metadata.json?.error?.code, -32602, 'a cloud metadata address is refused before anything connects');
    t.match(metadata.json?.error?.message, /mcp_servers\.cloud\.url .*169\.254\.169\.254.*metadata/);
  });
});

t.test('a bad SETTINGS_FILE stops the server at boot with the reason', async (t) => {
  const dir = tempDir('devtool-settings-');
  const file = path.join(dir, 'settings.json');
  writeFileSync(file, JSON.stringify({ mcpServers: { x: { url: 'ftp://nope' } } }));
  await t.rejects(startServer(t, { script: SCRIPT, env: { SETTINGS_FILE: file } }), /SETTINGS_FILE .*mcpServers/);
});
