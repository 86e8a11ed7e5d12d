/**
 * Issue 19, findings 4 and 3, with the real bubblewrap sandbox. Finding 4: a sandboxed command
 * reaches no host UNIX socket (outside the workspace, in the host's /tmp, under /run) and
 * reads no file outside the workspace (the home directory, another directory). Finding 3:
 * tool-configuration files (git hooks and config, .npmrc, .vscode/, nested ones) are read-only
 * and cannot be created, while ordinary git work (add, commit, status) goes on. Each check is
 * also run the old way — bwrap with `--ro-bind / /`, or without the sandbox — where it fails.
 * Only imports that existed before the fix, so the file also runs against the old code.
 */
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import t from 'tap';
import { bwrapSandbox } from '../../support/sandbox.js';
import { RunShellCommandTool } from '../../../src/tools/shell/run-shell-command.js';
import { NO_SANDBOX, type ShellSandbox } from '../../../src/tools/shell/sandbox.js';
import type { ToolResult } from '../../../src/tools/tool.js';

type Fixtures = Pick<typeof t, 'teardown'>;

const sandbox = bwrapSandbox();
const BWRAP = { skip: typeof sandbox === 'string' ? sandbox : false };
const SCRATCH = fs.existsSync('/var/tmp') ? '/var/tmp' : path.resolve('.tap');

function scratch(t: Fixtures, prefix: string, under = SCRATCH): string {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(under, prefix)));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function run(box: ShellSandbox, ws: string, command: string): Promise<ToolResult> {
  return new RunShellCommandTool({ sandbox: box }).run({ command }, { workspace: ws, signal: new AbortController().signal });
}

function text(r: ToolResult): string {
  const all = r.isError ? (r.llmContent ?? r.error.message) : r.llmContent;
  return all.slice(all.indexOf('Output:'));
}

/** The same script under the previous sandbox's mounts (`--ro-bind / /`, private /tmp, the workspace): what the fix closes. */
async function runOldSandbox(ws: string, script: string): Promise<string> {
  const args = ['--die-with-parent', '--unshare-pid', '--unshare-net', '--cap-drop', 'ALL', '--ro-bind', '/', '/'];
  args.push('--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp', '--bind', ws, ws, '--chdir', ws, 'bash', '-c', `exec 2>&1; ${script}`);
  const r = await promisify(execFile)('bwrap', args).catch((e: { stdout?: string }) => ({ stdout: e.stdout ?? '' }));
  return r.stdout;
}

