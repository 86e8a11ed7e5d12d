import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ReadManyFilesTool } from '../../../src/tools/file/read-many-files.js';
import type { ToolContext, ToolResult } from '../../../src/tools/tool.js';

type Fixtures = Pick<typeof t, 'testdir' | 'fixture'>;

function setup(t: Fixtures): { ws: string; ctx: ToolContext; abort: AbortController } {
  const root = fs.realpathSync(
    t.testdir({
      ws: {
        'README.md': 'readme\n',
        '.env': 'SECRET=1\n',
        src: {
          'a.ts': 'a\n',
          'b.ts': 'b\n',
          'a.test.ts': 'test\n',
          'logo.png': Buffer.from([0x89, 0x50, 0x00, 0x01]),
          deep: { 'c.ts': 'c\n' },
          fixtures: { 'f.ts': 'fixture\n' },
        },
        docs: { 'guide.md': 'guide\n' },
        node_modules: { pkg: { 'index.js': 'dep\n' } },
        dist: { 'out.js': 'built\n' },
        '.git': { HEAD: 'ref\n' },
        'in-link.md': t.fixture('symlink', 'README.md'),
        'out-link': t.fixture('symlink', '../outside'),
        'out-file.txt': t.fixture('symlink', '../outside/secret.txt'),
      },
      outside: { 'secret.txt': 'secret\n' },
    }),
  );
  const ws = path.join(root, 'ws');
  const abort = new AbortController();
  return { ws, abort, ctx: { workspace: ws, signal: abort.signal } };
}

function llm(r: ToolResult): string {
  return r.isError ? `ERROR ${r.error.type}: ${r.error.message}` : r.llmContent;
}

const tool = new ReadManyFilesTool();

t.test('shape and validate', async (t) => {
  const { ws } = setup(t);
  const ctx = { workspace: ws };
  t.equal(tool.name, 'read_many_files');
  t.equal(tool.kind, 'read');
  t.same(tool.parameters.required, ['paths']);
  t.equal(tool.parameters.properties.paths.type, 'array');
  t.equal(tool.describe({ paths: ['a', 'src/**'], include: ['*.md'] }), 'Read a, src/**, *.md');
  const full = { paths: ['src'], include: ['*.md'], exclude: ['*.test.ts'], recursive: false, useDefaultExcludes: false };
  t.same(await tool.validate({ ...full, extra: 1 }, ctx), { ok: true, args: full });
  t.same(await tool.validate({ paths: ['a'], include: null, recursive: undefined }, ctx), { ok: true, args: { paths: ['a'] } });
  const bad: [Record<string, unknown>, RegExp][] = [
    [{}, /^paths must be a non-empty array of strings/],
    [{ paths: [] }, /^paths must be a non-empty array/],
    [{ paths: 'src' }, /^paths must be a non-empty array/],
    [{ paths: ['a', ''] }, /^paths\[1\] must be a non-empty string/],
    [{ paths: ['a', 3] }, /^paths\[1\] must be a non-empty string/],
    [{ paths: ['a'], include: 'x' }, /^include must be an array of strings/],
    [{ paths: ['a'], exclude: [null] }, /^exclude\[0\] must be a non-empty string/],
    [{ paths: ['a'], recursive: 'no' }, /^recursive must be a boolean/],
    [{ paths: ['a'], useDefaultExcludes: 0 }, /^useDefaultExcludes must be a boolean/],
    [{ paths: ['!src'] }, /^paths\[0\] "!src" is a negated pattern/],
  ];
  for (const [args, message] of bad)
    t.match(await tool.validate(args, ctx), { ok: false, error: { type: 'invalid_argument', message } }, JSON.stringify(args));
  t.match(await tool.validate({ paths: ['a', '../outside/secret.txt'] }, ctx), {
    ok: false,
    error: { type: 'path_outside_workspace', message: /paths\[1\]/ },
  });
  t.match(await tool.validate({ paths: ['a'], include: ['out-link/*'] }, ctx), {
    ok: false,
    error: { type: 'path_outside_workspace', message: /include\[0\]/ },
  });
});

