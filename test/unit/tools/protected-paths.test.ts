/**
 * The server's own files (DATA_DIR, AUTH_CONFIG, SETTINGS_FILE, credentials) are out of reach of
 * every file and search tool, even when the workspace is the server's own directory (the
 * default WORKSPACE_DIR is the current directory): named paths fail `path_protected`, listings
 * and searches leave them out, symlinks into them included.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import tap from 'tap';
import { ReadFileTool } from '../../../src/tools/file/read-file.js';
import { ReadManyFilesTool } from '../../../src/tools/file/read-many-files.js';
import { ListDirectoryTool } from '../../../src/tools/file/list-directory.js';
import { WriteFileTool } from '../../../src/tools/file/write-file.js';
import { ReplaceTool } from '../../../src/tools/file/replace.js';
import { GlobTool } from '../../../src/tools/search/glob.js';
import { SearchFileContentTool } from '../../../src/tools/search/search-file-content.js';
import { walkFiles } from '../../../src/tools/search/walk.js';
import { createDefaultTools, resolveInWorkspace as resolveForAgent } from '../../../src/tools/index.js';
import { ProtectedPaths, resolveInWorkspace } from '../../../src/tools/workspace.js';
import type { AnyTool, ToolContext, ToolResult } from '../../../src/tools/tool.js';

type Fixtures = Pick<typeof t, 'testdir' | 'fixture'>;

const AUTH_SECRET = 'k-admin-SECRETSECRET-0123456789';
const SETTINGS_SECRET = 'ghp-SETTINGS-TOKEN-abcdef';
const DATA_SECRET = 'pg-ROW-SECRET-payload';
const CREDS_SECRET = 'gac-PRIVATE-KEY-material';
const SECRETS = [AUTH_SECRET, SETTINGS_SECRET, DATA_SECRET, CREDS_SECRET];

interface Server {
  /** The workspace: the server's own directory, as with `AUTH_CONFIG=./auth.json npm start`. */
  ws: string;
  root: string;
  protectedPaths: ProtectedPaths;
  ctx: ToolContext;
}

/** A server directory used as the workspace, holding its auth file, settings and data dir. */
function server(t: Fixtures): Server {
  const root = fs.realpathSync(
    t.testdir({
      srv: {
        'auth.json': JSON.stringify({ api_keys: [{ key: AUTH_SECRET, principal: 'root', roles: ['admin'] }] }),
        'settings.json': JSON.stringify({ mcpServers: { gh: { command: 'x', env: { TOKEN: SETTINGS_SECRET } } } }),
        '.data': { PG_VERSION: '16\n', base: { '1': `${DATA_SECRET}\n` } },
        'package.json': '{ "name": "devtool" }\n',
        'README.md': '# devtool\n',
        src: { 'a.ts': 'export const a = 1;\n' },
        a: {},
        'auth-link': t.fixture('symlink', 'auth.json'),
        'data-link': t.fixture('symlink', '.data'),
        here: t.fixture('symlink', '.'),
        'creds-link': t.fixture('symlink', '../creds/gac.json'),
      },
      creds: { 'gac.json': `{"private_key": "${CREDS_SECRET}"}` },
    }),
  );
  const ws = path.join(root, 'srv');
  const protectedPaths = new ProtectedPaths([
    path.join(ws, '.data'),
    path.join(ws, 'auth.json'),
    path.join(ws, 'settings.json'),
    path.join(root, 'creds/gac.json'),
  ]);
  return { ws, root, protectedPaths, ctx: { workspace: ws, signal: new AbortController().signal } };
}

/** Every way of naming the auth file or something in the data dir from inside the workspace. */
function hostilePaths(ws: string): string[] {
  return [
    'auth.json',
    './auth.json',
    'a/../auth.json',
    'src/../auth.json',
    path.join(ws, 'auth.json'),
    'auth-link',
    'here/auth.json',
    'here/here/auth.json',
    'settings.json',
    '.data/base/1',
    '.data/PG_VERSION',
    path.join(ws, '.data/base/1'),
    'data-link/base/1',
    'here/.data/base/1',
    '.data/../.data/base/1',
  ];
}

