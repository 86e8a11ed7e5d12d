/**
 * scripts/conformance-verdict.ts over runner outputs recorded from a real run (logs, the shim's
 * summaries, results.txt), and the same outputs cut the way a timeout, a crashed pytest or a
 * short report leaves them: none of those may pass.
 */
import t from 'tap';
import { expectedRuns, judge, type RunOutput, type VerdictInput } from '../../../scripts/conformance-verdict.js';
import { EXCEPTIONS, HEAD, RECORDED, RESULTS } from '../../fixtures/conformance-run.js';

function runs(change: Partial<Record<string, Partial<RunOutput>>> = {}): RunOutput[] {
  return expectedRuns('v03').map((tag) => {
    const [log, summary] = RECORDED[tag];
    return { tag, log: HEAD(tag) + log, summary: JSON.stringify(summary), ...change[tag] };
  });
}

const input = (over: Partial<VerdictInput> = {}): VerdictInput => ({
  exitCode: 0,
  results: RESULTS,
  runs: runs(),
  exceptions: EXCEPTIONS,
  ...over,
});

t.test('the recorded run: complete, its one failure a documented exception', async (t) => {
  const v = judge(input());
  t.strictSame(v, { exit: 0, passed: 96, unexpected: [], known: [Object.keys(EXCEPTIONS)[0]], problems: [] });
  t.equal(judge(input({ exceptions: {} })).exit, 1, 'the same failure, undocumented, fails');
  t.strictSame(judge(input({ exceptions: {} })).unexpected, Object.keys(EXCEPTIONS));
});

t.test('a category the runner timed out: no summary, the log cut mid-run', async (t) => {
  const v = judge(
    input({
      exitCode: 0, // run-tck.sh exits 0 when only a non-critical category broke
      results: RESULTS.replace(/v0\.3 features .*/, 'v0.3 features      passed=0   failed=0   error=0   skipped=0   xfailed=0  xpassed=0 '),
      runs: runs({ 'v03-features': { log: HEAD('features') + '..........', summary: undefined } }),
    }),
  );
  t.equal(v.exit, 1);
  t.match(v.problems, [/^v03-features: pytest did not finish/]);
  t.equal(v.problems.length, 1);
});

t.test('pytest outlived the timeout: its summary came later than results.txt', async (t) => {
  const v = judge(input({ results: RESULTS.replace('passed=15  failed=0   error=0   skipped=1   xfailed=0  xpassed=1', 'passed=0') }));
  t.equal(v.exit, 1);
  t.strictSame(v.problems, ["v03-features: results.txt counts 0 results, its summary 17 (pytest outlived the runner's timeout)"]);
});

t.test('a crashed pytest, and one that could not collect', async (t) => {
  const crashed = judge(
    input({
      runs: runs({
        'v03-mandatory': {
          log: HEAD('mandatory') + '......\nINTERNALERROR> Traceback (most recent call last):\nINTERNALERROR> SystemError\n',
          summary: JSON.stringify({ exitcode: 3, summary: { passed: 6, total: 6 } }),
        },
      }),
    }),
  );
  t.equal(crashed.exit, 1);
  t.strictSame(crashed.problems, ['v03-mandatory: pytest exited 3']);
  const collection = judge(
    input({
      runs: runs({
        'v03-capabilities': {
          log: HEAD('capabilities') + 'ERROR tests/optional/capabilities/test_x.py\n1 error in 0.52s\n',
          summary: JSON.stringify({ exitcode: 2, summary: { total: 0 } }),
        },
      }),
    }),
  );
  t.strictSame(collection.problems, ['v03-capabilities: pytest exited 2']);
});

t.test('fewer results than tests collected', async (t) => {
  const verbose = 'collected 40 items\n\n' + '.'.repeat(38) + '\n38 passed, 2 failed in 3.10s\n';
  const v = judge(
    input({
      results: RESULTS.replace(
        'passed=38  failed=0   error=0   skipped=35  xfailed=1',
        'passed=38  failed=0   error=0   skipped=0   xfailed=0',
      ),
      runs: runs({
        'v03-capabilities': {
          log: HEAD('capabilities') + verbose,
          summary: JSON.stringify({ exitcode: 1, summary: { passed: 38, total: 38 } }),
        },
      }),
    }),
  );
  t.strictSame(v.problems, ['v03-capabilities: 38 results for 40 tests collected']);
  const quiet = judge(
    input({ runs: runs({ 'v03-features': { summary: JSON.stringify({ exitcode: 0, summary: { passed: 10, total: 10 } }) } }) }),
  );
  t.strictSame(quiet.problems, ['v03-features: 10 results for 17 tests collected'], 'without "collected", pytest’s own last line counts');
  const empty = judge(
    input({ runs: runs({ 'v03-features': { log: HEAD('features') + 'no tests ran in 0.01s\n', summary: '{"exitcode":5}' } }) }),
  );
  t.strictSame(empty.problems, ['v03-features: pytest exited 5']);
});

