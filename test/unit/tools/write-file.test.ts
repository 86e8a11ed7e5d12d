import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { readMemory } from '../../../src/agent/runtime/memory.js';
import { WriteFileTool } from '../../../src/tools/file/write-file.js';
import { contentHash } from '../../../src/tools/tool.js';
import type { ToolContext } from '../../../src/tools/tool.js';

type Fixtures = Pick<typeof t, 'testdir' | 'fixture'>;

function setup(t: Fixtures): { ws: string; outside: string; ctx: ToolContext } {
  const root = fs.realpathSync(
    t.testdir({
      ws: {
        'NOTES.md': 'one\ntwo\n',
        src: { 'a.ts': 'a\n' },
        'out-link': t.fixture('symlink', '../outside'),
      },
      outside: { 'secret.txt': 'secret\n' },
    }),
  );
  const ws = path.join(root, 'ws');
  return { ws, outside: path.join(root, 'outside'), ctx: { workspace: ws, signal: new AbortController().signal } };
}

const tool = new WriteFileTool();

t.test('shape', async (t) => {
  t.equal(tool.name, 'write_file');
  t.equal(tool.kind, 'edit');
  t.same(tool.parameters.required, ['file_path', 'content']);
  t.equal(tool.describe({ file_path: 'a.txt', content: '' }), 'Write a.txt');
});

t.test('validate', async (t) => {
  const { ws } = setup(t);
  const ctx = { workspace: ws };
  t.same(await tool.validate({ file_path: 'x.txt', content: '', extra: true }, ctx), {
    ok: true,
    args: { file_path: 'x.txt', content: '' },
  });
  t.match(await tool.validate({ content: 'x' }, ctx), { ok: false, error: { type: 'invalid_argument', message: /file_path/ } });
  t.match(await tool.validate({ file_path: 'x.txt' }, ctx), { ok: false, error: { type: 'invalid_argument', message: /content/ } });
  t.match(await tool.validate({ file_path: 'x.txt', content: 5 }, ctx), {
    ok: false,
    error: { type: 'invalid_argument', message: /content/ },
  });
  t.match(await tool.validate({ file_path: 'src', content: 'x' }, ctx), { ok: false, error: { type: 'target_is_directory' } });
  t.match(await tool.validate({ file_path: '../evil.txt', content: 'x' }, ctx), {
    ok: false,
    error: { type: 'path_outside_workspace', message: `file_path "../evil.txt" is outside the workspace ${ws}` },
  });
});

t.test('propose a new file: diff from /dev/null', async (t) => {
  const { ws, ctx } = setup(t);
  const p = await tool.propose({ file_path: 'docs/new.md', content: 'a\nb\n' }, ctx);
  t.same(p, {
    type: 'edit',
    change: {
      fileName: 'new.md',
      filePath: path.join(ws, 'docs/new.md'),
      newContent: 'a\nb\n',
      formattedDiff: '--- /dev/null\n+++ b/docs/new.md\n@@ -0,0 +1,2 @@\n+a\n+b\n',
      baseHash: 'absent',
    },
  });
  t.ok(p.type === 'edit' && !('oldContent' in p.change), 'oldContent absent for a new file');
  t.notOk(fs.existsSync(path.join(ws, 'docs')), 'propose writes nothing');
});

t.test('propose a modification: a/ b/ headers relative to the workspace', async (t) => {
  const { ws, ctx } = setup(t);
  const p = await tool.propose({ file_path: path.join(ws, 'NOTES.md'), content: 'one\nthree\n' }, ctx);
  t.same(p, {
    type: 'edit',
    change: {
      fileName: 'NOTES.md',
      filePath: path.join(ws, 'NOTES.md'),
      oldContent: 'one\ntwo\n',
      newContent: 'one\nthree\n',
      formattedDiff: '--- a/NOTES.md\n+++ b/NOTES.md\n@@ -1,2 +1,2 @@\n one\n-two\n+three\n',
      baseHash: contentHash('one\ntwo\n'),
    },
  });
});

t.test('a shown write writes only over the content its diff was computed from', async (t) => {
  const { ws, ctx } = setup(t);
  const args = { file_path: 'NOTES.md', content: 'mine\n' };
  const p = await tool.propose(args, ctx);
  const expectedBase = p.type === 'edit' ? p.change.baseHash : undefined;
  fs.writeFileSync(path.join(ws, 'NOTES.md'), 'theirs\n');
  t.same(await tool.run(args, { ...ctx, expectedBase }), {
    isError: true,
    error: {
      type: 'stale_proposal',
      message: 'NOTES.md changed after the card was shown; nothing was written — propose the edit again (re-read the file first)',
    },
  });
  t.equal(fs.readFileSync(path.join(ws, 'NOTES.md'), 'utf8'), 'theirs\n', 'nothing written');
  const created = await tool.propose({ file_path: 'fresh.md', content: 'x\n' }, ctx);
  fs.writeFileSync(path.join(ws, 'fresh.md'), 'planted\n');
  t.match(
    await tool.run(
      { file_path: 'fresh.md', content: 'x\n' },
      { ...ctx, expectedBase: created.type === 'edit' ? created.change.baseHash : '' },
    ),
    {
      isError: true,
      error: { type: 'stale_proposal' },
    },
    'a file that appeared after a "create" card is not overwritten',
  );
  t.equal(fs.readFileSync(path.join(ws, 'fresh.md'), 'utf8'), 'planted\n');
  const again = await tool.propose(args, ctx);
  t.match(await tool.run(args, { ...ctx, expectedBase: again.type === 'edit' ? again.change.baseHash : '' }), {
    llmContent: /Wrote 1 line/,
  });
  t.equal(fs.readFileSync(path.join(ws, 'NOTES.md'), 'utf8'), 'mine\n', 'unchanged since the card: written');
});

