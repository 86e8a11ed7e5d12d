/**
 * list_directory reads at most MAX_LISTED entries (it runs unasked; a directory of 100,000 files
 * held the event loop for 1.8 s) and says that it stopped.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { ListDirectoryTool, MAX_LISTED } from '../../../src/tools/file/list-directory.js';

const workspace = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'list-bounds-')));
t.teardown(() => rmSync(workspace, { recursive: true, force: true }));

t.test('a directory with more entries than the bound lists the bound and says so', async (t) => {
  mkdirSync(path.join(workspace, 'many'));
  for (let i = 0; i < MAX_LISTED + 50; i++) writeFileSync(path.join(workspace, 'many', `f${i}`), '');
  const tool = new ListDirectoryTool();
  const res: any = await tool.run({ dir_path: 'many' }, { workspace } as any);
  const lines = String(res.llmContent).split('\n');
  t.equal(lines.filter((l) => /^f\d+$/.test(l)).length, MAX_LISTED, 'the first entries read');
  t.match(res.llmContent, /only the first \d+ entries read are shown/);
});

t.test('a small directory is listed whole', async (t) => {
  mkdirSync(path.join(workspace, 'few'));
  writeFileSync(path.join(workspace, 'few', 'b'), '');
  mkdirSync(path.join(workspace, 'few', 'a'));
  const res: any = await new ListDirectoryTool().run({ dir_path: 'few' }, { workspace } as any);
  t.equal(res.llmContent, 'Directory listing for few:\na/\nb');
});
