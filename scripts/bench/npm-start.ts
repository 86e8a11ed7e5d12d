/**
 * Start to ready as a user gets it: `npm start` in the built checkout (npm, its shell, the stamp
 * check of scripts/start.mjs, then the server in that process), from spawn to the first 200 of
 * `GET /readyz` (the store answered: migrated, or copied from the template). Each run is a new
 * store (PGlite: an empty DATA_DIR; PostgreSQL: a new database), the first start a new user makes.
 * Beside each run, `node dist/main.js` timed the same way on another new store: the difference is
 * what npm and the stamp check cost.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { stampIsFresh } from '../build-inputs.mjs';
import { freePort, getOnce, machineBusySeconds, serverEnv } from './server-process.js';
import { summarize } from './stats.js';
import type { Summary } from './stats.js';

export interface StartRuns {
  /** Spawn → first 200 from GET /readyz, per run, ms. */
  ms: number[];
  summary: Summary;
  /**
   * CPU time the start used until ready, per run, ms: every process of its group (npm, the shell,
   * node and its threads) and the children they waited for. Robust where wall time is not: other
   * processes on the machine stretch the wall time, hardly the CPU time.
   */
  cpuMs: number[];
  /** Cores busy on the whole machine during each run (this start included). */
  machineCores: number[];
}

export interface NpmStartResult {
  npmStart: StartRuns;
  node: StartRuns;
  /** dist/ matched its stamp before every npm run (so none of them built). */
  builtBefore: boolean;
  error?: string;
}

/** A store for one start: its environment and how to remove it. */
interface OneStore {
  env: Record<string, string>;
  dispose: () => Promise<void>;
}

/** user+system CPU ms of every process in group `pgid`, with the children each has waited for (CLK_TCK = 100). */
function groupCpuMs(pgid: number): number {
  let ticks = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // f[2] is pgrp (field 5); utime, stime, cutime, cstime are fields 14–17.
      if (Number(f[2]) === pgid) ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    } catch {
      /* gone */
    }
  }
  return ticks * 10;
}

/** Whether any process of group `pgid` is left. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs `command` in a process group of its own on `store`, times spawn → GET /readyz 200, then
 * ends the whole group (SIGTERM; SIGKILL after 10 s): npm, its shell and the server.
 */
async function timeStart(
  repo: string,
  command: string[],
  store: OneStore,
  scriptFile: string,
  timeoutMs: number,
): Promise<{ ms: number; cpuMs: number; machineCores: number }> {
  const port = await freePort();
  const workspace = realpathSync(mkdtempSync(path.join(tmpdir(), 'devtool-bench-start-ws-')));
  const env = serverEnv({ scriptFile, env: store.env }, port, workspace);
  const busy0 = machineBusySeconds();
  const t0 = performance.now();
  const child = spawn(command[0], command.slice(1), { cwd: repo, env, detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-2000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const pgid = child.pid;
  try {
    if (pgid === undefined) throw new Error(`${command.join(' ')}: spawn failed`);
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${command.join(' ')} exited with ${child.exitCode} before ready: ${stderr}`);
      if ((await getOnce(`http://127.0.0.1:${port}/readyz`)) === 200) {
        const ms = performance.now() - t0;
        return { ms, cpuMs: groupCpuMs(pgid), machineCores: (machineBusySeconds() - busy0) / (ms / 1000) };
      }
      if (performance.now() - t0 > timeoutMs) throw new Error(`${command.join(' ')}: not ready after ${timeoutMs} ms: ${stderr}`);
      await delay(5);
    }
  } finally {
    if (pgid !== undefined && groupAlive(pgid)) {
      process.kill(-pgid, 'SIGTERM');
      const deadline = performance.now() + 10_000;
      while (groupAlive(pgid) && performance.now() < deadline) await delay(20);
      if (groupAlive(pgid)) process.kill(-pgid, 'SIGKILL');
    }
    await Promise.race([exited, delay(1000)]);
    rmSync(workspace, { recursive: true, force: true });
  }
}

/**
 * `runs` times: `npm start` on a new store, then `node dist/main.js` on another. Throws when a
 * start fails; the stores are removed whatever happens.
 */
export async function npmStartToReady(
  repo: string,
  newStore: () => Promise<OneStore>,
  scriptFile: string,
  runs: number,
  log: (line: string) => void,
): Promise<NpmStartResult> {
  const npmRuns: Array<{ ms: number; cpuMs: number; machineCores: number }> = [];
  const nodeRuns: Array<{ ms: number; cpuMs: number; machineCores: number }> = [];
  let builtBefore = true;
  for (let i = 0; i < runs; i++) {
    builtBefore &&= stampIsFresh(repo);
    for (const [list, command] of [
      [npmRuns, ['npm', 'start']],
      [nodeRuns, [process.execPath, 'dist/main.js']],
    ] as const) {
      const store = await newStore();
      try {
        list.push(await timeStart(repo, [...command], store, scriptFile, 120_000));
      } finally {
        await store.dispose();
      }
    }
    const line = (r: { ms: number; cpuMs: number; machineCores: number }) =>
      `${r.ms.toFixed(0)} ms (CPU ${r.cpuMs.toFixed(0)} ms, machine ${r.machineCores.toFixed(2)} cores busy)`;
    log(`start to ready, run ${i + 1}/${runs}: npm start ${line(npmRuns[i])}, node dist/main.js ${line(nodeRuns[i])}`);
  }
  const startRuns = (list: typeof npmRuns): StartRuns => ({
    ms: list.map((r) => r.ms),
    summary: summarize(list.map((r) => r.ms)),
    cpuMs: list.map((r) => r.cpuMs),
    machineCores: list.map((r) => r.machineCores),
  });
  return { npmStart: startRuns(npmRuns), node: startRuns(nodeRuns), builtBefore };
}
