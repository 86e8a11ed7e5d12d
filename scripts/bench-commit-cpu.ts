/**
 * Main-thread CPU per hot-path statement of the durable store: `npm run bench:commit-cpu [--
 * --flows 300 --rounds 3]` (not in CI). PGlite in memory always; PostgreSQL too when
 * DATABASE_URL is set (in a schema of its own, dropped at the end).
 *
 * Each flow is what a confirm flow writes, one statement at a time: the start (context, task,
 * first events and history as one commit), the card (events, the awaiting call, audit), the
 * claim of the answer (claimCalls) and the results (events, the done call, history, audit,
 * closing the turn). Prints microseconds per statement: CPU of the main thread alone (Linux:
 * /proc/self/task/<pid>/schedstat, which leaves out PGlite's worker and libuv's threads), CPU of
 * the whole process (process.cpuUsage), and wall time. Medians of the rounds.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { StreamResponse, Task, TaskStatus } from '@a2a-js/sdk';
import type { StoredCall, WriteBatch } from '../src/agent/task-store.js';
import { connect, openDatabase } from '../src/store/db.js';
import { PgTaskStore } from '../src/store/pg-task-store.js';
import { numberFlag } from './bench/flags.js';

const flows = numberFlag('flows', 300);
const rounds = numberFlag('rounds', 3);

/** Nanoseconds this thread (the main one) has run, or undefined off Linux. */
function mainThreadNs(): number | undefined {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    return undefined;
  }
}

const uid = (prefix: string) => `${prefix}-${randomUUID()}`;
const NOTHING: WriteBatch = { events: [], calls: [], history: [], trust: [], audit: [] };

function task(contextId: string, state: string): Task {
  const id = uid('task');
  return Task.fromJSON({
    id,
    contextId,
    status: { state, timestamp: new Date().toISOString() },
    history: [{ messageId: uid('msg'), contextId, taskId: id, role: 'ROLE_USER', parts: [{ text: 'write hello.txt saying hi' }] }],
  });
}

/** A status-update event of `t` (a batch entry: the task's new status and the stream response carrying it). */
function statusEvent(
  t: Task,
  state: string,
  text: string,
  data?: Record<string, unknown>,
  final = false,
): { taskId: string; status: TaskStatus; response: StreamResponse; final: boolean } {
  const message = {
    messageId: uid('msg'),
    contextId: t.contextId,
    taskId: t.id,
    role: 'ROLE_AGENT',
    parts: [{ text }, ...(data ? [{ data, mediaType: 'application/json' }] : [])],
  };
  const s = { state, timestamp: new Date().toISOString(), message };
  return {
    taskId: t.id,
    status: TaskStatus.fromJSON(s),
    response: StreamResponse.fromJSON({
      statusUpdate: { taskId: t.id, contextId: t.contextId, status: s, metadata: { coder: { kind: 'state' } } },
    }),
    final,
  };
}

function call(taskId: string, phase: StoredCall['phase']): StoredCall {
  const id = uid('call');
  const input = { file_path: '/work/hello.txt', content: 'hi\n' };
  return {
    id,
    taskId,
    turn: 0,
    position: 0,
    toolName: 'write_file',
    modelCallId: uid('model'),
    args: input,
    snapshot: {
      id,
      toolName: 'write_file',
      status: 'PENDING',
      input,
      confirmation: {
        options: [
          { id: 'proceed_once', name: 'Allow once' },
          { id: 'cancel', name: 'Reject' },
        ],
        proposal: { type: 'execute', command: 'printf "hi\\n" > hello.txt', workingDirectory: '/work' },
      },
    },
    phase,
    shownHash: 'f'.repeat(64),
    proposedAt: new Date(),
  };
}

type Kind = 'start' | 'card' | 'claim' | 'results';
const KINDS: Kind[] = ['start', 'card', 'claim', 'results'];
/** Per kind: main-thread ns, process µs, wall ms — summed over a round. */
type Sums = Record<Kind, [number, number, number]>;

async function timed<T>(sums: Sums, kind: Kind, run: () => Promise<T>): Promise<T> {
  const [ns0, cpu0, t0] = [mainThreadNs() ?? 0, process.cpuUsage(), performance.now()];
  const out = await run();
  const cpu = process.cpuUsage(cpu0);
  const s = sums[kind];
  s[0] += (mainThreadNs() ?? 0) - ns0;
  s[1] += cpu.user + cpu.system;
  s[2] += performance.now() - t0;
  return out;
}

/** A task's start: context, task, its first events and the user's message, in one commit. */
function startBatch(t: Task): WriteBatch {
  return {
    ...NOTHING,
    create: {
      contexts: [{ id: t.contextId, workspace: '/work' }],
      tasks: [{ task: t, opts: { lease: { owner: 'me', until: new Date(Date.now() + 60_000) } } }],
    },
    events: [
      { taskId: t.id, task: t, response: StreamResponse.fromJSON({ task: Task.toJSON(t) }), final: false },
      statusEvent(t, 'TASK_STATE_WORKING', 'Working'),
    ],
    history: [{ contextId: t.contextId, contents: [{ role: 'user', parts: [{ text: 'write hello.txt saying hi' }] }] }],
  };
}

