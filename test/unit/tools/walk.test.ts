import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { filterMatcher, loadGitignore, pathKind, resolvePattern, walkFiles } from '../../../src/tools/search/walk.js';
import { ProtectedPaths } from '../../../src/tools/workspace.js';

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
  t.same(await collect(ws, { workspace: ws, protectedPaths: NONE, ignore: (real, isDir) => isDir && real.endsWith('/b') }), [
    'a.txt',
    'skip/z.txt',
  ]);
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
  t.equal(loadGitignore(setup(t)), undefined, 'no .gitignore');
  t.equal(loadGitignore(setup(t, '# only comments\n\n!neg\n/\n')), undefined, 'no rules');
  const ws = setup(t, 'build/\n*.log  \n/root-only.txt\nlib/gen\n!keep.log\nout/**\n**/tmp\r\n');
  const ignored = loadGitignore(ws);
  if (ignored === undefined) throw new Error('expected rules');
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
  for (const [rel, isDir, want] of cases) t.equal(ignored(rel, isDir), want, `${rel}${isDir ? '/' : ''}`);
});

t.test('filterMatcher: base name without a slash, path with one', async (t) => {
  t.ok(filterMatcher('*.ts')('a/b/c.ts'));
  t.ok(filterMatcher('*.ts')('.hidden.ts'));
  t.notOk(filterMatcher('src/*.ts')('a/src/c.ts'));
  t.ok(filterMatcher('src/**/*.{ts,tsx}')('src/a/b.tsx'));
  t.ok(filterMatcher('*.TS', true)('a.ts'));
});

t.test('resolvePattern', async (t) => {
  const ws = setup(t);
  t.match(resolvePattern(ws, ws, 'b/**/*.txt', 'p', NONE), {
    ok: true,
    pattern: { baseReal: path.join(ws, 'b'), glob: '**/*.txt', relPattern: 'b/**/*.txt' },
  });
  t.match(resolvePattern(ws, ws, 'b/c/y.txt', 'p', NONE), {
    ok: true,
    pattern: { baseReal: path.join(ws, 'b/c'), glob: 'y.txt', relPattern: 'b/c/y.txt' },
  });
  t.match(
    resolvePattern(ws, ws, 'a(1).txt', 'p', NONE),
    { ok: true, pattern: { baseReal: ws, glob: 'a(1).txt' } },
    'picomatch matches such names literally too',
  );
  t.match(resolvePattern(ws, path.join(ws, 'b'), path.join(ws, 'skip/*'), 'p', NONE), {
    ok: true,
    pattern: { baseReal: path.join(ws, 'skip'), relPattern: undefined },
  });
  t.match(resolvePattern(ws, ws, 'dir-link/*', 'p', NONE), {
    ok: true,
    pattern: { baseReal: path.join(ws, 'b'), baseLexical: path.join(ws, 'dir-link') },
  });
  t.match(resolvePattern(ws, ws, '', 'p', NONE), { ok: false, error: { type: 'invalid_argument', message: /^p must be/ } });
  t.match(resolvePattern(ws, ws, 'a\0b', 'p', NONE), { ok: false, error: { type: 'invalid_argument', message: /NUL/ } });
  t.match(resolvePattern(ws, ws, '../*', 'p', NONE), { ok: false, error: { type: 'path_outside_workspace' } });
  t.match(resolvePattern('/no/such/ws', '/no/such/ws', '*', 'p', NONE), { ok: false, error: { type: 'workspace_not_found' } });
});

t.test('pathKind', async (t) => {
  const ws = setup(t);
  t.equal(pathKind(ws), 'directory');
  t.equal(pathKind(path.join(ws, 'a.txt')), 'file');
  t.equal(pathKind(path.join(ws, 'nope')), 'missing');
  t.equal(pathKind('/dev/null'), 'other');
});
