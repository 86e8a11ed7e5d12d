/**
 * Judging whether a write lands in a git directory probes only what the decision needs
 * (tool-config.ts GitFolder): a folder once, then git's names one at a time, and none in the
 * workspace itself for an ordinary name. Counted with a ProbeBudget (each probe spends one).
 * Probing all six names in every folder on the way was most of a `write_file` call's file-system work.
 */
import { existsSync, lstatSync, mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { inGitDirectory, ProbeBudget, realTarget } from '../../../src/agent/policy/tool-config.js';

const ws = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'git-folder-probes-')));
t.teardown(() => rmSync(ws, { recursive: true, force: true }));
mkdirSync(path.join(ws, 'src/components'), { recursive: true });
mkdirSync(path.join(ws, 'vendor/cache/objects'), { recursive: true });
writeFileSync(path.join(ws, 'vendor/cache/HEAD'), 'ref: refs/heads/main\n');

async function judged(rel: string, writing = true): Promise<{ inGit: boolean; probes: number }> {
  const budget = new ProbeBudget(1000);
  const inGit = await inGitDirectory(ws, path.join(ws, rel), writing, new Map(), budget);
  return { inGit, probes: 1000 - budget.left };
}

t.test('an ordinary write probes a folder and its HEAD per folder below the workspace, nothing in the workspace', async (t) => {
  t.same(await judged('notes.txt'), { inGit: false, probes: 1 }, 'in the workspace: only whether notes.txt is a folder');
  // src: folder + HEAD; src/components: folder + HEAD; the file: whether it is a folder.
  t.same(await judged('src/components/widget.ts'), { inGit: false, probes: 5 });
});

t.test('a git directory below the workspace is still found, probing no more than it needs', async (t) => {
  // vendor: folder + HEAD (none); vendor/cache: folder + HEAD (there) + objects (there).
  t.same(await judged('vendor/cache/notes.txt'), { inGit: true, probes: 5 });
  t.same((await judged('vendor/cache/objects/pack/x')).inGit, true, 'anything under objects/ beside a HEAD');
  t.same((await judged('src/refs', false)).inGit, false, 'refs beside no other git name');
  t.same((await judged('vendor/cache/refs', false)).inGit, true, 'refs beside a HEAD');
});

t.test('one judgement probes a folder once, however many paths in it are judged', async (t) => {
  const budget = new ProbeBudget(1000);
  const folders = new Map();
  for (const name of ['a.ts', 'b.ts', 'c.ts']) await inGitDirectory(ws, path.join(ws, 'src/components', name), true, folders, budget);
  // src and src/components: folder + HEAD once each; each file: whether it is a folder.
  t.equal(1000 - budget.left, 4 + 3);
});

/**
 * The rule as the module comment states it, every name probed in every folder (what the code did
 * before it probed lazily), on the disk synchronously: the oracle for random trees below.
 */
function eagerInGitDirectory(workspace: string, target: string, writing: boolean): boolean {
  const entries = (dir: string): Set<string> => {
    try {
      if (!statSync(dir).isDirectory()) return new Set();
    } catch {
      return new Set(); // missing, or a file on the way (ENOTDIR)
    }
    return new Set(
      ['HEAD', 'config', 'objects', 'refs', 'packed-refs', 'commondir']
        .filter((n) => existsSync(path.join(dir, n)))
        .map((n) => n.toLowerCase()),
    );
  };
  const isGitDir = (e: Set<string>) => e.has('head') && (e.has('objects') || e.has('refs') || e.has('config'));
  const core = ['head', 'config', 'objects', 'refs', 'packed-refs', 'commondir'];
  const inner = ['hooks', 'info', 'logs', 'modules', 'worktrees', 'branches'];
  const parts = path.relative(workspace, target).split(path.sep);
  if (writing && ['head', 'config'].includes(parts.at(-1)?.toLowerCase() ?? '')) return true;
  let dir = workspace;
  for (const part of parts) {
    const e = entries(dir);
    const lower = part.toLowerCase();
    const entry = core.includes(lower)
      ? core.some((c) => c !== lower && e.has(c))
      : inner.includes(lower) && (e.has('head') || (e.has('objects') && e.has('refs')));
    if (entry || (dir !== workspace && isGitDir(e))) return true;
    dir = path.join(dir, part);
  }
  return isGitDir(entries(dir));
}

t.test('on random trees (git names as files, folders and symlinks, in any case), the same answers as probing every name', async (t) => {
  let seed = 20261128;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)];
  const names = [
    'HEAD',
    'head',
    'config',
    'Config',
    'objects',
    'refs',
    'packed-refs',
    'commondir',
    'hooks',
    'info',
    'logs',
    'worktrees',
    'src',
    'a',
    '.git',
    'x.txt',
  ];
  let judged = 0;
  for (let tree = 0; tree < 40; tree++) {
    const root = realpathSync(mkdtempSync(path.join(ws, 'tree-')));
    const dirs = [root];
    for (let i = 0; i < 30; i++) {
      const parent = pick(dirs);
      const p = path.join(parent, pick(names));
      if (lstatSync(p, { throwIfNoEntry: false }) !== undefined) continue;
      const kind = random();
      if (kind < 0.45) dirs.push((mkdirSync(p), p));
      else if (kind < 0.85) writeFileSync(p, 'x');
      else symlinkSync(path.relative(parent, pick(dirs)) || '.', p);
    }
    for (let j = 0; j < 40; j++) {
      const target = path.join(pick(dirs), ...Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(names)));
      const writing = random() < 0.5;
      // Judged on the real path, as the callers do (realTarget first); one that leaves the tree is not this rule's.
      const real = await realTarget(target);
      if (!real.startsWith(root + path.sep)) continue;
      const lazy = await inGitDirectory(root, real, writing);
      if (lazy !== eagerInGitDirectory(root, real, writing))
        t.fail(`${path.relative(root, real)} (writing: ${writing}): lazy says ${lazy}`);
      judged += 1;
    }
  }
  t.ok(judged > 1000, `${judged} paths judged alike`);
});
