/**
 * `npm run fuzz -- --minutes N [--seed S] [--runs R]`: the fuzzer's long form (docs/operations.md
 * "Fuzzing"). Rounds of the three properties of test/fuzz/properties.ts against one in-process
 * server with authentication on, each round with the next seed, until the time is up; after each
 * round every paused task left is answered (no task may stay wedged). Prints the first seed, the
 * cases run and every failure (its seed, path and request, to replay as a regression test);
 * exits 1 when anything failed.
 */
import { randomInt } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startHarness } from '../test/fuzz/harness.js';
import { runProperties } from '../test/fuzz/properties.js';
import type { PropertyResult } from '../test/fuzz/properties.js';
import { sweepWedged } from '../test/fuzz/sweep.js';

const { values } = parseArgs({
  options: { minutes: { type: 'string', default: '1' }, seed: { type: 'string' }, runs: { type: 'string', default: '300' } },
});
const minutes = Number(values.minutes);
const runs = Number(values.runs);
if (!(minutes > 0) || !(runs > 0)) throw new Error('usage: npm run fuzz -- --minutes N [--seed S] [--runs R]');
const firstSeed = values.seed === undefined ? randomInt(2 ** 31) : Number(values.seed);
console.log(`fuzz: seed ${firstSeed}, ${minutes} min, ${runs} request cases a round`);

const h = await startHarness();
const deadline = Date.now() + minutes * 60_000;
const cases: Record<string, number> = {};
const failures: Array<PropertyResult['failure'] & { property: string }> = [];
let round = 0;
const sweepProblems: string[] = [];
try {
  while (Date.now() < deadline) {
    const seed = (firstSeed + round++) % 2 ** 31;
    // Whole rounds (the deadline is checked between them): a case cut off mid-flight would race the sweep.
    const results = await runProperties(h, { seed, numRuns: runs });
    for (const r of results) {
      cases[r.property] = (cases[r.property] ?? 0) + r.cases;
      if (r.failure) {
        failures.push({ property: r.property, ...r.failure });
        console.log(`FAIL ${r.property} (seed ${r.failure.seed}, path ${r.failure.path}): ${r.failure.error.slice(0, 1_500)}`);
      }
    }
    const wedged = await sweepWedged(h);
    sweepProblems.push(...wedged);
    for (const p of wedged) console.log(`WEDGED ${p}`);
    console.log(`round ${round} (seed ${seed}): ${JSON.stringify(cases)}, ${failures.length} failure(s)`);
  }
} finally {
  await h.close();
}
const total = Object.values(cases).reduce((a, b) => a + b, 0);
console.log(
  `fuzz: seed ${firstSeed}, ${round} round(s), ${total} cases (${JSON.stringify(cases)}), ${failures.length} failure(s), ${sweepProblems.length} wedged`,
);
if (failures.length > 0) {
  // The whole requests (bodies may be megabytes) go to a file, to replay as regression tests.
  const file = path.join(tmpdir(), `fuzz-failures-${firstSeed}.json`);
  writeFileSync(file, JSON.stringify(failures, null, 2));
  console.log(`fuzz: the failing requests are in ${file}`);
}
process.exit(failures.length + sweepProblems.length > 0 ? 1 : 0);