const text = (r: ToolResult): string => (r.isError ? JSON.stringify(r) : `${r.llmContent}\n${JSON.stringify(r.display)}`);

function noSecrets(t: Pick<typeof tap, 'notMatch'>, out: string, what: string): void {
  for (const s of SECRETS) t.notMatch(out, s, `${what}: ${s} does not appear`);
}

/** Whether the file system under `dir` ignores case (it does not on Linux; it usually does on macOS). */
function caseInsensitive(dir: string): boolean {
  const probe = path.join(dir, 'case-probe');
  fs.writeFileSync(probe, '');
  try {
    return fs.existsSync(path.join(dir, 'CASE-PROBE'));
  } finally {
    fs.rmSync(probe);
  }
}

t.test('ProtectedPaths: real paths, missing paths against their nearest existing parent, everything beneath', async (t) => {
  const { ws, root } = server(t);
  const p = new ProtectedPaths([
    path.join(ws, 'auth-link'), // a link: its target is what is protected
    path.join(ws, 'here/.data'), // through a symlinked parent
    path.join(ws, 'here/not-yet/db'), // does not exist yet
    'relative-missing', // relative to the process's cwd
    path.join(ws, 'auth.json'), // duplicates collapse
  ]);
  const cwd = fs.realpathSync('.');
  t.same(p.paths, [path.join(ws, 'auth.json'), path.join(ws, '.data'), path.join(ws, 'not-yet/db'), path.join(cwd, 'relative-missing')]);
  t.ok(p.covers(path.join(ws, 'auth.json')));
  t.ok(p.covers(path.join(ws, '.data')), 'the directory itself');
  t.ok(p.covers(path.join(ws, '.data/base/1')), 'everything beneath it');
  t.ok(p.covers(path.join(ws, 'not-yet/db/later/file')), 'beneath a path created later');
  t.notOk(p.covers(path.join(ws, 'auth.json.bak')), 'a sibling sharing the name as a prefix');
  t.notOk(p.covers(path.join(ws, '.database')));
  t.notOk(p.covers(ws), 'the directory holding them is not protected');
  t.notOk(p.covers(path.join(root, 'creds/gac.json')));
  t.ok(await p.hides(path.join(ws, 'auth-link')), 'hides: a link to a protected file');
  t.ok(await p.hides(path.join(ws, 'data-link')), 'hides: a link to a protected directory');
  t.notOk(await p.hides(path.join(ws, 'here')), 'a link to the workspace itself is not hidden');
  t.notOk(await p.hides(path.join(ws, 'README.md')));
  t.same(ProtectedPaths.NONE.paths, []);
  t.notOk(await ProtectedPaths.NONE.hides(path.join(ws, 'auth.json')));
});

