/**
 * Benchmark of the real server (a figure printer, never an assertion): builds it (when dist/ does not match its stamp) and spawns
 * `node dist/main.js` (what `npm start` runs; `--from-source`: `node --import tsx src/main.ts`)
 * with a scripted model and drives RFC Appendix A flows over loopback HTTP+SSE
 * (v0.3 `message/stream`), once per store:
 *
 *   - PGlite in a fresh temp DATA_DIR (deleted after), and
 *   - PostgreSQL in a fresh database `bench_<random>` (dropped after) when
 *     BENCH_DATABASE_URL or TEST_DATABASE_URL names a server (its admin URL).
 *
 * Per store: start-to-ready, idle RSS, first-event and confirm-flow latency, flows/s and
 * p50/p99 at 50 and 200 clients, RSS after ≥ 1,000 tasks, and the long stream (ONE task
 * streaming 10,000 text chunks: events/s, MB/s), compared with a raw SSE write loop; then
 * `npm start` to ready on new stores (scripts/bench/npm-start.ts, --start-runs).
 * With --memory, RSS after 100 and after 10,000 tasks on a fresh server, per store.
 *
 * --filled n: each store leg's store holds n finished tasks (scripts/bench/fill-store.ts: their
 * events, calls, closed turns, history and audit, analyzed) before its server starts, so the
 * figures are those of a server that has run for a while, not of an empty store.
 *
 * The ceiling of a flow (scripts/bench/flow-ceiling.ts): after the store legs, bare Fastify in a
 * process of its own serves the 9 frames captured from the server's confirm flow, with no store,
 * through the same client and phases; every latency and throughput figure is printed as a share
 * of it.
 *
 *   npm run bench -- [--stores pglite,postgres] [--duration 4] [--warmup 1] [--clients 50,200]
 *                    [--samples 60] [--warmup-samples 10] [--min-tasks 300]
 *                    [--long-chunks 10000] [--long-chunk-chars 40] [--no-long]
 *                    [--memory] [--memory-only] [--memory-tasks 10000] [--memory-clients 50] [--profile] [--no-probe]
 *                    [--start-runs 3] [--filled 0]
 *                    [--from-source] [--anchor|--anchor-only]
 *
 * Where the time goes: the measured server runs with scripts/bench/probe.ts preloaded
 * (--no-probe: without), which times the server's phases (parse, authorize, load, claim,
 * commit wait, commit, encode, write) and counts the database's statements and round trips;
 * the report prints them per confirm flow. --profile (alias --cpu-prof) writes the server's
 * CPU profile (node --cpu-prof) and names the file.
 *
 * The defaults keep a full run near 2–3 minutes on a 2-core machine with the server as slow
 * as it is now (tens of flows/s): 60 sequential samples, 4 s windows, RSS after ≥ 300
 * tasks. The memory figure needs 10,000 flows (many minutes at this speed), so it runs
 * only with --memory / --memory-only.
 *
 * Prints a table (one column per store, next to the targets) and one line
 * `BENCH_RESULT {...}`. Exits 0 whenever it could measure; children are killed and temp
 * directories and databases removed on exit, on error and on SIGINT.
 */
import { mkdtempSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { serverEntry } from './bench/compiled.js';
import type { ServerEntry } from './bench/compiled.js';
import { summarizeProfile } from './bench/cpu-profile.js';
import type { ChildProcess } from 'node:child_process';
import { captureFlow, flowCeiling } from './bench/flow-ceiling.js';
import type { FlowCeilingResult, FlowFrames } from './bench/flow-ceiling.js';
import { ceiling, longStream, writeCombinedScript } from './bench/long-stream.js';
import type { CapturedFrames, CeilingResult } from './bench/long-stream.js';
import { formatComparison, installAnchor, startAnchor, startFakeGemini, tempDir, wirePhases } from './bench/anchor.js';
import type { AnchorComparison, WireFigures } from './bench/anchor.js';
import { memoryPhase, SETTLE_WINDOW_MS } from './bench/memory.js';
import { npmStartToReady } from './bench/npm-start.js';
import type { NpmStartResult } from './bench/npm-start.js';
import { perFlow } from './bench/phase-tally.js';
import { sequential, Tally, throughput } from './bench/phases.js';
import type { ThroughputResult } from './bench/phases.js';
import { formatReport, resultJson } from './bench/report.js';
import type { Figures, Report, StoreMemory } from './bench/report.js';
import {
  commCpuSeconds,
  cpuSeconds,
  killNow,
  machineBusySeconds,
  probeSnapshot,
  sourceFingerprint,
  rssBytes,
  spawnServer,
  stopServer,
  threadCount,
  verifyServingPid,
  waitReady,
} from './bench/server-process.js';
import type { RunningServer } from './bench/server-process.js';
import { BenchClient } from './bench/sse-client.js';
import { mb, summarize } from './bench/stats.js';
import { parseStores, pgliteStore, postgresAdminUrl, postgresStore, STORE_KINDS, STORE_LABEL } from './bench/stores.js';
import type { BenchStore, StoreKind } from './bench/stores.js';
import { fillStore } from './bench/fill-store.js';
import { openDatabase } from '../src/store/db.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BASE_SCRIPT = path.join(REPO, 'scripts', 'bench-script.json');
/** What the server runs (fingerprinted at start and end: others may edit it during a run). */
const SOURCE_DIRS = ['src', 'drizzle'];
const USAGE =
  'usage: npm run bench -- [--stores pglite,postgres] [--duration s] [--warmup s] [--clients 50,200] [--samples n] [--warmup-samples n]\n' +
  '                        [--min-tasks n] [--long-chunks n] [--long-chunk-chars n] [--no-long] [--memory] [--memory-tasks n]\n' +
  '                        [--memory-clients n] [--memory-only] [--profile|--cpu-prof] [--no-probe] [--from-source] [--anchor|--anchor-only]\n' +
  '                        [--start-runs n] [--filled n]\n' +
  '--filled: the store of each store leg holds n finished tasks (10 events each, calls, history, audit) before its server starts.\n' +
  '--start-runs: per store, npm start (and node dist/main.js) to the first 200 of GET /readyz on n new stores (default 3, 0: none).\n' +
  '--from-source: run the server under tsx from src/ (default: `npm run build` when dist/ is stale, then node dist/main.js, what npm start runs).\n' +
  '--anchor: also the same phases over the legacy coderAgent wire against @google/gemini-cli-a2a-server@0.25.2 and this server\n' +
  '          (PGlite), both on one fake Gemini API, with the ratios ours/anchor (the anchor is npm-installed into the OS temp dir once).\n' +
  'PostgreSQL runs when BENCH_DATABASE_URL or TEST_DATABASE_URL is set (an admin URL; a fresh bench_<random> database is created and dropped).\n';

interface Args {
  stores: StoreKind[];
  /** --stores was given (then a store that cannot run is an error, not a note). */
  storesExplicit: boolean;
  durationS: number;
  warmupS: number;
  clients: number[];
  samples: number;
  warmupSamples: number;
  minTasks: number;
  long: boolean;
  longChunks: number;
  longChunkChars: number;
  memory: boolean;
  /** Only the memory figure (no store legs). */
  memoryOnly: boolean;
  memorySmall: number;
  memoryTasks: number;
  memoryClients: number;
  cpuProf: boolean;
  /** Preload the probe into the measured server (phases, statements, round trips); --no-probe turns it off. */
  probe: boolean;
  /** Also run the side-by-side comparison with gemini-cli's own a2a-server (scripts/bench/anchor.ts). */
  anchor: boolean;
  /** Only the comparison (no store legs). */
  anchorOnly: boolean;
  /** Run src/main.ts under tsx instead of the compiled dist/main.js. */
  fromSource: boolean;
  /** Per store: `npm start` (and `node dist/main.js`) to ready on this many new stores. */
  startRuns: number;
  /** Finished tasks in each store leg's store before its server starts (scripts/bench/fill-store.ts). */
  filled: number;
}

function parseArgs(argv: string[]): Args {
  const args: Args = {
    stores: [...STORE_KINDS],
    storesExplicit: false,
    durationS: 4,
    warmupS: 1,
    clients: [50, 200],
    samples: 60,
    warmupSamples: 10,
    minTasks: 300,
    long: true,
    longChunks: 10_000,
    longChunkChars: 40,
    memory: false,
    memoryOnly: false,
    memorySmall: 100,
    memoryTasks: 10_000,
    memoryClients: 50,
    cpuProf: false,
    probe: true,
    anchor: false,
    anchorOnly: false,
    fromSource: false,
    startRuns: 3,
    filled: 0,
  };
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
    else if (name === '--clients')
      args.clients = String(value())
        .split(',')
        .map((s) => Math.floor(num(name, s, 1)));
    else if (name === '--stores') {
      args.stores = parseStores(String(value()));
      args.storesExplicit = true;
    } else if (name === '--long-chunks') args.longChunks = Math.floor(num(name, value(), 1));
    else if (name === '--long-chunk-chars') args.longChunkChars = Math.floor(num(name, value(), 8));
    else if (name === '--no-long') args.long = false;
    else if (name === '--memory') args.memory = true;
    else if (name === '--memory-only') {
      args.memory = true;
      args.memoryOnly = true;
    } else if (name === '--memory-tasks') args.memoryTasks = Math.floor(num(name, value(), args.memorySmall + 1));
    else if (name === '--memory-clients') args.memoryClients = Math.floor(num(name, value(), 1));
    else if (name === '--cpu-prof' || name === '--profile') args.cpuProf = true;
    else if (name === '--no-probe') args.probe = false;
    else if (name === '--anchor') args.anchor = true;
    else if (name === '--anchor-only') args.anchor = args.anchorOnly = true;
    else if (name === '--from-source') args.fromSource = true;
    else if (name === '--start-runs') args.startRuns = Math.floor(num(name, value(), 0));
    else if (name === '--filled') args.filled = Math.floor(num(name, value(), 0));
    else if (name === '--help' || name === '-h') {
      process.stdout.write(USAGE);
      process.exit(0);
    } else throw new Error(`unknown flag ${argv[i]}\n${USAGE}`);
  }
  return args;
}

