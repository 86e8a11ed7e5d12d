/**
 * The shell sandbox (bubblewrap) against hostile commands, each beside the same command without
 * the sandbox (so every check can fail). The bwrap cases are skipped, with the reason, only
 * where bwrap is not installed or cannot create namespaces here.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { RunShellCommandTool } from '../../../src/tools/shell/run-shell-command.js';
import { bwrapArgs, createShellSandbox, NO_SANDBOX, SandboxUnavailableError, type ShellSandbox } from '../../../src/tools/shell/sandbox.js';
import type { ToolResult } from '../../../src/tools/tool.js';
import { until } from '../../support/core.js';

type Fixtures = Pick<typeof t, 'teardown'>;

/**
 * A workspace with the server's files inside it, and a secret and a directory outside it. Made
 * under /var/tmp, not in the checkout: a checkout under /tmp (a CI clone) would be hidden by the
 * sandbox's private /tmp, and "outside" would then be missing rather than read-only.
 */
function setup(t: Fixtures) {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(OUTSIDE_TMP, 'sandbox-fixture-')));
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }));
  fs.mkdirSync(path.join(root, 'ws/.data'), { recursive: true });
  fs.mkdirSync(path.join(root, 'ws/src'));
  fs.mkdirSync(path.join(root, 'outside'));
  fs.writeFileSync(path.join(root, 'ws/auth.json'), '{"api_keys":"SECRET-AUTH"}');
  fs.writeFileSync(path.join(root, 'ws/.data/pg.db'), 'SECRET-DB');
  fs.writeFileSync(path.join(root, 'ws/src/a.txt'), 'hello\n');
  fs.writeFileSync(path.join(root, 'outside/creds.json'), 'SECRET-CREDS');
  const ws = path.join(root, 'ws');
  const outside = path.join(root, 'outside');
  const protectedPaths = [path.join(ws, 'auth.json'), path.join(ws, '.data'), path.join(outside, 'creds.json')];
  return { root, ws, outside, protectedPaths };
}

function probe(protectedPaths: string[], network = false): { sandbox?: ShellSandbox; skip?: string } {
  try {
    return { sandbox: createShellSandbox('bwrap', { protectedPaths, network }).sandbox };
  } catch (err) {
    if (err instanceof SandboxUnavailableError) return { skip: err.message };
    throw err;
  }
}

const available = probe([]);
/** Skipped, with the reason, only where bwrap is missing or cannot create its namespaces. */
const BWRAP = { skip: available.skip === undefined ? false : `bubblewrap unavailable: ${available.skip}` };

/** A scratch root that the sandbox shows read-only (the sandbox's /tmp is its own). */
const OUTSIDE_TMP = fs.existsSync('/var/tmp') ? '/var/tmp' : path.resolve('.tap');

async function run(sandbox: ShellSandbox, ws: string, command: string, timeoutMs?: number): Promise<ToolResult> {
  const tool = new RunShellCommandTool({ sandbox, timeoutMs });
  return tool.run({ command }, { workspace: ws, signal: new AbortController().signal });
}

/** What the command printed (the result without its `Command:` line, which quotes the command). */
function text(r: ToolResult): string {
  const all = r.isError ? (r.llmContent ?? r.error.message) : r.llmContent;
  return all.slice(all.indexOf('Output:'));
}

/** A command that starts `sleep marker` in a session of its own and returns once it did. */
function escape(marker: string): string {
  return `setsid bash -c 'echo $$ > escaped.pid; exec sleep ${marker}' >/dev/null 2>&1 < /dev/null & while [ ! -s escaped.pid ]; do sleep 0.01; done; echo started`;
}

/** Host pids whose command line contains `marker`. */
function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      const state = fs.readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1] ?? '';
      if (cmd.includes(marker) && !state.startsWith('Z')) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

