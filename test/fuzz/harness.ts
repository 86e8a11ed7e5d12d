/**
 * The fuzzer's server and its invariants: the real app (buildApp) on an in-memory store with
 * authentication on (two API-key principals, `a` and `b`), seeded with each principal's tasks
 * (a paused RFC task, a paused legacy task, a completed one) whose texts carry a secret of that
 * principal. Requests go through app.inject (fast) or over a real socket (SSE), and every answer
 * is checked: no 5xx, no -32603, no stack trace or internal path, no other principal's data, an
 * end within a bounded time, and a health probe that still answers afterwards.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/load-config.js';
import { ScriptedModelClient } from '../../src/agent/model/scripted-model-client.js';
import { MemoryTaskStore } from '../../src/store/memory-store.js';
import { TEST_SCRIPT } from '../fixtures/test-script.js';
import { stateName } from '../../src/protocol/a2a.js';
import { parseSse } from '../support/sse.js';

export type Who = 'a' | 'b' | 'none' | 'bad';

export const KEYS = { a: 'fuzz-key-a-0123456789abcdef', b: 'fuzz-key-b-0123456789abcdef' } as const;
const PRINCIPAL = { a: 'key:alice', b: 'key:bob' } as const;

/** One request as the fuzzer sends it: the body is raw text, so it can be anything. */
export interface FuzzRequest {
  method: 'GET' | 'POST' | 'DELETE' | 'PUT';
  url: string;
  headers: Record<string, string>;
  body?: string;
  who: Who;
}

export interface FuzzResponse {
  status: number;
  contentType: string;
  raw: string;
}

/** What one principal owns: ids other principals may name (wrong ids of other tasks) but never see. */
export interface Owned {
  secret: string;
  /** The paused RFC task and its pending card. */
  rfc: { taskId: string; contextId: string; callId: string };
  /** The paused legacy-dialect task and its pending card. */
  legacy: { taskId: string; contextId: string; callId: string };
  /** A completed task. */
  done: { taskId: string; contextId: string };
}

export interface Harness {
  app: FastifyInstance;
  store: MemoryTaskStore;
  workspace: string;
  owned: Record<'a' | 'b', Owned>;
  /**
   * The UUIDs each caller has sent so far: a task id of another principal that a caller once put
   * in a text (echoed back later) or chose as its own context id is not leaked when it comes back.
   */
  named: Record<Who, Set<string>>;
  /** The base URL once `listen()` was called (real sockets, for SSE). */
  url?: string;
  listen(): Promise<string>;
  close(): Promise<void>;
}

/** A stream that never ends fails the case after this long. */
export const STREAM_TIMEOUT_MS = 15_000;

export function authHeader(who: Who): Record<string, string> {
  if (who === 'a' || who === 'b') return { authorization: `Bearer ${KEYS[who]}` };
  return who === 'bad' ? { authorization: 'Bearer not-a-key-0123456789abcdef' } : {};
}

function timeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not end within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** How long a stream may stay silent before the fuzzer asks whether it is a legitimately open subscription. */
const IDLE_MS = 1_000;

const V1_EVENT_KEYS = ['task', 'statusUpdate', 'artifactUpdate', 'message'];

/** The task a v1.0 stream is about, when its frames are v1.0 StreamResponses (JSON-RPC `result` or a REST body). */
function v1StreamTask(raw: string): string | undefined {
  let events: Array<{ data: any }>;
  try {
    events = parseSse(raw);
  } catch {
    return undefined;
  }
  for (const { data } of events) {
    const r = data?.result ?? data;
    if (typeof r !== 'object' || r === null || !V1_EVENT_KEYS.some((k) => k in r)) return undefined;
    const id = r.task?.id ?? r.statusUpdate?.taskId;
    if (typeof id === 'string') return id;
  }
  return undefined;
}

/**
 * Reads a body to its end. A stream that goes silent is asked about: a v1.0 subscription lasts
 * until its task is terminal (README "Subscriptions"), so one whose task is paused is open by
 * design and is closed by the client; any other stream must end within {@link STREAM_TIMEOUT_MS}.
 */
