import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ReplaceTool } from '../../../src/tools/file/replace.js';
import { contentHash } from '../../../src/tools/tool.js';
import type { ToolContext, ToolProposal } from '../../../src/tools/tool.js';

type Fixtures = Pick<typeof t, 'testdir' | 'fixture'>;

const CODE = 'function a() {\n  return 1;\n}\n\nfunction b() {\n  return 1;\n}\n';

function setup(t: Fixtures): { ws: string; outside: string; ctx: ToolContext } {
  const root = fs.realpathSync(
    t.testdir({
      ws: {
        'code.js': CODE,
        'price.txt': 'price: 10\n',
        src: { 'x.ts': 'x\n' },
        'bin.dat': Buffer.from([0x61, 0x00, 0x62]),
        'out-link': t.fixture('symlink', '../outside'),
        'out-file.txt': t.fixture('symlink', '../outside/secret.txt'),
      },
      outside: { 'secret.txt': 'secret\n' },
    }),
  );
  const ws = path.join(root, 'ws');
  return { ws, outside: path.join(root, 'outside'), ctx: { workspace: ws, signal: new AbortController().signal } };
}

function read(ws: string, rel: string): string {
  return fs.readFileSync(path.join(ws, rel), 'utf8');
}

const tool = new ReplaceTool();

t.test('shape and describe', async (t) => {
  t.equal(tool.name, 'replace');
  t.equal(tool.kind, 'edit');
  t.same(tool.parameters.required, ['file_path', 'old_string', 'new_string']);
  t.equal(tool.parameters.properties.expected_replacements.type, 'integer');
  t.notOk('modified_content' in tool.parameters.properties, 'the model is not offered modified_content');
  t.equal(tool.describe({ file_path: 'a.txt', old_string: 'x', new_string: 'y' }), 'Edit a.txt');
  t.equal(tool.describe({ file_path: 'a.txt', old_string: '', new_string: 'y' }), 'Create a.txt');
  t.equal(tool.describe({ file_path: 'a.txt', old_string: '', new_string: 'y', modified_content: 'z' }), 'Edit a.txt');
});

t.test('validate checks argument types only (and confinement)', async (t) => {
  const { ws } = setup(t);
  const ctx = { workspace: ws };
  t.same(
    await tool.validate(
      { file_path: 'code.js', old_string: 'a', new_string: 'b', expected_replacements: 2, modified_content: 'evil', x: 1 },
      ctx,
    ),
    {
      ok: true,
      args: { file_path: 'code.js', old_string: 'a', new_string: 'b', expected_replacements: 2 },
    },
  );
  t.same(await tool.validate({ file_path: 'nope.js', old_string: 'not checked here', new_string: '', expected_replacements: null }, ctx), {
    ok: true,
    args: { file_path: 'nope.js', old_string: 'not checked here', new_string: '' },
  });
  t.match(await tool.validate({ old_string: 'a', new_string: 'b' }, ctx), {
    ok: false,
    error: { type: 'invalid_argument', message: /^file_path/ },
  });
  t.match(await tool.validate({ file_path: 'code.js', new_string: 'b' }, ctx), {
    ok: false,
    error: { type: 'invalid_argument', message: /^old_string must be a string/ },
  });
  t.match(await tool.validate({ file_path: 'code.js', old_string: 'a', new_string: 1 }, ctx), {
    ok: false,
    error: { type: 'invalid_argument', message: /^new_string must be a string/ },
  });
  for (const n of [0, -1, 1.5, '2']) {
    t.match(
      await tool.validate({ file_path: 'code.js', old_string: 'a', new_string: 'b', expected_replacements: n }, ctx),
      {
        ok: false,
        error: { type: 'invalid_argument', message: /^expected_replacements must be an integer >= 1/ },
      },
      String(n),
    );
  }
  t.match(await tool.validate({ file_path: 'code.js', old_string: 'same', new_string: 'same' }, ctx), {
    ok: false,
    error: { type: 'edit_no_change', message: /identical/ },
  });
  t.match(await tool.validate({ file_path: '../outside/secret.txt', old_string: 'a', new_string: 'b' }, ctx), {
    ok: false,
    error: { type: 'path_outside_workspace' },
  });
});