t.test('resolveInWorkspace: every hostile spelling fails path_protected; the rest resolves as before', async (t) => {
  const { ws, root, protectedPaths } = server(t);
  for (const p of hostilePaths(ws)) {
    const r = await resolveInWorkspace(ws, p, 'file_path', protectedPaths);
    t.match(r, { ok: false, error: { type: 'path_protected' } }, `${p} is refused`);
    if (!r.ok) {
      t.equal(
        r.error.message,
        `file_path "${p}" is one of this server's own files (its data, keys or settings); no tool may read, list, search or change them`,
      );
    }
  }
  t.match(
    await resolveInWorkspace(ws, '.data/new/file', 'file_path', protectedPaths),
    { ok: false, error: { type: 'path_protected' } },
    'a new file in it',
  );
  t.match(
    await resolveInWorkspace(ws, '.data', 'dir_path', protectedPaths),
    { ok: false, error: { type: 'path_protected' } },
    'the directory',
  );
  t.match(
    await resolveInWorkspace(ws, path.join(root, 'creds/gac.json'), 'file_path', protectedPaths),
    { ok: false, error: { type: 'path_outside_workspace' } },
    'a protected file outside the workspace is refused as outside',
  );
  t.match(await resolveInWorkspace(ws, 'creds-link', 'file_path', protectedPaths), {
    ok: false,
    error: { type: 'path_outside_workspace' },
  });
  t.same(await resolveInWorkspace(ws, 'README.md', 'file_path', protectedPaths), {
    ok: true,
    path: path.join(ws, 'README.md'),
    workspace: ws,
  });
  t.same(await resolveInWorkspace(ws, 'auth.json.new', 'file_path', protectedPaths), {
    ok: true,
    path: path.join(ws, 'auth.json.new'),
    workspace: ws,
    missing: true,
  });
  t.same(await resolveInWorkspace(ws, '.', 'dir_path', protectedPaths), { ok: true, path: ws, workspace: ws });
  t.same(await resolveInWorkspace(ws, 'here', 'dir_path', protectedPaths), { ok: true, path: ws, workspace: ws });
  t.same(
    await resolveInWorkspace(ws, 'auth.json', 'file_path', ProtectedPaths.NONE),
    { ok: true, path: path.join(ws, 'auth.json'), workspace: ws },
    'NONE protects nothing',
  );
  t.same(
    await resolveForAgent(ws, 'auth.json', 'file_path'),
    { ok: true, path: path.join(ws, 'auth.json'), workspace: ws },
    "the agent's resolver: confinement only",
  );
  t.match(await resolveForAgent(ws, 'auth.json', 'file_path', protectedPaths), { ok: false, error: { type: 'path_protected' } });
});

t.test('a protected path that does not exist yet is protected once created, and a new link to it is too', async (t) => {
  const { ws, ctx } = server(t);
  const protectedPaths = new ProtectedPaths([path.join(ws, 'later-data')]);
  const write = new WriteFileTool({ protectedPaths });
  t.match(await write.validate({ file_path: 'later-data/x', content: 'x' }, ctx), { ok: false, error: { type: 'path_protected' } });
  fs.mkdirSync(path.join(ws, 'later-data'));
  fs.writeFileSync(path.join(ws, 'later-data/db'), DATA_SECRET);
  fs.symlinkSync('later-data', path.join(ws, 'later-link'));
  const read = new ReadFileTool({ protectedPaths });
  t.match(await read.run({ file_path: 'later-data/db' }, ctx), { isError: true, error: { type: 'path_protected' } });
  t.match(await read.run({ file_path: 'later-link/db' }, ctx), { isError: true, error: { type: 'path_protected' } });
});

t.test('case variants: protected exactly when the file system ignores case', async (t) => {
  const { ws, ctx, protectedPaths } = server(t);
  const read = new ReadFileTool({ protectedPaths });
  const insensitive = caseInsensitive(ws);
  t.comment(`the test directory's file system is case-${insensitive ? 'insensitive' : 'sensitive'}`);
  for (const p of ['AUTH.JSON', 'Auth.json', '.DATA/base/1', '.Data/PG_VERSION']) {
    const r = await read.run({ file_path: p }, ctx);
    if (insensitive) t.match(r, { isError: true, error: { type: 'path_protected' } }, `${p}: the same file, refused`);
    else t.match(r, { isError: true, error: { type: 'file_not_found' } }, `${p}: another (missing) file on a case-sensitive file system`);
    noSecrets(t, text(r), p);
  }
});

