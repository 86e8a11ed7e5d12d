/**
 * Turns the benchmark's figures into the printed table (one column per store, next to the
 * targets) and the `BENCH_RESULT {...}` JSON line. Pure formatting: measures nothing.
 */
import type { ThroughputResult } from './phases.js';
import type { SequentialResult } from './phases.js';
import type { ProfileSummary } from './cpu-profile.js';
import { breakdownJson, breakdownLines } from './breakdown-report.js';
import type { Breakdown } from './phase-tally.js';
import type { CeilingResult, LongStreamResult } from './long-stream.js';
import { shareOfCeiling } from './flow-ceiling.js';
import type { CeilingShare, FlowCeilingResult, FlowFrames } from './flow-ceiling.js';
import type { NpmStartResult, StartRuns } from './npm-start.js';
import type { MemoryResult } from './memory.js';
import { MEMORY_LIMIT_MB, SETTLE_WINDOW_MS } from './memory.js';
import { STORE_LABEL } from './stores.js';
import type { StoreKind } from './stores.js';
import os from 'node:os';
import { round } from './stats.js';
import type { Summary } from './stats.js';

/** The memory figure of one store. */
export type StoreMemory = MemoryResult & { store: StoreKind };

export interface StoreTargets {
  first_event_p50_ms: number;
  confirm_flow_p50_ms: number;
  /** What the ceiling share means on this machine (the verdict uses the share when the ceiling ran). */
  flows_per_s_at_200: number;
  /** flows/s at 200 clients as a share of the bare-Fastify flow ceiling's in the same run, %. */
  flows_pct_of_ceiling_at_200: number;
  p99_at_200_ms: number;
  rss_idle_mb: number;
  /** A first start on an empty store (PGlite: a new DATA_DIR). */
  start_to_ready_ms: number;
  /** A start on an existing store. */
  restart_to_ready_ms: number;
  /** `npm start` on a built checkout and a new store, to the first 200 of GET /readyz (p50 of the runs). */
  npm_start_to_ready_ms: number;
  /** The 10,000-chunk answer's events/s as a share of the bare writer's. */
  long_pct_of_ceiling: number;
}

/** The performance issues' targets on this 2-core machine, per store (issue 22 for latency, throughput, the long stream and npm start). */
export const TARGETS: Record<StoreKind, StoreTargets> = {
  postgres: {
    first_event_p50_ms: 2,
    confirm_flow_p50_ms: 8,
    flows_per_s_at_200: 1000,
    flows_pct_of_ceiling_at_200: 35,
    p99_at_200_ms: 500,
    rss_idle_mb: 100,
    start_to_ready_ms: 1000,
    restart_to_ready_ms: 1000,
    npm_start_to_ready_ms: 1500,
    long_pct_of_ceiling: 50,
  },
  pglite: {
    first_event_p50_ms: 4,
    confirm_flow_p50_ms: 15,
    flows_per_s_at_200: 500,
    flows_pct_of_ceiling_at_200: 20,
    p99_at_200_ms: 1000,
    rss_idle_mb: 200,
    start_to_ready_ms: 4000,
    restart_to_ready_ms: 2000,
    npm_start_to_ready_ms: 2000,
    long_pct_of_ceiling: 30,
  },
};

/** Above this many cores used by other processes during a measurement, figures are flagged. */
export const NOISE_CORES = 0.2;

/** The figures of one store's server. */
export interface Figures {
  store: StoreKind;
  where: string;
  node: string;
  cpus: number;
  pid: number;
  pidCheck: { ok: boolean; detail: string };
  threads: number;
  readyMs: number;
  rssIdleMb: number;
  first: SequentialResult;
  flow: SequentialResult;
  /** Per-flow phases and database traffic of the sequential confirm flows (with the probe). */
  flowBreakdown?: Breakdown;
  /** Cores used by other processes during the sequential phases. */
  seqOtherCores: number;
  runs: ThroughputResult[];
  timeline: { after: string; tasks: number; rss_mb: number }[];
  tasksAfter: number;
  rssAfterMb: number;
  completed: number;
  failed: number;
  errors: Map<string, number>;
  examples: string[];
  firstTaskStillHeld: boolean | undefined;
  firstTaskId?: string;
  /**
   * A second server on the same (now filled) store: start-to-ready, idle RSS (ready + 1 s, and
   * `rssSettledMb` after SETTLE_WINDOW_MS idle, its start-up garbage handed back), and whether
   * the first task is still there.
   */
  restart: { readyMs: number; rssIdleMb: number; rssSettledMb: number; firstTaskFound: boolean | undefined };
  long?: LongStreamResult;
  /** The frames of one confirm flow (what the flow ceiling replays). */
  flowFrames?: FlowFrames;
  /** `npm start` and `node dist/main.js` to ready on new stores (absent with --start-runs 0 or --from-source). */
  npmStart?: NpmStartResult;
  /** Wall time of this store's whole leg (spawn to teardown), s. */
  legSeconds: number;
  serverExitCode: number | null;
  /** Server log lines at warn level or above (the child runs with LOG_LEVEL=warn): the first ones, and how many. */
  serverWarnings: { lines: string[]; total: number };
  profile?: { file: string; summary: ProfileSummary; long?: ProfileSummary };
}

