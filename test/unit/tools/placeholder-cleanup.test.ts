/**
 * Placeholder cleanup never removes anything outside the workspace: when a directory on the way
 * to a placeholder has been swapped for a link (by a command running meanwhile), the empty file
 * or directory the link leads to stays.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { PlaceholderRegistry, scanToolConfig, WALK_LIMITS } from '../../../src/tools/shell/tool-config.js';

t.test('a placeholder behind a swapped link is not removed', async (t) => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'placeholder-')));
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }));
  const ws = path.join(root, 'ws');
  const outside = path.join(root, 'outside');
  fs.mkdirSync(path.join(ws, 'vendor/cache/hooks'), { recursive: true });
  fs.mkdirSync(path.join(outside, 'hooks'), { recursive: true });
  fs.writeFileSync(path.join(outside, '.npmrc'), '');
  const registry = new PlaceholderRegistry();
  const release = registry.acquire(ws);
  registry.record(ws, [path.join(ws, 'vendor/cache/hooks'), path.join(ws, 'vendor/cache/.npmrc')]);
  fs.rmSync(path.join(ws, 'vendor/cache'), { recursive: true });
  fs.symlinkSync(outside, path.join(ws, 'vendor/cache'));
  release();
  t.ok(fs.existsSync(path.join(outside, 'hooks')), 'the empty directory outside stays');
  t.ok(fs.existsSync(path.join(outside, '.npmrc')), 'the empty file outside stays');
});

t.test('placeholders in place are removed', async (t) => {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'placeholder-')));
  t.teardown(() => fs.rmSync(ws, { recursive: true, force: true }));
  fs.mkdirSync(path.join(ws, '.git/hooks'), { recursive: true });
  fs.writeFileSync(path.join(ws, '.npmrc'), '');
  fs.writeFileSync(path.join(ws, '.git/commondir'), '.\n');
  fs.writeFileSync(path.join(ws, 'kept'), 'x');
  const registry = new PlaceholderRegistry();
  const release = registry.acquire(ws);
  registry.record(
    ws,
    ['.git/hooks', '.npmrc', '.git/commondir', 'kept'].map((p) => path.join(ws, p)),
  );
  release();
  t.same(fs.readdirSync(path.join(ws, '.git')), []);
  t.same(fs.readdirSync(ws).sort(), ['.git', 'kept']);
});

t.test("the workspace root's tool configuration is found however many entries the root holds", async (t) => {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'placeholder-')));
  t.teardown(() => fs.rmSync(ws, { recursive: true, force: true }));
  for (const d of ['.git/objects', '.git/refs', '.git/hooks']) fs.mkdirSync(path.join(ws, d), { recursive: true });
  fs.writeFileSync(path.join(ws, '.git/HEAD'), 'ref: refs/heads/main\n');
  fs.writeFileSync(path.join(ws, '.git/config'), '');
  fs.writeFileSync(path.join(ws, '.npmrc'), '');
  for (let i = 0; i < WALK_LIMITS.maxEntries + 500; i++) fs.writeFileSync(path.join(ws, `f${i}`), '');
  const scan = await scanToolConfig(ws);
  const existing = scan.existing.map((e) => path.relative(ws, e.path)).sort();
  t.same(existing, ['.git/config', '.git/hooks', '.npmrc']);
  t.ok(scan.truncated, 'the listing was cut short');
});
