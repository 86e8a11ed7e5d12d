/**
 * A tool's path argument is bounded before it is resolved (workspace.ts MAX_PATH_PARTS): reads
 * run unasked, and resolving a path 2000 folders deep walked up it folder by folder on the event
 * loop (a third of a second a call, many calls a turn).
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { MAX_PATH_PARTS, ProtectedPaths, resolveInWorkspace } from '../../../src/tools/workspace.js';

const workspace = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'path-bounds-')));
t.teardown(() => rmSync(workspace, { recursive: true, force: true }));

t.test('a path deeper than the bound is refused at once, naming the argument', async (t) => {
  const r = await resolveInWorkspace(workspace, 'a/'.repeat(2000) + 'x', 'file_path', ProtectedPaths.NONE);
  t.match(r, { ok: false, error: { type: 'invalid_argument', message: /^file_path is too long/ } });
  const long = await resolveInWorkspace(workspace, 'x'.repeat(5000), 'dir_path', ProtectedPaths.NONE);
  t.match(long, { ok: false, error: { type: 'invalid_argument', message: /^dir_path is too long/ } });
});

t.test('a path within the bound resolves as before', async (t) => {
  const r = await resolveInWorkspace(workspace, 'a/'.repeat(MAX_PATH_PARTS - 2) + 'x', 'file_path', ProtectedPaths.NONE);
  t.match(r, { ok: true });
});