t.test('bwrap arguments: masks after the workspace, network only when allowed, /tmp left to its tmpfs', async (t) => {
  const { ws, protectedPaths } = setup(t);
  const inTmp = fs.mkdtempSync('/tmp/sandbox-test-');
  t.teardown(() => fs.rmSync(inTmp, { recursive: true, force: true }));
  const opts = { bwrap: '/usr/bin/bwrap', protectedPaths: [...protectedPaths, inTmp, '/nowhere/x'], network: false, maskDir: '/m' };
  const args = bwrapArgs(opts, 'echo hi', { cwd: path.join(ws, 'src'), workspace: ws });
  const at = (flag: string, value: string) => args.findIndex((a, i) => a === flag && args[i + 2] === value);
  t.ok(args.includes('--unshare-net') && args.includes('--die-with-parent') && args.includes('--unshare-pid'));
  t.ok(at('--ro-bind', path.join(ws, 'auth.json')) > at('--bind', ws), 'the masks cover the workspace bind');
  t.equal(args[at('--ro-bind', path.join(ws, 'auth.json')) + 1], '/m/empty', 'a file is masked by an empty file');
  t.equal(args[at('--ro-bind', path.join(ws, '.data')) + 1], '/m/dir', 'a directory by an empty directory');
  t.notOk(args.includes(inTmp), 'a path under /tmp is hidden by the private /tmp already');
  t.notOk(args.includes('/nowhere/x'), 'a missing path is not masked');
  t.same(args.slice(-5), ['--chdir', path.join(ws, 'src'), 'bash', '-c', 'echo hi']);
  t.notOk(bwrapArgs({ ...opts, network: true }, 'x', { cwd: ws, workspace: ws }).includes('--unshare-net'));
});

t.test('bwrap arguments: only system directories, private /tmp, /run and HOME, tool configuration read-only (issue 19)', async (t) => {
  const { ws } = setup(t);
  const opts = { bwrap: '/usr/bin/bwrap', protectedPaths: [], network: false, maskDir: '/m', home: '/home/dev' };
  const scan = {
    existing: [{ path: path.join(ws, '.git/config'), kind: 'file' as const }],
    absent: [{ path: path.join(ws, '.npmrc'), kind: 'file' as const }],
    repositories: [],
    truncated: false,
  };
  const args = bwrapArgs(opts, 'true', { cwd: ws, workspace: ws }, { scan, env: { GIT_CONFIG_COUNT: '1' } });
  const at = (...seq: string[]) => args.findIndex((_, i) => seq.every((s, j) => args[i + j] === s));
  t.equal(at('--ro-bind', '/', '/'), -1, 'the host root is not bound');
  t.ok(at('--ro-bind', '/usr', '/usr') >= 0 && at('--ro-bind', '/etc', '/etc') >= 0, 'the system directories are, read-only');
  if (fs.lstatSync('/bin').isSymbolicLink()) t.ok(at('--symlink', fs.readlinkSync('/bin'), '/bin') >= 0, '/bin is recreated as a link');
  for (const dir of ['/tmp', '/run', '/home/dev']) t.ok(at('--tmpfs', dir) >= 0, `${dir} is an empty tmpfs`);
  t.ok(at('--symlink', '../run', '/var/run') >= 0);
  t.ok(at('--tmpfs', '/home/dev') < at('--bind', ws, ws), 'HOME comes before the workspace (which may lie in it)');
  const config = path.join(ws, '.git/config');
  t.ok(
    at('--ro-bind', config, config) > at('--bind', ws, ws),
    'an existing tool-config file is bound read-only over itself, after the workspace',
  );
  t.ok(at('--ro-bind', '/m/empty', path.join(ws, '.npmrc')) > at('--bind', ws, ws), 'an absent one is covered by the empty file');
  t.ok(at('--remount-ro', '/') > at('--ro-bind', config, config), "the sandbox's own root is made read-only last");
  const settings = path.join(ws, '.vscode/settings.json');
  fs.mkdirSync(path.dirname(settings));
  fs.writeFileSync(settings, '{"token":"SECRET"}');
  const masked = bwrapArgs(
    { ...opts, protectedPaths: [settings] },
    'true',
    { cwd: ws, workspace: ws },
    {
      scan: { existing: [{ path: path.dirname(settings), kind: 'dir' }], absent: [], repositories: [], truncated: false },
    },
  );
  const atIn = (seq: string[]) => masked.findIndex((_, i) => seq.every((s, j) => masked[i + j] === s));
  t.ok(
    atIn(['--ro-bind', '/m/empty', settings]) > atIn(['--ro-bind', path.dirname(settings), path.dirname(settings)]),
    "a server file inside a tool-config directory stays masked (the mask comes after the directory's bind)",
  );
  t.ok(at('--setenv', 'HOME', '/home/dev') >= 0 && at('--setenv', 'GIT_CONFIG_COUNT', '1') >= 0, 'HOME and the imposed variables are set');
  const inWs = bwrapArgs({ ...opts, home: path.join(ws, 'home') }, 'true', { cwd: ws, workspace: ws });
  t.ok(
    inWs.includes('/tmp/home') && !inWs.includes(path.join(ws, 'home')),
    'a HOME inside the workspace is not covered: HOME is /tmp/home',
  );
});

