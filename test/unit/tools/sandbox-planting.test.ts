/**
 * Attacks on the sandbox's tool-configuration binds (review of issue 19): a sandboxed command
 * must not be able to make the host's next `git status` run code. Each attack is run in the real
 * bubblewrap sandbox, then the developer's plain `git status` runs on the host, and a marker
 * file must not appear.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { bwrapSandbox } from '../../support/sandbox.js';
import { RunShellCommandTool } from '../../../src/tools/shell/run-shell-command.js';
import { type ShellSandbox } from '../../../src/tools/shell/sandbox.js';
import type { ToolResult } from '../../../src/tools/tool.js';

type Fixtures = Pick<typeof t, 'teardown'>;

const sandbox = bwrapSandbox();
const BWRAP = { skip: typeof sandbox === 'string' ? sandbox : false };
const SCRATCH = fs.existsSync('/var/tmp') ? '/var/tmp' : path.resolve('.tap');

function scratch(t: Fixtures, prefix: string): string {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(SCRATCH, prefix)));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A workspace holding a repository with one commit, and a marker path outside it. */
function repo(t: Fixtures): { ws: string; marker: string } {
  const ws = scratch(t, 'plant-ws-');
  const out = scratch(t, 'plant-out-');
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=a', '-c', 'user.email=a@example.com', ...args], { cwd: ws });
  git('init', '-q');
  fs.writeFileSync(path.join(ws, 'a.txt'), 'a\n');
  git('add', 'a.txt');
  git('commit', '-q', '-m', 'init');
  return { ws, marker: path.join(out, 'PWNED') };
}

async function run(box: ShellSandbox, ws: string, command: string): Promise<ToolResult> {
  return new RunShellCommandTool({ sandbox: box }).run({ command }, { workspace: ws, signal: new AbortController().signal });
}

function text(r: ToolResult): string {
  const all = r.isError ? (r.llmContent ?? r.error.message) : r.llmContent;
  return all.slice(all.indexOf('Output:'));
}

/** The developer's `git status` on the host, with no configuration imposed (it may fail: what matters is the marker). */
function hostGitStatus(ws: string): void {
  try {
    execFileSync('git', ['status', '--porcelain'], { cwd: ws, stdio: 'ignore', env: { ...process.env, GIT_CONFIG_COUNT: '0' } });
  } catch {
    // a broken repository is not code execution
  }
}

/** A git config text whose fsmonitor writes `marker`. */
function evilConfig(marker: string): string {
  return `[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "echo pwned > ${marker}; false"\n`;
}

t.test('renaming .git away and making a new one with a hostile config is refused', BWRAP, async (t) => {
  if (typeof sandbox === 'string') return;
  const { ws, marker } = repo(t);
  const cfg = path.join(ws, 'cfg');
  fs.writeFileSync(cfg, evilConfig(marker));
  const r = await run(
    sandbox,
    ws,
    'mv .git .git-old && mkdir .git && cp -a .git-old/HEAD .git-old/objects .git-old/refs .git/ && cp cfg .git/config; echo end',
  );
  t.match(text(r), /end/);
  hostGitStatus(ws);
  t.notOk(fs.existsSync(marker), "the host's git status ran no planted fsmonitor");
  t.ok(fs.existsSync(path.join(ws, '.git/config')) && !fs.readFileSync(path.join(ws, '.git/config'), 'utf8').includes('pwned'));
});

t.test('a directory holding a repository configuration cannot be renamed either (a nested one)', BWRAP, async (t) => {
  if (typeof sandbox === 'string') return;
  const { ws } = repo(t);
  fs.mkdirSync(path.join(ws, 'app'));
  fs.writeFileSync(path.join(ws, 'app/.npmrc'), 'registry=https://registry.npmjs.org/\n');
  const r = await run(sandbox, ws, 'mv app app2 && mkdir app && echo "script-shell=/bin/evil" > app/.npmrc; cat app/.npmrc; echo end');
  t.match(text(r), /end/);
  t.equal(fs.readFileSync(path.join(ws, 'app/.npmrc'), 'utf8'), 'registry=https://registry.npmjs.org/\n');
});