// ---- what must be cleaned up, whatever happens ----------------------------------

let server: RunningServer | undefined;
/** The flow ceiling's server while it runs. */
let ceilingChild: ChildProcess | undefined;
const liveStores = new Set<BenchStore>();
let tmpRoot: string | undefined;
/** How the measured server is started (set once in main(), before any leg). */
let serverEntryNow: ServerEntry | undefined;
function entry(): ServerEntry {
  if (!serverEntryNow) throw new Error('bench: the server entry is not prepared');
  return serverEntryNow;
}

function cleanupSync(): void {
  killNow(server);
  if (ceilingChild?.exitCode === null && ceilingChild.signalCode === null) ceilingChild.kill('SIGKILL');
  for (const s of liveStores) s.disposeSync();
  if (tmpRoot) rmSync(tmpRoot, { recursive: true, force: true });
  if (server) rmSync(server.workspace, { recursive: true, force: true });
}

async function cleanupAsync(): Promise<void> {
  killNow(server);
  await Promise.race([Promise.allSettled([...liveStores].map((s) => s.dispose())), delay(5000)]);
  cleanupSync();
}

process.on('exit', cleanupSync);
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    process.stderr.write(`\nbench: ${sig}, killing the server and removing temp data\n`);
    void cleanupAsync().finally(() => process.exit(130));
  });
}

// performance.now() counts from process start (so the figures include tsx start-up).
const T0 = 0;
const log = (s: string) => process.stderr.write(`bench [${((performance.now() - T0) / 1000).toFixed(1).padStart(5)} s]: ${s}\n`);

/** CPU seconds of the machine, the server and this process at one moment. */
function cpuMark(pid: number) {
  return {
    at: performance.now(),
    machine: machineBusySeconds(),
    server: cpuSeconds(pid),
    db: commCpuSeconds('postgres'),
    bench: process.cpuUsage(),
  };
}