export interface Report {
  stores: Figures[];
  /** Stores asked for but not run, with the reason. */
  skipped: { store: StoreKind; why: string }[];
  ceiling?: CeilingResult;
  /** Bare Fastify serving the confirm flow's frames, through the same client and phases. */
  flowCeiling?: FlowCeilingResult;
  /** One per store measured (--memory). */
  memory: StoreMemory[];
  /** Why the memory figure is absent (e.g. not asked for). */
  memoryNote?: string;
  longChunks: number;
  longChunkChars: number;
  benchSeconds: number;
  argv: string[];
  /** Fingerprints of src/ + drizzle/ at start and end of the run. */
  source: { start: SourceFingerprint; end: SourceFingerprint };
  /** How the measured server ran (compiled dist/ or from source under tsx). */
  server: string;
}

export interface SourceFingerprint {
  hash: string;
  files: number;
  newest: string;
  newestAt: string;
}

const fmt = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
/** A count with thousands separators (2,900). */
const count = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : 'n/a');
/** A share in %: one decimal under 10 %, none above. */
const pct = (x: number) => (Number.isFinite(x) ? `${x.toFixed(x < 10 ? 1 : 0)} %` : 'n/a');
const mark = (ok: boolean) => (ok ? 'meets' : 'MISSES');
/** The long stream's events/s as a percentage of the bare writer's. */
const pctOfCeiling = (l: LongStreamResult, c: CeilingResult) => (100 * l.eventsPerS) / c.eventsPerS;
const perTaskKb = (f: Figures) => ((f.rssAfterMb - f.rssIdleMb) * 1024) / Math.max(1, f.tasksAfter);

function summaryJson(s: Summary) {
  return { n: s.n, p50: round(s.p50), p90: round(s.p90), p99: round(s.p99), max: round(s.max), mean: round(s.mean) };
}

/** One table row of one store: a key to line stores up, the label, the value, the target and the verdict. */
interface Cell {
  key: string;
  label: string;
  value: string;
  target?: string;
  ok?: boolean;
  noisy?: boolean;
}

/** The fresh server: start, idle RSS, sequential flows. */
function startCells(f: Figures): Cell[] {
  const t = TARGETS[f.store];
  return [
    {
      key: 'ready',
      label: 'start to ready',
      value: `${fmt(f.readyMs, 0)} ms`,
      target: `≤ ${t.start_to_ready_ms} ms`,
      ok: f.readyMs <= t.start_to_ready_ms,
    },
    ...npmStartCells(f.npmStart, t),
    {
      key: 'rss-idle',
      label: 'RSS idle (ready + 1 s)',
      value: `${fmt(f.rssIdleMb, 1)} MB`,
      target: `≤ ${t.rss_idle_mb} MB`,
      ok: f.rssIdleMb <= t.rss_idle_mb,
    },
    { key: 'cold', label: 'first flow on the fresh server', value: `${fmt(f.first.firstFlowMs, 1)} ms` },
    {
      key: 'fe50',
      label: `first event p50 (n=${f.first.samples.n})`,
      value: `${fmt(f.first.samples.p50, 3)} ms`,
      target: `≤ ${t.first_event_p50_ms} ms`,
      ok: f.first.samples.p50 <= t.first_event_p50_ms,
    },
    { key: 'fe99', label: 'first event p99', value: `${fmt(f.first.samples.p99, 3)} ms` },
    {
      key: 'cf50',
      label: `confirm flow p50 (n=${f.flow.samples.n})`,
      value: `${fmt(f.flow.samples.p50, 3)} ms`,
      target: `≤ ${t.confirm_flow_p50_ms} ms`,
      ok: f.flow.samples.p50 <= t.confirm_flow_p50_ms,
    },
    { key: 'cf99', label: 'confirm flow p99', value: `${fmt(f.flow.samples.p99, 3)} ms` },
    {
      key: 'seq-err',
      label: 'sequential flows: errors',
      value: String(f.first.errors + f.flow.errors),
      target: '0',
      ok: f.first.errors + f.flow.errors === 0,
    },
  ];
}

/** `npm start` (and `node dist/main.js`) to GET /readyz 200 on new stores. */
function npmStartCells(n: NpmStartResult | undefined, t: StoreTargets): Cell[] {
  if (!n) return [];
  const runs = (r: StartRuns) => `${fmt(r.summary.p50, 0)} ms (${r.ms.map((x) => fmt(x, 0)).join(', ')})`;
  if (n.error) return [{ key: 'npm-ready', label: 'npm start to ready', value: `failed: ${n.error.slice(0, 60)}`, ok: false }];
  return [
    {
      key: 'npm-ready',
      label: `npm start to ready, new store, p50 (runs)${n.builtBefore ? '' : ' — REBUILT: sources changed'}`,
      value: runs(n.npmStart),
      target: `≤ ${t.npm_start_to_ready_ms} ms`,
      ok: n.npmStart.summary.p50 <= t.npm_start_to_ready_ms,
    },
    { key: 'node-ready', label: 'node dist/main.js to ready, new store, p50 (runs)', value: runs(n.node) },
  ];
}