t.test('reads files in order with headers; display lists them', async (t) => {
  const { ctx } = setup(t);
  const r = await tool.run({ paths: ['src/b.ts', 'README.md', 'src/a.ts'] }, ctx);
  t.same(r, {
    llmContent: '--- src/b.ts ---\nb\n\n--- README.md ---\nreadme\n\n--- src/a.ts ---\na\n\n--- End of content ---',
    display: { type: 'text', text: 'Read 3 file(s):\n- src/b.ts\n- README.md\n- src/a.ts' },
  });
});

t.test('directories are read recursively, with default excludes, skipping binaries', async (t) => {
  const { ctx } = setup(t);
  const r = await tool.run({ paths: ['.'] }, ctx);
  const out = llm(r);
  for (const f of ['README.md', 'src/a.ts', 'src/deep/c.ts', 'docs/guide.md']) t.match(out, `--- ${f} ---\n`);
  t.notMatch(out, /in-link\.md/, 'a link to a file already read is not repeated');
  t.match(llm(await tool.run({ paths: ['in-link.md'] }, ctx)), /^--- in-link\.md ---\nreadme\n/, 'a named link keeps its name');
  t.notMatch(out, /node_modules|dist\/|\.git\/|--- \.env|SECRET|secret/);
  t.match(out, /--- End of content ---\nSkipped 1 file\(s\):\n- src\/logo\.png \(binary file\)$/);
  t.match(r, { display: { type: 'text', text: /^Read 7 file\(s\):\n[^]*Skipped 1 file\(s\):\n- src\/logo\.png \(binary file\)$/ } });
});

t.test('recursive: false reads only the top level of a directory', async (t) => {
  const { ctx } = setup(t);
  const out = llm(await tool.run({ paths: ['src'], recursive: false }, ctx));
  t.match(out, /--- src\/a\.ts ---/);
  t.notMatch(out, /deep|fixtures/);
});

t.test('globs, include and exclude', async (t) => {
  const { ctx } = setup(t);
  const out = llm(await tool.run({ paths: ['src/**/*.ts'], include: ['**/*.md'], exclude: ['*.test.ts', 'fixtures', 'docs/'] }, ctx));
  t.match(out, /^--- src\/a\.ts ---\na\n\n--- src\/b\.ts ---\nb\n\n--- src\/deep\/c\.ts ---\nc\n\n--- README\.md ---\n/);
  t.notMatch(out, /a\.test\.ts|fixture|guide/);
  const again = llm(await tool.run({ paths: ['src/*.ts', 'src/a.ts'], exclude: ['src/b.ts'] }, ctx));
  t.equal(again.match(/--- src\/a\.ts ---/g)?.length, 1, 'no duplicates');
  t.notMatch(again, /src\/b\.ts/);
});

t.test('an explicitly named file bypasses the default excludes but not exclude', async (t) => {
  const { ctx } = setup(t);
  t.match(llm(await tool.run({ paths: ['.env', 'dist/out.js'] }, ctx)), /--- \.env ---\nSECRET=1\n\n--- dist\/out\.js ---\nbuilt\n/);
  t.match(await tool.run({ paths: ['.env'], exclude: ['.env'] }, ctx), { isError: true, error: { type: 'no_files_matched' } });
  t.match(llm(await tool.run({ paths: ['dist'] }, ctx)), /--- dist\/out\.js ---/, 'a named excluded directory is read');
});

t.test('useDefaultExcludes: false reads everything', async (t) => {
  const { ctx } = setup(t);
  const out = llm(await tool.run({ paths: ['.'], useDefaultExcludes: false }, ctx));
  t.match(out, /--- node_modules\/pkg\/index\.js ---/);
  t.match(out, /--- dist\/out\.js ---/);
  t.match(out, /--- \.env ---/);
  t.match(out, /--- \.git\/HEAD ---/);
});

