import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ListDirectoryTool } from '../../../src/tools/file/list-directory.js';
import type { ToolContext } from '../../../src/tools/tool.js';

type Fixtures = Pick<typeof t, 'testdir' | 'fixture'>;

function setup(t: Fixtures): { ws: string; ctx: ToolContext } {
  const root = fs.realpathSync(
    t.testdir({
      ws: {
        'b.txt': 'b',
        'a.txt': 'a',
        zdir: {},
        adir: { 'inner.txt': 'x' },
        'dir-link': t.fixture('symlink', 'adir'),
        'out-link': t.fixture('symlink', '../outside'),
        empty: {},
      },
      outside: { 'secret.txt': 'secret\n' },
    }),
  );
  const ws = path.join(root, 'ws');
  return { ws, ctx: { workspace: ws, signal: new AbortController().signal } };
}

const tool = new ListDirectoryTool();

t.test('shape', async (t) => {
  t.equal(tool.name, 'list_directory');
  t.equal(tool.kind, 'read');
  t.same(tool.parameters.required, ['dir_path']);
  t.equal(tool.describe({ dir_path: 'src' }), 'List src');
});

t.test('lists sorted entries, directories first with a trailing slash', async (t) => {
  const { ctx } = setup(t);
  const r = await tool.run({ dir_path: '.' }, ctx);
  const text = 'Directory listing for .:\nadir/\ndir-link/\nempty/\nzdir/\na.txt\nb.txt\nout-link';
  t.same(r, { llmContent: text, display: { type: 'text', text } });
});

t.test('absolute path and empty directory', async (t) => {
  const { ws, ctx } = setup(t);
  t.match(await tool.run({ dir_path: path.join(ws, 'adir') }, ctx), { llmContent: /inner\.txt/ });
  t.match(await tool.run({ dir_path: 'empty' }, ctx), { llmContent: 'Directory empty is empty.' });
});

t.test('validate', async (t) => {
  const { ws } = setup(t);
  t.same(await tool.validate({ dir_path: 'adir', x: 1 }, { workspace: ws }), { ok: true, args: { dir_path: 'adir' } });
  t.match(await tool.validate({}, { workspace: ws }), { ok: false, error: { type: 'invalid_argument', message: /dir_path/ } });
  t.match(await tool.validate({ dir_path: '..' }, { workspace: ws }), { ok: false, error: { type: 'path_outside_workspace' } });
});

t.test('missing directory', async (t) => {
  const { ws, ctx } = setup(t);
  t.same(await tool.run({ dir_path: 'nope' }, ctx), {
    isError: true,
    error: { type: 'dir_not_found', message: `Directory not found: nope (relative to the workspace ${ws})` },
  });
});

t.test('a file is not a directory', async (t) => {
  const { ctx } = setup(t);
  t.match(await tool.run({ dir_path: 'a.txt' }, ctx), {
    isError: true,
    error: { type: 'path_is_not_a_directory', message: /read_file/ },
  });
});

t.test('escapes are refused', async (t) => {
  const { ctx } = setup(t);
  t.match(await tool.run({ dir_path: '..' }, ctx), { isError: true, error: { type: 'path_outside_workspace' } });
  t.match(await tool.run({ dir_path: '/' }, ctx), { isError: true, error: { type: 'path_outside_workspace' } });
  t.match(await tool.run({ dir_path: 'out-link' }, ctx), { isError: true, error: { type: 'path_outside_workspace' } });
});
