import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { SearchFileContentTool } from '../../../src/tools/search/search-file-content.js';
import type { ToolContext, ToolResult } from '../../../src/tools/tool.js';

type Fixtures = Pick<typeof t, 'testdir' | 'fixture'>;

function setup(t: Fixtures): { ws: string; ctx: ToolContext; abort: AbortController } {
  const root = fs.realpathSync(
    t.testdir({
      ws: {
        src: {
          'a.ts': 'import x from "y";\nexport function alpha() {}\n// TODO: more\r\n',
          'b.tsx': 'export const Beta = () => null; // todo\n',
          'c.js': 'function gamma() {}\n',
          deep: { 'd.ts': 'function delta($x) { return $x; }\n' },
        },
        'README.md': '# Title\nA TODO list\n',
        'bin.dat': Buffer.from([0x74, 0x6f, 0x64, 0x6f, 0x00, 0x01]),
        node_modules: { pkg: { 'index.js': 'TODO in a dependency\n' } },
        '.git': { config: 'TODO in git\n' },
        'file-link.md': t.fixture('symlink', 'README.md'),
        'out-link': t.fixture('symlink', '../outside'),
        'out-file.txt': t.fixture('symlink', '../outside/secret.txt'),
      },
      outside: { 'secret.txt': 'TODO secret\n' },
    }),
  );
  const ws = path.join(root, 'ws');
  const abort = new AbortController();
  return { ws, abort, ctx: { workspace: ws, signal: abort.signal } };
}

function text(r: ToolResult): string {
  return r.isError ? `ERROR ${r.error.type}: ${r.error.message}` : r.llmContent;
}

const tool = new SearchFileContentTool();

t.test('shape and validate', async (t) => {
  const { ws } = setup(t);
  const ctx = { workspace: ws };
  t.equal(tool.name, 'search_file_content');
  t.equal(tool.kind, 'read');
  t.same(tool.parameters.required, ['pattern']);
  t.equal(tool.describe({ pattern: 'foo', path: 'src', include: '*.ts' }), 'Search for /foo/ in src (*.ts)');
  t.equal(tool.describe({ pattern: 'foo' }), 'Search for /foo/ in .');
  t.same(await tool.validate({ pattern: 'a+', path: 'src', include: '*.ts', x: 1 }, ctx), {
    ok: true,
    args: { pattern: 'a+', path: 'src', include: '*.ts' },
  });
  t.same(await tool.validate({ pattern: 'a', path: '', include: null }, ctx), { ok: true, args: { pattern: 'a' } });
  t.match(await tool.validate({}, ctx), { ok: false, error: { type: 'invalid_argument', message: /^pattern must be/ } });
  t.match(await tool.validate({ pattern: '' }, ctx), { ok: false, error: { type: 'invalid_argument', message: /^pattern/ } });
  t.match(await tool.validate({ pattern: 'a', include: 3 }, ctx), { ok: false, error: { type: 'invalid_argument', message: /^include/ } });
  t.match(await tool.validate({ pattern: 'a', path: 7 }, ctx), { ok: false, error: { type: 'invalid_argument', message: /path/ } });
});