/** A UNIX socket server at `p` (closed at the end). */
async function listenUnix(t: Fixtures, p: string): Promise<void> {
  const server = net.createServer((s) => {
    s.on('error', () => undefined); // the client may hang up first
    s.end('hello\n');
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(p, resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
}

/** A bash line that tries to connect to each socket with node and prints CONNECTED or FAILED per path. */
function connectAll(paths: readonly string[]): string {
  const js = `const s=require("net").connect(process.argv[1]);s.on("connect",()=>{console.log("CONNECTED "+process.argv[1]);process.exit(0)});s.on("error",(e)=>{console.log("FAILED "+e.code+" "+process.argv[1]);process.exit(0)})`;
  return `unset NODE_OPTIONS; for p in ${paths.join(' ')}; do node -e '${js}' "$p"; done; echo end`;
}

t.test('no host UNIX socket is reachable: outside the workspace, in /tmp, under /run', BWRAP, async (t) => {
  if (typeof sandbox === 'string') return;
  const ws = scratch(t, 'confine-ws-');
  const sockets = [path.join(scratch(t, 'confine-out-'), 's.sock'), path.join(scratch(t, 'confine-', os.tmpdir()), 's.sock')];
  const run_ = `/run/confine-${randomBytes(4).toString('hex')}.sock`;
  try {
    fs.accessSync('/run', fs.constants.W_OK);
    sockets.push(run_);
    t.teardown(() => fs.rmSync(run_, { force: true }));
  } catch {
    t.comment('/run is not writable here: that case is skipped');
  }
  for (const s of sockets) await listenUnix(t, s);
  const boxed = text(await run(sandbox, ws, connectAll(sockets)));
  t.match(boxed, /end/);
  t.notMatch(boxed, /CONNECTED/, 'no socket reached');
  t.equal(boxed.match(/FAILED ENOENT/g)?.length, sockets.length, 'none of them exists in the sandbox');
  const old = await runOldSandbox(ws, connectAll(sockets));
  t.match(old, new RegExp(`CONNECTED ${sockets[0]}`), 'the old sandbox (--ro-bind / /) reached the socket outside the workspace');
  if (sockets.length > 2) t.match(old, new RegExp(`CONNECTED ${run_}`), 'and the one under /run');
  t.match(text(await run(NO_SANDBOX, ws, connectAll(sockets.slice(0, 1)))), /CONNECTED/, 'so does an unsandboxed command');
});

t.test('an abstract UNIX socket of the host is out of reach too (its own network namespace)', BWRAP, async (t) => {
  if (typeof sandbox === 'string') return;
  const ws = scratch(t, 'confine-ws-');
  const name = `\0confine-${randomBytes(4).toString('hex')}`;
  await listenUnix(t, name);
  // A NUL cannot travel in an argument: the script spells the abstract name as a JS escape.
  const js = `require("net").connect("\\0${name.slice(1)}").on("connect",()=>console.log("CONNECTED")).on("error",(e)=>console.log("FAILED "+e.code))`;
  const line = `unset NODE_OPTIONS; node -e '${js}'`;
  const boxed = text(await run(sandbox, ws, line));
  t.notMatch(boxed, /CONNECTED/);
  t.match(boxed, /FAILED ECONNREFUSED/);
  t.match(text(await run(NO_SANDBOX, ws, line)), /CONNECTED/, 'an unsandboxed command reaches it');
});

t.test('files outside the workspace cannot be read: the home directory, another directory', BWRAP, async (t) => {
  if (typeof sandbox === 'string') return;
  const ws = scratch(t, 'confine-ws-');
  const other = path.join(scratch(t, 'confine-out-'), 'secret.txt');
  fs.writeFileSync(other, 'OTHER-SECRET\n');
  const inHome = path.join(os.homedir(), `.confine-secret-${randomBytes(4).toString('hex')}`);
  fs.writeFileSync(inHome, 'HOME-SECRET\n');
  t.teardown(() => fs.rmSync(inHome, { force: true }));
  const read = `cat ${other} ${inHome}; ls -A ~ | wc -l; find /run/ /var/run/ -type s | wc -l; echo end`;
  const boxed = text(await run(sandbox, ws, read));
  t.match(boxed, /end/);
  t.notMatch(boxed, /SECRET/, 'nothing outside the workspace is readable');
  t.match(boxed, /No such file or directory[^]*No such file or directory/);
  t.match(boxed, /\n0\n0\nend/, 'HOME is empty, /run holds no socket');
  const old = await runOldSandbox(ws, read);
  t.match(old, /OTHER-SECRET[^]*HOME-SECRET/, 'the old sandbox read both');
});

t.test('developer tools run in the sandbox: node, npm, git, python3 where installed', BWRAP, async (t) => {
  if (typeof sandbox === 'string') return;
  const ws = scratch(t, 'confine-ws-');
  const py = fs.existsSync('/usr/bin/python3') ? ' && python3 -c "print(7*6)"' : '';
  const r = await run(
    sandbox,
    ws,
    `unset NODE_OPTIONS; node -e "console.log(6*7)" && npm --version >/dev/null && git --version${py} && echo ok`,
  );
  t.notOk(r.isError, text(r));
  t.match(text(r), /42\n[^]*git version[^]*\nok/);
});

/** A workspace holding a git repository with one commit, an existing .vscode/tasks.json, a nested .npmrc and a nested repository. */
function repoWorkspace(t: Fixtures): string {
  const ws = scratch(t, 'confine-repo-');
  const git = (cwd: string, ...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'init.defaultBranch=main', ...args], {
      cwd,
      stdio: 'ignore',
    });
  git(ws, 'init', '-q');
  fs.mkdirSync(path.join(ws, '.vscode'));
  fs.writeFileSync(path.join(ws, '.vscode/tasks.json'), '{}\n');
  fs.mkdirSync(path.join(ws, 'packages/a'), { recursive: true });
  fs.writeFileSync(path.join(ws, 'packages/a/.npmrc'), 'registry=https://registry.npmjs.org/\n');
  fs.writeFileSync(path.join(ws, 'README.md'), 'hi\n');
  fs.writeFileSync(path.join(ws, '.gitignore'), 'sub/\n');
  git(ws, 'add', '-A');
  git(ws, 'commit', '-qm', 'init');
  fs.mkdirSync(path.join(ws, 'sub'));
  git(path.join(ws, 'sub'), 'init', '-q');
  return ws;
}

/** Writes a hostile command tries, each followed by its outcome. */
const PLANT = [
  'printf "#!/bin/sh\\ntouch pwned\\n" > .git/hooks/pre-commit',
  'chmod +x .git/hooks/pre-commit',
  'printf "[core]\\n\\tfsmonitor = touch pwned\\n" >> .git/config',
  'echo "script-shell=./evil.sh" > .npmrc',
  'echo "{\\"tasks\\":[]}" > .vscode/tasks.json',
  'echo x > packages/a/.npmrc',
  'echo x >> sub/.git/config',
  'echo "yarnPath: evil.js" > .yarnrc.yml',
  'echo x > .git/info/exclude',
]
  .map((c) => `{ ${c}; } 2>/dev/null && echo "WROTE: ${c.replace(/"/g, '')}"`)
  .join('; ');

/** What a command that planted tool configuration leaves on the host: the paths it changed or created. */
function planted(ws: string, before: Map<string, string | undefined>): string[] {
  return [...before].filter(([p, content]) => read(path.join(ws, p)) !== content).map(([p]) => p);
}

function read(p: string): string | undefined {
  try {
    return fs.readFileSync(p, 'utf8');
  } catch {
    return undefined;
  }
}

const WATCHED = [
  '.git/hooks/pre-commit',
  '.git/config',
  '.npmrc',
  '.vscode/tasks.json',
  'packages/a/.npmrc',
  'sub/.git/config',
  '.yarnrc.yml',
  '.git/info/exclude',
];

t.test('tool-configuration files cannot be written or created; git add and commit work', BWRAP, async (t) => {
  if (typeof sandbox === 'string') return;
  const ws = repoWorkspace(t);
  const before = new Map(WATCHED.map((p) => [p, read(path.join(ws, p))]));
  const r = await run(
    sandbox,
    ws,
    `${PLANT}; echo data > file.txt && git status --short && git add -A && ` +
      'git -c user.name=t -c user.email=t@example.com commit -qm work && git log --oneline | wc -l && git show --stat --format= HEAD; echo end',
  );
  const out = text(r);
  t.match(out, /end/);
  t.notMatch(out, /WROTE/, 'no write to tool configuration succeeded');
  t.same(planted(ws, before), [], 'nothing changed or created on the host');
  t.match(out, /\?\? file\.txt\n/, 'git status shows the new file');
  t.notMatch(out, /\?\? \.npmrc/, 'and not the placeholder of the absent .npmrc');
  t.match(out, /\n2\n file\.txt \| 1 \+\n 1 file changed/, 'the commit was made, with file.txt alone');
  t.notOk(
    fs.existsSync(path.join(ws, '.npmrc')) || fs.existsSync(path.join(ws, '.yarnrc.yml')) || fs.existsSync(path.join(ws, '.pnpmfile.cjs')),
    'placeholders are gone',
  );
  t.notOk(fs.existsSync(path.join(ws, 'pwned')));

  const free = repoWorkspace(t);
  const freeBefore = new Map(WATCHED.map((p) => [p, read(path.join(free, p))]));
  const old = await runOldSandbox(free, PLANT);
  t.match(old, /WROTE: printf #!\/bin\/sh[^]*WROTE: echo script-shell/, 'the old sandbox let them be written');
  t.ok(planted(free, freeBefore).length >= 6, 'and they land on the host');
});

t.test('a workspace without a repository: none can be created', BWRAP, async (t) => {
  if (typeof sandbox === 'string') return;
  const ws = scratch(t, 'confine-norepo-');
  const r = await run(sandbox, ws, 'git init -q; mkdir -p .git/hooks; echo "gitdir: /x" > .git; ls -A .git | wc -l; echo end');
  t.match(text(r), /\n0\nend/, '.git stays an empty, read-only directory');
  t.notOk(fs.existsSync(path.join(ws, '.git')), 'and the placeholder is removed afterwards');
  const old = await runOldSandbox(ws, 'git init -q && echo made');
  t.match(old, /made/, 'the old sandbox let `git init` make one');
});

t.test('placeholders stay while another command of the workspace runs', BWRAP, async (t) => {
  if (typeof sandbox === 'string') return;
  const ws = scratch(t, 'confine-two-');
  const slow = run(sandbox, ws, 'sleep 1; echo x > .npmrc && echo WROTE; echo end');
  await new Promise((r) => setTimeout(r, 300));
  t.match(text(await run(sandbox, ws, 'true; echo quick')), /quick/);
  t.ok(fs.existsSync(path.join(ws, '.npmrc')), 'the slow command still holds its placeholder');
  const out = text(await slow);
  t.match(out, /end/);
  t.notMatch(out, /WROTE/, 'so it still cannot write .npmrc');
  t.notOk(fs.existsSync(path.join(ws, '.npmrc')), 'removed once no command runs');
});