t.test('propose for a path outside is a generic description, not a throw', async (t) => {
  const { ctx } = setup(t);
  t.match(await tool.propose({ file_path: 'out-link/x.txt', content: 'x' }, ctx), {
    type: 'generic',
    description: /outside the workspace/,
  });
});

t.test('withModifiedContent replaces content only', async (t) => {
  const args = { file_path: 'a.txt', content: 'old' };
  t.same(tool.withModifiedContent(args, 'new'), { file_path: 'a.txt', content: 'new' });
  t.equal(args.content, 'old');
});

t.test('run creates a file and its parent directories', async (t) => {
  const { ws, ctx } = setup(t);
  const r = await tool.run({ file_path: 'deep/er/NEW.md', content: 'a\nb\nc\n' }, ctx);
  t.match(r, {
    llmContent: 'Wrote 3 lines to deep/er/NEW.md (created)',
    display: {
      type: 'diff',
      change: { fileName: 'NEW.md', filePath: path.join(ws, 'deep/er/NEW.md'), oldContent: undefined, formattedDiff: /^--- \/dev\/null/ },
    },
  });
  t.equal(fs.readFileSync(path.join(ws, 'deep/er/NEW.md'), 'utf8'), 'a\nb\nc\n');
});

t.test('run overwrites an existing file', async (t) => {
  const { ws, ctx } = setup(t);
  const r = await tool.run({ file_path: 'NOTES.md', content: 'only' }, ctx);
  t.match(r, {
    llmContent: 'Wrote 1 line to NOTES.md (overwritten)',
    display: { type: 'diff', change: { oldContent: 'one\ntwo\n', newContent: 'only', formattedDiff: /-two/ } },
  });
  t.equal(fs.readFileSync(path.join(ws, 'NOTES.md'), 'utf8'), 'only');
  t.match(await tool.run({ file_path: 'empty.txt', content: '' }, ctx), { llmContent: 'Wrote 0 lines to empty.txt (created)' });
});

t.test('run writes the modified content', async (t) => {
  const { ws, ctx } = setup(t);
  const args = tool.withModifiedContent({ file_path: 'NOTES.md', content: 'model' }, 'user edit\n');
  t.notOk((await tool.run(args, ctx)).isError);
  t.equal(fs.readFileSync(path.join(ws, 'NOTES.md'), 'utf8'), 'user edit\n');
});

t.test('run refuses escapes and leaves the outside untouched', async (t) => {
  const { ws, outside, ctx } = setup(t);
  t.match(await tool.run({ file_path: '../outside/secret.txt', content: 'pwned' }, ctx), {
    isError: true,
    error: { type: 'path_outside_workspace' },
  });
  t.match(await tool.run({ file_path: path.join(outside, 'secret.txt'), content: 'pwned' }, ctx), {
    isError: true,
    error: { type: 'path_outside_workspace' },
  });
  t.match(await tool.run({ file_path: 'out-link/secret.txt', content: 'pwned' }, ctx), {
    isError: true,
    error: { type: 'path_outside_workspace' },
  });
  fs.symlinkSync(path.join(outside, 'planted.txt'), path.join(ws, 'dangling'));
  t.match(await tool.run({ file_path: 'dangling', content: 'pwned' }, ctx), {
    isError: true,
    error: { type: 'path_outside_workspace' },
  });
  t.equal(fs.readFileSync(path.join(outside, 'secret.txt'), 'utf8'), 'secret\n');
  t.notOk(fs.existsSync(path.join(outside, 'planted.txt')));
});

t.test('run refuses a directory and a path under a file', async (t) => {
  const { ctx } = setup(t);
  t.match(await tool.run({ file_path: 'src', content: 'x' }, ctx), { isError: true, error: { type: 'target_is_directory' } });
  t.match(await tool.run({ file_path: 'NOTES.md/x.txt', content: 'x' }, ctx), {
    isError: true,
    error: { type: 'write_error', message: /not a directory/ },
  });
});

t.test(
  'a FIFO at the target is refused at once, on the proposal and on the run (no thread waits for a reader)',
  { timeout: 10_000 },
  async (t) => {
    const { ws, ctx } = setup(t);
    const fifo = path.join(ws, 'pipe.txt');
    t.equal(spawnSync('mkfifo', [fifo]).status, 0);
    t.match(await tool.propose({ file_path: 'pipe.txt', content: 'x' }, ctx), { type: 'generic', description: /named pipe/ });
    const result = await tool.run({ file_path: 'pipe.txt', content: 'x' }, ctx);
    t.match(result, { isError: true, error: { type: 'write_error', message: /named pipe/ } });
    t.ok(fs.lstatSync(fifo).isFIFO(), 'the FIFO is left as it was');
  },
);

t.test('memory: a FIFO named GEMINI.md is no context file (read without blocking)', { timeout: 10_000 }, async (t) => {
  const { ws } = setup(t);
  t.equal(spawnSync('mkfifo', [path.join(ws, 'GEMINI.md')]).status, 0);
  t.equal(await readMemory(ws), undefined);
});
