/**
 * The long-stream figure: ONE task whose scripted model streams N text chunks, timed
 * client side from the request to the final `completed` frame (events/s, MB/s), and its
 * ceiling: a bare `node:http` SSE writer (in a worker thread of this process, so it has a
 * core of its own as the server child does) that writes the same number of frames of the
 * same sizes — copies of real frames captured from the server's stream — as fast as
 * backpressure allows, read by the same client code (BenchClient.stream).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { BenchClient, signature, WRITE_SLOTS, writePrompt } from './sse-client.js';
import type { RpcEnvelope, StreamResult, V03Result } from './sse-client.js';
import { commCpuSeconds, cpuSeconds, rssBytes } from './server-process.js';
import { monotonicUs } from './cpu-profile.js';
import type { Window } from './cpu-profile.js';
import { mb, summarize } from './stats.js';
import type { Summary } from './stats.js';

/** The user text that selects the long entry (its `when` is `^long`). */
export const LONG_PROMPT = 'long stream: say a lot';

/** Chunk `i` of the long answer: exactly `size` ASCII characters, no newline. */
export function chunkText(i: number, size: number): string {
  const head = `#${String(i).padStart(5, '0')} `;
  return (head + 'lorem ipsum dolor sit amet consectetur adipiscing elit '.repeat(Math.ceil(size / 50))).slice(0, size);
}

/**
 * Writes the run's model script into `dir`: an entry `^long` → one step of `chunks`
 * text chunks, then the entries of scripts/bench-script.json (the write flow). The
 * scripted model plays the first entry whose `when` matches the latest user text.
 */
