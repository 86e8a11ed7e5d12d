/** Access rules, the memory file helpers, AgentSettings reading and merging, the Toolbox over a fake MCP port. */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { Access, OPEN_ACCESS } from '../../../src/agent/policy/access.js';
import { MAX_MEMORY_BYTES, MEMORY_SECTION, memoryInstruction, readMemory, withMemory } from '../../../src/agent/runtime/memory.js';
import { checkSameWorkspace, mergeSettings, readSettings } from '../../../src/agent/policy/settings.js';
import { Toolbox } from '../../../src/agent/runtime/toolbox.js';
import type { McpConnection, McpConnector, McpServerStatus } from '../../../src/agent/runtime/toolbox.js';
import { loadDevtoolSchema } from '../../../src/protocol/devtool-schema.js';
import { DEVTOOL_EXTENSION_URI } from '../../../src/protocol/extension.js';
import { createDefaultTools } from '../../../src/tools/index.js';
import type { AnyTool } from '../../../src/tools/tool.js';

const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (err) {
    const e = err as { envelopeCode?: number; name?: string; message: string };
    const code = e.envelopeCode ?? (e.name === 'RequestMalformedError' ? -32602 : '');
    return `${code} ${e.message}`;
  }
  return undefined;
};

t.test('Access', async (t) => {
  const open = new Access();
  t.equal(open.enabled, false);
  t.equal(open.ownerFor({ id: 'a', roles: [] }), undefined, 'no owners recorded without auth');
  t.ok(open.isOwner(undefined, 'someone'));
  t.ok(open.canApprove(undefined));
  t.ok(open.isAdmin(undefined));
  open.checkSettings(undefined, { settings: { approvalMode: 'YOLO' } });
  t.equal(OPEN_ACCESS.enabled, false);

  const a = new Access({ enabled: true, approverRoles: ['approver'], adminRoles: ['admin'] });
  const alice = { id: 'key:alice', roles: ['approver'] };
  const vic = { id: 'key:vic', roles: ['viewer'] };
  const root = { id: 'key:root', roles: ['admin'] };
  t.equal(a.ownerFor(alice), 'key:alice');
  t.ok(a.isOwner(alice, 'key:alice'));
  t.notOk(a.isOwner(vic, 'key:alice'));
  // Principals are namespaced by issuer: a JWT whose sub is "alice" is not the API key "alice".
  const jwtAlice = { id: 'jwt:https://idp.test:alice', roles: ['approver'] };
  t.notOk(a.isOwner(jwtAlice, 'key:alice'), 'a JWT sub equal to a key principal is someone else');
  t.ok(a.isOwner(jwtAlice, 'jwt:https://idp.test:alice'));
  t.ok(a.isOwner(alice, 'alice'), 'an owner stored before namespacing (a bare name) is the API key of that name');
  t.notOk(a.isOwner(jwtAlice, 'alice'), '…never a JWT subject');
  t.notOk(a.isOwner(alice, undefined), 'something made without auth belongs to nobody');
  t.ok(a.canApprove(alice));
  t.notOk(a.canApprove(vic));
  t.notOk(a.canApprove(undefined));
  t.match(
    codeOf(() => a.checkOwner(vic, 'alice', 'task t1')),
    /^-32010 Forbidden: task t1 belongs to another principal; key:vic may not use it/,
  );
  t.match(
    codeOf(() => a.checkOwner(vic, undefined, 'task t1')),
    /created without authentication/,
  );
  t.match(
    codeOf(() => a.checkOwner(root, 'alice', 'task t1')),
    /-32010/,
    'admins do not use others’ tasks (they read the audit log)',
  );
  t.match(
    codeOf(() => a.checkSettings(vic, { settings: { approvalMode: 'YOLO', allowedTools: ['x'], mcpServers: { s: {} } } })),
    /approval_mode YOLO, allowed_tools, mcp_servers would let tools run without approval; only a principal with role approver may set it/,
  );
  t.equal(
    codeOf(() => a.checkSettings(vic, { settings: { approvalMode: 'DEFAULT', allowedTools: [] } })),
    undefined,
    'harmless settings are fine',
  );
  t.equal(
    codeOf(() => a.checkSettings(alice, { settings: { approvalMode: 'YOLO' } })),
    undefined,
  );
  t.match(
    codeOf(() => a.checkAdmin(alice, 'audit/list')),
    /audit\/list needs role admin/,
  );
  t.equal(
    codeOf(() => a.checkAdmin(root, 'audit/list')),
    undefined,
  );
});

