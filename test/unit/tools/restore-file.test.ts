/**
 * restore_file: the arguments a restore may carry (relative paths only, never `..` or a `.git`
 * folder, base64 content), the card (a diff from the file as it is to the checkpoint's bytes),
 * and the guarded write or removal (bytes exactly, never through a link, never outside the
 * workspace or onto the server's files, only over the content the card was computed from).
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { RestoreFileTool } from '../../../src/tools/file/restore-file.js';
import { contentHash } from '../../../src/tools/tool.js';
import type { ToolContext } from '../../../src/tools/tool.js';
import { ProtectedPaths } from '../../../src/tools/workspace.js';

type Fixtures = Pick<typeof t, 'testdir' | 'fixture'>;

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');

function setup(t: Fixtures): { ws: string; outside: string; ctx: ToolContext } {
  const root = fs.realpathSync(
    t.testdir({
      ws: {
        'a.txt': 'now\n',
        src: { 'b.txt': 'b\n' },
        'out-link': t.fixture('symlink', '../outside'),
        'file-link': t.fixture('symlink', '../outside/secret.txt'),
        '.git': { config: '[core]\n' },
        data: { 'db.bin': 'server' },
      },
      outside: { 'secret.txt': 'secret\n' },
    }),
  );
  const ws = path.join(root, 'ws');
  return { ws, outside: path.join(root, 'outside'), ctx: { workspace: ws, signal: new AbortController().signal } };
}

const tool = new RestoreFileTool();

t.test('validate: relative paths inside the workspace, no "..", no .git, base64 content', async (t) => {
  const { ws } = setup(t);
  const ctx = { workspace: ws };
  t.same(await tool.validate({ file_path: 'a.txt', content: b64('x'), checkpoint: 'cp', extra: 1 }, ctx), {
    ok: true,
    args: { file_path: 'a.txt', checkpoint: 'cp', content: b64('x') },
  });
  t.same(await tool.validate({ file_path: 'gone.txt', checkpoint: 'cp' }, ctx), {
    ok: true,
    args: { file_path: 'gone.txt', checkpoint: 'cp' },
  });
  const refusals: Array<[Record<string, unknown>, string]> = [
    [{ file_path: '/etc/passwd', checkpoint: 'cp' }, 'invalid_argument'],
    [{ file_path: '../outside/secret.txt', checkpoint: 'cp' }, 'invalid_argument'],
    [{ file_path: 'src/../../x', checkpoint: 'cp' }, 'invalid_argument'],
    [{ file_path: '.git/config', checkpoint: 'cp', content: b64('x') }, 'path_protected'],
    [{ file_path: 'src/.GIT/hooks/pre-commit', checkpoint: 'cp' }, 'path_protected'],
    [{ file_path: 'out-link/secret.txt', checkpoint: 'cp', content: b64('x') }, 'path_outside_workspace'],
    [{ file_path: 'a.txt', checkpoint: 'cp', content: 'not base64!' }, 'invalid_argument'],
    [{ file_path: 'a.txt', content: b64('x') }, 'invalid_argument'],
  ];
  for (const [args, type] of refusals) t.match(await tool.validate(args, ctx), { ok: false, error: { type } }, JSON.stringify(args));
  const guarded = new RestoreFileTool({ protectedPaths: new ProtectedPaths([path.join(ws, 'data')]) });
  t.match(await guarded.validate({ file_path: 'data/db.bin', checkpoint: 'cp', content: b64('x') }, ctx), {
    ok: false,
    error: { type: 'path_protected' },
  });
});

t.test('the card: a diff from the file as it is to the checkpoint, or its removal', async (t) => {
  const { ws } = setup(t);
  const back = await tool.propose({ file_path: 'a.txt', content: b64('before\n'), checkpoint: 'cp' }, { workspace: ws });
  t.match(back, {
    type: 'edit',
    change: { fileName: 'a.txt', filePath: path.join(ws, 'a.txt'), oldContent: 'now\n', newContent: 'before\n' },
  });
  t.match(back.type === 'edit' ? back.change.formattedDiff : '', /-now\n\+before/);
  t.equal(back.type === 'edit' ? back.change.baseHash : '', contentHash('now\n'));
  const removal = await tool.propose({ file_path: 'src/b.txt', checkpoint: 'cp' }, { workspace: ws });
  t.match(removal, { type: 'edit', change: { oldContent: 'b\n', newContent: '' } });
  t.equal(tool.describe({ file_path: 'src/b.txt', checkpoint: 'cp' }), 'Remove src/b.txt (it did not exist at checkpoint cp)');
  t.equal(tool.describe({ file_path: 'a.txt', content: '', checkpoint: 'cp' }), 'Restore a.txt from checkpoint cp');
  await t.rejects(
    tool.propose({ file_path: 'file-link', checkpoint: 'cp', content: b64('x') }, { workspace: ws }),
    'a link to outside fails',
  );
});

t.test('run: the bytes exactly, a new parent folder, a removal; never through a link', async (t) => {
  const { ws, outside, ctx } = setup(t);
  const bytes = Buffer.from([0, 1, 2, 255, 10]);
  t.match(await tool.run({ file_path: 'a.txt', content: b64(bytes), checkpoint: 'cp' }, ctx), {
    llmContent: /a\.txt restored from checkpoint cp/,
  });
  t.same(fs.readFileSync(path.join(ws, 'a.txt')), bytes, 'binary content back, byte for byte');
  await tool.run({ file_path: 'deep/new/c.txt', content: b64('c'), checkpoint: 'cp' }, ctx);
  t.equal(fs.readFileSync(path.join(ws, 'deep/new/c.txt'), 'utf8'), 'c');
  t.match(await tool.run({ file_path: 'src/b.txt', checkpoint: 'cp' }, ctx), { llmContent: /removed/ });
  t.notOk(fs.existsSync(path.join(ws, 'src/b.txt')), 'a file the call created is removed');
  t.ok(fs.existsSync(path.join(ws, 'src')), 'its folder stays');
  t.match(await tool.run({ file_path: 'src/b.txt', checkpoint: 'cp' }, ctx), { llmContent: /removed/ }, 'removing what is gone: done');
  const viaLink = await tool.run({ file_path: 'file-link', checkpoint: 'cp' }, ctx);
  t.match(viaLink, { isError: true });
  t.equal(fs.readFileSync(path.join(outside, 'secret.txt'), 'utf8'), 'secret\n', 'the target of a link is never touched');
  t.ok(fs.lstatSync(path.join(ws, 'file-link')).isSymbolicLink(), 'nor the link');
});

t.test('run: only over the content the card showed; the caller refuses where it lands', async (t) => {
  const { ws, ctx } = setup(t);
  const stale = await tool.run({ file_path: 'a.txt', content: b64('x'), checkpoint: 'cp' }, { ...ctx, expectedBase: contentHash('other') });
  t.match(stale, { isError: true, error: { type: 'stale_proposal' } });
  t.equal(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8'), 'now\n');
  const refused = await tool.run({ file_path: 'src/b.txt', checkpoint: 'cp' }, { ...ctx, refuseWrite: async () => 'not this one' });
  t.match(refused, { isError: true, error: { type: 'write_error', message: /refused: not this one/ } });
  t.ok(fs.existsSync(path.join(ws, 'src/b.txt')), 'a refused removal removes nothing');
});

t.test('bytes that are not UTF-8: the card never shows a lossy decoding, and a change to them after the card is stale', async (t) => {
  const { ws, ctx } = setup(t);
  // Invalid UTF-8 decodes to U+FFFD: shown as text, two different files would look (and hash) alike.
  fs.writeFileSync(path.join(ws, 'a.txt'), Buffer.from([0x68, 0x69, 0xff, 0x0a]));
  const planted = Buffer.from([0x68, 0x69, 0xc0, 0xaf, 0x0a]);
  const card = await tool.propose({ file_path: 'a.txt', content: b64(planted), checkpoint: 'cp' }, { workspace: ws });
  const change = card.type === 'edit' ? card.change : undefined;
  t.notMatch(change?.newContent ?? '', /\uFFFD/, 'the new content is not shown as a lossy decoding');
  t.notMatch(change?.oldContent ?? '', /\uFFFD/, 'nor the old');
  t.match(change?.newContent, /binary: 5 bytes, sha256:[0-9a-f]{64}/, 'what is written is named exactly: its size and hash');
  // The file changes after the card to other bytes that decode the same: the card no longer shows it.
  fs.writeFileSync(path.join(ws, 'a.txt'), Buffer.from([0x68, 0x69, 0xfe, 0x0a]));
  const run = await tool.run({ file_path: 'a.txt', content: b64(planted), checkpoint: 'cp' }, { ...ctx, expectedBase: change?.baseHash });
  t.match(run, { isError: true, error: { type: 'stale_proposal' } });
  t.same(fs.readFileSync(path.join(ws, 'a.txt')), Buffer.from([0x68, 0x69, 0xfe, 0x0a]), 'nothing written');
});

t.test('a removal is shown as one (the new side /dev/null), not as emptying the file, even when the file is empty', async (t) => {
  const { ws } = setup(t);
  const diffOf = async (args: { file_path: string; content?: string; checkpoint: string }) => {
    const p = await tool.propose(args, { workspace: ws });
    return p.type === 'edit' ? p.change.formattedDiff : '';
  };
  t.match(await diffOf({ file_path: 'src/b.txt', checkpoint: 'cp' }), /^--- a\/src\/b\.txt\n\+\+\+ \/dev\/null\n[^]*-b\n/);
  t.match(
    await diffOf({ file_path: 'src/b.txt', content: '', checkpoint: 'cp' }),
    /^--- a\/src\/b\.txt\n\+\+\+ b\/src\/b\.txt\n/,
    'emptying is not',
  );
  fs.writeFileSync(path.join(ws, 'empty.txt'), '');
  t.match(
    await diffOf({ file_path: 'empty.txt', checkpoint: 'cp' }),
    /^--- a\/empty\.txt\n\+\+\+ \/dev\/null\n/,
    'an empty file removed: not "no change"',
  );
});

t.test('a folder swapped for a link after the card: never written through (into .git, or elsewhere than the card showed)', async (t) => {
  const { ws, ctx } = setup(t);
  fs.mkdirSync(path.join(ws, '.git/hooks'));
  const card = await tool.propose({ file_path: 'src/b.txt', content: b64('#!/bin/sh\nevil\n'), checkpoint: 'cp' }, { workspace: ws });
  const shownPath = card.type === 'edit' ? card.change.filePath : '';
  fs.rmSync(path.join(ws, 'src'), { recursive: true });
  fs.symlinkSync('.git/hooks', path.join(ws, 'src'));
  // As a mode that needs no card runs it (no refusal of the caller's): the .git rule alone holds.
  const yolo = await tool.run({ file_path: 'src/b.txt', content: b64('#!/bin/sh\nevil\n'), checkpoint: 'cp' }, ctx);
  t.match(yolo, { isError: true, error: { type: 'path_protected' } });
  fs.unlinkSync(path.join(ws, 'src'));
  fs.mkdirSync(path.join(ws, 'other'));
  fs.symlinkSync('other', path.join(ws, 'src'));
  // As an approved card runs it (call-lifecycle's writeGuard: only the path its card showed).
  const refuseWrite = async (real: string) => (real === shownPath ? undefined : `not ${shownPath}`);
  const approved = await tool.run({ file_path: 'src/b.txt', content: b64('x'), checkpoint: 'cp' }, { ...ctx, refuseWrite });
  t.match(approved, { isError: true, error: { type: 'write_error', message: /refused/ } });
  t.notOk(fs.existsSync(path.join(ws, '.git/hooks/b.txt')), 'no hook planted');
  t.notOk(fs.existsSync(path.join(ws, 'other/b.txt')), 'nothing written where the card did not show');
});
