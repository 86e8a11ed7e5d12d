/**
 * The durable-state memory figure: on a fresh server, RSS after 100 short tasks and after
 * 10,000 (full Appendix A flows by N concurrent clients), each read after the load stops
 * and the server settles. Requirement: RSS(10,000) ≤ RSS(100) + 30 MB.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { Tally } from './phases.js';
import { rssBytes } from './server-process.js';
import { BenchClient } from './sse-client.js';
import { mb } from './stats.js';

export const MEMORY_LIMIT_MB = 30;

export interface MemoryResult {
  clients: number;
  tasksSmall: number;
  tasksLarge: number;
  rssIdleMb: number;
  rssSmallMb: number;
  rssLargeMb: number;
  deltaMb: number;
  meets: boolean;
  /** RSS while loading, every `every` tasks, with the seconds since the load began (flows/s per segment). */
  timeline: { tasks: number; rss_mb: number; s: number }[];
  flowsPerS: number;
  seconds: number;
  completed: number;
  failed: number;
  errors: Map<string, number>;
  examples: string[];
}

/** `clients` workers run flows until `count` have been started; returns when all are done. */
async function runFlows(client: BenchClient, tally: Tally, clients: number, count: number, onDone?: () => void): Promise<void> {
  let issued = 0;
  const worker = async () => {
    while (issued < count) {
      issued++;
      tally.record(await client.flow());
      onDone?.();
    }
  };
  await Promise.all(Array.from({ length: Math.min(clients, count) }, worker));
}

export async function memoryPhase(
  url: string,
  pid: number,
  opts: { clients: number; small: number; large: number; settleMs: number; every: number; log: (s: string) => void },
): Promise<MemoryResult> {
  const client = new BenchClient(url, opts.clients);
  const tally = new Tally();
  const rssIdleMb = mb(rssBytes(pid));
  const timeline: MemoryResult['timeline'] = [];
  let next = opts.every;
  const t0 = performance.now();
  const tick = () => {
    const n = tally.completed + tally.failed;
    if (n >= next) {
      next += opts.every;
      timeline.push({ tasks: n, rss_mb: mb(rssBytes(pid)), s: Math.round((performance.now() - t0) / 100) / 10 });
    }
  };
  await runFlows(client, tally, opts.clients, opts.small, tick);
  await delay(opts.settleMs);
  const rssSmallMb = mb(rssBytes(pid));
  const tasksSmall = tally.completed + tally.failed;
  opts.log(`memory: ${tasksSmall} tasks → RSS ${rssSmallMb} MB; running to ${opts.large}`);
  const t1 = performance.now();
  await runFlows(client, tally, opts.clients, opts.large - tasksSmall, tick);
  const loadS = (performance.now() - t1) / 1000;
  await delay(opts.settleMs);
  const rssLargeMb = mb(rssBytes(pid));
  client.destroy();
  const deltaMb = rssLargeMb - rssSmallMb;
  return {
    clients: opts.clients,
    tasksSmall,
    tasksLarge: tally.completed + tally.failed,
    rssIdleMb,
    rssSmallMb,
    rssLargeMb,
    deltaMb,
    meets: deltaMb <= MEMORY_LIMIT_MB,
    timeline,
    flowsPerS: (tally.completed + tally.failed - tasksSmall) / loadS,
    seconds: (performance.now() - t0) / 1000,
    completed: tally.completed,
    failed: tally.failed,
    errors: tally.errors,
    examples: tally.examples,
  };
}
