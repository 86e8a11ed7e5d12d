import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ReadFileTool } from '../../../src/tools/file/read-file.js';
import type { ToolContext } from '../../../src/tools/tool.js';

type Fixtures = Pick<typeof t, 'testdir' | 'fixture'>;

function setup(t: Fixtures): { ws: string; ctx: ToolContext } {
  const root = fs.realpathSync(
    t.testdir({
      ws: {
        'hello.txt': 'hello\nworld\n',
        'empty.txt': '',
        src: { 'x.ts': 'export const x = 1;\n' },
        'bin.dat': Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01, 0x02]),
        'out-link.txt': t.fixture('symlink', '../outside/secret.txt'),
        'in-link.txt': t.fixture('symlink', 'hello.txt'),
      },
      outside: { 'secret.txt': 'secret\n' },
    }),
  );
  const ws = path.join(root, 'ws');
  return { ws, ctx: { workspace: ws, signal: new AbortController().signal } };
}

const tool = new ReadFileTool();

t.test('shape', async (t) => {
  t.equal(tool.name, 'read_file');
  t.equal(tool.kind, 'read');
  t.same(tool.parameters.required, ['file_path']);
  t.equal(tool.describe({ file_path: 'a.txt' }), 'Read a.txt');
});

t.test('reads a relative path', async (t) => {
  const { ctx } = setup(t);
  t.same(await tool.run({ file_path: 'hello.txt' }, ctx), {
    llmContent: 'hello\nworld\n',
    display: { type: 'text', text: 'hello\nworld\n' },
  });
  t.match(await tool.run({ file_path: 'empty.txt' }, ctx), { llmContent: '' });
  t.match(await tool.run({ file_path: 'in-link.txt' }, ctx), { llmContent: 'hello\nworld\n' });
});

t.test('reads an absolute path inside the workspace', async (t) => {
  const { ws, ctx } = setup(t);
  t.match(await tool.run({ file_path: path.join(ws, 'src/x.ts') }, ctx), { llmContent: 'export const x = 1;\n' });
});

t.test('validate', async (t) => {
  const { ws } = setup(t);
  t.same(tool.validate({ file_path: 'hello.txt', extra: 1 }, { workspace: ws }), { ok: true, args: { file_path: 'hello.txt' } });
  t.match(tool.validate({}, { workspace: ws }), { ok: false, error: { type: 'invalid_argument', message: /file_path/ } });
  t.match(tool.validate({ file_path: 3 }, { workspace: ws }), { ok: false, error: { type: 'invalid_argument', message: /file_path/ } });
  t.match(tool.validate({ file_path: '../outside/secret.txt' }, { workspace: ws }), {
    ok: false,
    error: { type: 'path_outside_workspace' },
  });
});

t.test('missing file', async (t) => {
  const { ws, ctx } = setup(t);
  t.same(await tool.run({ file_path: 'src/nope.ts' }, ctx), {
    isError: true,
    error: { type: 'file_not_found', message: `File not found: src/nope.ts (relative to the workspace ${ws})` },
  });
  t.match(await tool.run({ file_path: path.join(ws, 'nope.ts') }, ctx), {
    isError: true,
    error: { type: 'file_not_found', message: `File not found: ${path.join(ws, 'nope.ts')}` },
  });
  t.match(await tool.run({ file_path: 'hello.txt/child' }, ctx), { isError: true, error: { type: 'file_not_found' } });
});

t.test('directory is refused', async (t) => {
  const { ctx } = setup(t);
  t.match(await tool.run({ file_path: 'src' }, ctx), {
    isError: true,
    error: { type: 'target_is_directory', message: /src .*is a directory.*list_directory/ },
  });
});

t.test('binary file is refused', async (t) => {
  const { ctx } = setup(t);
  t.match(await tool.run({ file_path: 'bin.dat' }, ctx), {
    isError: true,
    error: { type: 'binary_file', message: /bin\.dat .*binary/ },
  });
});

t.test('NUL byte after the first 8 KB is not treated as binary', async (t) => {
  const { ws, ctx } = setup(t);
  fs.writeFileSync(path.join(ws, 'late-nul.txt'), Buffer.concat([Buffer.alloc(9000, 'a'), Buffer.from([0])]));
  const r = await tool.run({ file_path: 'late-nul.txt' }, ctx);
  t.notOk(r.isError);
});

t.test('file larger than 2 MB is refused', async (t) => {
  const { ws, ctx } = setup(t);
  fs.writeFileSync(path.join(ws, 'big.txt'), Buffer.alloc(2 * 1024 * 1024 + 1, 'a'));
  t.match(await tool.run({ file_path: 'big.txt' }, ctx), {
    isError: true,
    error: { type: 'file_too_large', message: /big\.txt .*2097153 bytes/ },
  });
  fs.writeFileSync(path.join(ws, 'limit.txt'), Buffer.alloc(2 * 1024 * 1024, 'a'));
  t.notOk((await tool.run({ file_path: 'limit.txt' }, ctx)).isError);
});

t.test('escapes are refused at run time too', async (t) => {
  const { ws, ctx } = setup(t);
  t.match(await tool.run({ file_path: '../outside/secret.txt' }, ctx), {
    isError: true,
    error: { type: 'path_outside_workspace', message: `file_path "../outside/secret.txt" is outside the workspace ${ws}` },
  });
  t.match(await tool.run({ file_path: '/etc/passwd' }, ctx), { isError: true, error: { type: 'path_outside_workspace' } });
  t.match(await tool.run({ file_path: 'out-link.txt' }, ctx), { isError: true, error: { type: 'path_outside_workspace' } });
});
