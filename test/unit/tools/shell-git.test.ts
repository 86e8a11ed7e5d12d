/**
 * Issue 19, finding 1 (git half): no planted file makes a git command that run_shell_command
 * starts run code — with and without the sandbox. The attack: a directory `vendor/cache` with
 * HEAD, config, objects/ and refs/ (a bare repository to git) whose config names an fsmonitor
 * command and an external diff; then `git status` / `git diff` with dir_path `vendor/cache`, or
 * after a `cd`. Also a planted non-bare repository (a `.git` file pointing at a planted git
 * directory) with fsmonitor and a pre-commit hook. Only imports that existed before the fix, so
 * the file runs against the old code too (where it fails).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { bwrapSandbox } from '../../support/sandbox.js';
import { RunShellCommandTool } from '../../../src/tools/shell/run-shell-command.js';
import { NO_SANDBOX, type ShellSandbox } from '../../../src/tools/shell/sandbox.js';
import type { ToolResult } from '../../../src/tools/tool.js';

/** Outside /tmp: a workspace under /tmp would be hidden by the old sandbox's private /tmp. */
type Fixtures = Pick<typeof t, 'teardown'>;

const SCRATCH = fs.existsSync('/var/tmp') ? '/var/tmp' : path.resolve('.tap');

const bwrap = bwrapSandbox();
const SANDBOXES: [string, ShellSandbox | string][] = [
  ['off', NO_SANDBOX],
  ['bwrap', bwrap],
];

const HOST_GIT = ['-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'core.hooksPath=/dev/null', '-c', 'init.defaultBranch=main'];

function git(cwd: string, ...args: string[]): void {
  execFileSync('git', [...HOST_GIT, ...args], { cwd, stdio: 'ignore' });
}

/** A workspace with a planted bare repository at vendor/cache (two commits, so a diff has something to show). */
function plantedBare(t: Fixtures): { ws: string; markers: string[] } {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(SCRATCH, 'git-plant-')));
  t.teardown(() => fs.rmSync(ws, { recursive: true, force: true }));
  const src = path.join(ws, 'src-repo');
  fs.mkdirSync(src);
  git(src, 'init', '-q');
  fs.writeFileSync(path.join(src, 'f'), 'one\n');
  git(src, 'add', 'f');
  git(src, 'commit', '-qm', 'one');
  fs.writeFileSync(path.join(src, 'f'), 'two\n');
  git(src, 'commit', '-qam', 'two');
  const cache = path.join(ws, 'vendor/cache');
  fs.mkdirSync(path.dirname(cache), { recursive: true });
  fs.cpSync(path.join(src, '.git'), cache, { recursive: true });
  fs.rmSync(src, { recursive: true });
  fs.rmSync(path.join(cache, 'index'));
  const markers = [path.join(ws, 'pwned-fsmonitor'), path.join(ws, 'pwned-diff')];
  fs.writeFileSync(
    path.join(cache, 'config'),
    `[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ${cache}\n\tfsmonitor = "touch ${markers[0]}; false"\n` +
      `[diff]\n\texternal = "touch ${markers[1]}; true"\n`,
  );
  return { ws, markers };
}

/** A workspace with a planted non-bare repository: vendor/lib/.git is a `gitdir:` file naming vendor/libgit (fsmonitor, a pre-commit hook). */
function plantedLinked(t: Fixtures): { ws: string; markers: string[] } {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(SCRATCH, 'git-plant-')));
  t.teardown(() => fs.rmSync(ws, { recursive: true, force: true }));
  const lib = path.join(ws, 'vendor/lib');
  fs.mkdirSync(lib, { recursive: true });
  git(lib, 'init', '-q');
  fs.writeFileSync(path.join(lib, 'f'), 'one\n');
  git(lib, 'add', 'f');
  git(lib, 'commit', '-qm', 'one');
  fs.renameSync(path.join(lib, '.git'), path.join(ws, 'vendor/libgit'));
  fs.writeFileSync(path.join(lib, '.git'), 'gitdir: ../libgit\n');
  const markers = [path.join(ws, 'pwned-fsmonitor'), path.join(ws, 'pwned-hook')];
  fs.appendFileSync(path.join(ws, 'vendor/libgit/config'), `[core]\n\tfsmonitor = "touch ${markers[0]}; false"\n`);
  const hook = path.join(ws, 'vendor/libgit/hooks/pre-commit');
  fs.mkdirSync(path.dirname(hook), { recursive: true });
  fs.writeFileSync(hook, `#!/bin/sh\ntouch ${markers[1]}\n`, { mode: 0o755 });
  return { ws, markers };
}

async function run(sandbox: ShellSandbox, ws: string, command: string, dir_path?: string): Promise<ToolResult> {
  const tool = new RunShellCommandTool({ sandbox });
  const args = dir_path === undefined ? { command } : { command, dir_path };
  return tool.run(args, { workspace: ws, signal: new AbortController().signal });
}

function text(r: ToolResult): string {
  return r.isError ? (r.llmContent ?? r.error.message) : r.llmContent;
}

for (const [mode, sandbox] of SANDBOXES) {
  const skip = typeof sandbox === 'string' ? sandbox : false;

  t.test(`${mode}: a planted bare repository runs nothing, by dir_path or by cd`, { skip }, async (t) => {
    if (typeof sandbox === 'string') return;
    const { ws, markers } = plantedBare(t);
    const byDir = await run(sandbox, ws, 'git status; git diff HEAD~1 HEAD; echo done', 'vendor/cache');
    t.match(text(byDir), /done/);
    const byCd = await run(sandbox, ws, 'cd vendor/cache && { git status; git diff HEAD~1 HEAD; git log -p --ext-diff -1; echo done; }');
    t.match(text(byCd), /done/);
    t.match(text(byCd), /cannot use bare repository/, 'git refuses the planted repository');
    for (const m of markers) t.notOk(fs.existsSync(m), `${path.basename(m)}: the planted command did not run`);
    const named = await run(sandbox, ws, 'git --git-dir=vendor/cache log --oneline | wc -l');
    t.match(text(named), /\n2\n/, 'a repository named explicitly (--git-dir) still works');
  });

  t.test(`${mode}: a planted non-bare repository's fsmonitor and hooks do not run`, { skip }, async (t) => {
    if (typeof sandbox === 'string') return;
    const { ws, markers } = plantedLinked(t);
    const r = await run(
      sandbox,
      ws,
      'git status --short; git -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m two && git log --oneline | wc -l',
      'vendor/lib',
    );
    t.match(text(r), /\n2\n/, 'ordinary git work in it goes on (the commit was made)');
    for (const m of markers) t.notOk(fs.existsSync(m), `${path.basename(m)}: the planted command did not run`);
  });
}
