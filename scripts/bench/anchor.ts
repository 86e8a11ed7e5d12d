/**
 * `npm run bench -- --anchor`: the same phases against gemini-cli's own A2A server
 * (@google/gemini-cli-a2a-server@0.25.2, in memory) and against this server (PGlite), both
 * driven over the legacy `coderAgent` wire (which this server speaks too) by one client, both
 * calling one fake Gemini API over loopback. Prints each figure for both and the ratio
 * ours/anchor: ratios from one run are what compare; absolute times on a shared machine drift.
 *
 * The anchor is installed with npm into `<os tmpdir>/devtool-bench-anchor-0.25.2` once and
 * reused. It binds every interface by itself: it runs with scripts/bench/loopback-only.mjs
 * preloaded, which binds its listen sockets to 127.0.0.1, and the bench checks in
 * /proc/net/tcp* that its port is bound to loopback only before sending it anything.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { freePort, listeningSockets, rssBytes, spawnServer, stopServer, waitReady } from './server-process.js';
import type { RunningServer } from './server-process.js';
import { mb, round, summarize } from './stats.js';
import type { Summary } from './stats.js';
import { WRITE_SLOTS } from './sse-client.js';

export const ANCHOR_PACKAGE = '@google/gemini-cli-a2a-server';
export const ANCHOR_VERSION = '0.25.2';
const LOOPBACK_ONLY = fileURLToPath(new URL('./loopback-only.mjs', import.meta.url));

type Log = (s: string) => void;

/** The anchor's bin, installed into the OS temp dir on first use. */
export function installAnchor(log: Log): string {
  const dir = path.join(os.tmpdir(), `devtool-bench-anchor-${ANCHOR_VERSION}`);
  const bin = path.join(dir, 'node_modules', ...ANCHOR_PACKAGE.split('/'), 'dist', 'a2a-server.mjs');
  if (existsSync(bin)) return bin;
  mkdirSync(dir, { recursive: true });
  log(`anchor: npm install ${ANCHOR_PACKAGE}@${ANCHOR_VERSION} into ${dir} (once; minutes)`);
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--prefix', dir, `${ANCHOR_PACKAGE}@${ANCHOR_VERSION}`], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (!existsSync(bin)) throw new Error(`anchor: ${bin} missing after npm install`);
  return bin;
}

interface GeminiRequest {
  contents?: Array<{ parts?: Array<Record<string, unknown>> }>;
}

/** The file a legacy flow's prompt names (`write bench-<slot>.txt`), in the fake Gemini's folder. */
function promptedFile(parsed: GeminiRequest, file: string): string {
  const texts = (parsed.contents ?? []).flatMap((c) => (c.parts ?? []).map((p) => (typeof p.text === 'string' ? p.text : '')));
  const named = texts.map((t) => /write (bench-\d+\.txt)/.exec(t)?.[1]).findLast((n) => n !== undefined);
  return named === undefined ? file : path.join(path.dirname(file), named);
}

/**
 * A fake Gemini API: a request whose last turn answers a function call gets a two-chunk text
 * answer; any other streamed request gets one write_file call (which both servers ask to
 * confirm) of the file its prompt names (`write bench-<slot>.txt`; `file` otherwise — flows
 * running at once write files of their own, as the RFC client's do: one shared file makes an
 * edit's card stale under a concurrent flow, and the edit guard asks again); countTokens and
 * the anchor's non-streamed side requests get neutral answers.
 */
export async function startFakeGemini(file: string): Promise<{ url: string; close: () => Promise<void> }> {
  const sse = (parts: unknown[], last: boolean) =>
    `data: ${JSON.stringify({ candidates: [{ content: { role: 'model', parts }, index: 0, ...(last ? { finishReason: 'STOP' } : {}) }], modelVersion: 'gemini-fake' })}\r\n\r\n`;
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const url = req.url ?? '';
      if (url.includes(':streamGenerateContent')) {
        const parsed = JSON.parse(body || '{}') as GeminiRequest;
        const last = parsed.contents?.[parsed.contents.length - 1];
        const answered = (last?.parts ?? []).some((p) => p.functionResponse !== undefined);
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        if (answered) res.end(sse([{ text: 'Wrote ' }], false) + sse([{ text: 'bench.txt.' }], true));
        else
          res.end(sse([{ functionCall: { name: 'write_file', args: { file_path: promptedFile(parsed, file), content: 'x\n' } } }], true));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      if (url.includes(':countTokens')) res.end(JSON.stringify({ totalTokens: 10 }));
      else {
        const text = JSON.stringify({ reasoning: 'done', next_speaker: 'user' });
        res.end(JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ text }] }, finishReason: 'STOP', index: 0 }] }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The local addresses `port` listens on (hex as the kernel writes them). */
export function listenAddresses(port: number): string[] {
  return listeningSockets(port).map((s) => s.address);
}

