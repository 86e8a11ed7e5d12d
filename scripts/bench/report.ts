/**
 * Turns the benchmark's figures into the printed table (figures next to targets) and the
 * `BENCH_RESULT {...}` JSON line. Pure formatting: measures nothing.
 */
import type { ThroughputResult } from './phases.js';
import type { SequentialResult } from './phases.js';
import type { ProfileSummary } from './cpu-profile.js';
import { round } from './stats.js';
import type { Summary } from './stats.js';

export const TARGETS = {
  first_event_p50_ms: 2,
  confirm_flow_p50_ms: 15,
  flows_per_s_at_200: 1500,
  p99_at_200_ms: 100,
  rss_idle_mb: 100,
  start_to_ready_ms: 3000,
};

/** Above this many cores used by other processes during a measurement, figures are flagged. */
export const NOISE_CORES = 0.2;

export interface Figures {
  node: string;
  cpus: number;
  pid: number;
  pidCheck: { ok: boolean; detail: string };
  threads: number;
  readyMs: number;
  rssIdleMb: number;
  first: SequentialResult;
  flow: SequentialResult;
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
  serverExitCode: number | null;
  profile?: { file: string; summary: ProfileSummary };
}

const fmt = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
const mark = (ok: boolean) => (ok ? 'meets' : 'MISSES');
const perTaskKb = (f: Figures) => ((f.rssAfterMb - f.rssIdleMb) * 1024) / Math.max(1, f.tasksAfter);

function summaryJson(s: Summary) {
  return { n: s.n, p50: round(s.p50), p90: round(s.p90), p99: round(s.p99), max: round(s.max), mean: round(s.mean) };
}

function rows(f: Figures): string[][] {
  const t = TARGETS;
  const out: string[][] = [
    ['start to ready', `${fmt(f.readyMs, 0)} ms`, `≤ ${t.start_to_ready_ms} ms`, mark(f.readyMs <= t.start_to_ready_ms)],
    ['RSS idle (ready + 1 s)', `${fmt(f.rssIdleMb, 1)} MB`, `≤ ${t.rss_idle_mb} MB`, mark(f.rssIdleMb <= t.rss_idle_mb)],
    ['first flow on the fresh server', `${fmt(f.first.firstFlowMs, 1)} ms`, '', ''],
    [`first event p50 (n=${f.first.samples.n})`, `${fmt(f.first.samples.p50, 3)} ms`, `≤ ${t.first_event_p50_ms} ms`, mark(f.first.samples.p50 <= t.first_event_p50_ms)],
    ['first event p99', `${fmt(f.first.samples.p99, 3)} ms`, '', ''],
    [`confirm flow p50 (n=${f.flow.samples.n})`, `${fmt(f.flow.samples.p50, 3)} ms`, `≤ ${t.confirm_flow_p50_ms} ms`, mark(f.flow.samples.p50 <= t.confirm_flow_p50_ms)],
    ['confirm flow p99', `${fmt(f.flow.samples.p99, 3)} ms`, '', ''],
  ];
  for (const r of f.runs) {
    const is200 = r.clients === 200;
    const n = `${r.clients} clients:`;
    out.push(
      [`${n} flows/s`, fmt(r.flowsPerS, 0), is200 ? `≥ ${t.flows_per_s_at_200}` : '', is200 ? mark(r.flowsPerS >= t.flows_per_s_at_200) : ''],
      [`${n} flow p50`, `${fmt(r.latency.p50, 1)} ms`, '', ''],
      [`${n} flow p99`, `${fmt(r.latency.p99, 1)} ms`, is200 ? `≤ ${t.p99_at_200_ms} ms` : '', is200 ? mark(r.latency.p99 <= t.p99_at_200_ms) : ''],
      [`${n} errors`, String(r.errors), '0', mark(r.errors === 0)],
      [`${n} server CPU per flow (main thread)`, `${fmt(r.serverMsPerFlow)} (${fmt(r.mainMsPerFlow)}) ms`, '', ''],
      [`${n} CPU server (main) / bench / other`, `${fmt(r.serverCpuCores)} (${fmt(r.serverMainCores)}) / ${fmt(r.clientCpuCores)} / ${fmt(r.otherCpuCores)} cores`, '', r.otherCpuCores > NOISE_CORES ? 'NOISY' : ''],
    );
  }
  out.push([`RSS after ${f.tasksAfter} tasks`, `${fmt(f.rssAfterMb, 1)} MB`, '', ''], ['RSS growth per task', `${fmt(perTaskKb(f), 1)} KB`, '', '']);
  return out;
}