async function readBounded(h: Harness, chunks: AsyncIterator<unknown>, close: () => void, what: string): Promise<string> {
  const started = Date.now();
  let raw = '';
  let pending = chunks.next();
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const idle = new Promise<'idle'>((resolve) => (timer = setTimeout(() => resolve('idle'), IDLE_MS)));
    const r = await Promise.race([pending, idle]).finally(() => clearTimeout(timer));
    if (r !== 'idle') {
      if (r.done) return raw;
      raw += Buffer.isBuffer(r.value)
        ? r.value.toString('utf8')
        : r.value instanceof Uint8Array
          ? Buffer.from(r.value).toString('utf8')
          : String(r.value);
      pending = chunks.next();
      continue;
    }
    const taskId = v1StreamTask(raw);
    const state = taskId === undefined ? undefined : stateName((await h.store.loadTask(taskId))?.task.status?.state);
    if (state === 'input-required' || state === 'auth-required') {
      close();
      pending.catch(() => undefined);
      return raw;
    }
    if (Date.now() - started > STREAM_TIMEOUT_MS) {
      close();
      pending.catch(() => undefined);
      throw new Error(`${what}: the stream did not end within ${STREAM_TIMEOUT_MS} ms (task ${taskId ?? '?'} ${state ?? ''})`);
    }
  }
}

/** Sends a request in process (app.inject) or over a real socket; bounded in time. */
export async function send(h: Harness, req: FuzzRequest, over: 'inject' | 'http' = 'inject'): Promise<FuzzResponse> {
  const headers = { host: '127.0.0.1', ...req.headers, ...authHeader(req.who) };
  const what = `${req.method} ${req.url.slice(0, 80)}`;
  if (over === 'http') {
    const base = h.url ?? (await h.listen());
    const { host: _host, ...rest } = headers;
    const abort = new AbortController();
    const res = await fetch(new URL(req.url, base), { method: req.method, headers: rest, body: req.body, signal: abort.signal });
    const body = res.body?.[Symbol.asyncIterator]() ?? (async function* () {})();
    const raw = await readBounded(h, body, () => abort.abort(), what);
    return { status: res.status, contentType: res.headers.get('content-type') ?? '', raw };
  }
  const res = await timeout(
    h.app.inject({
      method: req.method,
      url: req.url,
      headers,
      payloadAsStream: true,
      ...(req.body === undefined ? {} : { payload: req.body }),
    }),
    STREAM_TIMEOUT_MS,
    what,
  );
  // Closing the server's response is what a client's disconnect does: the SSE writer stops.
  const close = () => (res.raw.res as { destroy(): void }).destroy();
  const raw = await readBounded(h, res.stream()[Symbol.asyncIterator](), close, what);
  return { status: res.statusCode, contentType: String(res.headers['content-type'] ?? ''), raw };
}

/** A frame of a stack trace, a source or dependency path, a file URL: what an internal error would leak. */
const INTERNAL = [
  /\n\s+at \S.*:\d+:\d+/,
  /\/node_modules\//,
  /file:\/\//,
  /\.[cm]?[jt]s:\d+:\d+/,
  /\bsrc\/(agent|transport|store|protocol)\//,
];

/** The JSON values of a body: the body itself, or each SSE event's data. */
function values(res: FuzzResponse): unknown[] {
  if (res.contentType.startsWith('text/event-stream')) {
    try {
      return parseSse(res.raw).map((e) => e.data as unknown);
    } catch {
      return [];
    }
  }
  try {
    return res.raw === '' ? [] : [JSON.parse(res.raw) as unknown];
  } catch {
    return [];
  }
}

