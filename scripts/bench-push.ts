/**
 * Push delivery benchmark: `npm run bench:push [-- --tasks 200 --concurrency 20]`.
 *
 * Runs the real server in this process (buildApp, in-memory PGlite or TEST_DATABASE_URL's
 * PostgreSQL with --pg) and a Fastify webhook receiver on loopback. Each task is a short
 * answer (working → text → completed, 4 events) whose message/stream registers the receiver.
 * Prints, as figures:
 * - delivery latency (event committed → receiver got it; measured from the SSE frame's arrival),
 * - deliveries per second while `concurrency` tasks run at once,
 * - SSE first-event latency (sequential) with no push, with a healthy receiver, and with a
 *   receiver that never answers (every POST hangs until PUSH_TIMEOUT_MS) — the last must not
 *   be slower; and while `concurrency` tasks run at once, each pushing.
 */
import Fastify from 'fastify';
import postgres from 'postgres';
import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config/load-config.js';
import { ScriptedModelClient } from '../src/agent/model/scripted-model-client.js';
import { openDatabase } from '../src/store/db.js';
import { PgTaskStore } from '../src/store/pg-task-store.js';
import { numberFlag } from './bench/flags.js';

const args = process.argv.slice(2);
const TASKS = numberFlag('tasks', 200);
const CONCURRENCY = numberFlag('concurrency', 20);
const usePg = args.includes('--pg');

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const fmt = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(1)} ms, p99 ${pct(xs, 99).toFixed(1)} ms (n=${xs.length})`;

/** POSTs message/stream and reads the SSE body; returns each frame's id and arrival time. */
async function stream(
  url: string,
  text: string,
  push?: { url: string },
): Promise<{ taskId: string; frames: Array<{ id: number; at: number }>; firstMs: number }> {
  const t0 = performance.now();
  const body = {
    jsonrpc: '2.0',
    id: 1,
    method: 'message/stream',
    params: {
      message: { kind: 'message', role: 'user', messageId: `m-${Math.random()}`, parts: [{ kind: 'text', text }] },
      ...(push ? { configuration: { pushNotificationConfig: { url: push.url, token: 'bench' } } } : {}),
    },
  };
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buf = '';
  let firstMs = NaN;
  let taskId = '';
  const frames: Array<{ id: number; at: number }> = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let cut: number;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      const id = /^id: (\d+)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (data === undefined) continue;
      if (Number.isNaN(firstMs)) firstMs = performance.now() - t0;
      const { result } = JSON.parse(data) as { result: { kind?: string; id?: string; taskId?: string } };
      if (!taskId) taskId = (result.kind === 'task' ? result.id : result.taskId) ?? '';
      if (id !== undefined) frames.push({ id: Number(id), at: performance.now() });
    }
  }
  return { taskId, frames, firstMs };
}

/** The webhook receiver: records when each `${taskId}:${eventId}` arrived; `hang()` makes it stop answering. */
async function startReceiver() {
  const arrivals = new Map<string, number>(); // `${taskId}:${seq}` → time
  let hanging = false;
  const receiver = Fastify({ logger: false });
  receiver.post('/hook', async (request, reply) => {
    if (hanging) return new Promise(() => {}); // never answers
    const body = request.body as { id?: string; taskId?: string };
    const taskId = body.id ?? body.taskId ?? '';
    arrivals.set(`${taskId}:${String(request.headers['x-a2a-event-id'])}`, performance.now());
    return reply.code(204).send();
  });
  await receiver.listen({ host: '127.0.0.1', port: 0 });
  const hookUrl = `http://127.0.0.1:${(receiver.server.address() as { port: number }).port}/hook`;
  return { arrivals, hookUrl, hang: () => (hanging = true), close: () => receiver.close() };
}