function profileLines(p: NonNullable<Figures['profile']>): string[] {
  const pct = (x: { pct: number; ms: number; name: string }) => `  ${fmt(x.pct, 1).padStart(5)}%  ${fmt(x.ms, 0).padStart(6)} ms  ${x.name}`;
  return [
    '',
    `CPU profile of the server's main thread during the throughput windows (${p.file}):`,
    `busy ${fmt(p.summary.busyMs, 0)} of ${fmt(p.summary.totalMs, 0)} ms sampled; time by stage (whole stack, first match):`,
    ...p.summary.stages.slice(0, 14).map(pct),
    'self time by function:',
    ...p.summary.functions.map(pct),
  ];
}

export function formatTable(f: Figures): string {
  const table = [['metric', 'value', 'target', ''], ...rows(f)];
  const w = [0, 1, 2, 3].map((i) => Math.max(...table.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => c.padEnd(w[i])).join('  ').trimEnd();
  const out = ['', `Benchmark: node ${f.node}, ${f.cpus} CPUs, server pid ${f.pid} (${f.pidCheck.ok ? 'verified serving' : 'NOT verified'}), ${f.threads} threads`, ''];
  out.push(line(table[0]), line(w.map((n) => '-'.repeat(n))), ...table.slice(1).map(line), '');
  out.push(`other processes' CPU: ${fmt(f.seqOtherCores)} cores during the sequential phases, ${f.runs.map((r) => `${fmt(r.otherCpuCores)} at ${r.clients} clients`).join(', ')}`);
  if ([f.seqOtherCores, ...f.runs.map((r) => r.otherCpuCores)].some((c) => c > NOISE_CORES)) {
    out.push(`WARNING: other processes used > ${NOISE_CORES} of ${f.cpus} cores during a measurement; the figures are contaminated, rerun on a quiet machine`);
  }
  out.push(`RSS timeline (after phase: tasks→RSS): ${f.timeline.map((t) => `${t.after} ${t.tasks}→${t.rss_mb} MB`).join(', ')}`);
  out.push(`flows: ${f.completed} completed, ${f.failed} failed${f.errors.size ? ` (${[...f.errors].map(([k, v]) => `${k}: ${v}`).join('; ')})` : ''}`);
  for (const ex of f.examples) out.push(`  e.g. ${ex}`);
  const held = f.firstTaskStillHeld === undefined ? 'not checked' : f.firstTaskStillHeld ? 'yes (tasks are never evicted)' : 'no';
  out.push(`first task still held by the server after ${f.tasksAfter} tasks: ${held}`);
  out.push(`server exit code after SIGTERM: ${f.serverExitCode}`);
  if (f.profile) out.push(...profileLines(f.profile));
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
    other_cpu_cores: round(r.otherCpuCores, 2),
    drain_ms: round(r.drainMs, 1),
  };
}

export function resultJson(f: Figures): Record<string, unknown> {
  const t = TARGETS;
  const at200 = f.runs.find((r) => r.clients === 200);
  return {
    node: f.node,
    cpus: f.cpus,
    pid_verified: f.pidCheck.ok,
    start_to_ready_ms: round(f.readyMs, 1),
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
    targets: t,
    meets: {
      start_to_ready: f.readyMs <= t.start_to_ready_ms,
      rss_idle: f.rssIdleMb <= t.rss_idle_mb,
      first_event_p50: f.first.samples.p50 <= t.first_event_p50_ms,
      confirm_flow_p50: f.flow.samples.p50 <= t.confirm_flow_p50_ms,
      flows_per_s_at_200: at200 ? at200.flowsPerS >= t.flows_per_s_at_200 : null,
      p99_at_200: at200 ? at200.latency.p99 <= t.p99_at_200_ms : null,
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
