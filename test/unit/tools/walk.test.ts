import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { compileGlob } from '../../../src/tools/search/glob-pattern.js';
import { PathFilter } from '../../../src/tools/search/path-filter.js';
import { RegexWorker } from '../../../src/tools/search/regex-worker.js';
import { loadGitignore, pathKind, resolvePattern, walkFiles, type Gitignore } from '../../../src/tools/search/walk.js';
import { ProtectedPaths } from '../../../src/tools/workspace.js';

/** Which of `cases` the .gitignore rules ignore, matched in the search worker as glob does. */
async function ignoredBy(g: Gitignore, cases: ReadonlyArray<readonly [string, boolean]>): Promise<boolean[] | undefined> {
  const worker = new RegexWorker();
  try {
    return await new PathFilter(worker, g.globs, '.gitignore', 5_000, new AbortController().signal).matches(
      cases.map(([rel, isDir]) => ({ rel, isDir })),
    );
  } finally {
    worker.close();
  }
}

const NONE = ProtectedPaths.NONE;

type Fixtures = Pick<typeof t, 'testdir' | 'fixture'>;

function setup(t: Fixtures, gitignore?: string): string {
  const root = fs.realpathSync(
    t.testdir({
      ws: {
        ...(gitignore === undefined ? {} : { '.gitignore': gitignore }),
        b: { 'x.txt': 'x', c: { 'y.txt': 'y' } },
        'a.txt': 'a',
        skip: { 'z.txt': 'z' },
        'dir-link': t.fixture('symlink', 'b'),
        dangling: t.fixture('symlink', 'nope.txt'),
        'to-dir': t.fixture('symlink', 'skip'),
        'out-file': t.fixture('symlink', '../outside/s.txt'),
      },
      outside: { 's.txt': 's' },
    }),
  );
  return path.join(root, 'ws');
}

async function collect(root: string, opts: Parameters<typeof walkFiles>[1]): Promise<string[]> {
  const out: string[] = [];
  for await (const e of walkFiles(root, opts)) out.push(e.rel);
  return out;
}

t.test('walkFiles: depth-first in name order; links to files inside only', async (t) => {
  const ws = setup(t);
  t.same(await collect(ws, { workspace: ws, protectedPaths: NONE }), ['a.txt', 'b/x.txt', 'b/c/y.txt', 'skip/z.txt']);
  t.same(await collect(ws, { workspace: ws, protectedPaths: NONE, recursive: false }), ['a.txt']);
  t.same(await collect(ws, { workspace: ws, protectedPaths: NONE, skipDirs: new Set(['skip', 'c']) }), ['a.txt', 'b/x.txt']);
  const prune = async (dirs: readonly string[]) => dirs.map((d) => d.endsWith('/b'));
  t.same(await collect(ws, { workspace: ws, protectedPaths: NONE, prune }), ['a.txt', 'skip/z.txt']);
  t.same(await collect(path.join(ws, 'missing'), { workspace: ws, protectedPaths: NONE }), [], 'an unreadable root yields nothing');
  fs.symlinkSync('a.txt', path.join(ws, 'a-link'));
  const entries = [];
  for await (const e of walkFiles(ws, { workspace: ws, protectedPaths: NONE, recursive: false })) entries.push(e);
  t.same(
    entries.find((e) => e.rel === 'a-link'),
    { rel: 'a-link', abs: path.join(ws, 'a-link'), real: path.join(ws, 'a.txt') },
  );
});

t.test('walkFiles stops when aborted', async (t) => {
  const ws = setup(t);
  const abort = new AbortController();
  const seen: string[] = [];
  for await (const e of walkFiles(ws, { workspace: ws, protectedPaths: NONE, signal: abort.signal })) {
    seen.push(e.rel);
    abort.abort();
  }
  t.same(seen, ['a.txt']);
});

