/**
 * gemini-cli extensions from EXTENSIONS_DIR, end to end: an extension's stdio MCP server (the
 * echo fixture) is offered and callable as `<server>__<tool>`, its context file reaches the
 * model's system instruction, its excludeTools take tools away (built-in and MCP), and a broken
 * extension beside it is skipped with a JSON log line while the server starts. `extensions` and
 * `extensions list` answer in the original's shape on the legacy REST routes, and as a slash
 * command in the RFC dialect.
 */
import t from 'tap';
import path from 'node:path';
import type { ModelClient, ModelRequest } from '../../src/agent/model/model-client.js';
import { ScriptedModelClient, type ModelScript } from '../../src/agent/model/scripted-model-client.js';
import { defaultLogger } from '../../src/app.js';
import { loadConfig } from '../../src/config/load-config.js';
import { REDACTED } from '../../src/lib/redact.js';
import { echoServer } from '../fixtures/mcp/servers.js';
import { fixture } from '../support/legacy-client.js';
import { ownDir, type Layout } from '../support/own-dir.js';
import { rpc } from '../support/sse.js';
import { dataOf, devtool, startServer, textOf, URI, userMessage } from '../support/server.js';
import type { TestServer } from '../support/server.js';

const call = (name: string, args: Record<string, unknown>) => ({ functionCall: { name, args } });
const say = (text: string) => ({ chunks: [[{ text }]] });

const SCRIPT: ModelScript = {
  model: 'scripted-extensions',
  scripts: [
    { when: '^echo', steps: [{ chunks: [[call('exttools__echo', { text: 'from an extension' })]] }, say('Echoed.')] },
    { when: '^token', steps: [{ chunks: [[call('exttools__env', { name: 'EXT_TOKEN' })]] }, say('Read.')] },
    { when: '^hello', steps: [say('Hello.')] },
  ],
};

/** The scripted model, keeping every request it was sent. */
function recording(script: ModelScript): { model: ModelClient; requests: ModelRequest[] } {
  const inner = new ScriptedModelClient(script);
  const requests: ModelRequest[] = [];
  return { model: { model: inner.model, generate: (req, signal) => (requests.push(req), inner.generate(req, signal)) }, requests };
}

const server = echoServer({ env: { EXT_TOKEN: 'tok-123456' } });
const EXTENSIONS: Layout = {
  'tools-ext': {
    'gemini-extension.json': JSON.stringify({
      name: 'tools-ext',
      version: '0.4.1',
      mcpServers: { exttools: server },
      excludeTools: ['read_many_files', 'exttools__fail'],
    }),
    'GEMINI.md': 'Extension rule: answer in haiku.',
  },
  broken: { 'gemini-extension.json': '{"name": "broken",' },
  'bad-server': {
    'gemini-extension.json': JSON.stringify({
      name: 'bad-server',
      version: '1',
      mcpServers: { both: { command: 'x', httpUrl: 'http://h' } },
    }),
  },
};

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

/** A server with EXTENSIONS_DIR holding `layout`; its log lines parsed. */
async function extensionServer(t: Test, layout: Layout): Promise<{ srv: TestServer; dir: string; log: any[]; requests: ModelRequest[] }> {
  const dir = ownDir('ext-e2e', layout);
  const log: any[] = [];
  const { model, requests } = recording(SCRIPT);
  const env = { EXTENSIONS_DIR: dir };
  const logger = defaultLogger(loadConfig({ WORKSPACE_DIR: dir, ...env }), (line) => void log.push(JSON.parse(line)));
  const srv = await startServer(t, { model, env, app: { logger: logger as never } });
  return { srv, dir, log, requests };
}

const results = (res: { events?: Array<{ data: any }> }) => (res.events ?? []).map((e) => e.data.result);
const cards = (res: { events?: Array<{ data: any }> }) =>
  results(res)
    .map(dataOf)
    .filter((d) => d?.tool_call_id);
const yolo = { metadata: { [URI]: { approval_mode: 'YOLO' } } };

