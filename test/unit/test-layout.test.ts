/**
 * Every test file runs exactly once under `npm test`: in one of the shared-process suites, as its
 * own tap file, or in the chaos step (`npm run test:chaos`, after the rest: its server processes
 * would otherwise share the two cores with the suites' timing-sensitive tests).
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { OWN_PROCESS, suiteFiles, TEST_DIR, testFiles } from '../support/suites.js';

t.test('each *.test.ts is in exactly one suite or listed on its own in tap.include', async (t) => {
  const pkg = JSON.parse(readFileSync(path.join(TEST_DIR, '../package.json'), 'utf8')) as {
    tap: { include: string[] };
    scripts: Record<string, string>;
  };
  t.match(pkg.scripts.test, /&& npm run test:chaos$/, 'npm test runs the chaos step last');
  const chaos = pkg.scripts['test:chaos'].split(/\s+/).filter((w) => w.endsWith('.test.ts'));
  const own = [...pkg.tap.include.filter((f) => f.endsWith('.test.ts')), ...chaos].map((f) => f.replace(/^test\//, ''));
  t.ok(pkg.tap.include.includes('test/unit-suite.ts') && pkg.tap.include.includes('test/inprocess-suite.ts'), 'tap runs both suites');
  t.same(
    own.filter((f) => !f.includes('*')),
    own,
    'files run on their own are named one by one (no glob can pick up a suite’s file twice)',
  );
  const runs = [...suiteFiles('unit'), ...suiteFiles('inprocess'), ...own].sort();
  t.same(runs, [...new Set(runs)], 'no file runs twice');
  t.same(
    runs,
    testFiles('.')
      .map((f) => f.replace(/^\.\//, ''))
      .sort(),
    'every test file runs',
  );
  for (const f of OWN_PROCESS) t.ok(own.includes(f), `${f} (starts server processes) is its own tap file`);
});

// A child process that runs the sources through tsx records coverage whose source maps do not line
// up with the test runner's; tap merges it into the run's and every file the child loads shows about
// half its lines "uncovered" (lines fell from 97 % to 83 % once, from one such test). A test that
// starts `src/` or `scripts/` in a child turns its coverage off (test/support/process.ts).
t.test('every test that runs src/ or scripts/ in a child process turns its coverage off', async (t) => {
  const all = testFiles('.').map((f) => f.replace(/^\.\//, ''));
  const spawning = all.filter((f) => {
    const text = readFileSync(path.join(TEST_DIR, f), 'utf8');
    return /process\.execPath/.test(text) && /'(?:src|scripts)\/[^']*\.ts'/.test(text) && /tsx/.test(text);
  });
  t.ok(spawning.length >= 2, `found the tests that start the sources in a child (${spawning.join(', ')})`);
  for (const f of spawning)
    t.match(readFileSync(path.join(TEST_DIR, f), 'utf8'), /_TAPJS_PROCESSINFO_COVERAGE_: '0'/, `${f} turns the child's coverage off`);
});