t.test('a .git/commondir created in the sandbox cannot point git at a planted configuration', BWRAP, async (t) => {
  if (typeof sandbox === 'string') return;
  const { ws, marker } = repo(t);
  fs.writeFileSync(path.join(ws, 'cfg'), evilConfig(marker));
  const r = await run(
    sandbox,
    ws,
    'mkdir evil && cp -a .git/objects .git/refs evil/ && cp cfg evil/config; echo ../evil > .git/commondir; git status --porcelain; echo end',
  );
  t.match(text(r), /\?\? evil\/[\s\S]*end/, 'git works in the sandbox (the placeholder names the git directory itself)');
  t.notMatch(text(r), /fatal/);
  hostGitStatus(ws);
  t.notOk(fs.existsSync(marker), "the host's git status ran no planted fsmonitor");
  t.notOk(fs.existsSync(path.join(ws, '.git/commondir')), 'no commondir left behind');
  t.match(execFileSync('git', ['status', '--porcelain'], { cwd: ws }).toString(), /evil/, 'git still works on the host');
});

t.test("a linked worktree's commondir in .git/worktrees is read-only", BWRAP, async (t) => {
  if (typeof sandbox === 'string') return;
  const { ws, marker } = repo(t);
  const other = path.join(path.dirname(marker), 'wt');
  execFileSync('git', ['worktree', 'add', '-q', other], { cwd: ws });
  fs.writeFileSync(path.join(ws, 'cfg'), evilConfig(marker));
  const name = fs.readdirSync(path.join(ws, '.git/worktrees'))[0] ?? '';
  const r = await run(
    sandbox,
    ws,
    `mkdir evil && cp -a .git/objects .git/refs evil/ && cp cfg evil/config; echo ../../../evil > .git/worktrees/${name}/commondir; echo end`,
  );
  t.match(text(r), /end/);
  hostGitStatus(other);
  t.notOk(fs.existsSync(marker), 'git status in the other worktree ran no planted fsmonitor');
});

t.test('a nested repository registered as a submodule in the index does not run code on the host: it is quarantined', BWRAP, async (t) => {
  if (typeof sandbox === 'string') return;
  const { ws, marker } = repo(t);
  const r = await run(
    sandbox,
    ws,
    `mkdir sub && cd sub && git init -q && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m s && git config core.fsmonitor "echo pwned > ${marker}; false" && cd .. && git update-index --add --cacheinfo 160000,$(git -C sub rev-parse HEAD),sub; echo end`,
  );
  t.match(text(r), /end/);
  t.match(text(r), /they were renamed: sub\/\.git → sub\/\.git\.untrusted/, 'the result says which repository was put away');
  t.ok(fs.existsSync(path.join(ws, 'sub/.git.untrusted/config')), 'renamed, not deleted');
  hostGitStatus(ws);
  t.notOk(fs.existsSync(marker), "the host's git status ran no planted fsmonitor");
});

t.test("a submodule repository beyond the walk's depth is found through the index and quarantined", BWRAP, async (t) => {
  if (typeof sandbox === 'string') return;
  const { ws, marker } = repo(t);
  const deep = 'a/b/c/d/e/f/g/h/i/j/sub';
  const r = await run(
    sandbox,
    ws,
    `mkdir -p ${deep} && cd ${deep} && git init -q && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m s && ` +
      `git config core.fsmonitor "echo pwned > ${marker}; false" && cd "$OLDPWD" && ` +
      `git update-index --add --cacheinfo 160000,$(git -C ${deep} rev-parse HEAD),${deep}; echo end`,
  );
  t.match(text(r), /end/);
  t.match(text(r), new RegExp(`${deep.replace(/\//g, '\\/')}\\/\\.git → `), 'found through the index, past the walk');
  hostGitStatus(ws);
  t.notOk(fs.existsSync(marker), "the host's git status ran no planted fsmonitor");
});

