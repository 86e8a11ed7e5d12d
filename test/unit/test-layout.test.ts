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