/** A figure as a share of the flow ceiling's: 'ours = x % of the ceiling c'. */
function shareText(s: CeilingShare): string {
  const v = (x: number) => (s.unit === 'ms' ? `${fmt(x, x < 10 ? 2 : 0)} ms` : count(x));
  if (!Number.isFinite(s.pct)) return `not measured (ours ${v(s.ours)}, the ceiling ${v(s.ceiling)}: no flow completed inside the window)`;
  return s.unit === 'ms'
    ? `${v(s.ours)}: the ceiling's ${v(s.ceiling)} is ${pct(s.pct)} of it`
    : `${v(s.ours)} = ${pct(s.pct)} of the ceiling ${v(s.ceiling)}`;
}

/** The shares of the flow ceiling as table rows: the 200-client flows/s against its target. */
function ceilingCells(shares: CeilingShare[], t: StoreTargets): Cell[] {
  return shares.map((s) => ({
    key: `${s.key}-ceil`,
    label: `${s.label}: share of the ceiling`,
    value: pct(s.pct),
    ...(s.key === 'run200-fps' ? { target: `≥ ${t.flows_pct_of_ceiling_at_200} %`, ok: s.pct >= t.flows_pct_of_ceiling_at_200 } : {}),
  }));
}

/** One throughput run (N clients looping flows). */
function runCells(r: Figures['runs'][number], t: StoreTargets, withCeiling: boolean): Cell[] {
  const is200 = r.clients === 200;
  const n = `${r.clients} clients:`;
  const k = `run${r.clients}`;
  return [
    {
      key: `${k}-fps`,
      label: `${n} flows/s`,
      value: fmt(r.flowsPerS, 0),
      // With the ceiling in the run its share is the verdict (ceilingCells); the absolute figure is what it means here.
      ...(is200 ? { target: `≥ ${t.flows_per_s_at_200}`, ...(withCeiling ? {} : { ok: r.flowsPerS >= t.flows_per_s_at_200 }) } : {}),
    },
    { key: `${k}-p50`, label: `${n} flow p50`, value: `${fmt(r.latency.p50, 1)} ms` },
    {
      key: `${k}-p99`,
      label: `${n} flow p99`,
      value: `${fmt(r.latency.p99, 1)} ms`,
      ...(is200 ? { target: `≤ ${t.p99_at_200_ms} ms`, ok: r.latency.p99 <= t.p99_at_200_ms } : {}),
    },
    {
      key: `${k}-pfps`,
      label: `${n} flows/s, whole phase (warm-up+window+drain)`,
      value: `${fmt(r.phaseFlowsPerS, 1)} (${r.phaseFlows} in ${fmt(r.phaseS, 1)} s)`,
    },
    {
      key: `${k}-pp`,
      label: `${n} flow p50 / p99, whole phase`,
      value: `${fmt(r.phaseLatency.p50, 0)} / ${fmt(r.phaseLatency.p99, 0)} ms`,
    },
    { key: `${k}-err`, label: `${n} errors`, value: String(r.errors), target: '0', ok: r.errors === 0 },
    { key: `${k}-cpu`, label: `${n} server CPU per flow (main thread)`, value: `${fmt(r.serverMsPerFlow)} (${fmt(r.mainMsPerFlow)}) ms` },
    {
      key: `${k}-cores`,
      label: `${n} cores: server (main) / postgres / bench / other`,
      value: `${fmt(r.serverCpuCores)} (${fmt(r.serverMainCores)}) / ${fmt(r.dbCpuCores)} / ${fmt(r.clientCpuCores)} / ${fmt(r.otherCpuCores)}`,
      noisy: r.otherCpuCores > NOISE_CORES,
    },
  ];
}

/** After the runs: memory, the restart on the filled store, the server log. */
function afterCells(f: Figures): Cell[] {
  const t = TARGETS[f.store];
  return [
    { key: 'rss-after', label: 'RSS after the tasks above', value: `${fmt(f.rssAfterMb, 1)} MB (${f.tasksAfter})` },
    { key: 'rss-per-task', label: 'RSS growth per task (from idle)', value: `${fmt(perTaskKb(f), 1)} KB` },
    {
      key: 'restart-ready',
      label: 'restart on the filled store: to ready',
      value: `${fmt(f.restart.readyMs, 0)} ms`,
      target: `≤ ${t.restart_to_ready_ms} ms`,
      ok: f.restart.readyMs <= t.restart_to_ready_ms,
    },
    {
      key: 'restart-rss',
      label: 'restart: RSS idle',
      value: `${fmt(f.restart.rssIdleMb, 1)} MB`,
      target: `≤ ${t.rss_idle_mb} MB`,
      ok: f.restart.rssIdleMb <= t.rss_idle_mb,
    },
    {
      key: 'restart-rss-settled',
      label: `restart: RSS idle after ${SETTLE_WINDOW_MS / 1000} s`,
      value: `${fmt(f.restart.rssSettledMb, 1)} MB`,
      target: `≤ ${t.rss_idle_mb} MB`,
      ok: f.restart.rssSettledMb <= t.rss_idle_mb,
    },
    {
      key: 'restart-task',
      label: 'restart: first task found by tasks/get',
      value: f.restart.firstTaskFound === undefined ? 'n/a' : f.restart.firstTaskFound ? 'yes' : 'NO',
      target: 'yes',
      ...(f.restart.firstTaskFound === undefined ? {} : { ok: f.restart.firstTaskFound }),
    },
    {
      key: 'log',
      label: 'server log lines at warn/error',
      value: String(f.serverWarnings.total),
      target: '0',
      ok: f.serverWarnings.total === 0,
    },
  ];
}

