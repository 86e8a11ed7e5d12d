/**
 * Judging whether a write lands in a git directory probes only what the decision needs
 * (tool-config.ts GitFolder): a folder once, then git's names one at a time, and none in the
 * workspace itself for an ordinary name. Counted with a ProbeBudget (each probe spends one).
 * Probing all six names in every folder on the way was most of a `write_file` call's file-system work.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { inGitDirectory, ProbeBudget } from '../../../src/agent/policy/tool-config.js';

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
