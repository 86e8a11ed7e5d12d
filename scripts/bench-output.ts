/**
 * Benchmark of a command that prints a lot (a figure printer, never an assertion): spawns the
 * real server on a fresh PGlite DATA_DIR with a scripted model that runs
 * `run_shell_command` printing `--mb` MiB (YOLO: no approval), and prints
 *
 *   - the live stream: bytes, frames, seconds, and the largest `live_content`;
 *   - the replay of the finished task (`tasks/resubscribe`, Last-Event-ID 0): bytes and frames,
 *     i.e. the durable log as a client receives it;
 *   - the data directory's growth (measured after the server stopped);
 *   - stalled clients, on a fresh server warmed up by one run of each flow read normally: the
 *     same command, then a model answer of `--mb` MiB of text, each on a raw socket that never
 *     reads; the server's RSS growth (peak during the run minus the RSS before it) and
 *     whether the server dropped the connection (SSE_STALL_TIMEOUT_MS is 5 s here).
 *
 *   npm run bench:output -- [--mb 16] [--no-stall] [--repo <another checkout, e.g. the code before>]
 *
 * Prints a table and one line `BENCH_OUTPUT {...}`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { rssBytes, spawnServer, waitReady } from './bench/server-process.js';
import type { RunningServer } from './bench/server-process.js';
import { flagValue } from './bench/flags.js';

const URI = 'https://github.com/google-gemini/gemini-cli/blob/main/docs/a2a/developer-profile/v0/spec.md';
const repoRoot = path.resolve(flagValue('repo') ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..'));
const STALL_TIMEOUT_MS = 5_000;

const mib = Number(flagValue('mb') ?? 16);
const stall = !process.argv.includes('--no-stall');
const MB = 1024 * 1024;

/** `mib` MiB of 99-character lines. */
const command = `head -c ${mib * MB} /dev/zero | tr '\\0' 'a' | fold -w 99`;

function script() {
  return {
    model: 'bench-output',
    scripts: [
      {
        when: '^flood',
        steps: [
          { chunks: [[{ functionCall: { id: 'f1', name: 'run_shell_command', args: { command } } }]] },
          { chunks: [[{ text: 'done' }]] },
        ],
      },
      {
        // The answer as 64 KiB text chunks: a stream no compaction shortens.
        when: '^chatty',
        steps: [{ chunks: Array.from({ length: mib * 16 }, () => [{ text: 'b'.repeat(65_535) + '\n' }]) }],
      },
      {
        when: '^small',
        steps: [
          { chunks: [[{ functionCall: { id: 's1', name: 'run_shell_command', args: { command: 'seq 1 1000' } } }]] },
          { chunks: [[{ text: 'done' }]] },
        ],
      },
    ],
  };
}

let nextId = 1;
function body(method: string, params: unknown): string {
  return JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params });
}

function floodParams(text = 'flood'): unknown {
  return {
    message: {
      kind: 'message',
      role: 'user',
      messageId: `bench-${nextId}`,
      parts: [{ kind: 'text', text }],
      metadata: { [URI]: { approval_mode: 'YOLO' } },
    },
  };
}

/** The few fields of a v0.3 stream result this benchmark reads. */
interface V03Result {
  kind?: string;
  id?: string;
  taskId?: string;
  status?: { message?: { parts?: Array<{ kind?: string; data?: { live_content?: unknown } }> } };
}

interface StreamFigures {
  bytes: number;
  frames: number;
  seconds: number;
  maxLive: number;
  taskId?: string;
}

/** Reads a whole SSE answer, counting bytes and frames without keeping the text. */
async function stream(url: string, method: string, params: unknown, headers: Record<string, string> = {}): Promise<StreamFigures> {
  const t0 = performance.now();
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: body(method, params) });
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let bytes = 0;
  let frames = 0;
  let maxLive = 0;
  let pending = '';
  let taskId: string | undefined;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
    pending += decoder.decode(value, { stream: true });
    let at: number;
    while ((at = pending.indexOf('\n\n')) >= 0) {
      const block = pending.slice(0, at);
      pending = pending.slice(at + 2);
      const data = block.split('\n').find((l) => l.startsWith('data: '));
      if (data === undefined) continue;
      frames++;
      const result = (JSON.parse(data.slice(6)) as { result?: V03Result }).result;
      taskId ??= result?.kind === 'task' ? result.id : result?.taskId;
      const live = result?.status?.message?.parts?.find((p) => p.kind === 'data')?.data?.live_content;
      if (typeof live === 'string') maxLive = Math.max(maxLive, live.length);
    }
  }
  return { bytes, frames, seconds: (performance.now() - t0) / 1000, maxLive, taskId };
}

async function taskState(url: string, id: string): Promise<string | undefined> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body('tasks/get', { id }) });
  return ((await res.json()) as { result?: { status?: { state?: string } } }).result?.status?.state;
}

interface Stalled {
  rssGrowthMb: number;
  dropped: boolean;
  seconds: number;
}

/** `prompt` read normally: the RSS growth the flow itself costs (the reference for a stalled one). */
async function reading(srv: RunningServer, prompt: string): Promise<Stalled> {
  const baseline = rssBytes(srv.pid);
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(srv.pid))), 100);
  const t0 = performance.now();
  try {
    await stream(srv.url, 'message/stream', floodParams(prompt));
  } finally {
    clearInterval(sampler);
  }
  return { rssGrowthMb: (Math.max(peak, rssBytes(srv.pid)) - baseline) / MB, dropped: false, seconds: (performance.now() - t0) / 1000 };
}