t.test('a git directory planted under .git/modules and named by a .git file is quarantined too', BWRAP, async (t) => {
  if (typeof sandbox === 'string') return;
  const { ws, marker } = repo(t);
  const r = await run(
    sandbox,
    ws,
    `git init -q --bare .git/modules/evil && git config -f .git/modules/evil/config core.fsmonitor "echo pwned > ${marker}; false" && ` +
      `mkdir sub && printf 'gitdir: ../.git/modules/evil\n' > sub/.git; echo end`,
  );
  t.match(text(r), /end/);
  t.match(text(r), /\.git\/modules\/evil\/HEAD → \.git\/modules\/evil\/HEAD\.untrusted/);
  t.match(text(r), /sub\/\.git → sub\/\.git\.untrusted/);
  try {
    execFileSync('git', ['status', '--porcelain'], {
      cwd: path.join(ws, 'sub'),
      stdio: 'ignore',
      env: { ...process.env, GIT_CONFIG_COUNT: '0' },
    });
  } catch {
    // not a repository any more: what matters is the marker
  }
  t.notOk(fs.existsSync(marker), "the host's git status in sub ran no planted fsmonitor");
});

t.test('repositories that were there before the command are left alone', BWRAP, async (t) => {
  if (typeof sandbox === 'string') return;
  const { ws } = repo(t);
  execFileSync('git', ['init', '-q', path.join(ws, 'nested')]);
  const r = await run(sandbox, ws, 'git status --porcelain; git -C nested status --porcelain; echo end');
  t.match(text(r), /end/);
  t.notMatch(text(r), /renamed/);
  t.ok(fs.existsSync(path.join(ws, 'nested/.git/HEAD')) && fs.existsSync(path.join(ws, '.git/HEAD')));
});

t.test(
  "the repository's core.hooksPath and included config files inside the workspace are read-only, absent ones too",
  BWRAP,
  async (t) => {
    if (typeof sandbox === 'string') return;
    const { ws, marker } = repo(t);
    const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=a', '-c', 'user.email=a@example.com', ...args], { cwd: ws });
    fs.mkdirSync(path.join(ws, 'scripts/hooks'), { recursive: true });
    fs.writeFileSync(path.join(ws, 'shared.gitconfig'), '[user]\n\tname = dev\n');
    git('config', 'core.hooksPath', 'scripts/hooks');
    git('config', '--add', 'include.path', '../shared.gitconfig');
    git('config', '--add', 'include.path', '../local/overrides.gitconfig'); // absent, and so is its directory
    git('config', '--add', 'includeIf.onbranch:main.path', '../branch.gitconfig'); // absent
    fs.writeFileSync(path.join(ws, 'cfg'), evilConfig(marker));
    const hook = `printf '#!/bin/sh\\necho pwned > ${marker}\\n' > scripts/hooks/pre-commit; chmod +x scripts/hooks/pre-commit`;
    const r = await run(
      sandbox,
      ws,
      `${hook}; cp cfg shared.gitconfig; mkdir -p local; cp cfg local/overrides.gitconfig; cp cfg branch.gitconfig; git status --porcelain; echo end`,
    );
    t.match(text(r), /end/);
    t.notMatch(text(r), /fatal/, 'git works in the sandbox');
    hostGitStatus(ws);
    try {
      git('commit', '-q', '--allow-empty', '-m', 'dev');
    } catch {
      // a failing commit is not code execution
    }
    t.notOk(fs.existsSync(marker), "the host's git status and commit ran nothing planted");
    t.equal(fs.readFileSync(path.join(ws, 'shared.gitconfig'), 'utf8'), '[user]\n\tname = dev\n');
    t.notOk(fs.existsSync(path.join(ws, 'local')) || fs.existsSync(path.join(ws, 'branch.gitconfig')), 'no placeholder left behind');
  },
);

t.test('an absent .git/config.worktree cannot be created (git loads it when extensions.worktreeConfig is on)', BWRAP, async (t) => {
  if (typeof sandbox === 'string') return;
  const { ws, marker } = repo(t);
  execFileSync('git', ['config', 'extensions.worktreeConfig', 'true'], { cwd: ws });
  fs.writeFileSync(path.join(ws, 'cfg'), evilConfig(marker).replace(/\[core\]\n\trepositoryformatversion = 0\n/, '[core]\n'));
  const r = await run(sandbox, ws, 'cp cfg .git/config.worktree; git status --porcelain; echo end');
  t.match(text(r), /end/);
  t.notMatch(text(r), /fatal/, 'git works in the sandbox');
  hostGitStatus(ws);
  t.notOk(fs.existsSync(marker), "the host's git status ran no planted fsmonitor");
  t.notOk(fs.existsSync(path.join(ws, '.git/config.worktree')), 'no placeholder left behind');
});