t.test('replaces a unique occurrence, literally', async (t) => {
  const { ws, ctx } = setup(t);
  const r = await tool.run({ file_path: 'price.txt', old_string: '10', new_string: '$& $1 $$' }, ctx);
  t.match(r, {
    llmContent: 'Replaced 1 occurrence in price.txt',
    display: {
      type: 'diff',
      change: {
        fileName: 'price.txt',
        filePath: path.join(ws, 'price.txt'),
        oldContent: 'price: 10\n',
        newContent: 'price: $& $1 $$\n',
        formattedDiff: '--- a/price.txt\n+++ b/price.txt\n@@ -1,1 +1,1 @@\n-price: 10\n+price: $& $1 $$\n',
      },
    },
  });
  t.equal(read(ws, 'price.txt'), 'price: $& $1 $$\n');
  await tool.run({ file_path: 'price.txt', old_string: '$& $1', new_string: '(.*)' }, ctx);
  t.equal(read(ws, 'price.txt'), 'price: (.*) $$\n', 'old_string is not a regex');
});

t.test('non-unique match fails with the count and what to do', async (t) => {
  const { ws, ctx } = setup(t);
  t.same(await tool.run({ file_path: 'code.js', old_string: '  return 1;', new_string: '  return 2;' }, ctx), {
    isError: true,
    error: {
      type: 'edit_expected_occurrence_mismatch',
      message:
        'Expected 1 occurrence of old_string in code.js but found 2; add more surrounding context to make old_string unique, ' +
        'or set expected_replacements to 2',
    },
  });
  t.equal(read(ws, 'code.js'), CODE, 'file untouched');
  t.match(await tool.run({ file_path: 'code.js', old_string: 'function', new_string: 'fn', expected_replacements: 3 }, ctx), {
    isError: true,
    error: { type: 'edit_expected_occurrence_mismatch', message: /^Expected 3 occurrences of old_string in code\.js but found 2;/ },
  });
});

t.test('expected_replacements replaces every occurrence', async (t) => {
  const { ws, ctx } = setup(t);
  const r = await tool.run({ file_path: 'code.js', old_string: 'return 1', new_string: 'return 2', expected_replacements: 2 }, ctx);
  t.match(r, { llmContent: 'Replaced 2 occurrences in code.js' });
  t.equal(read(ws, 'code.js'), CODE.replaceAll('return 1', 'return 2'));
});

t.test('missing match tells the model to re-read', async (t) => {
  const { ctx } = setup(t);
  t.same(await tool.run({ file_path: 'code.js', old_string: 'return 1; ', new_string: 'x' }, ctx), {
    isError: true,
    error: {
      type: 'edit_no_occurrence_found',
      message:
        'old_string was not found in code.js; re-read the file with read_file and copy the exact text including whitespace and indentation',
    },
  });
});

t.test('empty old_string creates a missing file (and its directories)', async (t) => {
  const { ws, ctx } = setup(t);
  const r = await tool.run({ file_path: 'new/dir/n.md', old_string: '', new_string: '# N\n' }, ctx);
  t.match(r, {
    llmContent: 'Created new/dir/n.md',
    display: {
      type: 'diff',
      change: { oldContent: undefined, newContent: '# N\n', formattedDiff: /^--- \/dev\/null\n\+\+\+ b\/new\/dir\/n\.md/ },
    },
  });
  t.equal(read(ws, 'new/dir/n.md'), '# N\n');
});

t.test('empty old_string on an existing file fails', async (t) => {
  const { ws, ctx } = setup(t);
  t.same(await tool.run({ file_path: 'code.js', old_string: '', new_string: 'x' }, ctx), {
    isError: true,
    error: {
      type: 'file_exists',
      message: `code.js (relative to the workspace ${ws}) already exists; use a non-empty old_string to edit an existing file`,
    },
  });
});

t.test('missing file with a non-empty old_string', async (t) => {
  const { ws, ctx } = setup(t);
  t.same(await tool.run({ file_path: 'nope.js', old_string: 'a', new_string: 'b' }, ctx), {
    isError: true,
    error: {
      type: 'file_not_found',
      message: `File not found: nope.js (relative to the workspace ${ws}); to create a new file, use an empty old_string`,
    },
  });
});

t.test('identical strings are no change', async (t) => {
  const { ctx } = setup(t);
  t.match(await tool.run({ file_path: 'code.js', old_string: 'a', new_string: 'a' }, ctx), {
    isError: true,
    error: { type: 'edit_no_change' },
  });
});