t.test('memory file', async (t) => {
  t.equal(withMemory(undefined, 'use pnpm'), `${MEMORY_SECTION}\n\n- use pnpm\n`);
  t.equal(withMemory('# Project\n', 'a'), `# Project\n\n${MEMORY_SECTION}\n\n- a\n`);
  t.equal(withMemory('# Project', 'a'), `# Project\n\n${MEMORY_SECTION}\n\n- a\n`);
  t.equal(withMemory(`${MEMORY_SECTION}\n\n- a\n`, 'b\n  c'), `${MEMORY_SECTION}\n\n- a\n- b c\n`, 'appends; newlines folded');
  t.equal(
    withMemory(`# P\n\n${MEMORY_SECTION}\n- a\n\n## Other\ntext\n`, 'b'),
    `# P\n\n${MEMORY_SECTION}\n- a\n- b\n\n## Other\ntext\n`,
    'inside its section',
  );
  const dir = fs.realpathSync(
    t.testdir({ ws: {}, big: { 'GEMINI.md': 'x'.repeat(MAX_MEMORY_BYTES + 10) }, outside: { 'GEMINI.md': 'secret' } }),
  );
  const ws = path.join(dir, 'ws');
  t.equal(await readMemory(ws), undefined, 'none yet');
  t.equal(await memoryInstruction(ws), undefined);
  fs.writeFileSync(path.join(ws, 'GEMINI.md'), 'Use tabs.\n');
  t.equal(await readMemory(ws), 'Use tabs.\n');
  t.match(await memoryInstruction(ws), /--- GEMINI\.md ---\nUse tabs\.\n--- end of GEMINI\.md ---/);
  t.match(await readMemory(path.join(dir, 'big')), /truncated at 65536 bytes\]$/);
  const linked = path.join(dir, 'linked');
  fs.mkdirSync(linked);
  fs.symlinkSync(path.join(dir, 'outside', 'GEMINI.md'), path.join(linked, 'GEMINI.md'));
  t.equal(await readMemory(linked), undefined, 'a link out of the workspace is not read');
});

t.test('readSettings / mergeSettings / checkSameWorkspace', async (t) => {
  const schema = loadDevtoolSchema();
  const ws = fs.realpathSync(t.testdir({ a: {}, f: 'x' }));
  const md = (v: unknown) => ({ [DEVTOOL_EXTENSION_URI]: v });
  const noCheck = () => undefined;
  t.equal(readSettings(undefined, schema, noCheck), undefined);
  t.equal(readSettings({ other: 1 }, schema, noCheck), undefined);
  t.same(readSettings(md({ workspace_path: path.join(ws, 'a'), approval_mode: 'yolo', allowed_tools: ['x'] }), schema, noCheck), {
    workspace: path.join(ws, 'a'),
    settings: { approvalMode: 'YOLO', allowedTools: ['x'] },
  });
  t.match(
    codeOf(() => readSettings(md({ workspace_path: 'rel' }), schema, noCheck)),
    /-32602 .*workspace_path must be an absolute path/,
  );
  t.match(
    codeOf(() => readSettings(md({ workspace_path: path.join(ws, 'nope') }), schema, noCheck)),
    /does not exist on the server/,
  );
  t.match(
    codeOf(() => readSettings(md({ workspace_path: path.join(ws, 'f') }), schema, noCheck)),
    /is not a directory/,
  );
  t.match(
    codeOf(() => readSettings(md({ mcp_servers: { s: { command: 'x' } } }), schema, (_s, at) => `${at}.s is bad`)),
    /-32602 .*mcp_servers\.s is bad/,
  );
  t.same(readSettings(md({ mcp_servers: { s: { command: 'x' } } }), schema, noCheck)?.settings, { mcpServers: { s: { command: 'x' } } });

  t.equal(mergeSettings({ approvalMode: 'YOLO' }, undefined), undefined);
  t.equal(mergeSettings({ approvalMode: 'YOLO' }, { settings: { approvalMode: 'YOLO' } }), undefined, 'no change');
  t.same(mergeSettings({ approvalMode: 'YOLO', allowedTools: ['a'] }, { settings: { approvalMode: 'DEFAULT' } }), {
    approvalMode: 'DEFAULT',
    allowedTools: ['a'],
  });
  t.equal(
    codeOf(() => checkSameWorkspace({ workspace: '/a', settings: {} }, '/a')),
    undefined,
  );
  t.equal(
    codeOf(() => checkSameWorkspace(undefined, '/a')),
    undefined,
  );
  t.match(
    codeOf(() => checkSameWorkspace({ workspace: '/b', settings: {} }, '/a')),
    /cannot change within a context/,
  );
});

