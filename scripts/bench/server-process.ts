/**
 * The server under test as a child process: spawn `node --import tsx src/main.ts`
 * (no npm/sh wrapper, so the child pid is the serving node process), wait for the
 * agent card, read its RSS and CPU time from /proc, and stop it (SIGTERM, then SIGKILL).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import type { ProbeSnapshot } from './phase-tally.js';

export interface ServerOptions {
  repoRoot: string;
  scriptFile: string;
  /** Extra node flags for the child, before `--import tsx` (e.g. --cpu-prof, not allowed in NODE_OPTIONS). */
  nodeArgs?: string[];
  /** What node runs; default `--import tsx src/main.ts` (what `npm start` runs). */
  entry?: string[];
  logLevel?: string;
  /** Extra environment (the store: DATA_DIR or DATABASE_URL), applied after the defaults. */
  env?: Record<string, string>;
  /** Preload scripts/bench/probe.ts (phases, statements, round trips) and open an IPC channel to ask it. */
  probe?: boolean;
  /** The port the server is told to use (default: a free one, as PORT); for servers that read another variable. */
  port?: number;
  /** Working directory of the child (default repoRoot). */
  cwd?: string;
}

export interface RunningServer {
  child: ChildProcess;
  pid: number;
  port: number;
  url: string;
  workspace: string;
  /** performance.now() just before spawn. */
  spawnedAt: number;
  /** Last lines of the child's stderr/stdout (for error reports). */
  output: () => string;
  /** Log lines at level warn (40) or above, and any non-JSON line (first 200), plus their total count. */
  warnings: () => { lines: string[]; total: number };
}

/** A free TCP port on 127.0.0.1 (bind :0, read, close). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * The environment of a measured server: this process's, without any model key, NODE_OPTIONS or
 * store of the caller's, then loopback on `port`, `workspace`, the log level, the model script and
 * `opts.env` (the store, which it must name).
 */
export function serverEnv(
  opts: Pick<ServerOptions, 'scriptFile' | 'logLevel' | 'env'>,
  port: number,
  workspace: string,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    WORKSPACE_DIR: workspace,
    LOG_LEVEL: opts.logLevel ?? 'warn',
    AGENT_MODEL_SCRIPT: opts.scriptFile,
  };
  delete env.GEMINI_API_KEY;
  delete env.GOOGLE_API_KEY;
  delete env.GOOGLE_GENAI_USE_VERTEXAI;
  delete env.NODE_OPTIONS;
  // The store comes from opts.env only: never the caller's ./.data or DATABASE_URL.
  for (const name of [
    'DATABASE_URL',
    'DATA_DIR',
    'TEST_DATABASE_URL',
    'BENCH_DATABASE_URL',
    'INSTANCE_ID',
    'APPROVAL_TIMEOUT',
    'FORCE_BUILD',
  ])
    delete env[name];
  Object.assign(env, opts.env ?? {});
  if (env.DATABASE_URL === undefined && env.DATA_DIR === undefined)
    throw new Error('spawnServer: no store (DATA_DIR or DATABASE_URL) given');
  return env;
}

export async function spawnServer(opts: ServerOptions): Promise<RunningServer> {
  const port = opts.port ?? (await freePort());
  const workspace = realpathSync(mkdtempSync(path.join(tmpdir(), 'devtool-bench-ws-')));
  const env = serverEnv(opts, port, workspace);
  const tail: string[] = [];
  const warnLines: string[] = [];
  let warnTotal = 0;
  let partial = '';
  const keep = (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    tail.push(text);
    if (tail.length > 50) tail.shift();
    const lines = (partial + text).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (line.trim() === '') continue;
      const level = /"level":(\d+)/.exec(line);
      if (level && Number(level[1]) < 40) continue;
      warnTotal++;
      if (warnLines.length < 200) warnLines.push(line);
    }
  };
  const spawnedAt = performance.now();
  const entry = opts.entry ?? ['--import', 'tsx', ...(opts.probe ? ['--import', './scripts/bench/probe.ts'] : []), 'src/main.ts'];
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), ...entry], {
    cwd: opts.cwd ?? opts.repoRoot,
    env,
    stdio: ['ignore', 'pipe', 'pipe', ...(opts.probe ? (['ipc'] as const) : [])],
  });
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  if (child.pid === undefined) throw new Error('spawn failed: no pid');
  return {
    child,
    pid: child.pid,
    port,
    url: `http://127.0.0.1:${port}/`,
    workspace,
    spawnedAt,
    output: () => tail.join(''),
    warnings: () => ({ lines: warnLines, total: warnTotal }),
  };
}

/** One GET without keep-alive: its HTTP status, 0 when it failed or took over a second. */
export function getOnce(url: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, timeout: 1000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
  });
}

/**
 * Polls the agent card every `everyMs` until HTTP 200; returns ms since spawn. The default
 * wait is long: a first PGlite start (initdb) on a busy 2-core machine can take over 30 s.
 */
export async function waitReady(srv: RunningServer, timeoutMs = 120_000, everyMs = 10): Promise<number> {
  const card = `${srv.url}.well-known/agent-card.json`;
  const deadline = srv.spawnedAt + timeoutMs;
  while (performance.now() < deadline) {
    if (srv.child.exitCode !== null) throw new Error(`server exited with ${srv.child.exitCode} before ready:\n${srv.output()}`);
    if ((await getOnce(card)) === 200) return performance.now() - srv.spawnedAt;
    await delay(everyMs);
  }
  throw new Error(`server not ready after ${timeoutMs} ms:\n${srv.output()}`);
}

