import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { GlobTool } from '../../../src/tools/search/glob.js';
import type { ToolContext, ToolResult } from '../../../src/tools/tool.js';

type Fixtures = Pick<typeof t, 'testdir' | 'fixture'>;

function setup(t: Fixtures): { ws: string; ctx: ToolContext; abort: AbortController } {
  const root = fs.realpathSync(
    t.testdir({
      ws: {
        src: { 'a.ts': 'a', 'b.ts': 'b', 'c.js': 'c', 'Upper.TS': 'u', deep: { 'd.ts': 'd' }, '.hidden.ts': 'h' },
        docs: { 'readme.md': '#' },
        node_modules: { pkg: { 'index.ts': 'x' } },
        '.git': { 'HEAD.ts': 'x' },
        dist: { 'out.ts': 'x' },
        logs: { 'app.log': 'x' },
        'top.ts': 't',
        'notes.log': 'x',
        'src-link': t.fixture('symlink', 'src'),
        'file-link.ts': t.fixture('symlink', 'top.ts'),
        'out-link': t.fixture('symlink', '../outside'),
        'out-file.ts': t.fixture('symlink', '../outside/secret.ts'),
        '.gitignore': '# build output\n\ndist/\n*.log\n/top-only.md\n!keep.log\nsrc/deep/\n',
        'top-only.md': 'x',
        sub: { 'top-only.md': 'x' },
      },
      outside: { 'secret.ts': 'secret' },
    }),
  );
  const ws = path.join(root, 'ws');
  const abort = new AbortController();
  return { ws, abort, ctx: { workspace: ws, signal: abort.signal } };
}

/** Gives files distinct modification times: the first is the newest. */
function ageInOrder(ws: string, rels: string[]): void {
  const now = Date.now() / 1000;
  rels.forEach((rel, i) => fs.utimesSync(path.join(ws, rel), now - i * 100, now - i * 100));
}

function text(r: ToolResult): string {
  return r.isError ? '' : r.llmContent;
}

const tool = new GlobTool();

t.test('shape and validate', async (t) => {
  const { ws } = setup(t);
  const ctx = { workspace: ws };
  t.equal(tool.name, 'glob');
  t.equal(tool.kind, 'read');
  t.same(tool.parameters.required, ['pattern']);
  t.notOk('propose' in tool);
  t.equal(tool.describe({ pattern: '**/*.ts', path: 'src' }), 'Find files matching **/*.ts in src');
  t.equal(tool.describe({ pattern: '*.md' }), 'Find files matching *.md');
  t.same(await tool.validate({ pattern: '**/*.ts', path: 'src', case_sensitive: true, respect_git_ignore: false, x: 1 }, ctx), {
    ok: true,
    args: { pattern: '**/*.ts', path: 'src', case_sensitive: true, respect_git_ignore: false },
  });
  t.same(await tool.validate({ pattern: '*.ts', path: '', case_sensitive: null }, ctx), { ok: true, args: { pattern: '*.ts' } });
  t.match(await tool.validate({}, ctx), { ok: false, error: { type: 'invalid_argument', message: /^pattern must be a non-empty glob/ } });
  t.match(await tool.validate({ pattern: 5 }, ctx), { ok: false, error: { type: 'invalid_argument', message: /pattern/ } });
  t.match(await tool.validate({ pattern: '*.ts', case_sensitive: 'yes' }, ctx), {
    ok: false,
    error: { type: 'invalid_argument', message: 'case_sensitive must be a boolean when given' },
  });
  t.match(await tool.validate({ pattern: '*.ts', respect_git_ignore: 1 }, ctx), {
    ok: false,
    error: { type: 'invalid_argument', message: /respect_git_ignore/ },
  });
  t.match(await tool.validate({ pattern: '!*.ts' }, ctx), { ok: false, error: { type: 'invalid_argument', message: /negated/ } });
  t.match(await tool.validate({ pattern: 'src/**/../../x' }, ctx), { ok: false, error: { type: 'invalid_argument', message: /"\.\."/ } });
});

