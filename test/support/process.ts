/**
 * The real server as a child process (`node --import tsx src/main.ts`), for tests that kill
 * it (SIGKILL) and start another on the same database; a fresh PostgreSQL database per test
 * (when TEST_DATABASE_URL is set); and a streaming SSE reader for live and drop cases.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import type { ModelScript } from '../../src/agent/model/scripted-model-client.js';
import { TEST_SCRIPT } from '../fixtures/test-script.js';
import { tempDir } from './server.js';
import { parseSse } from './sse.js';
import type { SseEvent } from './sse.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** Variables of the test runner's environment that would change what the child server does. */
const SERVER_VARS = [
  'PORT',
  'HOST',
  'PUBLIC_URL',
  'WORKSPACE_DIR',
  'LOG_LEVEL',
  'DATA_DIR',
  'DATABASE_URL',
  'INSTANCE_ID',
  'LEASE_MS',
  'APPROVAL_TIMEOUT',
  'AGENT_MODEL_SCRIPT',
  'GEMINI_API_KEY',
  'GOOGLE_API_KEY',
  'GEMINI_MODEL',
  'GOOGLE_GENAI_USE_VERTEXAI',
  'GOOGLE_CLOUD_PROJECT',
  'GOOGLE_CLOUD_LOCATION',
  'GOOGLE_GEMINI_BASE_URL',
  'SHELL_TIMEOUT_MS',
  'SHELL_SANDBOX',
  'SHELL_SANDBOX_NETWORK',
  'SHELL_UNCONFINED_AUTO_APPROVE',
  'SSE_HEARTBEAT_MS',
  'APPROVAL_REMINDER',
  'AUTH_CONFIG',
  'PUSH_ALLOW_PRIVATE',
  'PUSH_MAX_ATTEMPTS',
  'PUSH_RETRY_BASE_MS',
  'PUSH_RETRY_MAX_MS',
  'PUSH_TIMEOUT_MS',
];

export interface ServerProcess {
  url: string;
  port: number;
  pid: number;
  /** WORKSPACE_DIR of the process. */
  workspace: string;
  /** Sends `signal` (default SIGKILL) and resolves once the process is gone. Teardown stops it if still running. */
  kill(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Everything the process wrote so far (stdout and stderr). */
  output(): string;
}

export interface SpawnOptions {
  /** Extra environment (DATA_DIR, DATABASE_URL, LEASE_MS, APPROVAL_TIMEOUT…). */
  env?: Record<string, string>;
  /** WORKSPACE_DIR; a fresh temp dir when absent. */
  workspace?: string;
  /** The model script (AGENT_MODEL_SCRIPT); TEST_SCRIPT when absent. */
  script?: ModelScript;
  /** How long to wait for the agent card, ms (default READY_MS). */
  readyTimeoutMs?: number;
  /** Listen on this port (a restart that clients must find at the same address, e.g. a browser page); default: a free one. */
  port?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A port that was free a moment ago (listen on 0, read it, close). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * How long a child server may take to answer its agent card: 90 s. A fresh PGlite data
 * directory takes seconds to make, and `npm test` runs several process-starting files at once
 * on two cores (the chaos suites among them); a boot is not what these tests measure.
 */
const READY_MS = 90_000;

/** Starts `node --import tsx src/main.ts` and waits until its agent card answers. */
export async function spawnServer(t: Teardown, opts: SpawnOptions = {}): Promise<ServerProcess> {
  const workspace = opts.workspace ?? tempDir();
  const scriptFile = path.join(tempDir('devtool-script-'), 'script.json');
  writeFileSync(scriptFile, JSON.stringify(opts.script ?? TEST_SCRIPT));
  let lastError: Error | undefined;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await spawnOnce(t, workspace, scriptFile, opts);
    } catch (err) {
      lastError = err as Error;
      if (!/EADDRINUSE/.test(lastError.message)) throw err; // the port was taken between probe and listen: retry
    }
  }
  throw lastError ?? new Error('spawnServer: no attempt was made');
}

async function spawnOnce(t: Teardown, workspace: string, scriptFile: string, opts: SpawnOptions): Promise<ServerProcess> {
  const port = opts.port ?? (await freePort());
  const env: Record<string, string | undefined> = { ...process.env };
  for (const name of SERVER_VARS) delete env[name];
  Object.assign(env, {
    PORT: String(port),
    HOST: '127.0.0.1',
    WORKSPACE_DIR: workspace,
    AGENT_MODEL_SCRIPT: scriptFile,
    LOG_LEVEL: 'warn',
    EXTENSIONS_DIR: 'off', // never the extensions of the machine's ~/.gemini
    // tap records coverage in child processes too, but these run the sources through tsx,
    // whose source maps do not line up with the test runner's: merged, every file they load
    // would count twice with half its statements "uncovered". The in-process tests cover src/.
    _TAPJS_PROCESSINFO_COVERAGE_: '0',
    ...opts.env,
  });
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (out += s));
  let done = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      done = true;
      resolve({ code, signal });
    }),
  );
  const kill = async (signal: NodeJS.Signals = 'SIGKILL') => {
    if (!done) child.kill(signal);
    return exited;
  };
  // At the end, a graceful stop first (so the child's coverage is written), then SIGKILL.
  t.teardown(async () => {
    if (done) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => void kill('SIGKILL'), 3000);
    await exited;
    clearTimeout(timer);
  });
  const url = `http://127.0.0.1:${port}/`;
  const deadline = Date.now() + (opts.readyTimeoutMs ?? READY_MS);
  for (;;) {
    if (done) {
      const { code, signal } = await exited;
      throw new Error(`server process exited before it was ready (code ${code}, signal ${signal}):\n${out}`);
    }
    try {
      const res = await fetch(`${url}.well-known/agent-card.json`, { signal: AbortSignal.timeout(2000) });
      if (res.ok) {
        await res.arrayBuffer();
        break;
      }
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await kill('SIGKILL');
      throw new Error(`server process not ready within ${opts.readyTimeoutMs ?? READY_MS} ms:\n${out}`);
    }
    await sleep(100);
  }
  return { url, port, pid: child.pid as number, workspace, kill, exited, output: () => out };
}

