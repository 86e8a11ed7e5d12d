/**
 * The flow ceiling: what a confirm flow costs with nothing of ours in it. A bare Fastify server
 * (scripts/bench/flow-ceiling-server.mjs, a process of its own like the measured server, so it
 * neither shares this process's event loop nor its core) answers the flow's two POSTs with the 9
 * SSE frames captured from the real server's confirm flow in the same run (4 on the new task, 5 on
 * the confirm), with no store and no model. The same client code (BenchClient.flow, with its
 * order and id checks) drives it through the same phases as the server (phases.ts): sequential
 * first event and confirm flow at one client, then flows/s and p50/p99 at each client count.
 * Each of the server's figures is then printed as a share of this one (shareOfCeiling).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { sequential, Tally, throughput } from './phases.js';
import type { SequentialResult, ThroughputResult } from './phases.js';
import { BenchClient } from './sse-client.js';
import type { FlowResult } from './sse-client.js';

const SERVER = fileURLToPath(new URL('./flow-ceiling-server.mjs', import.meta.url));

/** The raw SSE blocks of one confirm flow of the real server: its new-task stream and its confirm stream. */
export interface FlowFrames {
  first: string[];
  confirm: string[];
}

/** Runs one flow with `client`, keeping its frames when it passed every check (undefined when it did not). */
export async function captureFlow(client: BenchClient): Promise<{ result: FlowResult; frames?: FlowFrames }> {
  const frames: FlowFrames = { first: [], confirm: [] };
  const result = await client.flow((stream, raw) => frames[stream].push(raw));
  return { result, frames: result.ok ? frames : undefined };
}

export interface FlowCeilingOptions {
  warmupSamples: number;
  samples: number;
  clients: number[];
  warmupS: number;
  durationS: number;
  log: (line: string) => void;
  /** Told of the child as soon as it exists (the bench kills it on SIGINT). */
  onSpawn?: (child: ChildProcess) => void;
}

export interface FlowCeilingResult {
  /** Fastify's version in the ceiling server (the one the server runs). */
  fastify: string;
  /** Frames per flow (first stream + confirm stream) and their bytes. */
  frames: number;
  bytes: number;
  first: SequentialResult;
  flow: SequentialResult;
  runs: ThroughputResult[];
  completed: number;
  failed: number;
  /** The first failures, if any (a ceiling that fails the client's checks measures nothing). */
  examples: string[];
}

async function startCeilingServer(frames: FlowFrames, onSpawn?: (child: ChildProcess) => void) {
  const child = spawn(process.execPath, [SERVER], {
    env: { PATH: process.env.PATH ?? '' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  onSpawn?.(child);
  if (child.pid === undefined) throw new Error('flow ceiling: spawn failed');
  const ready = await new Promise<{ port: number; fastify: string }>((resolve, reject) => {
    child.once('message', (m) => resolve(m as { port: number; fastify: string }));
    child.once('exit', (code) => reject(new Error(`flow ceiling server exited with ${code} before listening`)));
    child.send(frames);
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.send('stop');
    const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
    await exited;
    clearTimeout(timer);
  };
  return { pid: child.pid, url: `http://127.0.0.1:${ready.port}/`, fastify: ready.fastify, stop };
}

/** Serves `frames` from bare Fastify and measures it with the server's phases. */
export async function flowCeiling(frames: FlowFrames, o: FlowCeilingOptions): Promise<FlowCeilingResult> {
  const srv = await startCeilingServer(frames, o.onSpawn);
  try {
    const tally = new Tally();
    const client = new BenchClient(srv.url, 32);
    o.log(`flow ceiling (bare Fastify ${srv.fastify}, pid ${srv.pid}): ${o.warmupSamples} warm-up + ${o.samples} sequential flows, twice`);
    const first = await sequential(client, tally, o.warmupSamples, o.samples, (r) => r.firstEventMs);
    const flow = await sequential(client, tally, 0, o.samples, (r) => r.flowMs);
    client.destroy();
    const runs: ThroughputResult[] = [];
    for (const n of o.clients) {
      o.log(`flow ceiling: ${n} clients, ${o.warmupS} s warm-up + ${o.durationS} s`);
      runs.push(await throughput(srv.url, srv.pid, tally, n, o.warmupS, o.durationS));
    }
    const all = [...frames.first, ...frames.confirm];
    return {
      fastify: srv.fastify,
      frames: all.length,
      bytes: all.reduce((s, f) => s + Buffer.byteLength(f), 0),
      first,
      flow,
      runs,
      completed: tally.completed,
      failed: tally.failed,
      examples: tally.examples,
    };
  } finally {
    await srv.stop();
  }
}

/** One of the server's figures beside the ceiling's: `pct` is the server's share of the ceiling's speed. */
export interface CeilingShare {
  key: string;
  label: string;
  ours: number;
  ceiling: number;
  unit: 'ms' | 'flows/s';
  /** flows/s: ours / ceiling; a latency: ceiling / ours (the ceiling's time is that share of ours). In %. */
  pct: number;
}

/** The server's sequential and throughput figures as shares of the ceiling's (client counts both ran). */
export function shareOfCeiling(
  ours: { first: SequentialResult; flow: SequentialResult; runs: ThroughputResult[] },
  c: Pick<FlowCeilingResult, 'first' | 'flow' | 'runs'>,
): CeilingShare[] {
  const latency = (key: string, label: string, o: number, x: number): CeilingShare => ({
    key,
    label,
    ours: o,
    ceiling: x,
    unit: 'ms',
    pct: (100 * x) / o,
  });
  const out = [
    latency('fe50', 'first event p50, 1 client', ours.first.samples.p50, c.first.samples.p50),
    latency('cf50', 'confirm flow p50, 1 client', ours.flow.samples.p50, c.flow.samples.p50),
  ];
  for (const r of ours.runs) {
    const x = c.runs.find((cr) => cr.clients === r.clients);
    if (!x) continue;
    out.push({
      key: `run${r.clients}-fps`,
      label: `flows/s at ${r.clients} clients`,
      ours: r.flowsPerS,
      ceiling: x.flowsPerS,
      unit: 'flows/s',
      pct: (100 * r.flowsPerS) / x.flowsPerS,
    });
    out.push(latency(`run${r.clients}-p99`, `flow p99 at ${r.clients} clients`, r.latency.p99, x.latency.p99));
  }
  return out;
}