/** The long stream, and how it compares with the bare-writer ceiling. */
function longCells(l: NonNullable<Figures['long']>, ceiling: CeilingResult | undefined, t: StoreTargets): Cell[] {
  const out: Cell[] = [
    { key: 'long-events', label: 'long stream: events (text) / MB', value: `${l.events} (${l.textEvents}) / ${fmt(l.bytes / 1e6, 2)}` },
    { key: 'long-ms', label: 'long stream: request → completed', value: `${fmt(l.ms, 0)} ms` },
    { key: 'long-first', label: 'long stream: request → first frame', value: `${fmt(l.firstMs, 0)} ms` },
    { key: 'long-eps', label: 'long stream: events/s', value: fmt(l.eventsPerS, 0) },
    { key: 'long-mbps', label: 'long stream: MB/s', value: fmt(l.mbPerS, 2) },
    {
      key: 'long-cpu',
      label: 'long stream: server CPU (main) per event',
      value: `${fmt((l.serverCpuS * 1e6) / Math.max(1, l.events), 0)} (${fmt((l.serverMainCpuS * 1e6) / Math.max(1, l.events), 0)}) µs`,
    },
    {
      key: 'long-rss',
      label: 'long stream: server RSS before / peak / after',
      value: `${fmt(l.rssBeforeMb, 0)} / ${fmt(l.rssPeakMb, 0)} / ${fmt(l.rssAfterMb, 0)} MB`,
    },
    { key: 'long-db', label: 'long stream: postgres CPU (all databases)', value: `${fmt(l.dbCpuS, 2)} s` },
    {
      key: 'long-probe',
      label: 'long stream: agent-card GET p50 / max',
      value: `${fmt(l.probe.p50, 0)} / ${fmt(l.probe.max, 0)} ms (n=${l.probe.n})`,
    },
    {
      key: 'long-ok',
      label: 'long stream: order / ids / text',
      value: l.ok ? 'ok' : `${l.problems.length} problem(s)`,
      target: 'ok',
      ok: l.ok,
    },
  ];
  if (ceiling)
    out.push({
      key: 'long-ratio',
      label: 'long stream: events/s vs ceiling',
      value: `${fmt(pctOfCeiling(l, ceiling), 1)} % (1/${fmt(ceiling.eventsPerS / l.eventsPerS, 0)})`,
      target: `≥ ${t.long_pct_of_ceiling} %`,
      ok: pctOfCeiling(l, ceiling) >= t.long_pct_of_ceiling,
    });
  return out;
}

function cells(f: Figures, ceiling: CeilingResult | undefined, flowCeiling: FlowCeilingResult | undefined): Cell[] {
  const t = TARGETS[f.store];
  return [
    ...startCells(f),
    ...f.runs.flatMap((r) => runCells(r, t, flowCeiling !== undefined)),
    ...(flowCeiling ? ceilingCells(shareOfCeiling(f, flowCeiling), t) : []),
    ...afterCells(f),
    ...(f.long ? longCells(f.long, ceiling, t) : []),
  ];
}