t.test('a workspace reached through a symbolic link runs at its real path', BWRAP, async (t) => {
  const { root, ws, protectedPaths } = setup(t);
  const { sandbox } = probe(protectedPaths);
  if (!sandbox) return;
  fs.symlinkSync(ws, path.join(root, 'link'));
  const r = await run(sandbox, path.join(root, 'link'), 'pwd; cat src/a.txt');
  t.notOk(r.isError, text(r));
  t.match(text(r), new RegExp(`${ws}\nhello`));
});

t.test('modes: off, auto without bwrap falls back and says why, bwrap required refuses', async (t) => {
  t.equal(createShellSandbox('off', { protectedPaths: [], network: false }).sandbox, NO_SANDBOX);
  const auto = createShellSandbox('auto', { protectedPaths: [], network: false, bwrap: '/nonexistent/bwrap' });
  t.equal(auto.sandbox.kind, 'off');
  t.match(auto.fallback, /not installed/);
  t.throws(() => createShellSandbox('bwrap', { protectedPaths: [], network: false, pathVar: '/nonexistent' }), {
    code: 'AGENT_ERR_SHELL_SANDBOX_UNAVAILABLE',
    message: /SHELL_SANDBOX=bwrap: bwrap \(bubblewrap\) is not installed/,
  });
  const broken = createShellSandbox('auto', { protectedPaths: [], network: false, bwrap: '/bin/false' });
  t.equal(broken.sandbox.kind, 'off');
  t.match(broken.fallback, /bwrap does not work here/);
  t.match(new RunShellCommandTool().description, /not sandboxed/);
});

t.test('the tool says it is sandboxed, and normal dev commands work', BWRAP, async (t) => {
  const { ws, protectedPaths } = setup(t);
  const { sandbox } = probe(protectedPaths);
  t.equal(sandbox?.kind, 'bwrap');
  if (!sandbox) return;
  t.match(new RunShellCommandTool({ sandbox }).description, /sandbox[^]*only the workspace is writable[^]*no network/);
  const r = await run(
    sandbox,
    ws,
    // tap gives every child its coverage loader through NODE_OPTIONS; it lives in this checkout,
    // which the sandbox does not show when the checkout is under /tmp (a CI clone).
    'unset NODE_OPTIONS; git --version && node -e "console.log(6*7)" && npm --version >/dev/null && echo made > src/new.txt && ' +
      'echo scratch > /tmp/s && cat /tmp/s && cat src/a.txt && pwd',
  );
  t.notOk(r.isError, text(r));
  t.match(text(r), /git version[^]*\n42\n[^]*scratch\nhello\n/);
  t.match(text(r), new RegExp(`${ws}\n`));
  t.equal(fs.readFileSync(path.join(ws, 'src', 'new.txt'), 'utf8'), 'made\n', 'writes inside the workspace land');
});

t.test('writing outside the workspace fails; /tmp is private', BWRAP, async (t) => {
  const { ws, outside, protectedPaths } = setup(t);
  const { sandbox } = probe(protectedPaths);
  if (!sandbox) return;
  const name = `sandbox-${randomBytes(4).toString('hex')}`;
  const hostile = `echo pwned > ${outside}/x; echo pwned > ../y; echo pwned > /tmp/${name}; echo tmp-rc=$?`;
  const boxed = await run(sandbox, ws, hostile);
  t.match(text(boxed), /Read-only file system/);
  t.match(text(boxed), /tmp-rc=0/, 'the private /tmp is writable');
  t.notOk(fs.existsSync(path.join(outside, 'x')), 'nothing written outside');
  t.notOk(fs.existsSync(path.join(outside, '..', 'y')));
  t.notOk(fs.existsSync(`/tmp/${name}`), "the sandbox's /tmp is not the host's");

  const free = await run(NO_SANDBOX, ws, hostile);
  t.teardown(() => fs.rmSync(`/tmp/${name}`, { force: true }));
  t.notMatch(text(free), /Read-only/);
  t.ok(fs.existsSync(path.join(outside, 'x')), 'without the sandbox the same command writes outside');
});