/** VmRSS of `pid` in bytes (NaN when unreadable). */
export function rssBytes(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** Threads of `pid` (main + V8/libuv helpers). */
export function threadCount(pid: number): number {
  try {
    const m = /^Threads:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/**
 * user+system CPU seconds from /proc/<pid>/stat (all threads), or of one thread with
 * `tid` (/proc/<pid>/task/<tid>/stat; the main thread's tid is the pid). Assumes CLK_TCK = 100.
 */
export function cpuSeconds(pid: number, tid?: number): number {
  try {
    const stat = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[0] is state (field 3); utime is field 14, stime field 15.
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

/**
 * user+system CPU seconds of every process whose name (/proc/<pid>/comm) is `comm`, e.g.
 * `postgres` (the PostgreSQL server and its backends: all databases, not only the bench's).
 */
export function commCpuSeconds(comm: string): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      if (name !== comm) continue;
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total += (Number(fields[11]) + Number(fields[12])) / 100;
    } catch {
      /* gone */
    }
  }
  return total;
}

/** Machine-wide busy CPU seconds (all cores, everything but idle and iowait), from /proc/stat. */
export function machineBusySeconds(): number {
  try {
    const cols = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const total = cols.slice(0, 8).reduce((a, b) => a + b, 0);
    return (total - cols[3] - cols[4]) / 100;
  } catch {
    return Number.NaN;
  }
}

/**
 * The sockets listening on `port`, from /proc/net/tcp and tcp6: each one's local address (hex, as
 * the kernel writes it) and inode.
 */
export function listeningSockets(port: number): Array<{ address: string; inode: string }> {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const out: Array<{ address: string; inode: string }> = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10) continue;
      if (cols[1].endsWith(`:${hexPort}`) && cols[3] === '0A') out.push({ address: cols[1].slice(0, -5), inode: cols[9] });
    }
  }
  return out;
}

/**
 * Checks that `pid` holds the socket listening on 127.0.0.1:`port`: finds the LISTEN
 * socket's inode in /proc/net/tcp and looks for it among the pid's open fds.
 */
export function verifyServingPid(pid: number, port: number): { ok: boolean; detail: string } {
  const inode = listeningSockets(port).at(-1)?.inode;
  if (inode === undefined) return { ok: false, detail: `no LISTEN socket on port ${port} in /proc/net/tcp` };
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      let target = '';
      try {
        target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      if (target === `socket:[${inode}]`) {
        const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
        return { ok: true, detail: `pid ${pid} (${cmd}) holds listen socket inode ${inode} as fd ${fd}` };
      }
    }
  } catch (err) {
    return { ok: false, detail: `cannot read /proc/${pid}/fd: ${(err as Error).message}` };
  }
  return { ok: false, detail: `pid ${pid} does not hold listen socket inode ${inode}` };
}

/** SIGTERM (graceful: the server closes and exits, which also flushes --cpu-prof), SIGKILL after `graceMs`. */
export async function stopServer(srv: RunningServer, graceMs = 5000): Promise<number | null> {
  const { child } = srv;
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  const code = await exited;
  clearTimeout(timer);
  return code;
}

/** Synchronous last-resort kill (for process 'exit' handlers). */
export function killNow(srv: RunningServer | undefined): void {
  if (srv && srv.child.exitCode === null && srv.child.signalCode === null) {
    try {
      srv.child.kill('SIGKILL');
    } catch {
      /* already gone */
    }
  }
}

/**
 * A fingerprint of the code under test: sha256 over the paths and contents of every file
 * under `dirs` (sorted), and the most recently modified one. Others may edit src/ while a
 * benchmark runs: comparing the fingerprint at start and end says whether they did.
 */
export function sourceFingerprint(root: string, dirs: string[]): { hash: string; files: number; newest: string; newestAt: string } {
  const hash = createHash('sha256');
  let files = 0;
  let newest = '';
  let newestMs = 0;
  const walk = (dir: string) => {
    let entries: string[];
    try {
      entries = readdirSync(path.join(root, dir)).sort();
    } catch {
      return;
    }
    for (const name of entries) {
      const rel = path.join(dir, name);
      const st = statSync(path.join(root, rel));
      if (st.isDirectory()) walk(rel);
      else if (st.isFile()) {
        files++;
        hash
          .update(rel)
          .update('\0')
          .update(readFileSync(path.join(root, rel)))
          .update('\0');
        if (st.mtimeMs > newestMs) {
          newestMs = st.mtimeMs;
          newest = rel;
        }
      }
    }
  };
  for (const d of dirs) walk(d);
  return { hash: hash.digest('hex').slice(0, 12), files, newest, newestAt: new Date(newestMs).toISOString() };
}

/** The probe's cumulative totals (undefined when the server runs without it, or it does not answer in 5 s). */
export async function probeSnapshot(srv: RunningServer): Promise<ProbeSnapshot | undefined> {
  const child = srv.child;
  if (!child.connected) return undefined;
  return new Promise((resolve) => {
    const done = (value: ProbeSnapshot | undefined) => {
      clearTimeout(timer);
      child.off('message', onMessage);
      resolve(value);
    };
    const onMessage = (m: unknown) => {
      const msg = m as { probe?: string; data?: ProbeSnapshot } | null;
      if (msg?.probe === 'snapshot') done(msg.data);
    };
    const timer = setTimeout(() => done(undefined), 5000);
    child.on('message', onMessage);
    child.send({ probe: 'snapshot' });
  });
}
