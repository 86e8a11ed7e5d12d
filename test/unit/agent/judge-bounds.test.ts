/**
 * What judging a shell line may cost is bounded (shell-rules.ts JUDGE_LIMITS): a line past a
 * bound is simply not coverable, so it asks. Before, one 1.6 KiB line (`cd a` ×4, then a word
 * `x=a/x=a/…`) took 28 s to judge, and a 4000-folder `write_file` path 12 s.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { JUDGE_LIMITS, judgeLine } from '../../../src/agent/policy/shell-rules.js';
import { MAX_JUDGED_DEPTH, writesToolConfig } from '../../../src/agent/policy/tool-config.js';

/** Far above the bounded cost (milliseconds), far below the old one (seconds). */
const GENEROUS_MS = 1_500;

const workspace = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'judge-bounds-')));
mkdirSync(path.join(workspace, 'a', 'a', 'a'), { recursive: true });
t.teardown(() => rmSync(workspace, { recursive: true, force: true }));

async function timed<T>(f: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const start = performance.now();
  const value = await f();
  return { value, ms: performance.now() - start };
}

t.test('hostile lines are not coverable, and judging each takes milliseconds', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['cd a && cd a && cd a && cd a && ls ' + 'x=a/'.repeat(400), /too deep to judge/],
    ['ls x' + '=a/'.repeat(676), /too deep to judge/],
    ['ls ' + 'a='.repeat(1016), /too many paths to check/],
    ['ls -' + 'a'.repeat(2040), /too many paths to check/],
    ['ls ' + 'a '.repeat(2000), new RegExp(`longer than ${JUDGE_LIMITS.maxLine} characters`)],
  ];
  for (const [line, reason] of cases) {
    const { value, ms } = await timed(() => judgeLine(line, { workspace }));
    t.match(value, { coverable: false, reason }, line.slice(0, 40));
    t.ok(ms < GENEROUS_MS, `judged in ${ms.toFixed(0)} ms`);
  }
});

t.test('ordinary lines stay coverable', async (t) => {
  t.match(await judgeLine('cd a && ls -la a/a ' + 'a '.repeat(100), { workspace }), { coverable: true });
  t.match(await judgeLine('ls ' + 'a/'.repeat(MAX_JUDGED_DEPTH - 2) + 'x', { workspace }), { coverable: true });
});

t.test('a write to a path too deep to judge asks (counts as tool configuration), at once', async (t) => {
  const { value, ms } = await timed(() => writesToolConfig(workspace, 'a/'.repeat(4000) + 'x'));
  t.equal(value, true);
  t.ok(ms < GENEROUS_MS, `judged in ${ms.toFixed(0)} ms`);
  t.equal(await writesToolConfig(workspace, 'a/a/a/notes.md'), false, 'an ordinary path does not');
});