t.test('tool-configuration entries that are links: what they lead to inside the workspace is covered', BWRAP, async (t) => {
  if (typeof sandbox === 'string') return;
  const { ws, marker } = repo(t);
  fs.mkdirSync(path.join(ws, 'scripts/hooks'), { recursive: true });
  fs.rmSync(path.join(ws, '.git/hooks'), { recursive: true });
  fs.symlinkSync('../scripts/hooks', path.join(ws, '.git/hooks')); // hooks kept in the tree, linked in
  fs.mkdirSync(path.join(ws, 'config'));
  fs.symlinkSync('config/npmrc', path.join(ws, '.npmrc')); // dangling: the project's npmrc, not written yet
  fs.mkdirSync(path.join(ws, 'editor'));
  fs.symlinkSync('editor', path.join(ws, '.vscode'));
  const hook = `printf '#!/bin/sh\\necho pwned > ${marker}\\n' > scripts/hooks/pre-commit; chmod +x scripts/hooks/pre-commit`;
  const r = await run(
    sandbox,
    ws,
    `${hook}; echo 'script-shell=/bin/evil' > config/npmrc; echo '{}' > editor/tasks.json; git status --porcelain; echo end`,
  );
  t.match(text(r), /end/);
  t.notMatch(text(r), /fatal/, 'git works in the sandbox');
  try {
    execFileSync('git', ['-c', 'user.name=a', '-c', 'user.email=a@example.com', 'commit', '-q', '--allow-empty', '-m', 'dev'], {
      cwd: ws,
      stdio: 'ignore',
    });
  } catch {
    // a failing commit is not code execution
  }
  t.notOk(fs.existsSync(marker), "the host's git commit ran no planted hook");
  t.notOk(fs.existsSync(path.join(ws, 'config/npmrc')), 'the npmrc the link names could not be created (and its placeholder is gone)');
  t.notOk(fs.existsSync(path.join(ws, 'editor/tasks.json')), "the linked .vscode's directory is read-only");
});

t.test(
  "gemini-cli's workspace .gemini (settings.json: MCP servers and hooks it runs; extensions/) cannot be planted or changed",
  BWRAP,
  async (t) => {
    if (typeof sandbox === 'string') return;
    const { ws } = repo(t);
    // Absent: the command would create it, and gemini-cli — or this server, with GEMINI_CLI_HOME or HOME
    // at the workspace, where the default EXTENSIONS_DIR lies — would start the planted server.
    const plant =
      'mkdir -p .gemini/extensions/evil && echo {} > .gemini/extensions/evil/gemini-extension.json; ' +
      'echo {} > .gemini/settings.json; echo end';
    t.match(text(await run(sandbox, ws, plant)), /end/);
    t.notOk(fs.existsSync(path.join(ws, '.gemini/extensions')), 'no .gemini/extensions was created');
    t.notOk(fs.existsSync(path.join(ws, '.gemini/settings.json')), 'no .gemini/settings.json was created');
    t.notOk(fs.existsSync(path.join(ws, '.gemini')), 'no placeholder left behind');
    // Present, at the root or deeper: read-only.
    for (const dir of ['.gemini', 'sub/.gemini']) {
      fs.mkdirSync(path.join(ws, dir), { recursive: true });
      fs.writeFileSync(path.join(ws, dir, 'GEMINI.md'), 'notes\n');
    }
    t.match(text(await run(sandbox, ws, plant.replaceAll('.gemini', 'sub/.gemini'))), /end/);
    t.match(text(await run(sandbox, ws, plant)), /end/);
    for (const dir of ['.gemini', 'sub/.gemini']) {
      t.same(fs.readdirSync(path.join(ws, dir)), ['GEMINI.md'], `${dir}: nothing planted`);
    }
  },
);