/** -32603 anywhere an error code is carried: a JSON-RPC error, a v0.3 REST body, a v1.0 REST error. */
function internalCode(v: unknown): boolean {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as { code?: unknown; error?: { code?: unknown; status?: unknown } };
  return o.code === -32603 || o.error?.code === -32603 || o.error?.status === 'INTERNAL';
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const UUIDS = /[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}/g;

/**
 * Every task id a principal owns now (tasks made during the run included), and the context ids
 * the server made for it. A context id a client chose (the fuzzer names contexts after other
 * ids: a call id, `constructor`) is not the principal's data.
 */
async function idsOf(h: Harness, who: 'a' | 'b'): Promise<Set<string>> {
  const { tasks } = await h.store.listTasks({ principal: PRINCIPAL[who], limit: 100_000, offset: 0 });
  return new Set(tasks.flatMap((t) => (UUID.test(t.contextId) ? [t.id, t.contextId] : [t.id])));
}

/** The invariants every answer keeps; the problems found (empty: the case passed). */
export async function violations(h: Harness, req: FuzzRequest, res: FuzzResponse): Promise<string[]> {
  const problems: string[] = [];
  if (res.status >= 500) problems.push(`HTTP ${res.status}`);
  if (values(res).some(internalCode)) problems.push('an internal error (-32603) for client input');
  for (const re of INTERNAL) if (re.test(res.raw)) problems.push(`an internal detail in the body (${re.source})`);
  if (res.raw.includes(process.cwd())) problems.push('the server directory in the body');
  // Another principal's data: its secret text never; its ids only when the request named them (an echo).
  const asked = `${req.url}\n${JSON.stringify(req.headers)}\n${req.body ?? ''}`;
  const own = req.who === 'a' || req.who === 'b' ? await idsOf(h, req.who) : new Set<string>();
  for (const other of ['a', 'b'] as const) {
    if (other === req.who) continue;
    if (res.raw.includes(h.owned[other].secret)) problems.push(`principal ${other}'s text answered to ${req.who}`);
    for (const id of await idsOf(h, other)) {
      if (own.has(id) || h.named[req.who].has(id)) continue; // the caller's own, or an id it sent before
      if (res.raw.includes(id) && !asked.includes(id)) problems.push(`principal ${other}'s id ${id} answered to ${req.who}`);
    }
  }
  const health = await send(h, { method: 'GET', url: '/healthz', headers: {}, who: 'none' });
  if (health.status !== 200) problems.push(`GET /healthz answered ${health.status} after the case: ${health.raw.slice(0, 200)}`);
  return problems;
}

/** Sends one request and checks it; throws with the request and the problems on a violation. */
export async function checkCase(h: Harness, req: FuzzRequest, over: 'inject' | 'http' = 'inject'): Promise<FuzzResponse> {
  for (const id of `${req.url}\n${req.body ?? ''}`.match(UUIDS) ?? []) h.named[req.who].add(id.toLowerCase());
  let res: FuzzResponse;
  try {
    res = await send(h, req, over);
  } catch (err) {
    throw new CaseFailure(req, [`no answer: ${(err as Error).message}`]);
  }
  const problems = await violations(h, req, res);
  if (problems.length > 0) throw new CaseFailure(req, problems, res);
  return res;
}

export class CaseFailure extends Error {
  constructor(
    readonly request: FuzzRequest,
    readonly problems: string[],
    readonly response?: FuzzResponse,
  ) {
    super(`${problems.join('; ')}\nrequest: ${JSON.stringify(request).slice(0, 600)}\nresponse: ${response?.raw.slice(0, 600) ?? '-'}`);
  }
}

// ---- the server and its seed tasks --------------------------------------------------

let n = 0;
const mid = () => `fuzz-m-${++n}-${randomUUID().slice(0, 8)}`;

/** message/stream (v0.3) as `who`, read to its end; the results. */
export async function streamAs(h: Harness, who: 'a' | 'b', message: Record<string, unknown>): Promise<any[]> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/stream', params: { message } });
  const res = await send(h, { method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, body, who });
  if (!res.contentType.startsWith('text/event-stream')) throw new Error(`expected a stream, got ${res.status} ${res.raw.slice(0, 300)}`);
  return parseSse(res.raw).map((e) => (e.data as { result: unknown }).result);
}