export function writeCombinedScript(dir: string, baseScript: string, chunks: number, chunkChars: number): string {
  const base = JSON.parse(readFileSync(baseScript, 'utf8')) as { model?: string; scripts: Array<{ steps: unknown }> };
  const long = { when: '^long', steps: [{ chunks: Array.from({ length: chunks }, (_, i) => [{ text: chunkText(i, chunkChars) }]) }] };
  // One entry per file slot (WRITE_SLOTS): the write flow's steps with bench.txt → bench-<slot>.txt.
  const steps = JSON.stringify(base.scripts[0]?.steps ?? []);
  const slots = Array.from({ length: WRITE_SLOTS }, (_, k) => ({
    when: `^${escapeRegExp(writePrompt(k))}$`,
    steps: JSON.parse(steps.replaceAll('bench.txt', `bench-${k}.txt`)) as unknown,
  }));
  const file = path.join(dir, 'bench-script.combined.json');
  writeFileSync(file, JSON.stringify({ model: base.model ?? 'bench-scripted', scripts: [long, ...slots, ...base.scripts] }));
  return file;
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Raw SSE blocks captured from a real long stream, to replay in the ceiling writer. */
export interface CapturedFrames {
  /** Frames before the first TEXT_CONTENT (Task, working), verbatim. */
  head: string[];
  /** One TEXT_CONTENT frame from the middle of the stream, verbatim. */
  text: string;
  /** How many TEXT_CONTENT frames the stream had. */
  textCount: number;
  /** Frames after the last TEXT_CONTENT (the final `completed`), verbatim. */
  tail: string[];
}

export interface LongStreamResult {
  ok: boolean;
  /** Deviations from the expected stream (order, ids, text), empty when none. */
  problems: string[];
  /** Data frames received up to and including the final one. */
  events: number;
  textEvents: number;
  bytes: number;
  /** Request → final frame, client side. */
  ms: number;
  firstMs: number;
  eventsPerS: number;
  mbPerS: number;
  /**
   * Latency of `GET /.well-known/agent-card.json` sent every 200 ms on another connection
   * while the stream runs: how responsive the rest of the server stays (event-loop stalls).
   */
  probe: Summary;
  /** Server CPU (all threads) and main-thread CPU seconds during the stream, RSS before/after. */
  serverCpuS: number;
  /** CPU seconds of all postgres processes during the stream. */
  dbCpuS: number;
  serverMainCpuS: number;
  rssBeforeMb: number;
  rssAfterMb: number;
  /** Highest RSS seen (sampled every 200 ms) during the stream. */
  rssPeakMb: number;
  /** Mean bytes of a TEXT_CONTENT frame. */
  textFrameBytes: number;
  frames?: CapturedFrames;
  /** The stream's time on CLOCK_MONOTONIC (to cut a --cpu-prof profile to it). */
  window: Window;
  error?: string;
}

const MB = 1e6;

/** Sorts the frames of a long stream as they arrive: head, text deltas (checked against the script), tail. */
function frameSorter(chunks: number, chunkChars: number) {
  const seen = { head: [] as string[], tail: [] as string[], text: '', textCount: 0, textBytes: 0, other: 0, textMismatch: -1 };
  const mid = Math.floor(chunks / 2);
  const onFrame = (raw: string, env: RpcEnvelope) => {
    const r = env.result;
    if (signature(r) === 'status-update/working/TEXT_CONTENT//') {
      const delta = r?.status?.message?.parts?.find((p) => p.kind === 'text')?.text;
      if (seen.textMismatch < 0 && delta !== chunkText(seen.textCount, chunkChars)) seen.textMismatch = seen.textCount;
      if (seen.textCount === mid) seen.text = raw;
      seen.textCount++;
      seen.textBytes += Buffer.byteLength(raw);
      if (seen.tail.length > 0) seen.other++; // text after a non-text frame that followed text
    } else if (seen.textCount === 0) seen.head.push(raw);
    else seen.tail.push(raw);
  };
  return { seen, onFrame };
}

type Seen = ReturnType<typeof frameSorter>['seen'];

/** CPU, RSS and the clock of the server process (and of postgres) at one moment. */
function sample(pid: number) {
  return { cpu: cpuSeconds(pid), main: cpuSeconds(pid, pid), db: commCpuSeconds('postgres'), rss: rssBytes(pid), us: monotonicUs() };
}

/** While the stream runs: RSS sampled and the agent card fetched every 200 ms on other connections. */
function watchServer(url: string, pid: number, rssBefore: number) {
  let streaming = true;
  const probeMs: number[] = [];
  let rssPeak = rssBefore;
  const rssTimer = setInterval(() => (rssPeak = Math.max(rssPeak, rssBytes(pid))), 200);
  const prober = (async () => {
    while (streaming) {
      await new Promise((r) => setTimeout(r, 200));
      if (streaming) probeMs.push(await getMs(`${url}.well-known/agent-card.json`));
    }
  })();
  /** Stops watching; resolves once a probe sent during the stream is answered (it counts). */
  const stop = async (rssAfter: number) => {
    streaming = false;
    clearInterval(rssTimer);
    await prober;
    return { probeMs, rssPeak: Math.max(rssPeak, rssAfter) };
  };
  return { stop };
}

/** Deviations of the stream from Task, working, N text deltas in order, completed (final), consecutive ids. */
function streamProblems(res: StreamResult, seen: Seen, chunks: number): string[] {
  const problems: string[] = [];
  if (res.error) problems.push(res.error);
  const headSig = seen.head.map((raw) => signature(parseRaw(raw))).join(' | ');
  if (headSig !== 'task/submitted/// | status-update/working/STATE_CHANGE//') problems.push(`head of the stream: ${headSig}`);
  const tailSig = seen.tail.map((raw) => signature(parseRaw(raw))).join(' | ') || '(none)';
  if (tailSig !== 'status-update/completed/STATE_CHANGE//final') problems.push(`frames after the last text: ${tailSig.slice(0, 300)}`);
  if (seen.textCount !== chunks) problems.push(`${seen.textCount} TEXT_CONTENT frames for ${chunks} model chunks`);
  if (seen.textMismatch >= 0) {
    problems.push(`text delta #${seen.textMismatch} is not model chunk #${seen.textMismatch} (reordered, merged or altered)`);
  }
  if (seen.other > 0) problems.push(`${seen.other} text frames after a non-text frame`);
  if (res.afterFinal > 0) problems.push(`${res.afterFinal} frames after the final one`);
  const ids = res.ids ?? [];
  const firstBad = ids.findIndex((id, i) => id !== (ids[0] ?? 1) + i);
  if (ids[0] === undefined) problems.push('first frame has no id:');
  else if (firstBad >= 0)
    problems.push(`frame ids not consecutive at frame ${firstBad}: ${ids.slice(Math.max(0, firstBad - 2), firstBad + 2).join(',')}`);
  return problems;
}

/** Runs ONE long task against the server and checks it: Task, working, N text deltas in order, completed (final). */
export async function longStream(
  url: string,
  pid: number,
  chunks: number,
  chunkChars: number,
  timeoutMs: number,
): Promise<LongStreamResult> {
  const client = new BenchClient(url, 1, timeoutMs);
  const { seen, onFrame } = frameSorter(chunks, chunkChars);
  const before = sample(pid);
  const watch = watchServer(url, pid, before.rss);
  const res: StreamResult = await client.stream(
    'message/stream',
    { message: { kind: 'message', role: 'user', messageId: `bench-long-${Date.now()}`, parts: [{ kind: 'text', text: LONG_PROMPT }] } },
    { timeoutMs, keepResults: false, ids: true, onFrame },
  );
  const after = sample(pid);
  const { probeMs, rssPeak } = await watch.stop(after.rss);
  client.destroy();

  const problems = streamProblems(res, seen, chunks);
  const s = res.finalMs / 1000;
  const { head, text, textCount, textBytes, tail } = seen;
  return {
    ok: problems.length === 0,
    problems,
    events: res.frames,
    textEvents: textCount,
    bytes: res.bytes,
    ms: res.finalMs,
    firstMs: res.firstMs,
    eventsPerS: res.frames / s,
    mbPerS: res.bytes / MB / s,
    probe: summarize(probeMs),
    serverCpuS: after.cpu - before.cpu,
    dbCpuS: Math.max(0, after.db - before.db),
    serverMainCpuS: after.main - before.main,
    rssBeforeMb: mb(before.rss),
    rssAfterMb: mb(after.rss),
    rssPeakMb: mb(rssPeak),
    textFrameBytes: textCount ? textBytes / textCount : Number.NaN,
    frames: text ? { head, text, textCount, tail } : undefined,
    window: { fromUs: before.us, toUs: after.us },
    error: res.error,
  };
}

/** ms for one GET on a fresh connection (NaN on error, 60 s cap). */
function getMs(url: string): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, timeout: 60_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(performance.now() - t0));
      res.on('error', () => resolve(Number.NaN));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(Number.NaN));
  });
}