t.test('read_file: refused at validation and when run, before anything is read', async (t) => {
  const { ws, ctx, protectedPaths } = server(t);
  const tool = new ReadFileTool({ protectedPaths });
  for (const p of hostilePaths(ws)) {
    t.match(await tool.validate({ file_path: p }, ctx), { ok: false, error: { type: 'path_protected' } }, `validate ${p}`);
    const r = await tool.run({ file_path: p }, ctx);
    t.match(r, { isError: true, error: { type: 'path_protected', message: /one of this server's own files/ } }, `run ${p}`);
    noSecrets(t, text(r), p);
  }
  t.match(await tool.run({ file_path: 'README.md' }, ctx), { llmContent: '# devtool\n' }, 'other files read as before');
  t.match(
    await new ReadFileTool().run({ file_path: 'auth.json' }, ctx),
    { llmContent: /api_keys/ },
    'a tool built without them protects nothing',
  );
});

t.test('read_many_files: named protected paths fail; directories and globs leave them out', async (t) => {
  const { ws, ctx, protectedPaths } = server(t);
  const tool = new ReadManyFilesTool({ protectedPaths });
  for (const p of hostilePaths(ws)) {
    const v = await tool.validate({ paths: ['README.md', p] }, ctx);
    t.match(
      v,
      { ok: false, error: { type: 'path_protected', message: /^paths\[1\] ".+" is one of this server's own files/ } },
      `validate ${p}`,
    );
    const r = await tool.run({ paths: ['README.md', p] }, ctx);
    t.match(r, { isError: true, error: { type: 'path_protected' } }, `run ${p}`);
    noSecrets(t, text(r), p);
  }
  for (const p of ['.data', 'data-link', '.data/**', '.data/*', 'here/.data/**', 'data-link/**/*']) {
    t.match(await tool.validate({ paths: [p] }, ctx), { ok: false, error: { type: 'path_protected' } }, `validate ${p}`);
    t.match(
      await tool.run({ paths: [p], useDefaultExcludes: false }, ctx),
      { isError: true, error: { type: 'path_protected' } },
      `run ${p}`,
    );
  }
  t.match(
    await tool.validate({ paths: ['README.md'], include: ['auth.json'] }, ctx),
    { ok: false, error: { type: 'path_protected' } },
    'include too',
  );
  const expansions: Array<Record<string, unknown>> = [
    { paths: ['**/*'], useDefaultExcludes: false },
    { paths: ['**/*.json'], useDefaultExcludes: false },
    { paths: ['.'], useDefaultExcludes: false },
    { paths: ['here'], useDefaultExcludes: false },
    { paths: ['here/**'], useDefaultExcludes: false },
    { paths: ['*'] },
    { paths: ['src'], include: ['**/*.json', '**/PG_VERSION', '**/1'], useDefaultExcludes: false },
  ];
  for (const args of expansions) {
    const r = await tool.run(args as never, ctx);
    const out = text(r);
    noSecrets(t, out, JSON.stringify(args));
    t.notMatch(out, /auth\.json|settings\.json|\.data|PG_VERSION|auth-link|data-link/, `${JSON.stringify(args)}: not even named`);
  }
  const all = await tool.run({ paths: ['**/*'], useDefaultExcludes: false }, ctx);
  t.match(all, { llmContent: /--- README\.md ---[\s\S]*--- package\.json ---[\s\S]*--- src\/a\.ts ---/ }, 'the other files are read');
  t.match(await tool.run({ paths: ['**/*.json'], useDefaultExcludes: false }, ctx), {
    display: { text: 'Read 1 file(s):\n- package.json' },
  });
});

t.test('list_directory: protected entries and links into them are left out; the directories themselves are refused', async (t) => {
  const { ctx, protectedPaths } = server(t);
  const tool = new ListDirectoryTool({ protectedPaths });
  const expected = 'a/\nhere/\nsrc/\nREADME.md\npackage.json';
  t.match(
    await tool.run({ dir_path: '.' }, ctx),
    { llmContent: `Directory listing for .:\n${expected}` },
    'no auth.json, settings.json, .data/ nor links to them',
  );
  t.match(
    await tool.run({ dir_path: 'here' }, ctx),
    { llmContent: `Directory listing for here:\n${expected}` },
    'through a symlinked parent',
  );
  for (const p of ['.data', '.data/base', 'data-link', 'here/.data', './.data/']) {
    t.match(await tool.validate({ dir_path: p }, ctx), { ok: false, error: { type: 'path_protected' } }, `validate ${p}`);
    const r = await tool.run({ dir_path: p }, ctx);
    t.match(r, { isError: true, error: { type: 'path_protected' } }, `run ${p}`);
    t.notMatch(text(r), /PG_VERSION|Directory listing/, `${p}: nothing of it shown`);
  }
  const unprotected = await new ListDirectoryTool().run({ dir_path: '.' }, ctx);
  t.match(unprotected, { llmContent: /\.data\/[\s\S]*auth\.json/ }, 'without protected paths, everything is listed');
});

t.test('glob: protected files never match, whatever the pattern', async (t) => {
  const { ws, ctx, protectedPaths } = server(t);
  const tool = new GlobTool({ protectedPaths });
  for (const args of [
    { pattern: '**/*' },
    { pattern: '**/*.json' },
    { pattern: '**/*.JSON' },
    { pattern: '*' },
    { pattern: '**/*', respect_git_ignore: false },
    { pattern: '**/*', path: 'here' },
    { pattern: '**/1' },
    { pattern: '.DATA/**' },
    { pattern: '**/auth*' },
  ]) {
    const r = await tool.run(args, ctx);
    t.notMatch(
      text(r),
      /auth\.json|settings\.json|\.data|PG_VERSION|auth-link|data-link|creds-link/,
      `${JSON.stringify(args)}: no protected path`,
    );
  }
  const json = await tool.run({ pattern: '**/*.json' }, ctx);
  t.match(json, { llmContent: new RegExp(`Found 1 file\\(s\\)[^\\n]*\\n${path.join(ws, 'package.json')}$`) });
  t.match(await tool.run({ pattern: 'auth*' }, ctx), { llmContent: /^No files found/ });
  for (const args of [
    { pattern: '.data/**' },
    { pattern: 'data-link/*' },
    { pattern: '*', path: '.data' },
    { pattern: '**', path: 'here/.data' },
  ]) {
    t.match(await tool.validate(args, ctx), { ok: false, error: { type: 'path_protected' } }, `validate ${JSON.stringify(args)}`);
    t.match(await tool.run(args, ctx), { isError: true, error: { type: 'path_protected' } }, `run ${JSON.stringify(args)}`);
  }
});

t.test('search_file_content: protected files are never searched', async (t) => {
  const { ctx, protectedPaths } = server(t);
  const tool = new SearchFileContentTool({ protectedPaths });
  for (const args of [
    { pattern: 'SECRET' },
    { pattern: 'k-admin' },
    { pattern: 'api_keys' },
    { pattern: 'SETTINGS-TOKEN', include: '*.json' },
    { pattern: 'ROW-SECRET', path: 'here' },
    { pattern: '.' },
    { pattern: 'private_key' },
  ]) {
    const r = await tool.run(args, ctx);
    noSecrets(t, text(r), JSON.stringify(args));
    t.notMatch(
      text(r),
      /auth\.json|settings\.json|\.data|auth-link|data-link|creds-link/,
      `${JSON.stringify(args)}: no protected file named`,
    );
  }
  t.match(await tool.run({ pattern: 'k-admin' }, ctx), { llmContent: 'No matches found for pattern "k-admin" in path ".".' });
  t.match(
    await tool.run({ pattern: 'devtool' }, ctx),
    { llmContent: /File: README\.md\nL1: # devtool[\s\S]*File: package\.json/ },
    'others are searched',
  );
  for (const p of ['auth.json', 'auth-link', '.data', 'data-link', 'here/auth.json']) {
    t.match(await tool.validate({ pattern: 'x', path: p }, ctx), { ok: false, error: { type: 'path_protected' } }, `validate path ${p}`);
    t.match(await tool.run({ pattern: 'x', path: p }, ctx), { isError: true, error: { type: 'path_protected' } }, `run path ${p}`);
  }
});

t.test('walkFiles skips protected directories, files and links into them', async (t) => {
  const { ws, protectedPaths } = server(t);
  const seen: string[] = [];
  for await (const e of walkFiles(ws, { workspace: ws, protectedPaths })) seen.push(e.rel);
  t.same(seen, ['README.md', 'package.json', 'src/a.ts']);
});

t.test('write_file: a protected target fails at validation and at proposal (nobody is asked), and is never written', async (t) => {
  const { ws, ctx, protectedPaths } = server(t);
  const tool = new WriteFileTool({ protectedPaths });
  const before = fs.readFileSync(path.join(ws, 'auth.json'), 'utf8');
  for (const p of [...hostilePaths(ws), '.data/new.txt', 'data-link/new/deep.txt']) {
    t.match(
      await tool.validate({ file_path: p, content: 'pwned' }, ctx),
      { ok: false, error: { type: 'path_protected' } },
      `validate ${p}`,
    );
    await t.rejects(
      tool.propose({ file_path: p, content: 'pwned' }, ctx),
      { name: 'ToolFailure', error: { type: 'path_protected', message: /one of this server's own files/ } },
      `propose ${p} fails`,
    );
    t.match(await tool.run({ file_path: p, content: 'pwned' }, ctx), { isError: true, error: { type: 'path_protected' } }, `run ${p}`);
  }
  t.equal(fs.readFileSync(path.join(ws, 'auth.json'), 'utf8'), before, 'the auth file is unchanged');
  t.notOk(fs.existsSync(path.join(ws, '.data/new.txt')), 'nothing was created in the data dir');
  t.match(await tool.propose({ file_path: 'out.txt', content: 'ok' }, ctx), { type: 'edit' }, 'other files are proposed as before');
});

t.test('replace: a protected target fails at validation and at proposal, and is never written', async (t) => {
  const { ws, ctx, protectedPaths } = server(t);
  const tool = new ReplaceTool({ protectedPaths });
  const before = fs.readFileSync(path.join(ws, 'auth.json'), 'utf8');
  for (const p of hostilePaths(ws)) {
    const args = { file_path: p, old_string: 'admin', new_string: 'approver' };
    t.match(await tool.validate(args, ctx), { ok: false, error: { type: 'path_protected' } }, `validate ${p}`);
    await t.rejects(
      tool.propose(args, ctx),
      { name: 'ToolFailure', error: { type: 'path_protected', message: /one of this server's own files/ } },
      `propose ${p} fails`,
    );
    t.match(await tool.run(args, ctx), { isError: true, error: { type: 'path_protected' } }, `run ${p}`);
  }
  t.match(await tool.validate({ file_path: '.data/new', old_string: '', new_string: 'x' }, ctx), {
    ok: false,
    error: { type: 'path_protected' },
  });
  t.equal(fs.readFileSync(path.join(ws, 'auth.json'), 'utf8'), before, 'the auth file is unchanged');
});

t.test('createDefaultTools: every file and search tool gets the protected paths', async (t) => {
  const { ws, ctx } = server(t);
  const tools = new Map<string, AnyTool>(
    createDefaultTools({ protectedPaths: [path.join(ws, '.data'), path.join(ws, 'auth.json')] }).map((tool) => [tool.name, tool]),
  );
  const calls: Array<[string, Record<string, unknown>]> = [
    ['read_file', { file_path: 'auth.json' }],
    ['read_many_files', { paths: ['auth.json'] }],
    ['list_directory', { dir_path: '.data' }],
    ['glob', { pattern: '*', path: '.data' }],
    ['search_file_content', { pattern: 'x', path: 'auth.json' }],
    ['write_file', { file_path: 'auth.json', content: 'x' }],
    ['replace', { file_path: 'auth.json', old_string: 'a', new_string: 'b' }],
  ];
  for (const [name, args] of calls) {
    t.match(await tools.get(name)?.validate(args, ctx), { ok: false, error: { type: 'path_protected' } }, name);
  }
  const listing = await tools.get('list_directory')?.run({ dir_path: '.' }, ctx);
  t.notMatch(listing && text(listing), /auth\.json|\.data/);
  const shell = tools.get('run_shell_command');
  t.match(
    await shell?.validate({ command: 'ls', dir_path: '.data' }, ctx),
    { ok: true },
    'run_shell_command is not confined by them (it asks)',
  );
});