t.test("the server's files read as empty and cannot be changed, inside the workspace and out", BWRAP, async (t) => {
  const { ws, outside, protectedPaths } = setup(t);
  const { sandbox } = probe(protectedPaths);
  if (!sandbox) return;
  const hostile =
    `cat auth.json .data/pg.db ${outside}/creds.json; ls -A .data; grep -r SECRET . ${outside}; ` +
    'echo x > auth.json; touch .data/new; echo end';
  const boxed = await run(sandbox, ws, hostile);
  t.notMatch(text(boxed), /SECRET/, 'no secret is readable');
  t.match(text(boxed), /auth\.json: Read-only file system[^]*\.data\/new.*Read-only file system/);
  t.equal(fs.readFileSync(path.join(ws, 'auth.json'), 'utf8'), '{"api_keys":"SECRET-AUTH"}', 'the real file is untouched');
  t.notOk(fs.existsSync(path.join(ws, '.data', 'new')));
  const free = await run(NO_SANDBOX, ws, 'cat auth.json .data/pg.db');
  t.match(text(free), /SECRET-AUTH[^]*SECRET-DB/, 'without the sandbox they are readable');
});

t.test('no network unless allowed; its own PID namespace', BWRAP, async (t) => {
  const { ws, protectedPaths } = setup(t);
  const server = net.createServer((s) => s.end('hello from the host\n'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const port = (server.address() as net.AddressInfo).port;
  const connect = `exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected && cat <&3`;
  const boxed = probe(protectedPaths).sandbox;
  const open = probe(protectedPaths, true).sandbox;
  if (!boxed || !open) return;
  const refused = await run(boxed, ws, connect);
  t.match(refused, { isError: true });
  t.notMatch(text(refused), /connected/);
  t.match(text(refused), /Connection refused|Network is unreachable/);
  t.match(text(await run(open, ws, connect)), /connected\nhello from the host/, 'SHELL_SANDBOX_NETWORK=1 lets it through');
  t.match(text(await run(NO_SANDBOX, ws, connect)), /connected/);

  const pids = await run(
    boxed,
    ws,
    `echo "me:$$"; test -e /proc/${process.pid}/environ && echo "sees the server"; ls /proc | grep -c '^[0-9]'`,
  );
  t.match(text(pids), /me:2\n/, 'bash is pid 2 under bwrap');
  t.notMatch(text(pids), /sees the server/);
});

t.test('a process that leaves the group still dies with the command; the timeout kills it all', BWRAP, async (t) => {
  const { ws, protectedPaths } = setup(t);
  const { sandbox } = probe(protectedPaths);
  if (!sandbox) return;
  const marker = `1000.${randomBytes(3).readUIntBE(0, 3)}`;
  const r = await run(sandbox, ws, escape(marker));
  t.match(text(r), /started/);
  await until('the escaped process dies with the sandbox', () => processesWith(marker).length === 0);
  t.pass('the setsid process is gone');

  const marker2 = `1001.${randomBytes(3).readUIntBE(0, 3)}`;
  const start = Date.now();
  const timedOut = await run(sandbox, ws, `sleep ${marker2} & setsid sleep ${marker2} & sleep ${marker2}`, 300);
  t.match(timedOut, { isError: true, error: { type: 'shell_timeout' } });
  t.ok(Date.now() - start < 3000, 'returns promptly');
  await until('every process of the command is gone', () => processesWith(marker2).length === 0);
  t.pass('the timeout took the whole sandbox down');

  // Without the sandbox, `setsid` escapes the group: the gap the sandbox closes.
  const marker3 = `1002.${randomBytes(3).readUIntBE(0, 3)}`;
  fs.rmSync(path.join(ws, 'escaped.pid'));
  t.match(text(await run(NO_SANDBOX, ws, escape(marker3))), /started/);
  const escaped = processesWith(marker3);
  t.teardown(() => escaped.forEach((pid) => process.kill(pid, 'SIGKILL')));
  t.equal(escaped.length, 1, 'without the sandbox the setsid process survives');
});