/** Cores used by everything but the server, postgres and this process between two marks (other sessions, kernel). */
function otherCores(a: ReturnType<typeof cpuMark>, b: ReturnType<typeof cpuMark>): number {
  const bench = (b.bench.user + b.bench.system - a.bench.user - a.bench.system) / 1e6;
  return Math.max(0, b.machine - a.machine - (b.server - a.server) - (b.db - a.db) - bench) / ((b.at - a.at) / 1000);
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
  const probeBefore = await probeSnapshot(srv);
  const flow = await sequential(seqClient, tally, 0, args.samples, (r) => r.flowMs);
  const probeAfter = await probeSnapshot(srv);
  const flowBreakdown = probeBefore && probeAfter ? perFlow(probeBefore, probeAfter, args.samples - flow.errors) : undefined;
  snap('confirm-flow');
  // One more flow, its frames kept: what the flow ceiling replays.
  const captured = await captureFlow(seqClient);
  tally.record(captured.result);
  const seqOtherCores = otherCores(seqStart, cpuMark(srv.pid));
  const runs: ThroughputResult[] = [];
  for (const n of args.clients) {
    log(`throughput: ${n} clients, ${args.warmupS} s warm-up + ${args.durationS} s`);
    // The breakdown covers the whole phase: every flow started in it has ended at the second snapshot.
    const before = await probeSnapshot(srv);
    const run = await throughput(srv.url, srv.pid, tally, n, args.warmupS, args.durationS);
    const after = await probeSnapshot(srv);
    runs.push({ ...run, breakdown: before && after ? perFlow(before, after, run.phaseFlows) : undefined });
    snap(`throughput-${n}`);
  }
  if (tally.completed < args.minTasks) log(`top-up to ${args.minTasks} completed tasks (20 concurrent)`);
  for (let topUp = 0; tally.completed < args.minTasks && topUp < args.minTasks * 2;) {
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
    first,
    flow,
    flowBreakdown,
    seqOtherCores,
    runs,
    timeline,
    tasksAfter: last.tasks,
    rssAfterMb: last.rss_mb,
    completed: tally.completed,
    failed: tally.failed,
    errors: tally.errors,
    examples: tally.examples,
    firstTaskId: tally.firstTaskId,
    firstTaskStillHeld: held === undefined ? undefined : Boolean(held.result),
    flowFrames: captured.frames,
  };
}

/** The long stream's time limit: 2 min, or 15 ms per chunk if more. */
function longTimeoutMs(args: Args): number {
  return Math.max(120_000, args.longChunks * 15);
}

/** Whether tasks/get finds the task (e.g. after a restart). */
async function taskFound(url: string, id: string): Promise<boolean> {
  const c = new BenchClient(url, 1);
  try {
    const env = await c.call('tasks/get', { id, historyLength: 0 });
    return env?.result?.id === id;
  } finally {
    c.destroy();
  }
}

async function openStore(kind: StoreKind): Promise<BenchStore> {
  const store = kind === 'pglite' ? pgliteStore(tmpRoot as string) : await postgresStore(postgresAdminUrl() as string);
  liveStores.add(store);
  return store;
}

/** Migrates the store and fills it with `n` finished tasks (--filled), before a server opens it. */
async function fillBenchStore(store: BenchStore, n: number): Promise<void> {
  const t0 = performance.now();
  const db = await openDatabase(store.kind === 'pglite' ? { dataDir: store.env.DATA_DIR } : { databaseUrl: store.env.DATABASE_URL });
  try {
    await fillStore(db, n);
  } finally {
    await db.close();
  }
  log(`${STORE_LABEL[store.kind]}: store filled with ${n} finished tasks in ${Math.round(performance.now() - t0)} ms`);
}

async function closeStore(store: BenchStore): Promise<void> {
  try {
    await store.dispose();
  } finally {
    liveStores.delete(store);
  }
}

async function startServer(
  store: BenchStore,
  scriptFile: string,
  nodeArgs: string[],
  probe = false,
): Promise<{ srv: RunningServer; readyMs: number; pidCheck: { ok: boolean; detail: string } }> {
  const entryArgs = entry().args(probe);
  log(`${STORE_LABEL[store.kind]} (${store.where}): spawning ${[process.execPath, ...nodeArgs, ...entryArgs].join(' ')}`);
  server = await spawnServer({ repoRoot: REPO, scriptFile, nodeArgs, entry: entryArgs, env: store.env, probe });
  const srv = server;
  const readyMs = await waitReady(srv);
  const pidCheck = verifyServingPid(srv.pid, srv.port);
  log(`ready in ${readyMs.toFixed(0)} ms; ${pidCheck.detail}`);
  return { srv, readyMs, pidCheck };
}

