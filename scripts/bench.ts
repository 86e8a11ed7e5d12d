/**
 * Benchmark of the real server (a figure printer, never an assertion): spawns
 * `node --import tsx src/main.ts` with the scripted model of scripts/bench-script.json
 * and drives RFC Appendix A flows over loopback HTTP+SSE (v0.3 `message/stream`).
 *
 *   npm run bench -- [--duration 5] [--warmup 1] [--clients 50,200] [--samples 200]
 *                    [--warmup-samples 50] [--min-tasks 1000] [--cpu-prof]
 *
 * Prints a table (figures next to targets) and one line `BENCH_RESULT {...}`.
 * Always exits 0 when it could measure; the child is killed on exit, error or SIGINT.
 */
import { mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { sequential, Tally, throughput } from './bench/phases.js';
import type { ThroughputResult } from './bench/phases.js';
import { summarizeProfile } from './bench/cpu-profile.js';
import { cpuSeconds, killNow, machineBusySeconds, rssBytes, spawnServer, stopServer, threadCount, verifyServingPid, waitReady } from './bench/server-process.js';
import type { RunningServer } from './bench/server-process.js';
import { BenchClient } from './bench/sse-client.js';
import { mb, round } from './bench/stats.js';
import type { Summary } from './bench/stats.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SCRIPT = path.join(REPO, 'scripts', 'bench-script.json');

const TARGETS = {
  first_event_p50_ms: 2,
  confirm_flow_p50_ms: 15,
  flows_per_s_at_200: 1500,
  p99_at_200_ms: 100,
  rss_idle_mb: 100,
  start_to_ready_ms: 3000,
};

interface Args {
  durationS: number;
  warmupS: number;
  clients: number[];
  samples: number;
  warmupSamples: number;
  minTasks: number;
  cpuProf: boolean;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { durationS: 5, warmupS: 1, clients: [50, 200], samples: 200, warmupSamples: 50, minTasks: 1000, cpuProf: false };
  const num = (flag: string, v: string | undefined, min: number): number => {
    const n = Number(v);
    if (v === undefined || !Number.isFinite(n) || n < min) throw new Error(`${flag} needs a number ≥ ${min}, got ${v}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const [name, inline] = flag.includes('=') ? flag.split('=', 2) : [flag, undefined];
    const value = () => inline ?? argv[++i];
    switch (name) {
      case '--duration': args.durationS = num(name, value(), 0.1); break;
      case '--warmup': args.warmupS = num(name, value(), 0); break;
      case '--samples': args.samples = Math.floor(num(name, value(), 1)); break;
      case '--warmup-samples': args.warmupSamples = Math.floor(num(name, value(), 0)); break;
      case '--min-tasks': args.minTasks = Math.floor(num(name, value(), 0)); break;
      case '--cpu-prof': args.cpuProf = true; break;
      case '--clients': {
        const list = String(value()).split(',').map((s) => Math.floor(num(name, s.trim(), 1)));
        args.clients = list;
        break;
      }
      case '--help': case '-h':
        process.stdout.write('usage: npm run bench -- [--duration s] [--warmup s] [--clients 50,200] [--samples n] [--warmup-samples n] [--min-tasks n] [--cpu-prof]\n');
        process.exit(0);
        break;
      default: throw new Error(`unknown flag ${flag} (try --help)`);
    }
  }
  return args;
}

let server: RunningServer | undefined;
process.on('exit', () => killNow(server));
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    process.stderr.write(`\nbench: ${sig}, killing the server\n`);
    killNow(server);
    process.exit(130);
  });
}

const log = (s: string) => process.stderr.write(`bench: ${s}\n`);
const fmt = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
const mark = (ok: boolean) => (ok ? 'meets' : 'MISSES');

function rssMb(pid: number): number {
  return mb(rssBytes(pid));
}

interface CpuMark {
  at: number;
  machine: number;
  server: number;
  bench: NodeJS.CpuUsage;
}

function cpuMark(pid: number): CpuMark {
  return { at: performance.now(), machine: machineBusySeconds(), server: cpuSeconds(pid), bench: process.cpuUsage() };
}

/** Cores used by everything but the server and this process between two marks (other sessions, kernel). */
function otherCores(a: CpuMark, b: CpuMark): number {
  const bench = (b.bench.user + b.bench.system - a.bench.user - a.bench.system) / 1e6;
  const other = b.machine - a.machine - (b.server - a.server) - bench;
  return Math.max(0, other) / ((b.at - a.at) / 1000);
}

function sumJson(s: Summary) {
  return { n: s.n, p50: round(s.p50), p90: round(s.p90), p99: round(s.p99), max: round(s.max), mean: round(s.mean) };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const profDir = args.cpuProf ? mkdtempSync(path.join(os.tmpdir(), 'devtool-bench-prof-')) : undefined;
  const watchdogS = 120 + args.clients.length * (args.warmupS + args.durationS + 40);
  setTimeout(() => {
    log(`watchdog: still running after ${watchdogS} s, giving up`);
    killNow(server);
    process.exit(1);
  }, watchdogS * 1000).unref();

  log(`spawning the server (${process.execPath}${profDir ? ` --cpu-prof --cpu-prof-dir=${profDir}` : ''} --import tsx src/main.ts)`);
  server = await spawnServer({ repoRoot: REPO, scriptFile: SCRIPT, nodeArgs: profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : undefined });
  const srv = server;
  const readyMs = await waitReady(srv);
  const pidCheck = verifyServingPid(srv.pid, srv.port);
  log(`ready in ${fmt(readyMs, 0)} ms; ${pidCheck.detail}`);
  await delay(1000);
  const rssIdle = rssMb(srv.pid);
  const threads = threadCount(srv.pid);
  const timeline: { after: string; tasks: number; rss_mb: number }[] = [{ after: 'idle', tasks: 0, rss_mb: rssIdle }];
  const tally = new Tally();
  const snap = (after: string) => timeline.push({ after, tasks: tally.completed + tally.failed, rss_mb: rssMb(srv.pid) });

  const seqClient = new BenchClient(srv.url, 32);
  const seqStart = cpuMark(srv.pid);
  log(`first-event latency: ${args.warmupSamples} warm-up + ${args.samples} sequential flows`);
  const first = await sequential(seqClient, tally, args.warmupSamples, args.samples, (r) => r.firstEventMs);
  snap('first-event');
  log(`confirm flow: ${args.samples} sequential flows`);
  const flow = await sequential(seqClient, tally, 0, args.samples, (r) => r.flowMs);
  snap('confirm-flow');
  const seqOther = otherCores(seqStart, cpuMark(srv.pid));

  const runs: ThroughputResult[] = [];
  for (const n of args.clients) {
    log(`throughput: ${n} clients, ${args.warmupS} s warm-up + ${args.durationS} s`);
    runs.push(await throughput(srv.url, srv.pid, tally, n, args.warmupS, args.durationS));
    snap(`throughput-${n}`);
  }
  let topUp = 0;
  while (tally.completed < args.minTasks && topUp < args.minTasks * 2) {
    const batch = await Promise.all(Array.from({ length: Math.min(20, args.minTasks - tally.completed) }, () => seqClient.flow()));
    for (const r of batch) tally.record(r);
    topUp += batch.length;
  }
  if (topUp > 0) log(`topped up with ${topUp} flows`);
  await delay(1000);
  const rssAfter = rssMb(srv.pid);
  const tasksAfter = tally.completed + tally.failed;
  timeline.push({ after: 'all (+1 s)', tasks: tasksAfter, rss_mb: rssAfter });
  const stillHeld = tally.firstTaskId ? await seqClient.call('tasks/get', { id: tally.firstTaskId, historyLength: 0 }) : undefined;
  seqClient.destroy();

  const exitCode = await stopServer(srv);
  const profile = profDir ? readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile')) : [];
  const prof = profDir && profile.length > 0 ? summarizeProfile(path.join(profDir, profile[0]), 20, runs.map((r) => r.window)) : undefined;

  // ---- report ---------------------------------------------------------------------
  const at200 = runs.find((r) => r.clients === 200);
  const rows: [string, string, string, string][] = [
    ['start to ready', `${fmt(readyMs, 0)} ms`, `≤ ${TARGETS.start_to_ready_ms} ms`, mark(readyMs <= TARGETS.start_to_ready_ms)],
    ['RSS idle (ready + 1 s)', `${fmt(rssIdle, 1)} MB`, `≤ ${TARGETS.rss_idle_mb} MB`, mark(rssIdle <= TARGETS.rss_idle_mb)],
    ['first flow on the fresh server', `${fmt(first.firstFlowMs, 1)} ms`, '', ''],
    [`first event p50 (n=${first.samples.n})`, `${fmt(first.samples.p50, 3)} ms`, `≤ ${TARGETS.first_event_p50_ms} ms`, mark(first.samples.p50 <= TARGETS.first_event_p50_ms)],
    ['first event p99', `${fmt(first.samples.p99, 3)} ms`, '', ''],
    [`confirm flow p50 (n=${flow.samples.n})`, `${fmt(flow.samples.p50, 3)} ms`, `≤ ${TARGETS.confirm_flow_p50_ms} ms`, mark(flow.samples.p50 <= TARGETS.confirm_flow_p50_ms)],
    ['confirm flow p99', `${fmt(flow.samples.p99, 3)} ms`, '', ''],
  ];
  for (const r of runs) {
    const is200 = r.clients === 200;
    rows.push(
      [`${r.clients} clients: flows/s`, fmt(r.flowsPerS, 0), is200 ? `≥ ${TARGETS.flows_per_s_at_200}` : '', is200 ? mark(r.flowsPerS >= TARGETS.flows_per_s_at_200) : ''],
      [`${r.clients} clients: flow p50`, `${fmt(r.latency.p50, 1)} ms`, '', ''],
      [`${r.clients} clients: flow p99`, `${fmt(r.latency.p99, 1)} ms`, is200 ? `≤ ${TARGETS.p99_at_200_ms} ms` : '', is200 ? mark(r.latency.p99 <= TARGETS.p99_at_200_ms) : ''],
      [`${r.clients} clients: server CPU per flow (main thread)`, `${fmt(r.serverMsPerFlow)} (${fmt(r.mainMsPerFlow)}) ms`, '', ''],
      [`${r.clients} clients: errors`, String(r.errors), '0', r.errors === 0 ? 'meets' : 'MISSES'],
      [`${r.clients} clients: CPU server (main) / bench / other`, `${fmt(r.serverCpuCores)} (${fmt(r.serverMainCores)}) / ${fmt(r.clientCpuCores)} / ${fmt(r.otherCpuCores)} cores`, '', r.otherCpuCores > 0.2 ? 'NOISY' : ''],
    );
  }
  rows.push([`RSS after ${tasksAfter} tasks`, `${fmt(rssAfter, 1)} MB`, '', ''],
    ['RSS growth per task', `${fmt(((rssAfter - rssIdle) * 1024) / Math.max(1, tasksAfter), 1)} KB`, '', '']);
  const w = [0, 1, 2, 3].map((i) => Math.max(...rows.map((r) => r[i].length), ['metric', 'value', 'target', ''][i].length));
  const line = (r: string[]) => r.map((c, i) => c.padEnd(w[i])).join('  ').trimEnd();
  const out: string[] = ['', `Benchmark: node ${process.version}, ${os.cpus().length} CPUs, server pid ${srv.pid} (${pidCheck.ok ? 'verified serving' : 'NOT verified'}), ${threads} threads`, ''];
  out.push(line(['metric', 'value', 'target', '']), line(w.map((n) => '-'.repeat(n))), ...rows.map(line), '');
  const noisy = [seqOther, ...runs.map((r) => r.otherCpuCores)].some((c) => c > 0.2);
  out.push(`other processes' CPU: ${fmt(seqOther)} cores during the sequential phases, ${runs.map((r) => `${fmt(r.otherCpuCores)} at ${r.clients} clients`).join(', ')}`);
  if (noisy) out.push(`WARNING: other processes used > 0.2 of ${os.cpus().length} cores during a measurement; the figures are contaminated, rerun on a quiet machine`);
  out.push(`RSS timeline: ${timeline.map((t) => `${t.after} ${t.tasks}→${t.rss_mb} MB`).join(', ')}`);
  out.push(`flows: ${tally.completed} completed, ${tally.failed} failed${tally.errors.size ? ` (${[...tally.errors].map(([k, v]) => `${k}: ${v}`).join('; ')})` : ''}`);
  for (const ex of tally.examples) out.push(`  e.g. ${ex}`);
  out.push(`first task still held by the server after ${tasksAfter} tasks: ${stillHeld?.result ? 'yes (tasks are never evicted)' : `no (${JSON.stringify(stillHeld?.error ?? null)})`}`);
  out.push(`server exit code after SIGTERM: ${exitCode}`);
  if (prof) {
    out.push('', `CPU profile of the server's main thread during the throughput windows (${path.join(profDir as string, profile[0])}):`, `busy ${fmt(prof.busyMs, 0)} of ${fmt(prof.totalMs, 0)} ms sampled; time by stage (whole stack):`);
    for (const a of prof.stages.slice(0, 14)) out.push(`  ${fmt(a.pct, 1).padStart(5)}%  ${fmt(a.ms, 0).padStart(6)} ms  ${a.name}`);
    out.push('self time by function:');
    for (const f of prof.functions) out.push(`  ${fmt(f.pct, 1).padStart(5)}%  ${fmt(f.ms, 0).padStart(6)} ms  ${f.name}`);
  }
  process.stdout.write(`${out.join('\n')}\n\n`);

  const result = {
    node: process.version,
    cpus: os.cpus().length,
    pid_verified: pidCheck.ok,
    start_to_ready_ms: round(readyMs, 1),
    rss_idle_mb: rssIdle,
    cold_first_flow_ms: round(first.firstFlowMs, 1),
    first_event_ms: sumJson(first.samples),
    first_event_errors: first.errors,
    confirm_flow_ms: sumJson(flow.samples),
    confirm_flow_errors: flow.errors,
    sequential_other_cpu_cores: round(seqOther, 2),
    throughput: runs.map((r) => ({
      clients: r.clients,
      warmup_s: r.warmupS,
      duration_s: r.durationS,
      flows: r.flows,
      flows_per_s: round(r.flowsPerS, 1),
      latency_ms: sumJson(r.latency),
      errors: r.errors,
      error_types: r.errorTypes,
      server_cpu_cores: round(r.serverCpuCores, 2),
      server_main_thread_cores: round(r.serverMainCores, 2),
      other_cpu_cores: round(r.otherCpuCores, 2),
      server_cpu_ms_per_flow: round(r.serverMsPerFlow, 3),
      main_thread_cpu_ms_per_flow: round(r.mainMsPerFlow, 3),
      client_cpu_cores: round(r.clientCpuCores, 2),
      drain_ms: round(r.drainMs, 1),
    })),
    tasks_total: tasksAfter,
    flows_completed: tally.completed,
    flows_failed: tally.failed,
    rss_after_tasks_mb: rssAfter,
    rss_per_task_kb: round(((rssAfter - rssIdle) * 1024) / Math.max(1, tasksAfter), 2),
    rss_timeline: timeline,
    first_task_still_held: Boolean(stillHeld?.result),
    targets: TARGETS,
    meets: {
      start_to_ready: readyMs <= TARGETS.start_to_ready_ms,
      rss_idle: rssIdle <= TARGETS.rss_idle_mb,
      first_event_p50: first.samples.p50 <= TARGETS.first_event_p50_ms,
      confirm_flow_p50: flow.samples.p50 <= TARGETS.confirm_flow_p50_ms,
      flows_per_s_at_200: at200 ? at200.flowsPerS >= TARGETS.flows_per_s_at_200 : null,
      p99_at_200: at200 ? at200.latency.p99 <= TARGETS.p99_at_200_ms : null,
    },
    ...(prof ? { cpu_profile: { file: path.join(profDir as string, profile[0]), busy_ms: round(prof.busyMs, 0), top: prof.functions.slice(0, 10).map((f) => ({ fn: f.name, pct: round(f.pct, 1) })) } } : {}),
  };
  process.stdout.write(`BENCH_RESULT ${JSON.stringify(result)}\n`);
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
  if (server) process.stderr.write(`server output:\n${server.output()}\n`);
  killNow(server);
  process.exit(1);
});