t.test('invalid regex is an invalid argument with the SyntaxError message', async (t) => {
  const { ws, ctx } = setup(t);
  const expected = {
    type: 'invalid_argument',
    message: /^pattern is not a valid JavaScript regular expression: Invalid regular expression: .*\(foo/,
  };
  t.match(await tool.validate({ pattern: '(foo' }, { workspace: ws }), { ok: false, error: expected });
  t.match(await tool.run({ pattern: '(foo' }, ctx), { isError: true, error: expected });
  t.match(await tool.run({ pattern: '[a-' }, ctx), { isError: true, error: { type: 'invalid_argument' } });
});

t.test('matches are grouped per file with line numbers, case-insensitively', async (t) => {
  const { ctx } = setup(t);
  const r = await tool.run({ pattern: 'todo' }, ctx);
  const want =
    'Found 4 matches for pattern "todo" in path ".":\n---\n' +
    'File: README.md\nL2: A TODO list\n---\n' +
    'File: file-link.md\nL2: A TODO list\n---\n' +
    'File: src/a.ts\nL3: // TODO: more\n---\n' +
    'File: src/b.tsx\nL1: export const Beta = () => null; // todo\n---';
  t.same(r, { llmContent: want, display: { type: 'text', text: want } });
});

t.test('path narrows the search to a directory or a file', async (t) => {
  const { ws, ctx } = setup(t);
  t.equal(
    text(await tool.run({ pattern: 'function \\w+\\(', path: 'src/deep' }, ctx)),
    'Found 1 match for pattern "function \\w+\\(" in path "src/deep":\n---\nFile: src/deep/d.ts\nL1: function delta($x) { return $x; }\n---',
  );
  t.match(await tool.run({ pattern: 'export', path: 'src/a.ts' }, ctx), {
    llmContent: /Found 1 match .*\n---\nFile: src\/a\.ts\nL2: export function alpha/,
  });
  t.match(await tool.run({ pattern: 'alpha', path: path.join(ws, 'src') }, ctx), { llmContent: /File: src\/a\.ts/ });
});

t.test('include filters by glob: base name without a slash, relative path with one', async (t) => {
  const { ctx } = setup(t);
  const fns = (include: string, p?: string): Promise<ToolResult> =>
    tool.run({ pattern: 'function|const', include, ...(p ? { path: p } : {}) }, ctx);
  const ts = text(await fns('*.ts'));
  t.match(ts, /src\/a\.ts/);
  t.match(ts, /src\/deep\/d\.ts/);
  t.notMatch(ts, /b\.tsx|c\.js/);
  const braces = text(await fns('src/*.{ts,tsx}'));
  t.match(braces, /src\/a\.ts[^]*src\/b\.tsx/);
  t.notMatch(braces, /deep|c\.js/);
  t.match(text(await fns('deep/*.ts', 'src')), /Found 1 match .* \(filter: "deep\/\*\.ts"\):\n---\nFile: src\/deep\/d\.ts/);
  t.equal(text(await fns('*.py')), 'No matches found for pattern "function|const" in path "." (filter: "*.py").');
});

t.test('binaries, node_modules, .git and files outside are skipped', async (t) => {
  const { ctx } = setup(t);
  const r = text(await tool.run({ pattern: 'todo|secret' }, ctx));
  t.match(r, /^Found 4 matches/);
  t.notMatch(r, /bin\.dat|node_modules|\.git\/|TODO secret|out-file/);
});

t.test('files larger than the limit are skipped', async (t) => {
  const { ws, ctx } = setup(t);
  fs.writeFileSync(path.join(ws, 'big.txt'), 'needle\n' + 'x'.repeat(2000));
  const small = new SearchFileContentTool({ maxFileBytes: 1000 });
  t.match(await small.run({ pattern: 'needle' }, ctx), { llmContent: /^No matches found/ });
  t.match(await tool.run({ pattern: 'needle' }, ctx), { llmContent: /File: big\.txt/ });
});

t.test('long lines are cut', async (t) => {
  const { ws, ctx } = setup(t);
  fs.writeFileSync(path.join(ws, 'min.js'), `var needle=${'1'.repeat(2000)};\n`);
  const r = text(await tool.run({ pattern: 'needle' }, ctx));
  t.match(r, /L1: var needle=1{489}… \[line truncated\]\n/);
});

t.test('no match is a success', async (t) => {
  const { ctx } = setup(t);
  const none = 'No matches found for pattern "zzz" in path "src".';
  t.same(await tool.run({ pattern: 'zzz', path: 'src' }, ctx), { llmContent: none, display: { type: 'text', text: none } });
});

t.test('matches are capped with a notice', async (t) => {
  const { ws, ctx } = setup(t);
  fs.writeFileSync(path.join(ws, 'many.txt'), Array.from({ length: 20 }, (_, i) => `hit ${i}`).join('\n'));
  const small = new SearchFileContentTool({ maxMatches: 3 });
  const r = text(await small.run({ pattern: '^hit' }, ctx));
  t.match(
    r,
    /^Found 3 matches .*\n---\nFile: many\.txt\nL1: hit 0\nL2: hit 1\nL3: hit 2\n---\n\[Results truncated: stopped at the first 3 matches/,
  );
});

t.test('path errors and escapes', async (t) => {
  const { ws, ctx } = setup(t);
  t.match(await tool.run({ pattern: 'x', path: 'nope' }, ctx), {
    isError: true,
    error: { type: 'path_not_found', message: `Path not found: nope (relative to the workspace ${ws})` },
  });
  t.match(await tool.run({ pattern: 'x', path: '..' }, ctx), { isError: true, error: { type: 'path_outside_workspace' } });
  t.match(await tool.run({ pattern: 'x', path: '../outside' }, ctx), { isError: true, error: { type: 'path_outside_workspace' } });
  t.match(await tool.run({ pattern: 'x', path: 'out-link' }, ctx), { isError: true, error: { type: 'path_outside_workspace' } });
  t.match(await tool.run({ pattern: 'x', path: 'out-file.txt' }, ctx), { isError: true, error: { type: 'path_outside_workspace' } });
  t.match(await tool.validate({ pattern: 'x', path: 'out-link' }, { workspace: ws }), {
    ok: false,
    error: { type: 'path_outside_workspace' },
  });
});

t.test('abort stops the search', async (t) => {
  const { ws, ctx, abort } = setup(t);
  abort.abort();
  t.match(await tool.run({ pattern: 'todo' }, ctx), { isError: true, error: { type: 'cancelled', message: 'The search was cancelled' } });
  const mid = new AbortController();
  for (let i = 0; i < 50; i++) fs.writeFileSync(path.join(ws, `f${String(i).padStart(2, '0')}.txt`), 'todo\n');
  const slow = new SearchFileContentTool();
  const running = slow.run({ pattern: 'todo' }, { workspace: ws, signal: mid.signal });
  mid.abort();
  t.match(await running, { isError: true, error: { type: 'cancelled' } });
});

t.test('a catastrophically backtracking pattern fails after the time limit; the event loop keeps running', async (t) => {
  const root = fs.realpathSync(t.testdir({ ws: { 'evil.txt': `${'a'.repeat(40)}!\n`, 'ok.txt': 'fine\n' } }));
  const ctx: ToolContext = { workspace: path.join(root, 'ws'), signal: new AbortController().signal };
  const quick = new SearchFileContentTool({ fileTimeoutMs: 300 });
  let ticks = 0;
  const ticker = setInterval(() => ticks++, 20);
  const started = Date.now();
  const result = await quick.run({ pattern: '^(a+)+$' }, ctx);
  clearInterval(ticker);
  t.match(result, {
    isError: true,
    error: {
      type: 'search_timeout',
      message: /evil\.txt: the pattern took more than 300 ms on one file \(catastrophic backtracking\?\)\. Use a simpler pattern/,
    },
  });
  t.ok(Date.now() - started < 5_000, 'stopped at the limit');
  t.ok(ticks >= 5, `timers kept firing meanwhile (${ticks} ticks): the server is not frozen`);
  // A normal search afterwards works (a new worker).
  t.match(await quick.run({ pattern: 'fine' }, ctx), { llmContent: /Found 1 match/ });
});

t.test('cancel while a slow pattern runs', async (t) => {
  const root = fs.realpathSync(t.testdir({ ws: { 'evil.txt': `${'a'.repeat(40)}!\n` } }));
  const abort = new AbortController();
  const ctx: ToolContext = { workspace: path.join(root, 'ws'), signal: abort.signal };
  setTimeout(() => abort.abort(), 100);
  const started = Date.now();
  t.match(await new SearchFileContentTool({ fileTimeoutMs: 60_000 }).run({ pattern: '^(a+)+$' }, ctx), {
    isError: true,
    error: { type: 'cancelled' },
  });
  t.ok(Date.now() - started < 5_000, 'promptly');
});