async function finishServer(srv: RunningServer): Promise<number | null> {
  const code = await stopServer(srv);
  rmSync(srv.workspace, { recursive: true, force: true });
  if (server === srv) server = undefined;
  return code;
}

/** One store's whole figure set on a fresh server and a fresh store. */
async function leg(kind: StoreKind, args: Args, scriptFile: string): Promise<Figures> {
  const t0 = performance.now();
  const store = await openStore(kind);
  try {
    if (args.filled > 0) await fillBenchStore(store, args.filled);
    const profDir = args.cpuProf ? mkdtempSync(path.join(os.tmpdir(), `devtool-bench-prof-${kind}-`)) : undefined;
    const { srv, readyMs, pidCheck } = await startServer(
      store,
      scriptFile,
      profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [],
      args.probe,
    );
    await delay(1000);
    const rssIdleMb = mb(rssBytes(srv.pid));
    const threads = threadCount(srv.pid);
    const m = await measure(srv, args);
    let long;
    if (args.long) {
      log(`long stream: one task, ${args.longChunks} chunks of ${args.longChunkChars} characters`);
      long = await longStream(srv.url, srv.pid, args.longChunks, args.longChunkChars, longTimeoutMs(args));
      log(
        `long stream: ${long.events} events in ${long.ms.toFixed(0)} ms (${long.eventsPerS.toFixed(0)} events/s)${long.ok ? '' : `; problems: ${long.problems.join('; ')}`}`,
      );
    }
    const serverExitCode = await finishServer(srv);
    log(`restart on the same ${STORE_LABEL[kind]} store`);
    const again = await startServer(store, scriptFile, []);
    await delay(1000);
    const restartRssMb = mb(rssBytes(again.srv.pid));
    const firstTaskFound = m.firstTaskId ? await taskFound(again.srv.url, m.firstTaskId) : undefined;
    log(`restart: idle for ${SETTLE_WINDOW_MS / 1000} s (RSS once start-up garbage is handed back)`);
    await delay(SETTLE_WINDOW_MS);
    const restart = { readyMs: again.readyMs, rssIdleMb: restartRssMb, rssSettledMb: mb(rssBytes(again.srv.pid)), firstTaskFound };
    const restartWarnings = again.srv.warnings();
    await finishServer(again.srv);
    const npmStart = args.startRuns > 0 && !args.fromSource ? await npmStartLeg(kind, args, scriptFile) : undefined;
    // One file per thread (CPU.<date>.<time>.<pid>.<thread>.<n>.cpuprofile): the main thread is 0.
    const files = profDir ? readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile')) : [];
    const file = files.find((f) => /\.\d+\.0\.\d+\.cpuprofile$/.test(f)) ?? files[0];
    const profile =
      profDir && file
        ? {
            file: path.join(profDir, file),
            summary: summarizeProfile(
              path.join(profDir, file),
              20,
              m.runs.map((r) => r.window),
            ),
            long: long ? summarizeProfile(path.join(profDir, file), 20, [long.window]) : undefined,
          }
        : undefined;
    const w = srv.warnings();
    return {
      store: kind,
      where: store.where,
      node: process.version,
      cpus: os.cpus().length,
      pid: srv.pid,
      pidCheck,
      threads,
      readyMs,
      rssIdleMb,
      serverExitCode,
      restart,
      profile,
      long,
      legSeconds: (performance.now() - t0) / 1000,
      npmStart,
      ...m,
      serverWarnings: { lines: [...w.lines, ...restartWarnings.lines], total: w.total + restartWarnings.total },
    };
  } finally {
    await closeStore(store);
  }
}