t.test('loadGitignore supports a simple subset', async (t) => {
  t.equal(await loadGitignore(setup(t), NONE), undefined, 'no .gitignore');
  t.equal(await loadGitignore(setup(t, '# only comments\n\n!neg\n/\n'), NONE), undefined, 'no rules');
  const ws = setup(t, 'build/\n*.log  \n/root-only.txt\nlib/gen\n!keep.log\nout/**\n**/tmp\r\n');
  const rules = await loadGitignore(ws, NONE);
  if (rules === undefined) throw new Error('expected rules');
  const cases: [string, boolean, boolean][] = [
    ['build', true, true],
    ['build', false, false],
    ['a/build', true, true],
    ['x.log', false, true],
    ['a/b/x.log', false, true],
    ['keep.log', false, true],
    ['root-only.txt', false, true],
    ['a/root-only.txt', false, false],
    ['lib/gen', true, true],
    ['a/lib/gen', true, false],
    ['out/x', false, true],
    ['tmp', true, true],
    ['a/b/tmp', false, true],
    ['src/main.ts', false, false],
  ];
  const got = await ignoredBy(
    rules,
    cases.map(([rel, isDir]) => [rel, isDir] as const),
  );
  for (const [i, [rel, isDir, want]] of cases.entries()) t.equal(got?.[i], want, `${rel}${isDir ? '/' : ''}`);
});

t.test('filter globs: base name without a slash, path with one', async (t) => {
  const worker = new RegexWorker();
  const matches = async (pattern: string, rel: string, nocase = false): Promise<boolean> => {
    const compiled = compileGlob(pattern, { nocase, basename: !pattern.includes('/') }, 'p');
    if (!compiled.ok) throw new Error(compiled.error.message);
    const flags = await new PathFilter(worker, compiled.glob, 'p', 5_000, new AbortController().signal).matches([{ rel }]);
    return flags?.[0] === true;
  };
  try {
    t.ok(await matches('*.ts', 'a/b/c.ts'));
    t.ok(await matches('*.ts', '.hidden.ts'));
    t.notOk(await matches('src/*.ts', 'a/src/c.ts'));
    t.ok(await matches('src/**/*.{ts,tsx}', 'src/a/b.tsx'));
    t.ok(await matches('*.TS', 'a.ts', true));
  } finally {
    worker.close();
  }
});

t.test('resolvePattern', async (t) => {
  const ws = setup(t);
  t.match(await resolvePattern(ws, ws, 'b/**/*.txt', 'p', NONE), {
    ok: true,
    pattern: { baseReal: path.join(ws, 'b'), glob: '**/*.txt', relPattern: 'b/**/*.txt' },
  });
  t.match(await resolvePattern(ws, ws, 'b/c/y.txt', 'p', NONE), {
    ok: true,
    pattern: { baseReal: path.join(ws, 'b/c'), glob: 'y.txt', relPattern: 'b/c/y.txt' },
  });
  t.match(
    await resolvePattern(ws, ws, 'a(1).txt', 'p', NONE),
    { ok: true, pattern: { baseReal: ws, glob: 'a(1).txt' } },
    'picomatch matches such names literally too',
  );
  t.match(await resolvePattern(ws, path.join(ws, 'b'), path.join(ws, 'skip/*'), 'p', NONE), {
    ok: true,
    pattern: { baseReal: path.join(ws, 'skip'), relPattern: undefined },
  });
  t.match(await resolvePattern(ws, ws, 'dir-link/*', 'p', NONE), {
    ok: true,
    pattern: { baseReal: path.join(ws, 'b'), baseLexical: path.join(ws, 'dir-link') },
  });
  t.match(await resolvePattern(ws, ws, '', 'p', NONE), { ok: false, error: { type: 'invalid_argument', message: /^p must be/ } });
  t.match(await resolvePattern(ws, ws, 'a\0b', 'p', NONE), { ok: false, error: { type: 'invalid_argument', message: /NUL/ } });
  t.match(await resolvePattern(ws, ws, '../*', 'p', NONE), { ok: false, error: { type: 'path_outside_workspace' } });
  t.match(await resolvePattern('/no/such/ws', '/no/such/ws', '*', 'p', NONE), { ok: false, error: { type: 'workspace_not_found' } });
});

t.test('pathKind', async (t) => {
  const ws = setup(t);
  t.equal(await pathKind(ws), 'directory');
  t.equal(await pathKind(path.join(ws, 'a.txt')), 'file');
  t.equal(await pathKind(path.join(ws, 'nope')), 'missing');
  t.equal(await pathKind('/dev/null'), 'other');
});
