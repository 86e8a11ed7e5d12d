/**
 * npm run conformance end to end (scripts/conformance.ts), with a stand-in for run-tck.sh that
 * leaves the files a real run left (test/fixtures/conformance-run.ts), cut as a timeout or a
 * crash leaves them: the script starts the server, runs the runner against it, and its exit code
 * and last line (what .ci/run adds to the totals) must say failed for every incomplete run.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { RESULTS, recordedRunFiles } from '../fixtures/conformance-run.js';

const REPO = path.resolve(import.meta.dirname, '../..');

/** The stand-in runner: checks the server answers, copies the outputs into --out, then ends as told. */
const RUNNER = `url="$1"; shift
while [[ $# -gt 0 ]]; do case "$1" in --out) out="$2"; shift 2;; *) shift;; esac; done
curl -sf "$url/.well-known/agent-card.json" -o /dev/null || { echo "no server at $url"; exit 2; }
cp -r "$FAKE_TCK_OUTPUTS"/. "$out"/
case "$FAKE_TCK_END" in signal) kill -KILL $$;; *) exit "$FAKE_TCK_END";; esac
`;

interface Run {
  code: number | null;
  /** The verdict line .ci/run reads, or undefined. */
  verdict?: string;
  out: string;
}

async function conformance(dir: string, files: Record<string, string>, end: string): Promise<Run> {
  const outputs = path.join(dir, 'outputs');
  mkdirSync(outputs);
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(outputs, name), text);
  writeFileSync(path.join(dir, 'run-tck.sh'), RUNNER);
  // _TAPJS_PROCESSINFO_COVERAGE_=0: the child runs src/ through tsx, whose source maps do not line
  // up with this process's; merged, its coverage would mark half of every file it loads uncovered
  // (see test/support/process.ts).
  const env = { ...process.env, TCK_SUITE: 'v03', FAKE_TCK_OUTPUTS: outputs, FAKE_TCK_END: end, _TAPJS_PROCESSINFO_COVERAGE_: '0' };
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/conformance.ts', path.join(dir, 'run-tck.sh')], {
    cwd: REPO,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out += b.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
  const verdict = [...out.matchAll(/^conformance: \d+ passed.*$/gm)].at(-1)?.[0];
  return { code, verdict, out };
}

/** The three runs, side by side (each starts its own server, which takes most of the time). */
function outputs() {
  const complete = recordedRunFiles();
  // A category the runner timed out: pytest was killed, so the shim never wrote its summary.
  const timedOut = recordedRunFiles();
  delete timedOut['v03-features.json'];
  timedOut['v03-features.log'] = timedOut['v03-features.log'].replace(/\.+s?X? \[100%\][^]*$/, '.........');
  timedOut['results.txt'] = RESULTS.replace(
    /v0\.3 features .*/,
    'v0.3 features      passed=0   failed=0   error=0   skipped=0   xfailed=0  xpassed=0 ',
  );
  // A runner killed before it wrote results.txt.
  const killed = recordedRunFiles();
  delete killed['results.txt'];
  return { complete, timedOut, killed };
}

t.test('npm run conformance fails every run that did not complete', async (t) => {
  const { complete, timedOut, killed } = outputs();
  const dir = t.testdir({ ok: {}, late: {}, dead: {} });
  const [ok, late, dead] = await Promise.all([
    conformance(path.join(dir, 'ok'), complete, '0'),
    conformance(path.join(dir, 'late'), timedOut, '0'),
    conformance(path.join(dir, 'dead'), killed, 'signal'),
  ]);
  const show = (run: Run, code: number) => {
    if (run.code !== code) t.comment(run.out);
  };

  show(ok, 0);
  t.equal(ok.code, 0, 'a complete run whose one failure is a documented exception passes');
  t.equal(ok.verdict, 'conformance: 96 passed, 0 failed, 1 known exceptions');

  show(late, 1);
  t.equal(late.code, 1, 'a category the runner timed out fails the run, though the runner exited 0');
  t.equal(late.verdict, 'conformance: 81 passed, 1 failed, 1 known exceptions', 'counted as one failure, not as 0 failed');
  t.match(late.out, /FAILED \(incomplete or broken run\): v03-features: pytest did not finish/);

  show(dead, 2);
  t.equal(dead.code, 2, 'a runner killed before it wrote its results: a non-zero exit');
  t.equal(dead.verdict, undefined, 'and no verdict line: .ci/run counts that as a failure');
  t.match(dead.out, /conformance: the suite could not run \(exit null\)/);
});