const LOOPBACK_HEX = new Set(['0100007F', '00000000000000000000000001000000']);

/** What the bench reads of a legacy stream's results. */
interface LegacyEvent {
  taskId?: string;
  contextId?: string;
  final?: boolean;
  status?: { message?: { parts?: Array<{ data?: { status?: string; request?: { callId?: string } } }> } };
}

const cardOf = (e: LegacyEvent | undefined) => e?.status?.message?.parts?.[0]?.data;

/** Events of one SSE answer: one `data:` line each (both servers write single-line JSON). */
async function streamEvents(url: string, body: unknown, onFirst: () => void): Promise<LegacyEvent[]> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!res.body) throw new Error(`no body (HTTP ${res.status})`);
  const events: LegacyEvent[] = [];
  const decoder = new TextDecoder();
  let partial = '';
  for await (const chunk of res.body) {
    const lines = (partial + decoder.decode(chunk as Uint8Array, { stream: true })).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.startsWith('data:')) continue;
      if (events.length === 0) onFirst();
      const data = JSON.parse(line.slice(5)) as { result?: LegacyEvent; error?: unknown };
      if (data.error) throw new Error(`stream error: ${JSON.stringify(data.error)}`);
      if (data.result) events.push(data.result);
    }
  }
  return events;
}

let messages = 0;
const message = (parts: unknown[], extra: Record<string, unknown>) => ({
  jsonrpc: '2.0',
  id: ++messages,
  method: 'message/stream',
  params: { message: { kind: 'message', role: 'user', messageId: `bench-${messages}-${process.pid}`, parts, ...extra } },
});

/** The ToolCall awaiting approval in a legacy stream. */
function awaiting(events: LegacyEvent[]): { callId: string; taskId?: string; contextId?: string } | undefined {
  for (const e of events) {
    const data = cardOf(e);
    if (data?.status === 'awaiting_approval' && data.request?.callId)
      return { callId: data.request.callId, taskId: e.taskId, contextId: e.contextId };
  }
  return undefined;
}

export interface LegacyFlow {
  firstEventMs: number;
  flowMs: number;
}

/** Legacy flows so far in this process: flow n writes bench-<n mod WRITE_SLOTS>.txt. */
let legacyFlows = 0;

/** One confirm flow on the legacy wire: prompt → awaiting_approval card → proceed_once → the turn's final event. */
export async function legacyFlow(url: string, workspace: string): Promise<LegacyFlow> {
  const t0 = performance.now();
  let firstEventMs = Number.NaN;
  const settings = { metadata: { coderAgent: { kind: 'agent-settings', workspacePath: workspace } } };
  const prompt = `write bench-${legacyFlows++ % WRITE_SLOTS}.txt`;
  const first = await streamEvents(url, message([{ kind: 'text', text: prompt }], settings), () => {
    firstEventMs = performance.now() - t0;
  });
  const call = awaiting(first);
  if (!call) throw new Error(`no awaiting_approval card in the first stream (${first.length} events)`);
  const answer = [{ kind: 'data', data: { callId: call.callId, outcome: 'proceed_once' } }];
  const second = await streamEvents(url, message(answer, { taskId: call.taskId, contextId: call.contextId }), () => {});
  const last = second[second.length - 1];
  if (last?.final !== true) throw new Error(`the confirm stream did not end with a final event (${second.length} events)`);
  const succeeded = second.some((e) => cardOf(e)?.status === 'success');
  if (!succeeded) throw new Error('the confirmed call never reached status success');
  return { firstEventMs, flowMs: performance.now() - t0 };
}

export interface WireFigures {
  readyMs: number;
  rssIdleMb: number;
  firstEvent: Summary;
  flow: Summary;
  errors: number;
  errorExamples: string[];
  runs: Array<{ clients: number; flowsPerS: number; p50: number; p99: number; errors: number }>;
  rssAfterMb: number;
}

async function sequentialFlows(url: string, workspace: string, samples: number, errors: string[]) {
  const first: number[] = [];
  const flow: number[] = [];
  for (let i = 0; i < samples; i++) {
    try {
      const r = await legacyFlow(url, workspace);
      first.push(r.firstEventMs);
      flow.push(r.flowMs);
    } catch (e) {
      errors.push((e as Error).message);
    }
  }
  return { first, flow };
}

async function throughputRun(url: string, workspace: string, clients: number, seconds: number, errors: string[]) {
  const lat: number[] = [];
  let failed = 0;
  const start = performance.now();
  const end = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < end) {
        try {
          lat.push((await legacyFlow(url, workspace)).flowMs);
        } catch (e) {
          failed++;
          errors.push((e as Error).message);
        }
      }
    }),
  );
  const s = summarize(lat);
  return { clients, flowsPerS: lat.length / ((performance.now() - start) / 1000), p50: s.p50, p99: s.p99, errors: failed };
}

export interface PhaseArgs {
  samples: number;
  warmupSamples: number;
  clients: number[];
  durationS: number;
}