export interface FreshDatabase {
  /** The URL of the new database (what DATABASE_URL gets). */
  url: string;
  /** A postgres.js client on it, for looking at rows (closed at teardown). */
  sql: postgres.Sql;
}

/**
 * A new, empty PostgreSQL database `t_<random>` on TEST_DATABASE_URL's server, dropped
 * (WITH (FORCE)) at teardown. The server reads no schema name from its environment, so a
 * database of its own is how a test isolates it. Undefined when TEST_DATABASE_URL is unset.
 */
export async function freshDatabase(t: Teardown): Promise<FreshDatabase | undefined> {
  const base = process.env.TEST_DATABASE_URL;
  if (base === undefined || base === '') return undefined;
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = postgres(base, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${name}"`);
  const u = new URL(base);
  u.pathname = `/${name}`;
  const url = u.toString();
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  t.teardown(async () => {
    await sql.end({ timeout: 2 });
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
    await admin.end({ timeout: 2 });
  });
  return { url, sql };
}

export const PG_SKIP = 'PostgreSQL cases: TEST_DATABASE_URL is unset (e.g. postgres://postgres@127.0.0.1:5432/test)';

/** `{ skip: reason }` for a PostgreSQL-only test when TEST_DATABASE_URL is unset, else `{}`. */
export function pgOnly(): { skip?: string } {
  const url = process.env.TEST_DATABASE_URL;
  return url === undefined || url === '' ? { skip: PG_SKIP } : {};
}

let nextRpcId = 5000;

/** An SSE (or JSON) answer read as it arrives. */
export interface LiveStream {
  status: number;
  contentType: string;
  /** The JSON body when the answer is not a stream (a refusal). */
  json?: any;
  /** Every SSE event received so far. */
  events: SseEvent[];
  /** True once the server ended the stream. */
  ended: boolean;
  /** Reads until `pred` holds for an event (returns it) or the stream ends (undefined). Bounded. */
  until(pred: (ev: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent | undefined>;
  /** Reads to the end of the stream. Bounded. */
  rest(timeoutMs?: number): Promise<SseEvent[]>;
  /** Drops the connection. */
  close(): Promise<void>;
}

/** Posts one JSON-RPC request and returns at once with a reader over its answer. */
export async function openStream(
  baseUrl: string,
  method: string,
  params: unknown,
  opts: { headers?: Record<string, string> } = {},
): Promise<LiveStream> {
  const abort = new AbortController();
  const res = await fetch(baseUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...opts.headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: nextRpcId++, method, params }),
    signal: abort.signal,
  });
  const contentType = res.headers.get('content-type') ?? '';
  const stream: LiveStream = {
    status: res.status,
    contentType,
    events: [],
    ended: false,
    until: async () => undefined,
    rest: async () => stream.events,
    close: async () => abort.abort(),
  };
  if (!contentType.startsWith('text/event-stream')) {
    const raw = await res.text();
    stream.json = raw ? JSON.parse(raw) : undefined;
    stream.ended = true;
    return stream;
  }
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  let read = 0; // events handed to `until` callers so far
  /** Reads one chunk into `events`; false at the end. */
  const pump = async (deadline: number): Promise<boolean> => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no SSE data within the bounded wait (${stream.events.length} events so far)`)),
        Math.max(0, deadline - Date.now()),
      );
    });
    try {
      const { value, done } = await Promise.race([reader.read(), timeout]);
      if (done) {
        stream.ended = true;
        return false;
      }
      buf += decoder.decode(value, { stream: true });
      const blocks = buf.split(/\r?\n\r?\n/);
      buf = blocks.pop() ?? '';
      stream.events.push(...parseSse(blocks.join('\n\n') + '\n\n'));
      return true;
    } finally {
      clearTimeout(timer);
    }
  };
  stream.until = async (pred, timeoutMs = 15_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      while (read < stream.events.length) {
        const ev = stream.events[read++];
        if (pred(ev)) return ev;
      }
      if (stream.ended || !(await pump(deadline))) return undefined;
    }
  };
  stream.rest = async (timeoutMs = 15_000) => {
    await stream.until(() => false, timeoutMs);
    return stream.events;
  };
  stream.close = async () => {
    abort.abort();
    await reader.cancel().catch(() => undefined);
  };
  return stream;
}