t.test('binary files, directories and paths under a file are refused', async (t) => {
  const { ctx } = setup(t);
  t.match(await tool.run({ file_path: 'bin.dat', old_string: 'a', new_string: 'c' }, ctx), {
    isError: true,
    error: { type: 'binary_file', message: /bin\.dat .*is a binary file \(contains NUL bytes\); replace only reads text files/ },
  });
  t.match(await tool.run({ file_path: 'src', old_string: 'a', new_string: 'c' }, ctx), {
    isError: true,
    error: { type: 'target_is_directory' },
  });
  t.match(await tool.run({ file_path: 'price.txt/sub.txt', old_string: '', new_string: 'c' }, ctx), {
    isError: true,
    error: { type: 'write_error', message: /a parent of it is a file/ },
  });
});

t.test('escapes are refused and the outside is untouched', async (t) => {
  const { ws, outside, ctx } = setup(t);
  for (const file_path of [
    '../outside/secret.txt',
    path.join(outside, 'secret.txt'),
    'out-link/secret.txt',
    'out-file.txt',
    'out-link/new.txt',
  ]) {
    const old_string = file_path.endsWith('new.txt') ? '' : 'secret';
    t.match(
      await tool.run({ file_path, old_string, new_string: 'pwned' }, ctx),
      { isError: true, error: { type: 'path_outside_workspace' } },
      file_path,
    );
    await t.rejects(tool.propose({ file_path, old_string, new_string: 'pwned' }, ctx), /outside the workspace/);
  }
  t.equal(fs.readFileSync(path.join(outside, 'secret.txt'), 'utf8'), 'secret\n');
  t.notOk(fs.existsSync(path.join(outside, 'new.txt')));
  t.ok(fs.existsSync(ws));
});

t.test('propose returns the edit and writes nothing', async (t) => {
  const { ws, ctx } = setup(t);
  const p = await tool.propose({ file_path: 'price.txt', old_string: '10', new_string: '12' }, ctx);
  t.same(p, {
    type: 'edit',
    change: {
      fileName: 'price.txt',
      filePath: path.join(ws, 'price.txt'),
      oldContent: 'price: 10\n',
      newContent: 'price: 12\n',
      formattedDiff: '--- a/price.txt\n+++ b/price.txt\n@@ -1,1 +1,1 @@\n-price: 10\n+price: 12\n',
      baseHash: contentHash('price: 10\n'),
    },
  });
  t.equal(read(ws, 'price.txt'), 'price: 10\n');
  const created = await tool.propose({ file_path: 'n.txt', old_string: '', new_string: 'n\n' }, ctx);
  t.ok(created.type === 'edit' && !('oldContent' in created.change), 'oldContent absent for a new file');
  t.match(created, { change: { baseHash: 'absent' } }, 'the base of a new file is its absence');
});

t.test('propose throws when the edit cannot apply', async (t) => {
  const { ctx } = setup(t);
  await t.rejects(tool.propose({ file_path: 'code.js', old_string: 'return 1', new_string: 'x' }, ctx), {
    message: /^Expected 1 occurrence of old_string in code\.js but found 2/,
  });
  await t.rejects(tool.propose({ file_path: 'code.js', old_string: 'zzz', new_string: 'x' }, ctx), {
    message: /^old_string was not found/,
  });
  await t.rejects(tool.propose({ file_path: 'nope.js', old_string: 'a', new_string: 'x' }, ctx), { message: /^File not found/ });
});

t.test('withModifiedContent writes exactly the new content', async (t) => {
  const { ws, ctx } = setup(t);
  const args = { file_path: 'price.txt', old_string: '10', new_string: '12' };
  await tool.propose(args, ctx);
  const modified = tool.withModifiedContent(args, 'user text, no newline');
  t.same(modified, { ...args, modified_content: 'user text, no newline' });
  t.notOk('modified_content' in args, 'the original args are not changed');
  const r = await tool.run(modified, ctx);
  t.match(r, {
    llmContent: "Wrote the user's modified content to price.txt",
    display: { type: 'diff', change: { oldContent: 'price: 10\n', newContent: 'user text, no newline' } },
  });
  t.equal(read(ws, 'price.txt'), 'user text, no newline');
  // also for a create, and without a prior proposal (e.g. after a restart)
  const create = tool.withModifiedContent({ file_path: 'c/new.txt', old_string: '', new_string: 'model' }, 'user');
  t.match(await tool.run(create, ctx), { llmContent: "Wrote the user's modified content to c/new.txt" });
  t.equal(read(ws, 'c/new.txt'), 'user');
});