/** `npm start` and `node dist/main.js` to ready, each on new stores of this kind (the first start a user makes). */
async function npmStartLeg(kind: StoreKind, args: Args, scriptFile: string): Promise<NpmStartResult> {
  log(`${STORE_LABEL[kind]}: npm start to ready (GET /readyz 200), ${args.startRuns} runs, each on a new store, beside node dist/main.js`);
  const newStore = async () => {
    const store = await openStore(kind);
    return { env: store.env, dispose: () => closeStore(store) };
  };
  try {
    return await npmStartToReady(REPO, newStore, scriptFile, args.startRuns, log);
  } catch (err) {
    log(`npm start to ready: ${(err as Error).message}`);
    const none = { ms: [], summary: summarize([]), cpuMs: [], machineCores: [] };
    return { npmStart: none, node: none, builtBefore: false, error: (err as Error).message.slice(0, 500) };
  }
}

/** RSS after 100 and after N short tasks on a fresh server and store. */
async function memoryLeg(kind: StoreKind, args: Args, scriptFile: string): Promise<StoreMemory> {
  const store = await openStore(kind);
  try {
    // A first start creates the store (PGlite: copies the template) and migrates; its transient
    // memory must not be in the baseline, so the measured server is a second start on the
    // initialised, empty store.
    log(`memory: initialising the ${STORE_LABEL[kind]} store (first start, then stop)`);
    await finishServer((await startServer(store, scriptFile, [])).srv);
    const { srv } = await startServer(store, scriptFile, []);
    await delay(1000);
    log(`memory: ${args.memoryClients} clients, full flows to ${args.memorySmall}, then to ${args.memoryTasks}`);
    const result = await memoryPhase(srv.url, srv.pid, {
      clients: args.memoryClients,
      small: args.memorySmall,
      large: args.memoryTasks,
      settleMs: 2000,
      settleWindowMs: SETTLE_WINDOW_MS,
      every: 1000,
      log,
    });
    log(
      `memory: settled RSS ${result.rssSmallMb} MB after ${result.tasksSmall}, ${result.rssLargeMb} MB after ${result.tasksLarge} (${result.flowsPerS.toFixed(0)} flows/s)`,
    );
    await finishServer(srv);
    return { ...result, store: kind };
  } finally {
    await closeStore(store);
  }
}

/** Our server on a fresh PGlite store, its model the fake Gemini API, through the legacy-wire phases. */
async function oursOnWire(geminiUrl: string, workspace: string, args: Args): Promise<WireFigures> {
  const store = await openStore('pglite');
  try {
    const env = { ...store.env, GEMINI_API_KEY: 'anything', GOOGLE_GEMINI_BASE_URL: geminiUrl };
    log(`anchor comparison: ours (PGlite, ${store.where}), model = the fake Gemini API`);
    server = await spawnServer({ repoRoot: REPO, scriptFile: '', entry: entry().args(false), env });
    const srv = server;
    const figures = await wirePhases(srv, await waitReady(srv, 120_000), workspace, args, log);
    await finishServer(srv);
    return figures;
  } finally {
    await closeStore(store);
  }
}

/** The side-by-side run (--anchor): the same wire phases on ours and on gemini-cli's a2a-server. */
async function anchorLeg(args: Args): Promise<AnchorComparison> {
  const bin = installAnchor(log);
  const ws = tempDir('devtool-bench-anchor-ws-');
  const home = tempDir('devtool-bench-anchor-home-');
  const workspace = realpathSync(ws.dir);
  const fake = await startFakeGemini(path.join(workspace, 'bench.txt'));
  try {
    const ours = await oursOnWire(fake.url, workspace, args);
    log(`anchor comparison: the anchor (${bin}), loopback only`);
    const { srv, readyMs } = await startAnchor(REPO, bin, fake.url, workspace, home.dir);
    server = srv;
    const anchor = await wirePhases(srv, readyMs, workspace, args, log);
    await finishServer(srv);
    return { ours, anchor };
  } finally {
    await fake.close();
    ws.remove();
    home.remove();
  }
}

