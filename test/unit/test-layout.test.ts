/** Every test file runs exactly once under `npm test`: in one of the shared-process suites, or as its own tap file. */
import t from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { OWN_PROCESS, suiteFiles, TEST_DIR, testFiles } from '../support/suites.js';

t.test('each *.test.ts is in exactly one suite or listed on its own in tap.include', async (t) => {
  const pkg = JSON.parse(readFileSync(path.join(TEST_DIR, '../package.json'), 'utf8')) as { tap: { include: string[] } };
  const own = pkg.tap.include.filter((f) => f.endsWith('.test.ts')).map((f) => f.replace(/^test\//, ''));
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
