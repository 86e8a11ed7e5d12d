/**
 * The verdict of a conformance run (scripts/conformance.ts), from what the runner left behind:
 * its exit code, results.txt, and per pytest run (`v03-<category>`, `v10`) the log and the
 * summary JSON that run-tck.sh's report shim writes when pytest ends.
 *
 * A run counts only when it is complete: pytest finished (the shim's summary exists: a run the
 * runner's `timeout` killed, or a crashed pytest, leaves none), it exited 0 or 1 (1 = some tests
 * failed, judged one by one against the documented exceptions), and it reported a result for every
 * test it collected. Anything else is a problem, and a problem fails the run like a failed test.
 */

/** What one pytest run left: its log and the shim's summary JSON (undefined when absent). */
export interface RunOutput {
  tag: string;
  log?: string;
  summary?: string;
}

export interface VerdictInput {
  /** The runner's exit code; null when a signal ended it. */
  exitCode: number | null;
  /** results.txt, undefined when the runner wrote none. */
  results?: string;
  /** Every run the chosen suites make, present or not. */
  runs: RunOutput[];
  exceptions: Readonly<Record<string, string>>;
}

export interface Verdict {
  /** 2: the suite could not run; 1: a failure outside the exceptions, or a problem; 0: pass. */
  exit: 0 | 1 | 2;
  passed: number;
  /** Failed tests and v1.0 requirements that are not documented exceptions. */
  unexpected: string[];
  known: string[];
  /** Runs that did not complete, and other reasons the results cannot be trusted. */
  problems: string[];
}

/** The pytest runs each TCK_SUITE makes (run-tck.sh's tags). */
export function expectedRuns(suite: string): string[] {
  const v03 = ['mandatory', 'capabilities', 'quality', 'features'].map((c) => `v03-${c}`);
  return suite === 'v03' ? v03 : suite === 'v10' ? ['v10'] : [...v03, 'v10'];
}

/** Outcome counts as pytest words them in its last line (`30 passed, 3 skipped, 67 deselected in 163.54s`). */
function pytestTotals(log: string): Record<string, number> | undefined {
  const lines = [...log.matchAll(/^=*\s*((?:\d+ [a-z]+(?:, )?)+) in [\d.]+s\b.*$/gm)];
  const last = lines.at(-1);
  if (!last) return undefined;
  const totals: Record<string, number> = {};
  for (const [, n, word] of last[1].matchAll(/(\d+) ([a-z]+)/g)) totals[word.replace(/s$/, '')] = Number(n);
  return totals;
}

const RESULT_KINDS = ['passed', 'failed', 'error', 'skipped', 'xfailed', 'xpassed'];

interface ShimSummary {
  exitcode?: number;
  summary?: Record<string, number>;
  tests?: Array<{ nodeid?: string; outcome?: string }>;
}

/** Per run, the number of results results.txt counted for it (`v0.3 mandatory passed=30 failed=0 …`). */
function countedInResults(results: string): Map<string, number> {
  const counted = new Map<string, number>();
  for (const m of results.matchAll(/^v(0\.3|1\.0) (\S+)\s+(passed=.*)$/gm)) {
    const tag = m[1] === '0.3' ? `v03-${m[2]}` : 'v10';
    const n = [...m[3].matchAll(/([a-z]+)=(\d+)/g)]
      .filter(([, k]) => RESULT_KINDS.includes(k))
      .reduce((sum, [, , v]) => sum + Number(v), 0);
    counted.set(tag, n);
  }
  return counted;
}

/** Why a run cannot be counted, or undefined when it is complete; and the tests it failed. */
export function checkRun(run: RunOutput, counted?: number): { problem?: string; failed: string[] } {
  if (run.log === undefined) return { problem: `${run.tag}: did not run (no log)`, failed: [] };
  if (run.summary === undefined) {
    return { problem: `${run.tag}: pytest did not finish (no summary: killed by the runner's timeout, or crashed)`, failed: [] };
  }
  let shim: ShimSummary;
  try {
    shim = JSON.parse(run.summary) as ShimSummary;
  } catch {
    return { problem: `${run.tag}: its summary is not JSON`, failed: [] };
  }
  const failed = (shim.tests ?? []).filter((t) => t.outcome === 'failed' || t.outcome === 'error').flatMap((t) => t.nodeid ?? []);
  const reported = RESULT_KINDS.reduce((n, k) => n + (shim.summary?.[k] ?? 0), 0);
  const collected = Number(/^collected (\d+) items?(?: \/ \d+ deselected \/ (\d+) selected)?/m.exec(run.log)?.slice(1).findLast(Boolean));
  const totals = pytestTotals(run.log);
  const expected = Number.isInteger(collected) ? collected : totals && RESULT_KINDS.reduce((n, k) => n + (totals[k] ?? 0), 0);
  let problem: string | undefined;
  if (shim.exitcode !== 0 && shim.exitcode !== 1) problem = `${run.tag}: pytest exited ${shim.exitcode ?? '(unknown)'}`;
  else if (expected === undefined) problem = `${run.tag}: pytest printed no result line`;
  else if (reported < expected || reported === 0) problem = `${run.tag}: ${reported} results for ${expected} tests collected`;
  else if (counted !== undefined && counted !== reported) {
    problem = `${run.tag}: results.txt counts ${counted} results, its summary ${reported} (pytest outlived the runner's timeout)`;
  }
  return { problem, failed };
}

/** Failed pytest ids and v1.0 requirement ids in results.txt, and the passed counts. */
function fromResults(results: string): { tests: string[]; requirements: string[]; passed: number; noRequirements: boolean } {
  const tests = [...results.matchAll(/^\s+(?:FAILED|ERROR) (tests\/\S+)/gm)].map((m) => m[1]);
  const requirements = [...results.matchAll(/^\s+(?:MUST|SHOULD|MAY)\s+FAIL\s+(\S+)/gm)].map((m) => m[1]);
  const passed = [...results.matchAll(/\bpassed=(\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
  return { tests, requirements, passed, noRequirements: /no compatibility\.json/.test(results) };
}

export function judge(input: VerdictInput): Verdict {
  if (input.exitCode === 2 || input.results === undefined) return { exit: 2, passed: 0, unexpected: [], known: [], problems: [] };
  const problems: string[] = [];
  // run-tck.sh exits 1 when a critical test or a v1.0 MUST failed: judged below, id by id.
  if (input.exitCode !== 0 && input.exitCode !== 1) problems.push(`the runner exited ${input.exitCode ?? 'on a signal'}`);
  const parsed = fromResults(input.results);
  if (parsed.noRequirements) problems.push('v10: no requirement table (compatibility.json missing)');
  const failedTests = new Set(parsed.tests);
  const counted = countedInResults(input.results);
  for (const run of input.runs) {
    const { problem, failed } = checkRun(run, counted.get(run.tag));
    if (problem !== undefined) problems.push(problem);
    for (const id of failed) failedTests.add(id);
  }
  const failed = [...failedTests, ...new Set(parsed.requirements)];
  const unexpected = failed.filter((id) => input.exceptions[id] === undefined);
  const known = failed.filter((id) => input.exceptions[id] !== undefined);
  if (input.exitCode === 1 && failed.length === 0) problems.push('the runner exited 1, yet no test or requirement failed');
  const exit = unexpected.length > 0 || problems.length > 0 ? 1 : 0;
  return { exit, passed: parsed.passed, unexpected, known, problems };
}