/** The stores asked for that can run here (PostgreSQL needs an admin URL); the others noted in `skipped`. */
function runnableStores(args: Args, skipped: Report['skipped']): StoreKind[] {
  return args.stores.filter((k) => {
    if (k !== 'postgres' || postgresAdminUrl()) return true;
    const why = 'set BENCH_DATABASE_URL or TEST_DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/test)';
    if (args.storesExplicit) throw new Error(`--stores postgres: ${why}`);
    skipped.push({ store: k, why });
    return false;
  });
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const perLeg =
    60 +
    args.startRuns * 2 * 20 +
    SETTLE_WINDOW_MS / 1000 +
    args.clients.length * (args.warmupS + args.durationS + 40) +
    (args.long ? longTimeoutMs(args) / 1000 : 0);
  const anchorS = args.anchor ? 600 + 2 * (120 + args.clients.length * (args.durationS + 60)) : 0;
  const watchdogS =
    60 +
    (args.memoryOnly ? 0 : args.stores.length * perLeg) +
    (args.memory ? args.stores.length * (60 + args.memoryTasks * 0.25) : 0) +
    anchorS +
    (args.memoryOnly || args.anchorOnly ? 0 : 30 + args.clients.length * (args.warmupS + args.durationS + 20));
  setTimeout(() => {
    log(`watchdog: still running after ${watchdogS} s, giving up`);
    void cleanupAsync().finally(() => process.exit(1));
  }, watchdogS * 1000).unref();

  const skipped: Report['skipped'] = [];
  const kinds = args.memoryOnly || args.anchorOnly ? [] : runnableStores(args, skipped);
  const sourceAtStart = sourceFingerprint(REPO, SOURCE_DIRS);
  serverEntryNow = await serverEntry(REPO, args.fromSource, log);
  log(`the server runs ${serverEntryNow.describe}`);
  tmpRoot = mkdtempSync(path.join(os.tmpdir(), 'devtool-bench-'));
  const scriptFile = writeCombinedScript(tmpRoot, BASE_SCRIPT, args.longChunks, args.longChunkChars);

  const stores: Figures[] = [];
  for (const kind of kinds) stores.push(await leg(kind, args, scriptFile));

  const flowFrames: FlowFrames | undefined = stores.find((f) => f.flowFrames)?.flowFrames;
  let flowCeilingResult: FlowCeilingResult | undefined;
  if (flowFrames) {
    flowCeilingResult = await flowCeiling(flowFrames, { ...args, log, onSpawn: (child) => (ceilingChild = child) });
    ceilingChild = undefined;
  }

  let ceilingResult: CeilingResult | undefined;
  const frames: CapturedFrames | undefined = stores.find((f) => f.long?.frames)?.long?.frames;
  if (frames) {
    log(`long-stream ceiling: raw SSE writer, ${frames.head.length + frames.textCount + frames.tail.length} frames, 1 warm-up + 3 runs`);
    ceilingResult = await ceiling(frames, 3, 60_000);
  }

  const memory: StoreMemory[] = [];
  let memoryNote: string | undefined;
  if (args.memory) {
    for (const kind of args.memoryOnly ? runnableStores(args, skipped) : kinds) memory.push(await memoryLeg(kind, args, scriptFile));
  } else {
    memoryNote =
      `not run: it needs ${args.memoryTasks} full flows, which take many minutes at the server's current speed; ` +
      `run \`npm run bench -- --memory\` (or --memory-only) for RSS after ${args.memorySmall} vs ${args.memoryTasks} tasks on each store`;
  }

  const anchor = args.anchor ? await anchorLeg(args) : undefined;

  rmSync(tmpRoot, { recursive: true, force: true });
  tmpRoot = undefined;
  const report: Report = {
    stores,
    skipped,
    ceiling: ceilingResult,
    flowCeiling: flowCeilingResult,
    memory,
    memoryNote,
    longChunks: args.longChunks,
    longChunkChars: args.longChunkChars,
    benchSeconds: performance.now() / 1000,
    argv: process.argv.slice(2),
    source: { start: sourceAtStart, end: sourceFingerprint(REPO, SOURCE_DIRS) },
    server: entry().describe,
  };
  process.stdout.write(formatReport(report));
  if (anchor) process.stdout.write(formatComparison(anchor));
  process.stdout.write(`\nBENCH_RESULT ${JSON.stringify({ ...resultJson(report), ...(anchor ? { anchor } : {}) })}\n`);
}

main().catch(async (err) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
  if (server) process.stderr.write(`server output:\n${server.output()}\n`);
  await cleanupAsync();
  process.exit(1);
});
