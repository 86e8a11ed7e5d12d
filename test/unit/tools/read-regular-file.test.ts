/**
 * readRegularFile (workspace.ts), the one way tools read a file's content (issue 19, finding 6):
 * only a regular file is opened, never on the event loop, without following a final link, and
 * never past the size cap. Each case has its own short limit: the old blocking reads hang.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { readRegularFile } from '../../../src/tools/workspace.js';

const LIMIT_MS = 5_000;

/** `p` settles within LIMIT_MS, or the test fails instead of hanging. */
async function promptly<T>(p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not settled within ${LIMIT_MS} ms`)), LIMIT_MS);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

t.test('a regular file is read; the cap is exact', async (t) => {
  const dir = t.testdir({ 'a.txt': 'hello', 'big.txt': 'x'.repeat(101), 'empty.txt': '', 'mid.txt': 'y'.repeat(70_000) });
  t.match(await promptly(readRegularFile(path.join(dir, 'a.txt'), 5)), { ok: true, bytes: Buffer.from('hello') });
  t.same(await promptly(readRegularFile(path.join(dir, 'empty.txt'), 5)), { ok: true, bytes: Buffer.alloc(0) });
  const mid = await promptly(readRegularFile(path.join(dir, 'mid.txt'), 100_000));
  t.equal(mid.ok && mid.bytes.toString(), 'y'.repeat(70_000));
  t.match(await promptly(readRegularFile(path.join(dir, 'big.txt'), 100)), {
    ok: false,
    reason: 'too_large',
    size: 101,
    message: 'is 101 bytes, over the 100-byte limit',
  });
  t.same(await promptly(readRegularFile(path.join(dir, 'big.txt'), 100, { truncate: true })), {
    ok: true,
    bytes: Buffer.from('x'.repeat(100)),
    truncated: true,
  });
  t.match(await promptly(readRegularFile(path.join(dir, 'nope'), 100)), { ok: false, reason: 'missing' });
  t.match(await promptly(readRegularFile(dir, 100)), { ok: false, reason: 'directory' });
});

t.test('a named pipe is refused at once, without a writer', async (t) => {
  const dir = t.testdir({});
  const fifo = path.join(dir, 'pipe');
  t.equal(spawnSync('mkfifo', [fifo]).status, 0);
  t.teardown(() => {
    try {
      fs.closeSync(fs.openSync(fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK));
    } catch {
      // no reader stuck in open(): nothing to release
    }
  });
  t.match(await promptly(readRegularFile(fifo, 100)), {
    ok: false,
    reason: 'not_regular',
    message: 'is a named pipe (FIFO), not a regular file',
  });
});

t.test('a device is refused; a final symlink is not followed', async (t) => {
  t.match(await promptly(readRegularFile('/dev/zero', 100)), { ok: false, reason: 'not_regular', message: /character device/ });
  const dir = t.testdir({ 'a.txt': 'a', zero: t.fixture('symlink', '/dev/zero'), link: t.fixture('symlink', 'a.txt') });
  t.match(await promptly(readRegularFile(path.join(dir, 'zero'), 100)), { ok: false, reason: 'not_regular', message: /symbolic link/ });
  t.match(await promptly(readRegularFile(path.join(dir, 'link'), 100)), { ok: false, reason: 'not_regular' }, 'callers pass real paths');
});