export const v03Text = (text: string, extra: Record<string, unknown> = {}) => ({
  kind: 'message',
  role: 'user',
  messageId: mid(),
  parts: [{ kind: 'text', text }],
  ...extra,
});

export const v03Data = (data: Record<string, unknown>[], extra: Record<string, unknown> = {}) => ({
  kind: 'message',
  role: 'user',
  messageId: mid(),
  parts: data.map((d) => ({ kind: 'data', data: d })),
  ...extra,
});

/** The pending card of a paused stream: an RFC ToolCall's id, or a legacy ToolCall's callId. */
function pendingCall(results: any[]): string {
  for (const r of results) {
    const data = r?.status?.message?.parts?.find((p: any) => p.kind === 'data')?.data;
    if (data?.tool_call_id && data.status === 'PENDING') return data.tool_call_id as string;
    if (data?.request?.callId && data.status === 'awaiting_approval') return data.request.callId as string;
  }
  throw new Error(`no pending card in ${JSON.stringify(results).slice(0, 500)}`);
}

/** A paused RFC task of `who` (write → a write_file card). */
export async function pausedRfc(h: Harness, who: 'a' | 'b', secret: string) {
  const results = await streamAs(h, who, v03Text(`write ${secret}`));
  return { taskId: results[0].id as string, contextId: results[0].contextId as string, callId: pendingCall(results) };
}

/** A paused legacy-dialect task of `who`. */
export async function pausedLegacy(h: Harness, who: 'a' | 'b', secret: string) {
  const metadata = { coderAgent: { kind: 'agent-settings', workspacePath: h.workspace } };
  const results = await streamAs(h, who, v03Text(`write ${secret}`, { metadata }));
  return { taskId: results[0].id as string, contextId: results[0].contextId as string, callId: pendingCall(results) };
}

async function seed(h: Harness, who: 'a' | 'b', secret = `secret-of-${who}-${randomUUID()}`): Promise<Owned> {
  const rfc = await pausedRfc(h, who, secret);
  const legacy = await pausedLegacy(h, who, secret);
  const done = await streamAs(h, who, v03Text(`echo ${secret}`));
  return { secret, rfc, legacy, done: { taskId: done[0].id as string, contextId: done[0].contextId as string } };
}

/** Fresh paused and completed tasks for both principals (a run's answers and cancels end the old ones), the same secrets. */
export async function reseed(h: Harness): Promise<void> {
  h.owned = { a: await seed(h, 'a', h.owned.a.secret), b: await seed(h, 'b', h.owned.b.secret) };
}

/** The app with authentication on, and both principals' seed tasks. */
export async function startHarness(): Promise<Harness> {
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'devtool-fuzz-')));
  const workspace = path.join(dir, 'ws');
  rmSync(workspace, { recursive: true, force: true });
  await import('node:fs/promises').then((fs) => fs.mkdir(workspace));
  const authFile = path.join(dir, 'auth.json');
  writeFileSync(
    authFile,
    JSON.stringify({
      api_keys: [
        { key: KEYS.a, principal: 'alice', roles: ['approver'] },
        { key: KEYS.b, principal: 'bob', roles: ['approver'] },
      ],
    }),
  );
  const config = loadConfig({ WORKSPACE_DIR: workspace, PORT: '0', LOG_LEVEL: 'silent', AUTH_CONFIG: authFile });
  const store = new MemoryTaskStore();
  const app = await buildApp({ config, model: new ScriptedModelClient(TEST_SCRIPT), logger: false, retryBaseDelayMs: 10, store });
  const h: Harness = {
    app,
    store,
    workspace,
    owned: {} as Harness['owned'],
    named: { a: new Set(), b: new Set(), none: new Set(), bad: new Set() },
    async listen() {
      await app.listen({ host: '127.0.0.1', port: 0 });
      const address = app.server.address();
      h.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/`;
      return h.url;
    },
    async close() {
      await app.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  h.owned = { a: await seed(h, 'a'), b: await seed(h, 'b') };
  return h;
}