/** The real server in this process, on PGlite in memory or (--pg) a schema of its own in TEST_DATABASE_URL. */
async function startServer() {
  const workspace = realpathSync(mkdtempSync(path.join(tmpdir(), 'bench-push-')));
  const pgUrl = process.env.TEST_DATABASE_URL;
  if (usePg && !pgUrl) throw new Error('--pg needs TEST_DATABASE_URL');
  // PostgreSQL: a schema of its own, dropped at the end.
  const schema = `bench_push_${process.pid}`;
  const db = await openDatabase(usePg ? { databaseUrl: pgUrl, dataDir: workspace, schema } : { dataDir: 'memory://' });
  const store = new PgTaskStore(db);
  const config = loadConfig({ WORKSPACE_DIR: workspace, PORT: '0', LOG_LEVEL: 'silent', PUSH_ALLOW_PRIVATE: '1', PUSH_TIMEOUT_MS: '5000' });
  const model = new ScriptedModelClient({
    model: 'bench',
    scripts: [{ steps: [{ chunks: [[{ text: 'Hello' }], [{ text: ' there.' }]] }] }],
  });
  const app = await buildApp({ config, model, logger: false, store });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/`;
  const close = async () => {
    await app.close();
    await store.close();
    if (usePg) {
      const admin = postgres(pgUrl as string, { max: 1, onnotice: () => {} });
      await admin.unsafe(`drop schema if exists "${schema}" cascade`);
      await admin.end({ timeout: 2 });
    }
  };
  return { url, close };
}

/** Sequential first-event latency of `n` plain tasks (with `push`: each registers the receiver). */
async function firstEvents(url: string, n: number, push?: { url: string }): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await stream(url, 'plain', push)).firstMs);
  return out;
}

/** TASKS tasks, CONCURRENCY at a time, each pushing; then waits (bounded) for every delivery. */
async function underLoad(url: string, hookUrl: string, arrivals: Map<string, number>) {
  const latencies: number[] = [];
  const firstUnderLoad: number[] = [];
  const expected: string[] = [];
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < TASKS) {
        next++;
        const r = await stream(url, 'hello', { url: hookUrl });
        firstUnderLoad.push(r.firstMs);
        for (const f of r.frames) expected.push(`${r.taskId}:${f.id}|${f.at}`);
      }
    }),
  );
  const deadline = performance.now() + 30_000;
  while (performance.now() < deadline && expected.some((e) => !arrivals.has(e.split('|')[0]))) await new Promise((r) => setTimeout(r, 20));
  const elapsed = (performance.now() - started) / 1000;
  let missing = 0;
  for (const e of expected) {
    const [key, at] = e.split('|');
    const got = arrivals.get(key);
    if (got === undefined) missing++;
    else latencies.push(Math.max(0, got - Number(at)));
  }
  return { latencies, firstUnderLoad, delivered: expected.length - missing, expected: expected.length, missing, elapsed };
}

interface Figures {
  load: Awaited<ReturnType<typeof underLoad>>;
  firstNoPush: number[];
  firstWithPush: number[];
  firstDeadReceiver: number[];
}

function report({ load, firstNoPush, firstWithPush, firstDeadReceiver }: Figures): void {
  const { latencies, firstUnderLoad, delivered, expected, missing, elapsed } = load;
  console.log(`deliveries: ${delivered} of ${expected} in ${elapsed.toFixed(1)} s → ${(delivered / elapsed).toFixed(0)} deliveries/s`);
  console.log(`delivery latency after the SSE frame: ${fmt(latencies)}`);
  console.log(`SSE first event, no push:            ${fmt(firstNoPush)}`);
  console.log(`SSE first event, healthy receiver:   ${fmt(firstWithPush)}`);
  console.log(`SSE first event, ${CONCURRENCY} tasks at once, all pushing: ${fmt(firstUnderLoad)}`);
  console.log(`SSE first event, receiver never answers: ${fmt(firstDeadReceiver)}`);
  console.log(
    `BENCH_PUSH_RESULT ${JSON.stringify({
      tasks: TASKS,
      concurrency: CONCURRENCY,
      store: usePg ? 'postgres' : 'pglite',
      deliveries: delivered,
      missing,
      perSecond: Math.round(delivered / elapsed),
      latencyP50: pct(latencies, 50),
      latencyP99: pct(latencies, 99),
      firstNoPushP50: pct(firstNoPush, 50),
      firstPushP50: pct(firstWithPush, 50),
      firstUnderLoadP50: pct(firstUnderLoad, 50),
      firstDeadP50: pct(firstDeadReceiver, 50),
      firstDeadP99: pct(firstDeadReceiver, 99),
    })}`,
  );
}

async function main(): Promise<void> {
  const receiver = await startReceiver();
  const server = await startServer();
  const { url } = server;
  const push = { url: receiver.hookUrl };

  console.log(`push bench: ${TASKS} tasks, ${CONCURRENCY} at a time, store ${usePg ? 'PostgreSQL' : 'PGlite (memory)'}`);
  for (let i = 0; i < 10; i++) await stream(url, 'warm-up', push);
  // Sequential first-event latency: no push, then with a healthy receiver (its deliveries settle between runs).
  const firstNoPush = await firstEvents(url, 50);
  const firstWithPush = await firstEvents(url, 50, push);
  const load = await underLoad(url, receiver.hookUrl, receiver.arrivals);
  receiver.hang();
  const firstDeadReceiver = await firstEvents(url, 50, push);

  report({ load, firstNoPush, firstWithPush, firstDeadReceiver });
  await server.close();
  await receiver.close();
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