class FakeConnection implements McpConnection {
  closed = false;
  constructor(
    private readonly servers: Record<string, Record<string, unknown>>,
    private readonly make: (server: string) => AnyTool,
  ) {}
  async start(): Promise<void> {}
  tools(): AnyTool[] {
    return this.closed
      ? []
      : Object.keys(this.servers)
          .filter((n) => !n.startsWith('bad'))
          .map((n) => this.make(n));
  }
  status(): McpServerStatus[] {
    return Object.keys(this.servers).map((name) =>
      name.startsWith('bad')
        ? { name, transport: 'stdio', status: 'failed', error: 'exited 1', tools: [] }
        : { name, transport: 'stdio', status: 'connected', tools: ['t'] },
    );
  }
  async close(): Promise<void> {
    this.closed = true;
  }
}

t.test('Toolbox', async (t) => {
  const builtin = createDefaultTools();
  const base = builtin[0];
  const make = (server: string) =>
    ({ ...base, name: `${server}__t`, mcp: { serverName: server, toolName: 't' }, origin: server }) as unknown as AnyTool;
  const connections: FakeConnection[] = [];
  const connector: McpConnector = {
    check: (servers, at) => (Object.keys(servers).some((n) => n.includes(' ')) ? `${at}: bad name` : undefined),
    connect: (servers) => {
      const c = new FakeConnection(servers, make);
      connections.push(c);
      return c;
    },
  };
  const warnings: string[] = [];
  const box = new Toolbox({
    builtin,
    mcp: connector,
    serverMcp: { shared: {}, badglobal: {} },
    defaultCwd: '/tmp',
    logger: { warn: (_o, m) => warnings.push(m) },
    idleMs: 50,
  });
  await box.start();
  t.teardown(() => box.close());
  t.same(warnings, ['MCP server failed to start'], 'a failed operator server is logged');
  const plain = await box.forContext({ id: 'c1', workspace: '/tmp', settings: {} });
  t.same([...plain.byName.keys()].slice(builtin.length), ['shared__t']);
  t.equal(plain.declarations.length, builtin.length + 1);
  t.same(
    box.unreportedFailures('c1', plain).map((s) => s.name),
    ['badglobal'],
    'reported once…',
  );
  t.same(box.unreportedFailures('c1', plain), [], '…and only once');

  const own = await box.forContext({ id: 'c2', workspace: '/tmp', settings: { mcpServers: { mine: {}, shared: {} } } });
  t.same([...own.byName.keys()].slice(builtin.length).sort(), ['mine__t', 'shared__t']);
  t.equal((own.byName.get('shared__t') as unknown as { origin: string }).origin, 'shared');
  t.same(
    own.servers.map((s) => s.name),
    ['badglobal', 'mine', 'shared'],
    "the context's own server replaces the operator's of that name",
  );
  const again = await box.forContext({ id: 'c2', workspace: '/tmp', settings: { mcpServers: { mine: {}, shared: {} } } });
  t.equal(connections.length, 2, 'same servers: the connection is reused');
  t.same([...again.byName.keys()], [...own.byName.keys()]);
  await box.forContext({ id: 'c2', workspace: '/tmp', settings: { mcpServers: { other: {} } } });
  t.equal(connections.length, 3, 'changed servers: a new connection');
  t.ok(connections[1].closed, 'the old one is closed');
  t.equal(box.checkServers({ 'a b': {} }, 'at'), 'at: bad name');
  await new Promise((r) => setTimeout(r, 200));
  t.ok(connections[2].closed, 'idle context servers are stopped by the sweep');

  const noMcp = new Toolbox({ builtin, defaultCwd: '/tmp', logger: { warn: () => {} } });
  t.match(noMcp.checkServers({ s: {} }, 'at'), /MCP is not available/);
  t.equal(noMcp.checkServers({}, 'at'), undefined);
  t.equal((await noMcp.forContext({ id: 'x', workspace: '/tmp', settings: { mcpServers: { s: {} } } })).byName.size, builtin.length);
  await noMcp.close();
});
