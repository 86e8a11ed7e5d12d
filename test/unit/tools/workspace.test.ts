import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import {
  resolveInWorkspace as resolveConfined,
  realWorkspacePath,
  relativeIn,
  isWithin,
  ProtectedPaths,
} from '../../../src/tools/workspace.js';

/** Workspace confinement alone (the server's own files: protected-paths.test.ts). */
const resolveInWorkspace = (ws: string, p: unknown, argName: string) => resolveConfined(ws, p, argName, ProtectedPaths.NONE);
import { unifiedDiff } from '../../../src/tools/diff.js';

/** The parts of a tap test used to build fixtures. */
type Fixtures = Pick<typeof t, 'testdir' | 'fixture'>;

function setup(t: Fixtures): { ws: string; outside: string } {
  const root = fs.realpathSync(
    t.testdir({
      ws: { src: { 'a.ts': 'a\n' }, 'inner-link': t.fixture('symlink', 'src'), 'out-link': t.fixture('symlink', '../outside') },
      outside: { 'secret.txt': 'secret\n' },
    }),
  );
  return { ws: path.join(root, 'ws'), outside: path.join(root, 'outside') };
}

t.test('relative and absolute paths inside resolve to real absolute paths', async (t) => {
  const { ws } = setup(t);
  t.same(await resolveInWorkspace(ws, 'src/a.ts', 'file_path'), { ok: true, path: path.join(ws, 'src/a.ts'), workspace: ws });
  t.same(await resolveInWorkspace(ws, path.join(ws, 'src/a.ts'), 'file_path'), {
    ok: true,
    path: path.join(ws, 'src/a.ts'),
    workspace: ws,
  });
  t.same(await resolveInWorkspace(ws, '.', 'dir_path'), { ok: true, path: ws, workspace: ws });
  t.same(
    await resolveInWorkspace(ws, 'new/dir/file.txt', 'file_path'),
    { ok: true, path: path.join(ws, 'new/dir/file.txt'), workspace: ws, missing: true },
    'a path not there yet resolves to where it would be created, and says so',
  );
  t.same(await resolveInWorkspace(ws, 'src/../src/a.ts', 'file_path'), { ok: true, path: path.join(ws, 'src/a.ts'), workspace: ws });
  t.same(await resolveInWorkspace(ws, 'inner-link/a.ts', 'file_path'), { ok: true, path: path.join(ws, 'src/a.ts'), workspace: ws });
});

t.test('escape via ..', async (t) => {
  const { ws } = setup(t);
  const r = await resolveInWorkspace(ws, '../outside/secret.txt', 'file_path');
  t.equal(r.ok, false);
  if (!r.ok) {
    t.equal(r.error.type, 'path_outside_workspace');
    t.equal(r.error.message, `file_path "../outside/secret.txt" is outside the workspace ${ws}`);
  }
});

t.test('escape via absolute path', async (t) => {
  const { ws } = setup(t);
  const r = await resolveInWorkspace(ws, '/etc/passwd', 'file_path');
  t.match(r, { ok: false, error: { type: 'path_outside_workspace', message: /file_path "\/etc\/passwd" is outside the workspace/ } });
  // a sibling sharing the workspace's name as a prefix is still outside
  t.match(await resolveInWorkspace(ws, ws + '-other/x', 'file_path'), { ok: false, error: { type: 'path_outside_workspace' } });
});

t.test('escape via a symlink pointing outside', async (t) => {
  const { ws } = setup(t);
  t.match(await resolveInWorkspace(ws, 'out-link/secret.txt', 'file_path'), { ok: false, error: { type: 'path_outside_workspace' } });
  t.match(await resolveInWorkspace(ws, 'out-link', 'dir_path'), {
    ok: false,
    error: { type: 'path_outside_workspace', message: /dir_path "out-link"/ },
  });
  t.match(await resolveInWorkspace(ws, 'out-link/not-yet/new.txt', 'file_path'), { ok: false, error: { type: 'path_outside_workspace' } });
});

t.test('escape via a dangling symlink whose target would be created outside', async (t) => {
  const { ws, outside } = setup(t);
  fs.symlinkSync(path.join(outside, 'created-by-write.txt'), path.join(ws, 'dangling'));
  t.match(await resolveInWorkspace(ws, 'dangling', 'file_path'), { ok: false, error: { type: 'path_outside_workspace' } });
  fs.symlinkSync('src/new.txt', path.join(ws, 'dangling-inside'));
  t.same(await resolveInWorkspace(ws, 'dangling-inside', 'file_path'), {
    ok: true,
    path: path.join(ws, 'src/new.txt'),
    workspace: ws,
    missing: true,
  });
});

t.test('symlink loops are refused', async (t) => {
  const { ws } = setup(t);
  fs.symlinkSync('loop-b', path.join(ws, 'loop-a'));
  fs.symlinkSync('loop-a', path.join(ws, 'loop-b'));
  t.match(await resolveInWorkspace(ws, 'loop-a/x', 'file_path'), { ok: false, error: { type: 'path_unresolvable' } });
});

t.test('empty and non-string paths are invalid arguments', async (t) => {
  const { ws } = setup(t);
  for (const bad of ['', '   ', undefined, null, 42, {}]) {
    t.match(
      await resolveInWorkspace(ws, bad, 'file_path'),
      { ok: false, error: { type: 'invalid_argument', message: /file_path/ } },
      String(JSON.stringify(bad)),
    );
  }
  t.match(await resolveInWorkspace(ws, 'a\0b', 'file_path'), { ok: false, error: { type: 'invalid_argument' } });
});

t.test('missing workspace', async (t) => {
  t.match(await resolveInWorkspace('/no/such/workspace/here', 'x', 'file_path'), { ok: false, error: { type: 'workspace_not_found' } });
});

t.test('helpers', async (t) => {
  const { ws } = setup(t);
  t.equal(relativeIn(await realWorkspacePath(ws), path.join(ws, 'src', 'a.ts')), 'src/a.ts');
  t.equal(relativeIn(await realWorkspacePath(ws), ws), '.');
  t.ok(isWithin('/w', '/w'));
  t.ok(isWithin('/w', '/w/..x'));
  t.notOk(isWithin('/w', '/w2'));
  t.notOk(isWithin('/w', '/'));
});

t.test('unifiedDiff', async (t) => {
  t.equal(unifiedDiff('n.txt', undefined, 'a\nb\n'), '--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n');
  t.equal(unifiedDiff('d/m.txt', 'a\nb\n', 'a\nc\n'), '--- a/d/m.txt\n+++ b/d/m.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n');
  t.equal(unifiedDiff('same.txt', 'x\n', 'x\n'), '');
});

t.test("a walk up a path not there yet stops at the workspace's real path: it is resolved once per call", async (t) => {
  const { ws } = setup(t);
  const asked: string[] = [];
  const realpath = fs.promises.realpath;
  fs.promises.realpath = ((p: fs.PathLike, ...rest: []) => {
    asked.push(String(p));
    return realpath(p, ...rest);
  }) as typeof realpath;
  t.teardown(() => {
    fs.promises.realpath = realpath;
  });
  t.same(await resolveInWorkspace(ws, 'new/dir/file.txt', 'file_path'), {
    ok: true,
    path: path.join(ws, 'new/dir/file.txt'),
    workspace: ws,
    missing: true,
  });
  t.same(asked, [ws, path.join(ws, 'new/dir/file.txt'), path.join(ws, 'new/dir'), path.join(ws, 'new')]);
});