function table(rowsIn: string[][]): string[] {
  const w = rowsIn[0].map((_, i) => Math.max(...rowsIn.map((r) => r[i].length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(w[i]))
      .join('  ')
      .trimEnd();
  return [line(rowsIn[0]), line(w.map((n) => '-'.repeat(n))), ...rowsIn.slice(1).map(line)];
}

function profileLines(f: Figures): string[] {
  const p = f.profile;
  if (!p) return [];
  const pct = (x: { pct: number; ms: number; name: string }) =>
    `  ${fmt(x.pct, 1).padStart(5)}%  ${fmt(x.ms, 0).padStart(6)} ms  ${x.name}`;
  const part = (what: string, s: ProfileSummary) => [
    '',
    `CPU profile of the ${STORE_LABEL[f.store]} server's main thread during ${what} (${p.file}):`,
    `busy ${fmt(s.busyMs, 0)} of ${fmt(s.totalMs, 0)} ms sampled; time by stage (whole stack, first match):`,
    ...s.stages.slice(0, 14).map(pct),
    'self time by function:',
    ...s.functions.map(pct),
  ];
  return [...part('the throughput windows', p.summary), ...(p.long ? part('the long stream', p.long) : [])];
}

/** The store's figures beside the flow ceiling's, next to its statements and round trips per flow. */
function ceilingLines(f: Figures, c: FlowCeilingResult | undefined): string[] {
  if (!c) return ['  against the bare-Fastify flow ceiling: not run (no confirm flow captured)'];
  return [
    `  against the bare-Fastify flow ceiling (same run, same client and phases; see "flow ceiling" above):`,
    ...shareOfCeiling(f, c).map((s) => `    ${s.label}: ${shareText(s)}`),
  ];
}

function storeDetails(f: Figures, flowCeiling: FlowCeilingResult | undefined): string[] {
  const label = STORE_LABEL[f.store];
  const out = [
    '',
    `${label} (${f.where}): server pid ${f.pid} (${f.pidCheck.ok ? 'verified serving' : 'NOT verified'}), ${f.threads} threads, leg ${fmt(f.legSeconds, 1)} s`,
    `  other processes' CPU: ${fmt(f.seqOtherCores)} cores during the sequential phases, ${f.runs.map((r) => `${fmt(r.otherCpuCores)} at ${r.clients} clients`).join(', ')}`,
  ];
  if ([f.seqOtherCores, ...f.runs.map((r) => r.otherCpuCores)].some((c) => c > NOISE_CORES)) {
    out.push(
      `  WARNING: other processes used > ${NOISE_CORES} of ${f.cpus} cores during a measurement; the figures are contaminated, rerun on a quiet machine`,
    );
  }
  out.push(`  RSS timeline (after phase: tasks→RSS): ${f.timeline.map((t) => `${t.after} ${t.tasks}→${t.rss_mb} MB`).join(', ')}`);
  out.push(
    `  flows: ${f.completed} completed, ${f.failed} failed${f.errors.size ? ` (${[...f.errors].map(([k, v]) => `${k}: ${v}`).join('; ')})` : ''}`,
  );
  for (const ex of f.examples) out.push(`    e.g. ${ex}`);
  const held = f.firstTaskStillHeld === undefined ? 'not checked' : f.firstTaskStillHeld ? 'yes' : 'NO';
  out.push(`  first task still answered by tasks/get after ${f.tasksAfter} tasks: ${held}`);
  if (f.long) {
    const l = f.long;
    out.push(
      `  long stream: ${l.events} frames (${l.textEvents} TEXT_CONTENT of ${fmt(l.textFrameBytes, 0)} B each), ${l.bytes} B in ${fmt(l.ms, 0)} ms (first frame ${fmt(l.firstMs, 1)} ms); ` +
        `server CPU ${fmt(l.serverCpuS, 2)} s (main thread ${fmt(l.serverMainCpuS, 2)} s); RSS ${l.rssBeforeMb} → ${l.rssAfterMb} MB`,
    );
    for (const p of l.problems) out.push(`    long-stream problem: ${p}`);
  }
  out.push(`  server exit code after SIGTERM: ${f.serverExitCode}`);
  if (f.serverWarnings.total) {
    out.push(`  server log, warn and above: ${f.serverWarnings.total} line(s); first ones:`);
    for (const w of f.serverWarnings.lines.slice(0, 5)) out.push(`    ${w.slice(0, 400)}`);
  } else out.push('  server log, warn and above: none');
  if (f.npmStart && !f.npmStart.error) {
    const cpu = (r: StartRuns) =>
      `CPU to ready ${r.cpuMs.map((x) => fmt(x, 0)).join(', ')} ms, machine busy ${r.machineCores.map((x) => fmt(x, 2)).join(', ')} cores`;
    out.push(`  npm start to ready, per run: ${cpu(f.npmStart.npmStart)}; node dist/main.js: ${cpu(f.npmStart.node)}`);
  }
  out.push(...ceilingLines(f, flowCeiling));
  out.push(
    ...breakdownLines(f.store, f.flow.samples.p50, [
      { label: 'sequential', b: f.flowBreakdown },
      ...f.runs.map((r) => ({ label: `${r.clients} clients`, b: r.breakdown })),
    ]),
  );
  out.push(...profileLines(f));
  return out;
}

/** The flow ceiling's own figures. */
function flowCeilingLines(c: FlowCeilingResult | undefined): string[] {
  if (!c) return [];
  const out = [
    '',
    `flow ceiling: bare Fastify ${c.fastify} in a process of its own, no store, no model, serving the ${c.frames} frames (${c.bytes} B) of one of the server's confirm flows on its 2 POSTs; the same client and phases:`,
    `  first event p50 ${fmt(c.first.samples.p50, 3)} ms, confirm flow p50 ${fmt(c.flow.samples.p50, 3)} ms (p99 ${fmt(c.flow.samples.p99, 3)} ms), 1 client`,
    ...c.runs.map(
      (r) =>
        `  ${r.clients} clients: ${count(r.flowsPerS)} flows/s, p50 ${fmt(r.latency.p50, 1)} ms, p99 ${fmt(r.latency.p99, 1)} ms; ceiling server ${fmt(r.serverCpuCores)} cores, bench ${fmt(r.clientCpuCores)}, other ${fmt(r.otherCpuCores)}`,
    ),
    `  flows: ${c.completed} completed, ${c.failed} failed`,
  ];
  for (const ex of c.examples) out.push(`    e.g. ${ex}`);
  return out;
}

export function formatReport(rep: Report): string {
  const out = [''];
  out.push(
    `Benchmark: node ${process.version}, ${os.cpus().length} CPUs; stores: ${rep.stores.map((f) => STORE_LABEL[f.store]).join(', ') || 'none'}; args: ${rep.argv.join(' ') || '(defaults)'}`,
  );
  const src = rep.source;
  out.push(
    `code under test: src/ + drizzle/ sha256 ${src.start.hash} (${src.start.files} files, newest ${src.start.newest} at ${src.start.newestAt})`,
  );
  out.push(`server: ${rep.server}`);
  if (src.end.hash !== src.start.hash) {
    out.push(
      `WARNING: src/ or drizzle/ changed during the run (now ${src.end.hash}, newest ${src.end.newest} at ${src.end.newestAt}): servers started at different times ran different code`,
    );
  }
  if (rep.stores.some((f) => f.long))
    out.push(
      `long stream: ONE task, the scripted model streams ${rep.longChunks} text chunks of ${rep.longChunkChars} characters${rep.longChunks !== 10_000 ? ' (not the 10,000 of the figure)' : ''}; the ceiling replays the same frames from a bare node:http writer`,
    );
  for (const s of rep.skipped) out.push(`(${STORE_LABEL[s.store]} not run: ${s.why})`);
  out.push('');
  const per = rep.stores.map((f) => cells(f, rep.ceiling, rep.flowCeiling));
  if (per.length === 0) out.push('(no store legs run)');
  const keys: { key: string; label: string }[] = [];
  for (const list of per) for (const c of list) if (!keys.some((k) => k.key === c.key)) keys.push({ key: c.key, label: c.label });
  // Targets differ per store: one target per column, in the columns' order, when they differ.
  const head = ['metric', ...rep.stores.map((f) => STORE_LABEL[f.store]), 'target', ''];
  const body = keys.map(({ key, label }) => {
    const row = per.map((list) => list.find((c) => c.key === key));
    const targets = row.map((c) => c?.target ?? '');
    const target = targets.every((x) => x === targets[0]) ? targets[0] : targets.map((x) => x || '-').join(' | ');
    const verdicts = row.map((c) => (c?.ok === undefined ? (c?.noisy ? 'NOISY' : '') : mark(c.ok)));
    const verdict = verdicts.some(Boolean) ? (rep.stores.length > 1 ? verdicts.map((v) => v || '-').join(' | ') : verdicts[0]) : '';
    return [label, ...row.map((c) => c?.value ?? ''), target, verdict];
  });
  if (per.length > 0) out.push(...table([head, ...body]));
  if (rep.ceiling) {
    const c = rep.ceiling;
    out.push(
      '',
      `long-stream ceiling (bare node:http SSE writer in a worker thread of the bench process, replaying captured frames, one write per frame, waiting for 'drain'; same client code; median of ${c.runs}):`,
      `  ${c.events} frames, ${c.bytes} B in ${fmt(c.ms, 1)} ms → ${fmt(c.eventsPerS, 0)} events/s, ${fmt(c.mbPerS, 1)} MB/s (runs: ${c.allEventsPerS.map((x) => fmt(x, 0)).join(', ')} events/s)${c.error ? `; error: ${c.error}` : ''}`,
    );
    for (const f of rep.stores) {
      if (f.long)
        out.push(
          `  ${STORE_LABEL[f.store]}: ${fmt(f.long.eventsPerS, 0)} events/s = ${fmt(pctOfCeiling(f.long, c), 2)} % of the ceiling (ceiling is ${fmt(c.eventsPerS / f.long.eventsPerS, 1)}× faster)`,
        );
    }
  }
  out.push(...flowCeilingLines(rep.flowCeiling));
  for (const f of rep.stores) out.push(...storeDetails(f, rep.flowCeiling));
  out.push('');
  for (const m of rep.memory) {
    out.push(
      `Memory (${STORE_LABEL[m.store]}: a second start on an initialised empty store, ${m.clients} concurrent clients doing full flows; RSS after ${SETTLE_WINDOW_MS / 1000} s of quiet after each load, see scripts/bench/memory.ts):`,
      `  RSS idle ${m.rssIdleMb} MB; after ${m.tasksSmall} tasks ${m.rssSmallMb} MB; after ${m.tasksLarge} tasks ${m.rssLargeMb} MB; delta ${fmt(m.deltaMb, 1)} MB ` +
        `(requirement ≤ ${MEMORY_LIMIT_MB} MB): ${mark(m.meets)}`,
      `  2 s after each load (garbage not yet handed back): ${m.rssSmallEarlyMb} MB and ${m.rssLargeEarlyMb} MB; RSS last fell ${m.settleS[0]} s and ${m.settleS[1]} s after the load`,
      `  ${m.completed} completed, ${m.failed} failed${m.errors.size ? ` (${[...m.errors].map(([k, v]) => `${k}: ${v}`).join('; ')})` : ''}; ${fmt(m.flowsPerS, 0)} flows/s; phase ${fmt(m.seconds, 1)} s`,
      `  RSS while loading (tasks→MB): ${m.timeline.map((t) => `${t.tasks}→${t.rss_mb}`).join(', ')}`,
      `  flows/s per segment (tasks: flows/s): ${m.timeline
        .map((t, i) => {
          const prev = i === 0 ? { tasks: 0, s: 0 } : m.timeline[i - 1];
          return `${t.tasks}: ${fmt((t.tasks - prev.tasks) / Math.max(0.001, t.s - prev.s), 1)}`;
        })
        .join(', ')}`,
    );
    for (const ex of m.examples) out.push(`    e.g. ${ex}`);
  }
  if (rep.memory.length === 0) out.push(`Memory (RSS after 100 vs 10,000 tasks): ${rep.memoryNote ?? 'not run'}`);
  out.push('', `bench took ${fmt(rep.benchSeconds, 1)} s`);
  return `${out.join('\n')}\n`;
}

function runJson(r: ThroughputResult) {
  return {
    clients: r.clients,
    warmup_s: r.warmupS,
    duration_s: r.durationS,
    flows: r.flows,
    flows_per_s: round(r.flowsPerS, 1),
    latency_ms: summaryJson(r.latency),
    errors: r.errors,
    error_types: r.errorTypes,
    server_cpu_cores: round(r.serverCpuCores, 2),
    server_main_thread_cores: round(r.serverMainCores, 2),
    server_cpu_ms_per_flow: round(r.serverMsPerFlow, 3),
    main_thread_cpu_ms_per_flow: round(r.mainMsPerFlow, 3),
    client_cpu_cores: round(r.clientCpuCores, 2),
    db_cpu_cores: round(r.dbCpuCores, 2),
    phase_flows: r.phaseFlows,
    phase_s: round(r.phaseS, 1),
    phase_flows_per_s: round(r.phaseFlowsPerS, 1),
    phase_latency_ms: summaryJson(r.phaseLatency),
    other_cpu_cores: round(r.otherCpuCores, 2),
    drain_ms: round(r.drainMs, 1),
  };
}

function startRunsJson(r: StartRuns) {
  return {
    runs: r.ms.map((x) => round(x, 1)),
    ...summaryJson(r.summary),
    cpu_ms: r.cpuMs,
    machine_cores: r.machineCores.map((x) => round(x, 2)),
  };
}

function npmStartJson(n: NpmStartResult | undefined) {
  if (!n) return null;
  return {
    npm_start_to_ready_ms: n.error ? null : startRunsJson(n.npmStart),
    node_start_to_ready_ms: n.error ? null : startRunsJson(n.node),
    built_before: n.builtBefore,
    error: n.error ?? null,
  };
}

function sharesJson(shares: CeilingShare[]) {
  return Object.fromEntries(
    shares.map((s) => [s.key, { ours: round(s.ours, 3), ceiling: round(s.ceiling, 3), unit: s.unit, pct: round(s.pct, 2) }]),
  );
}

function longJson(l: LongStreamResult, ceiling: CeilingResult | undefined) {
  return {
    ok: l.ok,
    problems: l.problems,
    events: l.events,
    text_events: l.textEvents,
    bytes: l.bytes,
    ms: round(l.ms, 1),
    first_frame_ms: round(l.firstMs, 1),
    agent_card_get_ms: summaryJson(l.probe),
    db_cpu_s: round(l.dbCpuS, 2),
    events_per_s: round(l.eventsPerS, 1),
    mb_per_s: round(l.mbPerS, 3),
    server_cpu_s: round(l.serverCpuS, 2),
    server_main_cpu_s: round(l.serverMainCpuS, 2),
    rss_before_mb: l.rssBeforeMb,
    rss_after_mb: l.rssAfterMb,
    rss_peak_mb: l.rssPeakMb,
    fraction_of_ceiling: ceiling ? round(l.eventsPerS / ceiling.eventsPerS, 4) : null,
  };
}

function storeJson(f: Figures, ceiling: CeilingResult | undefined, flowCeiling: FlowCeilingResult | undefined): Record<string, unknown> {
  const t = TARGETS[f.store];
  const at200 = f.runs.find((r) => r.clients === 200);
  const l = f.long;
  const shares = flowCeiling ? shareOfCeiling(f, flowCeiling) : [];
  const share200 = shares.find((s) => s.key === 'run200-fps');
  const n = f.npmStart;
  return {
    pid_verified: f.pidCheck.ok,
    start_to_ready_ms: round(f.readyMs, 1),
    npm_start: npmStartJson(n),
    share_of_flow_ceiling: flowCeiling ? sharesJson(shares) : null,
    rss_idle_mb: f.rssIdleMb,
    cold_first_flow_ms: round(f.first.firstFlowMs, 1),
    first_event_ms: summaryJson(f.first.samples),
    first_event_errors: f.first.errors,
    confirm_flow_ms: summaryJson(f.flow.samples),
    confirm_flow_errors: f.flow.errors,
    sequential_other_cpu_cores: round(f.seqOtherCores, 2),
    throughput: f.runs.map(runJson),
    tasks_total: f.tasksAfter,
    flows_completed: f.completed,
    flows_failed: f.failed,
    error_types: Object.fromEntries(f.errors),
    rss_after_tasks_mb: f.rssAfterMb,
    rss_per_task_kb: round(perTaskKb(f), 2),
    rss_timeline: f.timeline,
    first_task_still_held: f.firstTaskStillHeld ?? null,
    restart: {
      start_to_ready_ms: round(f.restart.readyMs, 1),
      rss_idle_mb: f.restart.rssIdleMb,
      rss_settled_mb: f.restart.rssSettledMb,
      first_task_found: f.restart.firstTaskFound ?? null,
    },
    long_stream: l ? longJson(l, ceiling) : null,
    leg_s: round(f.legSeconds, 1),
    server_exit_code: f.serverExitCode,
    server_warnings: f.serverWarnings.total,
    meets: {
      start_to_ready: f.readyMs <= t.start_to_ready_ms,
      restart_to_ready: f.restart.readyMs <= t.restart_to_ready_ms,
      long_pct_of_ceiling: f.long && ceiling ? pctOfCeiling(f.long, ceiling) >= t.long_pct_of_ceiling : null,
      rss_idle: f.rssIdleMb <= t.rss_idle_mb,
      first_event_p50: f.first.samples.p50 <= t.first_event_p50_ms,
      confirm_flow_p50: f.flow.samples.p50 <= t.confirm_flow_p50_ms,
      flows_per_s_at_200: at200 ? at200.flowsPerS >= t.flows_per_s_at_200 : null,
      flows_pct_of_ceiling_at_200: share200 ? share200.pct >= t.flows_pct_of_ceiling_at_200 : null,
      npm_start_to_ready: n && !n.error ? n.npmStart.summary.p50 <= t.npm_start_to_ready_ms : null,
      p99_at_200: at200 ? at200.latency.p99 <= t.p99_at_200_ms : null,
    },
    where_the_time_goes: {
      sequential: breakdownJson(f.flowBreakdown),
      ...Object.fromEntries(f.runs.map((r) => [`clients_${r.clients}`, breakdownJson(r.breakdown)])),
    },
    noisy: [f.seqOtherCores, ...f.runs.map((r) => r.otherCpuCores)].some((c) => c > NOISE_CORES),
    ...(f.profile
      ? {
          cpu_profile: {
            file: f.profile.file,
            busy_ms: round(f.profile.summary.busyMs, 0),
            stages: f.profile.summary.stages.slice(0, 10).map((s) => ({ stage: s.name, pct: round(s.pct, 1) })),
            top: f.profile.summary.functions.slice(0, 10).map((s) => ({ fn: s.name, pct: round(s.pct, 1) })),
          },
        }
      : {}),
  };
}

function flowCeilingJson(c: FlowCeilingResult | undefined) {
  if (!c) return null;
  return {
    fastify: c.fastify,
    frames: c.frames,
    bytes: c.bytes,
    first_event_ms: summaryJson(c.first.samples),
    confirm_flow_ms: summaryJson(c.flow.samples),
    throughput: c.runs.map(runJson),
    flows_completed: c.completed,
    flows_failed: c.failed,
  };
}

export function resultJson(rep: Report): Record<string, unknown> {
  const f0 = rep.stores[0];
  const c = rep.ceiling;
  const m = rep.memory;
  return {
    node: f0?.node ?? process.version,
    cpus: f0?.cpus ?? os.cpus().length,
    bench_s: round(rep.benchSeconds, 1),
    argv: rep.argv,
    server: rep.server,
    source: {
      hash: rep.source.start.hash,
      newest: rep.source.start.newest,
      newest_at: rep.source.start.newestAt,
      changed_during_run: rep.source.end.hash !== rep.source.start.hash,
    },
    targets: TARGETS,
    stores: Object.fromEntries(rep.stores.map((f) => [f.store, storeJson(f, c, rep.flowCeiling)])),
    flow_ceiling: flowCeilingJson(rep.flowCeiling),
    skipped: rep.skipped,
    long_stream: { chunks: rep.longChunks, chunk_chars: rep.longChunkChars },
    long_stream_ceiling: c
      ? {
          events: c.events,
          bytes: c.bytes,
          ms: round(c.ms, 1),
          events_per_s: round(c.eventsPerS, 1),
          mb_per_s: round(c.mbPerS, 2),
          runs_events_per_s: c.allEventsPerS.map((x) => round(x, 0)),
          error: c.error ?? null,
        }
      : null,
    memory: m.length
      ? m.map((m) => ({
          store: m.store,
          clients: m.clients,
          tasks_small: m.tasksSmall,
          tasks_large: m.tasksLarge,
          rss_idle_mb: m.rssIdleMb,
          rss_small_mb: m.rssSmallMb,
          rss_large_mb: m.rssLargeMb,
          rss_small_early_mb: m.rssSmallEarlyMb,
          rss_large_early_mb: m.rssLargeEarlyMb,
          settle_s: m.settleS,
          delta_mb: round(m.deltaMb, 1),
          limit_mb: MEMORY_LIMIT_MB,
          meets: m.meets,
          flows_per_s: round(m.flowsPerS, 1),
          completed: m.completed,
          failed: m.failed,
          error_types: Object.fromEntries(m.errors),
          timeline: m.timeline,
          seconds: round(m.seconds, 1),
        }))
      : { skipped: rep.memoryNote ?? 'not run' },
  };
}