t.test('a run whose output cannot be read: no result line, a summary that is not JSON', async (t) => {
  // A log cut before pytest's last line, beside a summary that reports results: nothing says how many were collected.
  const cut = judge(input({ runs: runs({ 'v03-features': { log: HEAD('features') + '...............s' } }) }));
  t.strictSame(cut.problems, ['v03-features: pytest printed no result line']);
  t.equal(cut.exit, 1);
  const garbled = judge(input({ runs: runs({ 'v03-mandatory': { summary: '{"exitcode": 0, "summ' } }) }));
  t.strictSame(garbled.problems, ['v03-mandatory: its summary is not JSON']);
  t.equal(garbled.exit, 1);
  const noResults = judge(input({ runs: runs({ 'v03-quality': { summary: '{"exitcode":0}' } }) }));
  t.strictSame(noResults.problems, ['v03-quality: 0 results for 14 tests collected'], 'a summary without results counts none');
});

t.test('a run that never started, and a runner that did not end well', async (t) => {
  t.strictSame(judge(input({ runs: runs({ 'v03-quality': { log: undefined, summary: undefined } }) })).problems, [
    'v03-quality: did not run (no log)',
  ]);
  t.strictSame(judge(input({ exitCode: 124 })).problems, ['the runner exited 124']);
  t.strictSame(judge(input({ exitCode: null })).problems, ['the runner exited on a signal']);
  t.strictSame(judge(input({ exitCode: 1, exceptions: {}, results: RESULTS })).problems, [], 'exit 1 explained by a failed test');
  const clean = RESULTS.replace(
    /v0\.3 quality .*\n.*FAILED.*\n/,
    'v0.3 quality       passed=14  failed=0   error=0   skipped=0   xfailed=0  xpassed=0 \n',
  );
  const quality = {
    log: HEAD('quality') + '.............. [100%]\n14 passed in 60.00s\n',
    summary: '{"exitcode":0,"summary":{"passed":14}}',
  };
  t.strictSame(judge(input({ exitCode: 0, results: clean, runs: runs({ 'v03-quality': quality }) })).problems, [], 'a clean run');
  t.strictSame(judge(input({ exitCode: 1, results: clean, runs: runs({ 'v03-quality': quality }) })).problems, [
    'the runner exited 1, yet no test or requirement failed',
  ]);
  t.equal(judge(input({ exitCode: 2 })).exit, 2, 'exit 2: the suite could not run');
  t.equal(judge(input({ results: undefined })).exit, 2, 'no results.txt: the suite could not run');
});

t.test('the v1.0 suite: its requirement table must be there', async (t) => {
  const v10: RunOutput = {
    tag: 'v10',
    log: 'collected 120 items\n' + '.'.repeat(120) + '\n120 passed in 99.00s\n',
    summary: JSON.stringify({ exitcode: 0, summary: { passed: 120, total: 120 } }),
  };
  const results = `${RESULTS}== a2a-tck 1.0-dev\nv1.0 all           passed=120 failed=0   error=0   skipped=0   xfailed=0  xpassed=0 \n`;
  t.strictSame(judge(input({ results, runs: [...runs(), v10] })).problems, []);
  const noTable = judge(input({ results: `${results}      no compatibility.json: [Errno 2]\n`, runs: [...runs(), v10] }));
  t.strictSame(noTable.problems, ['v10: no requirement table (compatibility.json missing)']);
  t.strictSame(expectedRuns('both'), ['v03-mandatory', 'v03-capabilities', 'v03-quality', 'v03-features', 'v10']);
  const failedMust = judge(
    input({ exitCode: 1, results: `${results}      MUST   FAIL CORE-SEND-001          boom\n`, runs: [...runs(), v10] }),
  );
  t.strictSame([failedMust.exit, failedMust.unexpected], [1, ['CORE-SEND-001']]);
});