t.test('an extension in EXTENSIONS_DIR: its MCP server, context file and excluded tools', async (t) => {
  const { srv, dir, log, requests } = await extensionServer(t, EXTENSIONS);
  const skipped = (name: string) => log.find((l) => l.msg === 'extension skipped' && l.extension === path.join(dir, name));
  t.match(skipped('broken'), { level: 40, reason: /gemini-extension\.json is not valid JSON/ }, 'the broken one: a JSON log line');
  t.match(
    skipped('bad-server'),
    { level: 40, reason: /bad-server\/gemini-extension\.json: mcpServers\.both must set exactly one of command and httpUrl, not both/ },
    "one whose MCP entry fails the settings file's parse",
  );
  const loaded = log.find((l) => l.msg === 'extension loaded');
  t.match(loaded, { extension: 'tools-ext', version: '0.4.1' });
  t.strictSame(loaded?.mcpServers, ['exttools'], 'its one MCP server');

  const res = await rpc(srv.url, 'message/stream', { message: userMessage('echo', yolo) });
  t.match(cards(res).at(-1), { tool_name: 'exttools__echo', status: 'SUCCEEDED', output: { text: 'from an extension' } });
  t.equal(results(res).at(-1).status.state, 'completed');

  const offered = requests[0]?.tools?.map((d) => d.name) ?? [];
  t.ok(offered.includes('exttools__echo') && offered.includes('exttools__add'), "the extension's MCP tools are offered");
  t.notOk(offered.includes('exttools__fail'), 'an MCP tool it excludes is not');
  t.notOk(offered.includes('read_many_files'), 'a built-in tool it excludes is not');
  t.ok(offered.includes('read_file'), 'the other built-in tools are');
  t.match(
    requests[0]?.systemInstruction,
    /--- tools-ext\/GEMINI\.md ---\nExtension rule: answer in haiku\.\n--- end of tools-ext\/GEMINI\.md ---/,
  );

  const token = await rpc(srv.url, 'message/stream', { message: userMessage('token', yolo) });
  t.match(
    cards(token).at(-1),
    { tool_name: 'exttools__env', status: 'SUCCEEDED', output: { text: 'tok-123456' } },
    'its server gets its env',
  );
});

/** The legacy REST routes through app.inject. */
async function legacy(srv: TestServer, method: 'GET' | 'POST', url: string, body?: unknown) {
  const res = await srv.app.inject({
    method,
    url,
    headers: { host: '127.0.0.1', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
  return { status: res.statusCode, body: JSON.parse(res.body) };
}

t.test('extensions and extensions list, in the legacy dialect: the original shapes', async (t) => {
  const { srv, dir } = await extensionServer(t, EXTENSIONS);
  const listed = await legacy(srv, 'GET', '/listCommands');
  t.same(
    listed.body.commands.find((c: any) => c.name === 'extensions'),
    (fixture('rest') as Record<string, any>).listCommands.commands.find((c: any) => c.name === 'extensions'),
    "exactly as the original's /listCommands (test/fixtures/legacy/rest.json)",
  );
  const home = path.join(dir, 'tools-ext');
  const expected = {
    name: 'extensions list',
    data: [
      {
        name: 'tools-ext',
        version: '0.4.1',
        path: home,
        contextFiles: [path.join(home, 'GEMINI.md')],
        mcpServers: { exttools: { ...server, env: { EXT_TOKEN: REDACTED } } },
        excludeTools: ['read_many_files', 'exttools__fail'],
        isActive: true,
      },
    ],
  };
  for (const command of ['extensions list', 'extensions', '/extensions list']) {
    t.same(await legacy(srv, 'POST', '/executeCommand', { command, args: [] }), { status: 200, body: expected }, command);
  }
});

t.test('no extensions: the original text', async (t) => {
  const { srv } = await extensionServer(t, {});
  t.same(await legacy(srv, 'POST', '/executeCommand', { command: 'extensions list' }), {
    status: 200,
    body: { name: 'extensions list', data: 'No extensions installed.' },
  });
});

t.test('extensions list in the RFC dialect: commands/get and command/execute', async (t) => {
  const { srv, dir } = await extensionServer(t, EXTENSIONS);
  const got = await rpc(srv.url, 'commands/get', {});
  const ext = got.json.result.commands.find((c: any) => c.name === 'extensions');
  t.match(ext, { description: 'Manage extensions.', sub_commands: [{ name: 'list', description: 'Lists all installed extensions.' }] });
  t.equal(ext.sub_commands.length, 1, 'list is its one subcommand');
  for (const path_ of [['extensions', 'list'], ['/extensions']]) {
    const run = await rpc(srv.url, 'command/execute', { command_path: path_, args: '' });
    t.equal(run.json.result?.status, 'STARTED', path_.join(' '));
    const replay = await rpc(srv.url, 'tasks/resubscribe', { id: run.json.result.execution_id }, { headers: { 'Last-Event-ID': '0' } });
    const text = results(replay)
      .filter((r) => devtool(r)?.kind === 'TEXT_CONTENT')
      .map(textOf)
      .join('');
    t.equal(
      text,
      `Extensions (${dir}):\n- tools-ext (0.4.1)\n  Path: ${path.join(dir, 'tools-ext')}\n  Context files: ${path.join(dir, 'tools-ext', 'GEMINI.md')}\n  MCP servers: exttools\n  Excluded tools: read_many_files, exttools__fail`,
    );
  }
});