t.test('finds files newest first, as absolute paths', async (t) => {
  const { ws, ctx } = setup(t);
  ageInOrder(ws, ['src/b.ts', 'top.ts', 'src/a.ts', 'src/.hidden.ts']);
  const r = await tool.run({ pattern: '*.ts', path: 'src', case_sensitive: true }, ctx);
  t.same(r, {
    llmContent:
      'Found 3 file(s) matching "*.ts" within src (respecting .gitignore), sorted by modification time (newest first):\n' +
      [path.join(ws, 'src/b.ts'), path.join(ws, 'src/a.ts'), path.join(ws, 'src/.hidden.ts')].join('\n'),
    display: { type: 'text', text: text(r) },
  });
  ageInOrder(ws, ['src/.hidden.ts', 'src/a.ts', 'src/b.ts']);
  const again = text(await tool.run({ pattern: 'src/*.ts', case_sensitive: true }, ctx));
  t.ok(again.indexOf('.hidden.ts') < again.indexOf('a.ts') && again.indexOf('a.ts') < again.indexOf('b.ts'), again);
});

t.test('recursive patterns skip the package and VCS dirs; symlinks', async (t) => {
  const { ws, ctx } = setup(t);
  const r = text(await tool.run({ pattern: '**/*.ts', respect_git_ignore: false }, ctx));
  for (const f of ['src/a.ts', 'src/deep/d.ts', 'top.ts', 'dist/out.ts', 'file-link.ts', 'src/Upper.TS']) {
    t.ok(r.includes(path.join(ws, f) + '\n') || r.endsWith(path.join(ws, f)), `has ${f}`);
  }
  t.notMatch(r, /ws\/node_modules|ws\/\.git\/|HEAD/);
  t.notMatch(r, /src-link\//, 'symlinked directories are not descended into');
  t.notMatch(r, /out-file\.ts|secret/, 'a symlink to a file outside is left out');
  t.match(r, /^Found 8 file\(s\)/);
});

t.test('case_sensitive defaults to false', async (t) => {
  const { ws, ctx } = setup(t);
  t.match(await tool.run({ pattern: 'src/*.ts' }, ctx), { llmContent: path.join(ws, 'src/Upper.TS') });
  t.notMatch(text(await tool.run({ pattern: 'src/*.ts', case_sensitive: true }, ctx)), /Upper/);
  t.match(await tool.run({ pattern: 'SRC/*.TS' }, ctx), { llmContent: /Found 4 file\(s\)/ }, 'another spelling of the base');
  t.match(await tool.run({ pattern: 'SRC/*.TS', case_sensitive: true }, ctx), {
    llmContent: 'No files found matching pattern "SRC/*.TS" within .',
  });
});

t.test('.gitignore subset is respected by default', async (t) => {
  const { ctx } = setup(t);
  const r = text(await tool.run({ pattern: '**/*' }, ctx));
  t.notMatch(r, /dist\/out\.ts/, 'dir/');
  t.notMatch(r, /\.log/, '*.ext at any depth');
  t.notMatch(r, /src\/deep\//, 'anchored dir/');
  t.notMatch(r, /ws\/top-only\.md/, '/anchored');
  t.match(r, /sub\/top-only\.md/, '/anchored only applies at the root');
  t.match(r, /docs\/readme\.md/);
  const all = text(await tool.run({ pattern: '**/*', respect_git_ignore: false }, ctx));
  t.match(all, /dist\/out\.ts/);
  t.match(all, /notes\.log/);
  t.match(all, /ws\/top-only\.md/);
  t.notMatch(all, /respecting \.gitignore/);
});

t.test('no .gitignore is fine', async (t) => {
  const { ws, ctx } = setup(t);
  fs.rmSync(path.join(ws, '.gitignore'));
  t.match(await tool.run({ pattern: 'dist/*' }, ctx), { llmContent: /Found 1 file\(s\) matching "dist\/\*" within \., sorted/ });
});

t.test('a literal file name matches itself', async (t) => {
  const { ws, ctx } = setup(t);
  t.match(await tool.run({ pattern: 'docs/readme.md' }, ctx), { llmContent: `Found 1 file(s)` });
  t.match(await tool.run({ pattern: 'docs/readme.md' }, ctx), { llmContent: path.join(ws, 'docs/readme.md') });
  t.match(
    await tool.run({ pattern: 'src-link/*.ts', case_sensitive: true }, ctx),
    {
      llmContent: path.join(ws, 'src-link/a.ts'),
    },
    'a symlinked base inside the workspace is walked',
  );
});

t.test('absolute pattern inside the workspace', async (t) => {
  const { ws, ctx } = setup(t);
  t.match(await tool.run({ pattern: path.join(ws, 'src/deep/*.ts'), respect_git_ignore: false }, ctx), {
    llmContent: path.join(ws, 'src/deep/d.ts'),
  });
});

t.test('no match is a success', async (t) => {
  const { ctx } = setup(t);
  const none = 'No files found matching pattern "**/*.rs" within src';
  t.same(await tool.run({ pattern: '**/*.rs', path: 'src' }, ctx), { llmContent: none, display: { type: 'text', text: none } });
  t.match(await tool.run({ pattern: 'nope/*.ts', case_sensitive: true }, ctx), { llmContent: /^No files found/ });
});

t.test('results are capped with a notice', async (t) => {
  const { ws, ctx } = setup(t);
  ageInOrder(ws, ['src/c.js', 'src/b.ts', 'src/a.ts', 'src/.hidden.ts', 'src/Upper.TS']);
  const small = new GlobTool({ maxResults: 2 });
  const r = text(await small.run({ pattern: 'src/*' }, ctx));
  t.match(r, /^Found 5 file\(s\)/);
  t.ok(r.includes(`${path.join(ws, 'src/c.js')}\n${path.join(ws, 'src/b.ts')}\n[Results truncated`), r);
  t.match(r, /showing the 2 most recently modified of 5 files/);
  t.notMatch(r, /a\.ts/);
});

t.test('path must be a directory inside the workspace', async (t) => {
  const { ws, ctx } = setup(t);
  t.match(await tool.run({ pattern: '*', path: 'nope' }, ctx), {
    isError: true,
    error: { type: 'dir_not_found', message: `Directory not found: nope (relative to the workspace ${ws})` },
  });
  t.match(await tool.run({ pattern: '*', path: 'top.ts' }, ctx), { isError: true, error: { type: 'path_is_not_a_directory' } });
  t.match(await tool.validate({ pattern: '*', path: 'top.ts' }, ctx), { ok: false, error: { type: 'path_is_not_a_directory' } });
});

t.test('escapes are refused', async (t) => {
  const { ctx } = setup(t);
  t.match(await tool.run({ pattern: '*', path: '..' }, ctx), { isError: true, error: { type: 'path_outside_workspace' } });
  t.match(await tool.run({ pattern: '*', path: 'out-link' }, ctx), { isError: true, error: { type: 'path_outside_workspace' } });
  t.match(await tool.run({ pattern: '../outside/*.ts' }, ctx), {
    isError: true,
    error: { type: 'path_outside_workspace', message: /pattern "\.\.\/outside\/\*\.ts" reaches outside the workspace/ },
  });
  t.match(await tool.run({ pattern: 'out-link/*.ts' }, ctx), { isError: true, error: { type: 'path_outside_workspace' } });
  t.match(await tool.run({ pattern: '/etc/*' }, ctx), { isError: true, error: { type: 'path_outside_workspace' } });
  t.match(await tool.validate({ pattern: '../outside/**' }, ctx), { ok: false, error: { type: 'path_outside_workspace' } });
});

t.test('abort stops the search', async (t) => {
  const { ctx, abort } = setup(t);
  abort.abort();
  t.match(await tool.run({ pattern: '**/*' }, ctx), { isError: true, error: { type: 'cancelled' } });
});