/** The base hash a card showing this proposal carries (ToolContext.expectedBase). */
const baseOf = (p: ToolProposal): string | undefined => (p.type === 'edit' ? p.change.baseHash : undefined);

t.test('a file changed after the proposal: a shown edit writes nothing', async (t) => {
  const { ws, ctx } = setup(t);
  const stale = (where: string) => ({
    isError: true,
    error: {
      type: 'stale_proposal',
      message: `${where} changed after the card was shown; nothing was written — propose the edit again (re-read the file first)`,
    },
  });
  const still = { file_path: 'code.js', old_string: 'function a()', new_string: 'function z()' };
  const shown = baseOf(await tool.propose(still, ctx));
  fs.appendFileSync(path.join(ws, 'code.js'), '// appended\n');
  t.same(await tool.run(still, { ...ctx, expectedBase: shown }), stale('code.js'), 'an edit that still applies is not made either');
  t.equal(read(ws, 'code.js'), CODE + '// appended\n');
  t.match(
    await tool.run(still, ctx),
    { llmContent: 'Replaced 1 occurrence in code.js' },
    'without a card, it applies to the file as it is',
  );

  const gone = { file_path: 'price.txt', old_string: '10', new_string: '12' };
  const goneBase = baseOf(await tool.propose(gone, ctx));
  fs.writeFileSync(path.join(ws, 'price.txt'), 'price: 11\n');
  t.same(await tool.run(gone, { ...ctx, expectedBase: goneBase }), stale('price.txt'));
  t.equal(read(ws, 'price.txt'), 'price: 11\n');

  const create = { file_path: 'late.txt', old_string: '', new_string: 'mine' };
  const createBase = baseOf(await tool.propose(create, ctx));
  t.equal(createBase, 'absent');
  fs.writeFileSync(path.join(ws, 'late.txt'), 'theirs');
  t.same(await tool.run(create, { ...ctx, expectedBase: createBase }), stale('late.txt'));
  t.equal(read(ws, 'late.txt'), 'theirs');

  const edited = { file_path: 'price.txt', old_string: '11', new_string: '12' };
  const editedBase = baseOf(await tool.propose(edited, ctx));
  const modified = tool.withModifiedContent(edited, 'user version\n');
  fs.writeFileSync(path.join(ws, 'price.txt'), 'price: 13\n');
  t.same(
    await tool.run(modified, { ...ctx, expectedBase: editedBase }),
    stale('price.txt'),
    "the user's own content is not written either",
  );
  t.equal(read(ws, 'price.txt'), 'price: 13\n');

  const same = { file_path: 'price.txt', old_string: '13', new_string: '14' };
  const sameBase = baseOf(await tool.propose(same, ctx));
  t.match(
    await tool.run(same, { ...ctx, expectedBase: sameBase }),
    { llmContent: 'Replaced 1 occurrence in price.txt' },
    'unchanged: written',
  );
  t.equal(read(ws, 'price.txt'), 'price: 14\n');
});

t.test('write errors are reported', async (t) => {
  // File modes cannot make the write fail here: root ignores them, and CI runs as root. The
  // write guard (ToolContext.refuseWrite) runs once the file is open for writing, before a byte
  // is written; what it throws takes the same path as an I/O error from the write.
  const { ws, ctx } = setup(t);
  const guarded: string[] = [];
  const refuseWrite = async (real: string) => (guarded.push(real), 'the disk is full (test)');
  t.match(await tool.run({ file_path: 'price.txt', old_string: '10', new_string: '12' }, { ...ctx, refuseWrite }), {
    isError: true,
    error: {
      type: 'write_error',
      message: /^Cannot write price\.txt \(relative to the workspace .*\): refused: the disk is full \(test\)$/,
    },
  });
  t.strictSame(guarded, [path.join(ws, 'price.txt')], 'the write reached the file, open for writing');
  t.equal(read(ws, 'price.txt'), 'price: 10\n', 'nothing was written');
});