t.test('missing paths are listed; nothing matched fails', async (t) => {
  const { ctx } = setup(t);
  t.match(llm(await tool.run({ paths: ['README.md', 'nope.md'] }, ctx)), /Skipped 1 file\(s\):\n- nope\.md \(not found\)$/);
  t.same(await tool.run({ paths: ['nope.md', 'src/**/*.rs'] }, ctx), {
    isError: true,
    error: {
      type: 'no_files_matched',
      message:
        'No files matched ["nope.md","src/**/*.rs"] (not found: nope.md) after excludes; check the paths with glob or list_directory',
    },
  });
  t.match(await tool.run({ paths: ['missing-dir/**'] }, ctx), { isError: true, error: { type: 'no_files_matched' } });
});

t.test('only binaries: success that says nothing was read', async (t) => {
  const { ctx } = setup(t);
  const r = await tool.run({ paths: ['src/*.png'] }, ctx);
  t.same(r, {
    llmContent: 'No text files were read.\nSkipped 1 file(s):\n- src/logo.png (binary file)',
    display: { type: 'text', text: 'Read 0 file(s).\nSkipped 1 file(s):\n- src/logo.png (binary file)' },
  });
});

t.test('files over the read_file limit are skipped', async (t) => {
  const { ws, ctx } = setup(t);
  fs.writeFileSync(path.join(ws, 'huge.txt'), Buffer.alloc(2 * 1024 * 1024 + 1, 'a'));
  t.match(llm(await tool.run({ paths: ['huge.txt', 'README.md'] }, ctx)), /--- README\.md ---[^]*- huge\.txt \(larger than 2 MB\)$/);
});

t.test('caps: total bytes and file count', async (t) => {
  const { ws, ctx } = setup(t);
  fs.writeFileSync(path.join(ws, 'big.txt'), 'x'.repeat(100));
  const bytes = new ReadManyFilesTool({ maxTotalBytes: 70 });
  const out = llm(await bytes.run({ paths: ['src/a.ts', 'src/b.ts', 'big.txt', 'README.md', 'docs/guide.md'] }, ctx));
  t.match(out, /^--- src\/a\.ts ---\na\n\n--- src\/b\.ts ---\nb\n\n--- README\.md ---\nreadme\n\n--- End of content ---\n/);
  t.match(out, /\[Output truncated: reached the 70-byte limit; docs\/guide\.md and 0 more matched files were not read\./);
  t.match(out, /- big\.txt \(larger than the 70-byte output limit; use read_file with offset\/limit\)/);
  const count = new ReadManyFilesTool({ maxFiles: 2 });
  const few = llm(await count.run({ paths: ['src/*.ts'] }, ctx));
  t.match(
    few,
    /--- src\/a\.test\.ts ---[^]*--- src\/a\.ts ---[^]*End of content ---\n\[Output truncated: read the first 2 files; 1 more matched files were not read\.\]$/,
  );
  t.notMatch(few, /src\/b\.ts/);
});

t.test('escapes are refused at run time', async (t) => {
  const { ctx } = setup(t);
  for (const p of ['../outside/secret.txt', 'out-link', 'out-file.txt', '/etc/passwd', 'out-link/*.txt', '../outside/*']) {
    t.match(await tool.run({ paths: [p] }, ctx), { isError: true, error: { type: 'path_outside_workspace' } }, p);
  }
  t.notMatch(llm(await tool.run({ paths: ['*'] }, ctx)), /out-file|secret/, 'a glob leaves out links to outside');
});

t.test('abort stops reading', async (t) => {
  const { ctx, abort } = setup(t);
  abort.abort();
  t.match(await tool.run({ paths: ['.'] }, ctx), { isError: true, error: { type: 'cancelled' } });
});