function parseRaw(raw: string): V03Result | undefined {
  const data = raw
    .split('\n')
    .filter((l) => l.startsWith('data:'))
    .map((l) => l.slice(l.charAt(5) === ' ' ? 6 : 5))
    .join('\n');
  try {
    return (JSON.parse(data) as RpcEnvelope | null)?.result;
  } catch {
    return undefined;
  }
}

/** The ceiling writer: plain CommonJS run in a worker (no tsx), one write() per frame, waits for 'drain'. */
const CEILING_WORKER = `
const http = require('node:http');
const { parentPort, workerData } = require('node:worker_threads');
const { head, text, textCount, tail } = workerData;
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', async () => {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    let closed = false;
    let wake;
    res.on('close', () => { closed = true; if (wake) wake(); });
    res.on('drain', () => { if (wake) wake(); });
    const send = async (s) => {
      if (closed || res.write(s)) return;
      await new Promise((r) => (wake = r));
      wake = undefined;
    };
    for (const f of head) await send(f);
    for (let i = 0; i < textCount && !closed; i++) await send(text);
    for (const f of tail) await send(f);
    res.end();
  });
});
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
parentPort.on('message', (m) => { if (m === 'stop') server.close(() => process.exit(0)); });
`;

export interface CeilingResult {
  runs: number;
  /** Median run (by time). */
  events: number;
  bytes: number;
  ms: number;
  eventsPerS: number;
  mbPerS: number;
  /** All measured runs' events/s. */
  allEventsPerS: number[];
  error?: string;
}

/** Serves the captured frames from a worker thread and reads them `runs` times (after one warm-up) with BenchClient. */
export async function ceiling(frames: CapturedFrames, runs: number, timeoutMs: number): Promise<CeilingResult> {
  const worker = new Worker(CEILING_WORKER, { eval: true, execArgv: [], workerData: frames });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    const client = new BenchClient(`http://127.0.0.1:${port}/`, 1, timeoutMs);
    const results: StreamResult[] = [];
    let error: string | undefined;
    for (let i = 0; i <= runs; i++) {
      const t0 = performance.now();
      const r = await client.stream(
        'message/stream',
        { message: { kind: 'message', role: 'user', messageId: `ceiling-${t0}`, parts: [] } },
        { timeoutMs, keepResults: false },
      );
      if (r.error) error ??= r.error;
      if (i > 0) results.push(r);
    }
    client.destroy();
    const sorted = [...results].sort((a, b) => a.finalMs - b.finalMs);
    const med = sorted[Math.floor((sorted.length - 1) / 2)];
    const s = med.finalMs / 1000;
    return {
      runs,
      events: med.frames,
      bytes: med.bytes,
      ms: med.finalMs,
      eventsPerS: med.frames / s,
      mbPerS: med.bytes / MB / s,
      allEventsPerS: results.map((r) => r.frames / (r.finalMs / 1000)),
      error,
    };
  } finally {
    worker.postMessage('stop');
    await Promise.race([new Promise((r) => worker.once('exit', r)), new Promise((r) => setTimeout(r, 2000))]);
    await worker.terminate();
  }
}
