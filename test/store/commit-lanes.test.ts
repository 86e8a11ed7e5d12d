/**
 * Group commits side by side (WriteQueue lanes, COMMIT_LANES) on the in-memory store, PGlite and
 * (with TEST_DATABASE_URL) PostgreSQL: many tasks, several sharing a context, each with a copy
 * that writes events, call rows, history and audit entries in steps, through one queue of 4
 * lanes. Every write lands once; each task's seqs are 1..n in the order its copy queued them;
 * each context's history holds every task's entries, each task's in its order; nothing
 * deadlocks (the database takes every commit's row locks in one order).
 */
import t from 'tap';
import type { Task } from '@a2a-js/sdk';
import type { TaskStore } from '../../src/agent/task-store.js';
import { WriteQueue, type WriteOp, type WriteOwner } from '../../src/agent/runtime/write-queue.js';
import { openDatabase } from '../../src/store/db.js';
import { MemoryTaskStore } from '../../src/store/memory-store.js';
import { PgTaskStore } from '../../src/store/pg-task-store.js';
import { makeCall, makeTask, statusEvent, uid } from './fixtures/builders.js';
import { onPostgres } from './fixtures/open.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const TASKS = 24;
const CONTEXTS = 4;
const STEPS = 6;
const logger = { warn() {}, error() {} };

async function lanesCase(t: Test, store: TaskStore, overlaps = true): Promise<void> {
  const contexts = Array.from({ length: CONTEXTS }, () => uid('ctx'));
  for (const id of contexts) await store.createContext({ id, workspace: '/tmp/ws' });
  const tasks: Task[] = [];
  for (let i = 0; i < TASKS; i++) {
    const task = makeTask(contexts[i % CONTEXTS]);
    await store.createTask(task);
    tasks.push(task);
  }
  let most = 0;
  let inFlight = 0;
  const counting = new Proxy(store, {
    get(target, name, receiver) {
      if (name !== 'commit') return Reflect.get(target, name, receiver) as unknown;
      return async (...args: Parameters<TaskStore['commit']>) => {
        most = Math.max(most, ++inFlight);
        try {
          return await target.commit(...args);
        } finally {
          inFlight--;
        }
      };
    },
  });
  const q = new WriteQueue(counting, logger, undefined, 4);

  // Each task's copy runs its steps one after another (as a LiveTask does: a step's writes are
  // queued together, the next step once they committed); all tasks at once.
  const seqs = new Map<string, number[]>();
  await Promise.all(
    tasks.map(async (task, i) => {
      const owner: WriteOwner = { id: task.id, lastSeq: 0, expectation: () => ({ lastSeq: owner.lastSeq }) };
      const mine: number[] = [];
      for (let step = 1; step <= STEPS; step++) {
        // Steps of different tasks arrive at different times (as tools and models take their
        // time), so that batches are not all one.
        await new Promise((r) => setTimeout(r, (i + step) % 4));
        const snapshot = makeTask(task.contextId, 'TASK_STATE_WORKING', step, task.id);
        const ops: WriteOp[] = [
          { kind: 'event', taskId: task.id, task: snapshot, response: statusEvent(task, step), final: false },
          { kind: 'call', call: makeCall(task.id, { id: `${task.id}-c${step}`, position: step }) },
          { kind: 'history', contextId: task.contextId, contents: [{ role: 'model', parts: [{ text: `${task.id}#${step}` }] }] },
          { kind: 'audit', entry: { taskId: task.id, contextId: task.contextId, decision: 'proposed', toolCallId: `${task.id}-c${step}` } },
        ];
        const results = await Promise.all(ops.map((op) => q.push(op, owner)));
        mine.push(results[0]);
      }
      seqs.set(task.id, mine);
    }),
  );
  await q.flushed();

  // (The in-memory store's commit does not wait on I/O: nothing runs beside it.)
  if (overlaps) t.ok(most > 1, `commits ran side by side (at most ${most} at once)`);
  t.ok(most <= 4, 'never more than the 4 lanes');
  const expected = Array.from({ length: STEPS }, (_, i) => i + 1);
  t.ok(
    tasks.every((task) => JSON.stringify(seqs.get(task.id)) === JSON.stringify(expected)),
    "every task's events got seqs 1..n in the order its copy queued them",
  );
  for (const task of tasks.slice(0, 3)) {
    const events = await store.eventsAfter(task.id, 0);
    t.same(
      events.map((e) => e.seq),
      expected,
      `task ${task.id}: its log holds each event once`,
    );
    t.same(
      (await store.listAudit({ taskId: task.id })).map((a) => a.toolCallId),
      expected.map((s) => `${task.id}-c${s}`),
      'its audit entries, in order',
    );
  }
  for (const contextId of contexts) {
    const history = (await store.loadContext(contextId))?.history.map((h) => h.parts[0]?.text ?? '') ?? [];
    const own = tasks.filter((task) => task.contextId === contextId);
    t.equal(history.length, own.length * STEPS, `context ${contextId}: every history entry once`);
    t.ok(
      own.every((task) => {
        const steps = history.filter((text) => text.startsWith(`${task.id}#`));
        return JSON.stringify(steps) === JSON.stringify(expected.map((s) => `${task.id}#${s}`));
      }),
      "each task's entries in its order",
    );
  }
  t.equal((await store.loadCall(`${tasks[0]?.id}-c${STEPS}`))?.taskId, tasks[0]?.id, 'call rows stored');
}

t.test('in-memory store', async (t) => {
  const db = new MemoryTaskStore();
  t.teardown(() => db.close());
  await lanesCase(t, db, false);
});

t.test('PGlite', async (t) => {
  const shared = await openDatabase({ dataDir: 'memory://' });
  t.teardown(() => shared.close());
  await lanesCase(t, new PgTaskStore({ ...shared, close: async () => {} }));
});

onPostgres('PostgreSQL', async (t, { url, schema }) => {
  const db = await openDatabase({ databaseUrl: url, schema });
  t.teardown(() => db.close());
  await lanesCase(t, new PgTaskStore({ ...db, close: async () => {} }));
});