/** `prompt` on a socket that never reads: RSS peak minus baseline, and whether the server hung up. */
async function stalled(srv: RunningServer, prompt: string): Promise<Stalled> {
  const baseline = rssBytes(srv.pid);
  let peak = baseline;
  const payload = body('message/stream', floodParams(prompt));
  const socket = net.connect(srv.port, '127.0.0.1');
  let ended = false;
  socket.on('end', () => (ended = true));
  socket.on('error', () => (ended = true));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  socket.pause(); // never read: the server's writes back up
  socket.write(
    `POST / HTTP/1.1\r\nhost: 127.0.0.1:${srv.port}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
  );
  const t0 = performance.now();
  // The task id is not readable from a stalled socket: wait for the newest task to finish.
  let id: string | undefined;
  for (let i = 0; i < 6000; i++) {
    peak = Math.max(peak, rssBytes(srv.pid));
    const list = await fetch(srv.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'A2A-Version': '1.0' },
      body: body('ListTasks', { pageSize: 1 }),
    }).then((r) => r.json() as Promise<{ result?: { tasks?: Array<{ id: string; status?: { state?: string } }> } }>);
    const newest = list.result?.tasks?.[0];
    if (newest && id === undefined && performance.now() - t0 > 200) id = newest.id;
    if (id !== undefined && /COMPLETED|FAILED/.test(newest?.status?.state ?? '')) break;
    await delay(100);
  }
  // Past the stall timeout (the server drops the client then, if its writes are waiting).
  const until = performance.now() + STALL_TIMEOUT_MS + 2_000;
  while (performance.now() < until) {
    peak = Math.max(peak, rssBytes(srv.pid));
    await delay(100);
  }
  // A paused socket hears of the server's close only once read: read what waits, look for the end.
  socket.on('data', () => {});
  socket.resume();
  for (let i = 0; i < 30 && !ended; i++) await delay(100);
  const dropped = ended;
  const seconds = (performance.now() - t0) / 1000;
  socket.destroy();
  return { rssGrowthMb: (peak - baseline) / MB, dropped, seconds };
}

function duBytes(dir: string): number {
  return Number(execFileSync('du', ['-sb', dir], { encoding: 'utf8' }).split('\t')[0]);
}

/** A server on a fresh PGlite DATA_DIR under `tmp`; `run` gets it ready; it is stopped (and its data dir measured) after. */
async function withServer(tmp: string, name: string, run: (srv: RunningServer) => Promise<void>): Promise<number> {
  const dataDir = path.join(tmp, name);
  const scriptFile = path.join(tmp, 'script.json');
  writeFileSync(scriptFile, JSON.stringify(script()));
  const env = { DATA_DIR: dataDir, SSE_STALL_TIMEOUT_MS: String(STALL_TIMEOUT_MS) };
  const srv = await spawnServer({ repoRoot, scriptFile, env });
  try {
    await waitReady(srv, 60_000);
    const before = duBytes(dataDir);
    await run(srv);
    srv.child.kill('SIGTERM');
    await new Promise((resolve) => srv.child.once('exit', resolve));
    return (duBytes(dataDir) - before) / MB;
  } finally {
    if (srv.child.exitCode === null) srv.child.kill('SIGKILL');
  }
}

async function main(): Promise<void> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'bench-output-'));
  const out: Record<string, unknown> = { mib };
  try {
    out.dataDirGrowthMb = await withServer(tmp, 'data', async (srv) => {
      const live = await stream(srv.url, 'message/stream', floodParams());
      out.stream = { mb: live.bytes / MB, frames: live.frames, seconds: live.seconds, maxLiveKb: live.maxLive / 1024 };
      if (live.taskId === undefined) return;
      const state = await taskState(srv.url, live.taskId);
      const replay = await stream(srv.url, 'tasks/resubscribe', { id: live.taskId }, { 'Last-Event-ID': '0' });
      out.replay = { mb: replay.bytes / MB, frames: replay.frames, state };
    });
    // A fresh server, warmed up by each flow read normally: a stalled run's growth is its own.
    if (stall)
      await withServer(tmp, 'stall', async (srv) => {
        for (const prompt of ['small', 'flood', 'chatty']) await stream(srv.url, 'message/stream', floodParams(prompt));
        out.readingCommand = await reading(srv, 'flood');
        out.stalledCommand = await stalled(srv, 'flood');
        out.readingAnswer = await reading(srv, 'chatty');
        out.stalledAnswer = await stalled(srv, 'chatty');
      });
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  const f = (n: unknown) => (typeof n === 'number' ? n.toFixed(2) : String(n));
  const s = out.stream as Record<string, number>;
  const r = out.replay as Record<string, number> | undefined;
  const stalls = [
    ['reading, command', out.readingCommand],
    ['stalled, command', out.stalledCommand],
    ['reading, answer ', out.readingAnswer],
    ['stalled, answer ', out.stalledAnswer],
  ] as Array<[string, Stalled | undefined]>;
  console.log(`command printing ${mib} MiB (PGlite)`);
  console.log(`  live stream      ${f(s.mb)} MB in ${s.frames} frames, ${f(s.seconds)} s; largest live_content ${f(s.maxLiveKb)} KB`);
  if (r) console.log(`  replay (log)     ${f(r.mb)} MB in ${r.frames} frames`);
  console.log(`  data dir growth  ${f(out.dataDirGrowthMb)} MB`);
  for (const [label, st] of stalls)
    if (st) console.log(`  ${label} RSS +${f(st.rssGrowthMb)} MB, dropped by the server: ${String(st.dropped)} (${f(st.seconds)} s)`);
  console.log(`BENCH_OUTPUT ${JSON.stringify(out)}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
