/**
 * The fuzzer's short form (a fixed seed, a few hundred cases): the three properties of
 * properties.ts against one server with authentication on, then no task may be left wedged.
 * The long form, with a random seed, is `npm run fuzz -- --minutes N` (docs/operations.md).
 */
import t from 'tap';
import { startHarness } from './harness.js';
import { runProperties } from './properties.js';
import { sweepWedged } from './sweep.js';

const SEED = 20_261_127;
const RUNS = Number(process.env.FUZZ_RUNS ?? 500);

t.test(`every route keeps the invariants (seed ${SEED}, ${RUNS} request cases)`, async (t) => {
  const h = await startHarness();
  t.teardown(() => h.close());
  for (const r of await runProperties(h, { seed: SEED, numRuns: RUNS })) {
    t.ok(r.cases > 0, `${r.property}: ${r.cases} cases ran`);
    t.equal(r.failure, undefined, `${r.property}: no failure${r.failure ? `\n${r.failure.error}` : ''}`);
  }
  t.same(await sweepWedged(h), [], 'no task is left wedged: every paused task answered ends its turn');
});
