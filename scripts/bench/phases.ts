/**
 * The measured phases: sequential first-event latency, sequential confirm flows, and
 * N concurrent clients looping flows for a fixed time. Bounded loops only.
 */
import { performance } from 'node:perf_hooks';
import { BenchClient } from './sse-client.js';
import type { FlowResult } from './sse-client.js';
import { commCpuSeconds, cpuSeconds, machineBusySeconds } from './server-process.js';
import { monotonicUs } from './cpu-profile.js';
import type { Window } from './cpu-profile.js';
import { summarize } from './stats.js';
import type { Breakdown } from './phase-tally.js';
import type { Summary } from './stats.js';

/** Counts what a phase did, by outcome, across the whole run. */
export class Tally {
  completed = 0;
  failed = 0;
  readonly errors = new Map<string, number>();
  readonly examples: string[] = [];
  firstTaskId?: string;

  record(r: FlowResult): void {
    if (r.ok) {
      this.completed++;
      this.firstTaskId ??= r.taskId;
      return;
    }
    this.failed++;
    const key = r.error ?? 'unknown';
    this.errors.set(key, (this.errors.get(key) ?? 0) + 1);
    if (this.examples.length < 5) this.examples.push(`${key}${r.detail ? ` — got: ${r.detail}` : ''}`);
  }
}

export interface SequentialResult {
  samples: Summary;
  errors: number;
  /** The phase's very first flow (on a fresh server: cold code paths, JIT). */
  firstFlowMs: number;
}

/** Sequential flows: `warmup` unrecorded, then `samples` recorded, picking one figure per flow. */
export async function sequential(
  client: BenchClient,
  tally: Tally,
  warmup: number,
  samples: number,
  pick: (r: FlowResult) => number,
): Promise<SequentialResult> {
  const values: number[] = [];
  let errors = 0;
  let firstFlowMs = Number.NaN;
  for (let i = 0; i < warmup + samples; i++) {
    const r = await client.flow();
    tally.record(r);
    if (i === 0) firstFlowMs = r.flowMs;
    if (i < warmup) continue;
    if (r.ok) values.push(pick(r));
    else errors++;
  }
  return { samples: summarize(values), errors, firstFlowMs };
}

export interface ThroughputResult {
  clients: number;
  warmupS: number;
  durationS: number;
  /** Flows that completed inside the measured window (latency: those of them that also started in it). */
  flows: number;
  flowsPerS: number;
  latency: Summary;
  /** Failed flows over the whole phase (warm-up, window and drain). */
  errors: number;
  errorTypes: Record<string, number>;
  /** Server CPU (all threads) during the window, in cores (1.0 = one core busy). */
  serverCpuCores: number;
  /** The server's main (JS) thread alone: near 1.0 means the event loop is saturated. */
  serverMainCores: number;
  /** Server CPU per completed flow, ms (all threads / main thread): robust to a busy machine. */
  serverMsPerFlow: number;
  mainMsPerFlow: number;
  /** PostgreSQL processes (all of the machine's postgres server, not only the bench database), in cores. */
  dbCpuCores: number;
  /** Everything else on the machine (other processes, kernel; not postgres), in cores: noise. */
  otherCpuCores: number;
  /** Whole phase (warm-up + window + drain): completed flows, seconds, flows/s, latency of every completed flow. */
  phaseFlows: number;
  phaseS: number;
  phaseFlowsPerS: number;
  phaseLatency: Summary;
  /** This process's CPU during the window, in cores. */
  clientCpuCores: number;
  /** Time the last in-flight flow took to finish after the window closed. */
  drainMs: number;
  /** The measured window on CLOCK_MONOTONIC (to cut a --cpu-prof profile to it). */
  window: Window;
  /** Server time per phase, statements and round trips per completed flow, over the whole phase (with the probe; set by the caller). */
  breakdown?: Breakdown;
}

/** CPU seconds so far of the server (all threads, main thread), the machine, postgres and this process; the clock. */
function cpuSample(pid: number) {
  return {
    server: cpuSeconds(pid),
    main: cpuSeconds(pid, pid),
    machine: machineBusySeconds(),
    db: commCpuSeconds('postgres'),
    client: process.cpuUsage(),
    us: monotonicUs(),
  };
}

/** N clients, each looping full flows; counts flows that end inside [warm-up end, + duration]. */
export async function throughput(
  url: string,
  pid: number,
  tally: Tally,
  clients: number,
  warmupS: number,
  durationS: number,
): Promise<ThroughputResult> {
  const client = new BenchClient(url, Math.max(clients, 1));
  const t0 = performance.now();
  const from = t0 + warmupS * 1000;
  const to = from + durationS * 1000;
  const latencies: number[] = [];
  const allLatencies: number[] = [];
  const errorTypes: Record<string, number> = {};
  let errors = 0;
  let flows = 0;
  const sample = () => cpuSample(pid);
  let cpuAtStart = sample();
  let cpuAtEnd = cpuAtStart;
  const startTimer = setTimeout(() => (cpuAtStart = sample()), warmupS * 1000);
  let endSampled = false;
  const endTimer = setTimeout(() => {
    cpuAtEnd = sample();
    endSampled = true;
  }, to - t0);

  const worker = async () => {
    while (performance.now() < to) {
      const r = await client.flow();
      const end = performance.now();
      tally.record(r);
      if (!r.ok) {
        errors++;
        const key = r.error ?? 'unknown';
        errorTypes[key] = (errorTypes[key] ?? 0) + 1;
        continue;
      }
      allLatencies.push(r.flowMs);
      if (end >= from && end <= to) {
        flows++;
        // Latency only of flows that started after the warm-up (no cold-burst tail).
        if (end - r.flowMs >= from) latencies.push(r.flowMs);
      }
    }
  };
  await Promise.all(Array.from({ length: clients }, worker));
  // The timer can be late (a busy loop): the workers then see the window closed before it fires.
  if (!endSampled) cpuAtEnd = sample();
  const phaseEnd = performance.now();
  const drainMs = phaseEnd - to;
  clearTimeout(startTimer);
  clearTimeout(endTimer);
  client.destroy();
  const clientUs = cpuAtEnd.client.user + cpuAtEnd.client.system - cpuAtStart.client.user - cpuAtStart.client.system;
  const serverS = cpuAtEnd.server - cpuAtStart.server;
  const machineS = cpuAtEnd.machine - cpuAtStart.machine;
  const dbS = Math.max(0, cpuAtEnd.db - cpuAtStart.db); // negative when a postgres backend exited in between
  const phaseS = (phaseEnd - t0) / 1000;
  return {
    clients,
    warmupS,
    durationS,
    flows,
    flowsPerS: flows / durationS,
    latency: summarize(latencies),
    errors,
    errorTypes,
    serverCpuCores: serverS / durationS,
    serverMainCores: (cpuAtEnd.main - cpuAtStart.main) / durationS,
    serverMsPerFlow: (serverS * 1000) / Math.max(1, flows),
    mainMsPerFlow: ((cpuAtEnd.main - cpuAtStart.main) * 1000) / Math.max(1, flows),
    dbCpuCores: dbS / durationS,
    otherCpuCores: Math.max(0, machineS - serverS - dbS - clientUs / 1e6) / durationS,
    phaseFlows: allLatencies.length,
    phaseS,
    phaseFlowsPerS: allLatencies.length / phaseS,
    phaseLatency: summarize(allLatencies),
    clientCpuCores: clientUs / 1e6 / durationS,
    drainMs,
    window: { fromUs: cpuAtStart.us, toUs: cpuAtEnd.us },
  };
}
