/**
 * Benchmark of the real server (a figure printer, never an assertion): spawns
 * `node --import tsx src/main.ts` with the scripted model of scripts/bench-script.json
 * and drives RFC Appendix A flows over loopback HTTP+SSE (v0.3 `message/stream`).
 *
 *   npm run bench -- [--duration 5] [--warmup 1] [--clients 50,200] [--samples 200]
 *                    [--warmup-samples 50] [--min-tasks 1000] [--cpu-prof]
 *
 * Prints a table (figures next to targets) and one line `BENCH_RESULT {...}`. Exits 0
 * whenever it could measure; the child is killed on exit, on error and on SIGINT.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { summarizeProfile } from './bench/cpu-profile.js';
import { sequential, Tally, throughput } from './bench/phases.js';
import type { ThroughputResult } from './bench/phases.js';
import { formatTable, resultJson } from './bench/report.js';
import type { Figures } from './bench/report.js';
import { cpuSeconds, killNow, machineBusySeconds, rssBytes, spawnServer, stopServer, threadCount, verifyServingPid, waitReady } from './bench/server-process.js';
import type { RunningServer } from './bench/server-process.js';
import { BenchClient } from './bench/sse-client.js';
import { mb } from './bench/stats.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SCRIPT = path.join(REPO, 'scripts', 'bench-script.json');
const USAGE = 'usage: npm run bench -- [--duration s] [--warmup s] [--clients 50,200] [--samples n] [--warmup-samples n] [--min-tasks n] [--cpu-prof]\n';

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
    if (v === undefined || v.trim() === '' || !Number.isFinite(n) || n < min) throw new Error(`${flag} needs a number ≥ ${min}, got ${v}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const eq = argv[i].indexOf('=');
    const name = eq < 0 ? argv[i] : argv[i].slice(0, eq);
    const value = () => (eq < 0 ? argv[++i] : argv[i].slice(eq + 1));
    if (name === '--duration') args.durationS = num(name, value(), 0.1);
    else if (name === '--warmup') args.warmupS = num(name, value(), 0);
    else if (name === '--samples') args.samples = Math.floor(num(name, value(), 1));
    else if (name === '--warmup-samples') args.warmupSamples = Math.floor(num(name, value(), 0));
    else if (name === '--min-tasks') args.minTasks = Math.floor(num(name, value(), 0));
    else if (name === '--clients') args.clients = String(value()).split(',').map((s) => Math.floor(num(name, s, 1)));
    else if (name === '--cpu-prof') args.cpuProf = true;
    else if (name === '--help' || name === '-h') {
      process.stdout.write(USAGE);
      process.exit(0);
    } else throw new Error(`unknown flag ${argv[i]}\n${USAGE}`);
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

/** CPU seconds of the machine, the server and this process at one moment. */
function cpuMark(pid: number) {
  return { at: performance.now(), machine: machineBusySeconds(), server: cpuSeconds(pid), bench: process.cpuUsage() };
}

/** Cores used by everything but the server and this process between two marks (other sessions, kernel). */
function otherCores(a: ReturnType<typeof cpuMark>, b: ReturnType<typeof cpuMark>): number {
  const bench = (b.bench.user + b.bench.system - a.bench.user - a.bench.system) / 1e6;
  return Math.max(0, b.machine - a.machine - (b.server - a.server) - bench) / ((b.at - a.at) / 1000);
}

/** Phases 3–6 against a ready server: sequential latencies, throughput runs, RSS after ≥ minTasks. */
async function measure(srv: RunningServer, args: Args) {
  const tally = new Tally();
  const timeline: Figures['timeline'] = [];
  const snap = (after: string) => timeline.push({ after, tasks: tally.completed + tally.failed, rss_mb: mb(rssBytes(srv.pid)) });
  snap('idle');
  const seqClient = new BenchClient(srv.url, 32);
  const seqStart = cpuMark(srv.pid);
  log(`first-event latency: ${args.warmupSamples} warm-up + ${args.samples} sequential flows`);
  const first = await sequential(seqClient, tally, args.warmupSamples, args.samples, (r) => r.firstEventMs);
  snap('first-event');
  log(`confirm flow: ${args.samples} sequential flows`);
  const flow = await sequential(seqClient, tally, 0, args.samples, (r) => r.flowMs);
  snap('confirm-flow');
  const seqOtherCores = otherCores(seqStart, cpuMark(srv.pid));
  const runs: ThroughputResult[] = [];
  for (const n of args.clients) {
    log(`throughput: ${n} clients, ${args.warmupS} s warm-up + ${args.durationS} s`);
    runs.push(await throughput(srv.url, srv.pid, tally, n, args.warmupS, args.durationS));
    snap(`throughput-${n}`);
  }
  for (let topUp = 0; tally.completed < args.minTasks && topUp < args.minTasks * 2; ) {
    const batch = await Promise.all(Array.from({ length: Math.min(20, args.minTasks - tally.completed) }, () => seqClient.flow()));
    for (const r of batch) tally.record(r);
    topUp += batch.length;
  }
  await delay(1000);
  snap('all (+1 s)');
  const held = tally.firstTaskId ? await seqClient.call('tasks/get', { id: tally.firstTaskId, historyLength: 0 }) : undefined;
  seqClient.destroy();
  const last = timeline[timeline.length - 1];
  return {
    first, flow, seqOtherCores, runs, timeline,
    tasksAfter: last.tasks, rssAfterMb: last.rss_mb,
    completed: tally.completed, failed: tally.failed, errors: tally.errors, examples: tally.examples,
    firstTaskStillHeld: held === undefined ? undefined : Boolean(held.result),
  };
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

  const nodeArgs = profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [];
  log(`spawning ${[process.execPath, ...nodeArgs, '--import tsx src/main.ts'].join(' ')}`);
  server = await spawnServer({ repoRoot: REPO, scriptFile: SCRIPT, nodeArgs });
  const srv = server;
  const readyMs = await waitReady(srv);
  const pidCheck = verifyServingPid(srv.pid, srv.port);
  log(`ready in ${readyMs.toFixed(0)} ms; ${pidCheck.detail}`);
  await delay(1000);
  const rssIdleMb = mb(rssBytes(srv.pid));
  const threads = threadCount(srv.pid);
  const m = await measure(srv, args);
  const serverExitCode = await stopServer(srv);
  rmSync(srv.workspace, { recursive: true, force: true });

  const file = profDir ? readdirSync(profDir).find((f) => f.endsWith('.cpuprofile')) : undefined;
  const profile = profDir && file
    ? { file: path.join(profDir, file), summary: summarizeProfile(path.join(profDir, file), 20, m.runs.map((r) => r.window)) }
    : undefined;
  const figures: Figures = {
    node: process.version, cpus: os.cpus().length, pid: srv.pid, pidCheck, threads, readyMs, rssIdleMb, serverExitCode, profile, ...m,
  };
  process.stdout.write(formatTable(figures));
  process.stdout.write(`\nBENCH_RESULT ${JSON.stringify(resultJson(figures))}\n`);
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
  if (server) process.stderr.write(`server output:\n${server.output()}\n`);
  killNow(server);
  process.exit(1);
});
