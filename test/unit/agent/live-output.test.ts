/** Live output: the live_content window and the coalescing of a call's updates (live-output.ts). */
import t from 'tap';
import { LiveOutputFeed, liveInterval, outputWindow, WINDOW_HEAD } from '../../../src/agent/runtime/live-output.js';

t.test('the window: short output whole; long output its tail, from a line start, marked', async (t) => {
  t.equal(outputWindow('a\nb\n', 100), 'a\nb\n');
  const lines = Array.from({ length: 1000 }, (_, i) => `line ${i}`).join('\n') + '\n';
  const w = outputWindow(lines, 200);
  t.ok(w.length <= 200, `at most the window (${w.length})`);
  t.ok(w.startsWith(WINDOW_HEAD), 'says that earlier output is not shown');
  const body = w.slice(WINDOW_HEAD.length);
  t.match(body, /^line \d+\n/, 'starts at a whole line');
  t.ok(lines.endsWith(body), 'the tail of the output');
  const long = 'x'.repeat(5000);
  t.equal(outputWindow(long, 300).length, 300, 'one long line: cut mid-line, still at most the window');
  const emoji = '😀'.repeat(500);
  const cut = outputWindow(emoji, 301).slice(WINDOW_HEAD.length);
  t.notOk(/^[\udc00-\udfff]/.test(cut), 'never starts inside a surrogate pair');
});

t.test('the interval doubles every 16 updates, up to the max', async (t) => {
  const opts = { windowBytes: 1024, intervalMs: 100, maxIntervalMs: 1000 };
  t.same(
    [0, 15, 16, 32, 48, 64, 1000].map((n) => liveInterval(n, opts)),
    [100, 100, 200, 400, 800, 1000, 1000],
  );
});

t.test('the feed: the first text at once, then the latest per interval; close drops what waits', async (t) => {
  const shown: string[] = [];
  let next: (() => void) | undefined;
  const feed = new LiveOutputFeed(
    (w) => {
      shown.push(w);
      next?.();
    },
    { windowBytes: 8, intervalMs: 20, maxIntervalMs: 20 },
  );
  feed.push('a');
  t.same(shown, ['a'], 'published at once');
  const published = new Promise<void>((resolve) => (next = resolve));
  feed.push('ab');
  feed.push('abc');
  feed.push('abcd');
  t.same(shown, ['a'], 'within the interval: held');
  await published;
  t.same(shown, ['a', 'abcd'], 'one update, with the latest text');
  feed.push('abcd');
  const later = 'abcd' + 'e'.repeat(100);
  feed.push(later);
  feed.close();
  feed.push('more');
  t.same(shown, ['a', 'abcd'], 'closed: nothing more');
  t.equal(outputWindow(later, 8).length <= 8 + WINDOW_HEAD.length, true);
});