/** The phases on a ready server: idle RSS, sequential first event and flow, throughput per client count. */
export async function wirePhases(srv: RunningServer, readyMs: number, workspace: string, args: PhaseArgs, log: Log): Promise<WireFigures> {
  await delay(1000);
  const rssIdleMb = mb(rssBytes(srv.pid));
  const errors: string[] = [];
  log(`  ${args.warmupSamples} warm-up + ${args.samples} sequential flows`);
  await sequentialFlows(srv.url, workspace, args.warmupSamples, errors);
  const seq = await sequentialFlows(srv.url, workspace, args.samples, errors);
  const runs = [];
  for (const n of args.clients) {
    log(`  ${n} clients, ${args.durationS} s`);
    runs.push(await throughputRun(srv.url, workspace, n, args.durationS, errors));
  }
  return {
    readyMs,
    rssIdleMb,
    firstEvent: summarize(seq.first),
    flow: summarize(seq.flow),
    errors: errors.length,
    errorExamples: [...new Set(errors)].slice(0, 3),
    runs,
    rssAfterMb: mb(rssBytes(srv.pid)),
  };
}

/** Starts the anchor against the fake Gemini API, loopback only; throws unless its port is bound to loopback alone. */
export async function startAnchor(repoRoot: string, bin: string, geminiUrl: string, workspace: string, home: string) {
  const port = await freePort();
  const id = {
    GIT_AUTHOR_NAME: 'bench',
    GIT_AUTHOR_EMAIL: 'bench@localhost',
    GIT_COMMITTER_NAME: 'bench',
    GIT_COMMITTER_EMAIL: 'bench@localhost',
  };
  const srv = await spawnServer({
    repoRoot,
    cwd: workspace,
    scriptFile: '',
    port,
    entry: ['--import', LOOPBACK_ONLY, bin],
    env: {
      DATA_DIR: home, // unused by the anchor; spawnServer wants a store named
      HOME: home,
      GEMINI_API_KEY: 'anything',
      GOOGLE_GEMINI_BASE_URL: geminiUrl,
      CODER_AGENT_PORT: String(port),
      CODER_AGENT_WORKSPACE_PATH: workspace,
      ...id,
    },
  });
  const readyMs = await waitReady(srv, 120_000, 50);
  const bound = listenAddresses(port);
  if (bound.length === 0 || !bound.every((a) => LOOPBACK_HEX.has(a))) {
    await stopServer(srv);
    throw new Error(`anchor: port ${port} is bound to ${bound.join(', ') || 'nothing'}, not loopback only; refusing to run`);
  }
  return { srv, readyMs };
}

export interface AnchorComparison {
  ours: WireFigures;
  anchor: WireFigures;
}

/** Ratio lines: ours/anchor per figure (below 1 is better for times and memory, above 1 for flows/s). */
export function formatComparison(c: AnchorComparison): string {
  const rows: Array<[string, number, number]> = [
    ['start to ready, ms', c.ours.readyMs, c.anchor.readyMs],
    ['idle RSS, MB', c.ours.rssIdleMb, c.anchor.rssIdleMb],
    ['first event p50, ms', c.ours.firstEvent.p50, c.anchor.firstEvent.p50],
    ['confirm flow p50, ms', c.ours.flow.p50, c.anchor.flow.p50],
  ];
  c.ours.runs.forEach((r, i) => {
    const a = c.anchor.runs[i];
    if (!a) return;
    rows.push([`flows/s, ${r.clients} clients`, r.flowsPerS, a.flowsPerS], [`flow p99, ${r.clients} clients, ms`, r.p99, a.p99]);
  });
  rows.push(['RSS after the flows, MB', c.ours.rssAfterMb, c.anchor.rssAfterMb], ['errors', c.ours.errors, c.anchor.errors]);
  const fmt = (x: number) => (Number.isFinite(x) ? String(round(x, 1)) : 'n/a');
  const lines = [
    '',
    `Side by side on the legacy coderAgent wire, one fake Gemini API (ours: PGlite; anchor: ${ANCHOR_PACKAGE}@${ANCHOR_VERSION}, in memory):`,
    '',
    `${'figure'.padEnd(32)}${'ours'.padStart(12)}${'anchor'.padStart(12)}${'ours/anchor'.padStart(14)}`,
  ];
  for (const [name, o, a] of rows)
    lines.push(`${name.padEnd(32)}${fmt(o).padStart(12)}${fmt(a).padStart(12)}${(a > 0 ? fmt(o / a) : 'n/a').padStart(14)}`);
  for (const [who, f] of [
    ['ours', c.ours],
    ['anchor', c.anchor],
  ] as const)
    for (const e of f.errorExamples) lines.push(`  ${who} error: ${e}`);
  return lines.join('\n') + '\n';
}

/** A temp directory removed by the returned function. */
export function tempDir(prefix: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