/** The card and the pause, with the awaiting call and its audit entry. */
function cardBatch(t: Task, waiting: StoredCall, lastSeq: number): WriteBatch {
  return {
    ...NOTHING,
    expect: [{ taskId: t.id, lastSeq }],
    events: [
      statusEvent(t, 'TASK_STATE_WORKING', '', { tool_call_id: waiting.id, confirmation_request: waiting.snapshot }),
      statusEvent(t, 'TASK_STATE_INPUT_REQUIRED', 'Waiting for approval', undefined, true),
    ],
    calls: [waiting],
    audit: [{ taskId: t.id, contextId: t.contextId, toolCallId: waiting.id, decision: 'proposed', shownHash: waiting.shownHash }],
  };
}

/** The call's result, the model's answer and the end: events, the done call, history, audit, the turn closed. */
function resultsBatch(t: Task, waiting: StoredCall, lastSeq: number): WriteBatch {
  const response = { functionResponse: { name: 'write_file', response: { output: 'ok' } } };
  const contents = [
    { role: 'model' as const, parts: [{ functionCall: { name: 'write_file', args: waiting.args } }] },
    { role: 'user' as const, parts: [response] },
    { role: 'model' as const, parts: [{ text: 'Wrote hello.txt.' }] },
  ];
  return {
    ...NOTHING,
    expect: [{ taskId: t.id, lastSeq }],
    events: [
      statusEvent(t, 'TASK_STATE_WORKING', '', { tool_call_id: waiting.id, status: 'SUCCESS' }),
      statusEvent(t, 'TASK_STATE_WORKING', 'Wrote hello.txt.'),
      statusEvent(t, 'TASK_STATE_COMPLETED', 'Done', undefined, true),
    ],
    calls: [{ ...waiting, phase: 'done', answer: 'proceed_once', response }],
    history: [{ contextId: t.contextId, contents }],
    audit: (['executed', 'succeeded'] as const).map((decision) => ({
      taskId: t.id,
      contextId: t.contextId,
      toolCallId: waiting.id,
      decision,
    })),
    closeTurns: [{ taskId: t.id, turn: 0 }],
  };
}

/** One confirm flow's writes, each statement timed (the batches are built outside the timing). */
async function flow(store: PgTaskStore, sums: Sums): Promise<void> {
  const t = task(uid('ctx'), 'TASK_STATE_SUBMITTED');
  const start = startBatch(t);
  const seqs = await timed(sums, 'start', () => store.commit(start));
  const waiting = call(t.id, 'awaiting');
  const card = cardBatch(t, waiting, seqs.at(-1) ?? 0);
  await timed(sums, 'card', () => store.commit(card));
  const claim = [{ id: waiting.id, answer: 'proceed_once', shownHash: waiting.shownHash }];
  const until = new Date(Date.now() + 60_000);
  const won = await timed(sums, 'claim', () => store.claimCalls(t.id, claim, 'me', until));
  if (!won.ok) throw new Error('claim lost');
  const results = resultsBatch(t, waiting, won.lastSeq);
  await timed(sums, 'results', () => store.commit(results));
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function measure(label: string, store: PgTaskStore): Promise<void> {
  const warm: Sums = Object.fromEntries(KINDS.map((k) => [k, [0, 0, 0]])) as Sums;
  for (let i = 0; i < Math.min(50, flows); i++) await flow(store, warm); // plans, prepared statements, JIT
  const perRound: Sums[] = [];
  for (let r = 0; r < rounds; r++) {
    const sums: Sums = Object.fromEntries(KINDS.map((k) => [k, [0, 0, 0]])) as Sums;
    for (let i = 0; i < flows; i++) await flow(store, sums);
    perRound.push(sums);
  }
  console.log(`${label}: µs per statement, median of ${rounds} rounds of ${flows} flows`);
  console.log(`${'statement'.padEnd(9)} ${'main thread CPU'.padStart(16)} ${'process CPU'.padStart(12)} ${'wall'.padStart(8)}`);
  const total = { ns: 0, us: 0, ms: 0 };
  const row = (label: string, ns: number, us: number, ms: number) =>
    console.log(
      `${label.padEnd(9)} ${(ns / 1000).toFixed(0).padStart(16)} ${us.toFixed(0).padStart(12)} ${(ms * 1000).toFixed(0).padStart(8)}`,
    );
  for (const kind of KINDS) {
    const [ns, us, ms] = [0, 1, 2].map((m) => median(perRound.map((s) => s[kind][m])) / flows) as [number, number, number];
    total.ns += ns;
    total.us += us;
    total.ms += ms;
    row(kind, ns, us, ms);
  }
  row('per flow', total.ns, total.us, total.ms);
  if (mainThreadNs() === undefined) console.log('(main-thread CPU is read on Linux only)');
}

const pglite = new PgTaskStore(await openDatabase({ dataDir: 'memory://' }));
await measure('PGlite (in memory)', pglite);
await pglite.close();

const url = process.env.DATABASE_URL;
if (url) {
  const schema = `bench_${randomBytes(4).toString('hex')}`;
  const store = new PgTaskStore(await openDatabase({ databaseUrl: url, schema }));
  try {
    await measure(`PostgreSQL (schema ${schema})`, store);
  } finally {
    await store.close();
    const admin = connect(url, { max: 1 });
    await admin.unsafe(`drop schema if exists "${schema}" cascade`);
    await admin.end({ timeout: 2 });
  }
}
