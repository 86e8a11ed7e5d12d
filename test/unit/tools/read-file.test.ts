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
        'five.txt': 'l1\nl2\r\nl3\nl4\nl5\n',
        'no-eol.txt': 'a\nb',
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
  t.same(await tool.validate({ file_path: 'hello.txt', extra: 1 }, { workspace: ws }), { ok: true, args: { file_path: 'hello.txt' } });
  t.match(await tool.validate({}, { workspace: ws }), { ok: false, error: { type: 'invalid_argument', message: /file_path/ } });
  t.match(await tool.validate({ file_path: 3 }, { workspace: ws }), {
    ok: false,
    error: { type: 'invalid_argument', message: /file_path/ },
  });
  t.match(await tool.validate({ file_path: '../outside/secret.txt' }, { workspace: ws }), {
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
    error: { type: 'binary_file', message: /bin\.dat .*is a binary file \(contains NUL bytes\); read_file only reads text files/ },
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

t.test('validate offset and limit', async (t) => {
  const { ws } = setup(t);
  const ctx = { workspace: ws };
  t.same(await tool.validate({ file_path: 'five.txt', offset: 0, limit: 2 }, ctx), {
    ok: true,
    args: { file_path: 'five.txt', offset: 0, limit: 2 },
  });
  t.same(await tool.validate({ file_path: 'five.txt', offset: null, limit: undefined }, ctx), {
    ok: true,
    args: { file_path: 'five.txt' },
  });
  for (const offset of [-1, 1.5, '2', true, Number.NaN]) {
    t.match(
      await tool.validate({ file_path: 'five.txt', offset }, ctx),
      {
        ok: false,
        error: { type: 'invalid_argument', message: /^offset must be a non-negative integer/ },
      },
      String(offset),
    );
  }
  for (const limit of [0, -3, 2.5, '10']) {
    t.match(
      await tool.validate({ file_path: 'five.txt', limit }, ctx),
      {
        ok: false,
        error: { type: 'invalid_argument', message: /^limit must be an integer >= 1/ },
      },
      String(limit),
    );
  }
  t.equal(tool.describe({ file_path: 'a.txt', offset: 10, limit: 5 }), 'Read a.txt (lines 11-15)');
  t.equal(tool.describe({ file_path: 'a.txt', offset: 10 }), 'Read a.txt (lines 11-end)');
  t.equal(tool.describe({ file_path: 'a.txt', limit: 3 }), 'Read a.txt (lines 1-3)');
  t.same(tool.parameters.properties.offset.type, 'integer');
  t.same(tool.parameters.properties.limit.type, 'integer');
});

t.test('offset and limit select lines, keeping their endings, with a truncation notice', async (t) => {
  const { ctx } = setup(t);
  const mid = 'l2\r\nl3\n';
  const notice = (a: number, b: number): string =>
    `[File content truncated: showing lines ${a}-${b} of 5 total lines. Use offset/limit parameters to view more.]\n`;
  t.same(await tool.run({ file_path: 'five.txt', offset: 1, limit: 2 }, ctx), {
    llmContent: notice(2, 3) + mid,
    display: { type: 'text', text: notice(2, 3) + mid },
  });
  t.match(await tool.run({ file_path: 'five.txt', limit: 1 }, ctx), { llmContent: notice(1, 1) + 'l1\n' });
  t.match(await tool.run({ file_path: 'five.txt', offset: 3 }, ctx), { llmContent: notice(4, 5) + 'l4\nl5\n' });
  t.match(await tool.run({ file_path: 'five.txt', offset: 4, limit: 100 }, ctx), { llmContent: notice(5, 5) + 'l5\n' });
});

t.test('a range covering the whole file has no notice', async (t) => {
  const { ctx } = setup(t);
  t.same(await tool.run({ file_path: 'five.txt', offset: 0, limit: 5 }, ctx), {
    llmContent: 'l1\nl2\r\nl3\nl4\nl5\n',
    display: { type: 'text', text: 'l1\nl2\r\nl3\nl4\nl5\n' },
  });
  t.same(await tool.run({ file_path: 'no-eol.txt', offset: 0, limit: 10 }, ctx), {
    llmContent: 'a\nb',
    display: { type: 'text', text: 'a\nb' },
  });
  t.match(await tool.run({ file_path: 'no-eol.txt', offset: 1 }, ctx), {
    llmContent: '[File content truncated: showing lines 2-2 of 2 total lines. Use offset/limit parameters to view more.]\nb',
  });
  t.same(await tool.run({ file_path: 'empty.txt', offset: 0, limit: 3 }, ctx), { llmContent: '', display: { type: 'text', text: '' } });
});

t.test('offset beyond the end of the file', async (t) => {
  const { ws, ctx } = setup(t);
  t.same(await tool.run({ file_path: 'five.txt', offset: 5 }, ctx), {
    isError: true,
    error: {
      type: 'invalid_argument',
      message: `offset 5 is beyond the end of five.txt (relative to the workspace ${ws}), which has 5 lines (valid offsets are 0-4)`,
    },
  });
  t.match(await tool.run({ file_path: 'no-eol.txt', offset: 99, limit: 1 }, ctx), {
    isError: true,
    error: { type: 'invalid_argument', message: /offset 99 .*which has 2 lines/ },
  });
  t.match(await tool.run({ file_path: 'empty.txt', offset: 1 }, ctx), {
    isError: true,
    error: { type: 'invalid_argument', message: /which has 0 lines/ },
  });
});

t.test('offset and limit do not bypass the other refusals', async (t) => {
  const { ctx } = setup(t);
  t.match(await tool.run({ file_path: 'bin.dat', offset: 0, limit: 1 }, ctx), { isError: true, error: { type: 'binary_file' } });
  t.match(await tool.run({ file_path: 'out-link.txt', offset: 0, limit: 1 }, ctx), {
    isError: true,
    error: { type: 'path_outside_workspace' },
  });
  t.match(await tool.run({ file_path: 'src', limit: 1 }, ctx), { isError: true, error: { type: 'target_is_directory' } });
});
