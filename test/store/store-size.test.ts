/**
 * The hot path's stored functions read the rows they touch, not the tables: on a store already
 * holding thousands of finished tasks (their events, calls, closed turns, history and audit),
 * one group commit — keyed events that supersede, a call, history, audit, the turn's close — and
 * one claim read a handful of rows, on PGlite and (with TEST_DATABASE_URL) PostgreSQL.
 *
 * Counted, not timed: each statement runs in a transaction of its own that is rolled back, and
 * `pg_stat_xact_user_tables` (this transaction's own table statistics) says how many rows
 * sequential scans read. The planner sees each batch's rows as a set of unknown size (100 rows
 * for a JSON record set): a join on it, or an EXISTS beside an OR, came out as a hash of a whole
 * table — every commit that closed a turn read every closed turn (7.5 ms a commit with 30,000 of
 * them in the bench), and superseding a card read the whole event log until it was large enough
 * for an index to look cheaper.
 */
import t from 'tap';
import type { TaskStore, WriteBatch } from '../../src/agent/task-store.js';
import { claimCalls } from '../../src/store/call-queries.js';
import { commitBatch } from '../../src/store/commit.js';
import { openDatabase } from '../../src/store/db.js';
import { fillStore } from '../../scripts/bench/fill-store.js';
import type { Database, Queryable } from '../../src/store/db.js';
import { PgTaskStore } from '../../src/store/pg-task-store.js';
import { makeCall, seedTask, statusEvent, uid } from './fixtures/builders.js';
import { onPostgres, type Test } from './fixtures/open.js';

/** Finished tasks in the store before the measured statements run (each with 10 events). */
const FILLED = Number(process.env.STORE_SIZE_TASKS ?? 4000);

/** Rows a measured statement may read by sequential scans in all: the batch's own, and a few. */
const MAX_SCANNED = 50;

interface Scanned {
  /** Rows read by sequential scans, per table that had any. */
  byTable: Record<string, number>;
  total: number;
}

class Rollback extends Error {
  constructor(readonly scanned: Scanned) {
    super('rolled back on purpose');
  }
}

async function seqRowsRead(tx: Queryable): Promise<Map<string, number>> {
  const rows = await tx.query<{ relname: string; n: number | string }>(
    'select relname, seq_tup_read as n from pg_stat_xact_user_tables',
    [],
  );
  return new Map(rows.map((r) => [r.relname, Number(r.n)]));
}

/** Runs `statement` in a transaction that is rolled back, and reports what sequential scans read in it. */
async function scannedBy(db: Database, statement: (tx: Queryable) => Promise<unknown>): Promise<Scanned> {
  try {
    await db.transaction(async (tx) => {
      // The view also counts what this connection did before and has not reported yet: a difference.
      const before = await seqRowsRead(tx);
      // The plans a connection settles on after its first few calls (generic: the batch's
      // contents unknown to the planner), not the first calls' custom plans.
      await tx.query('set local plan_cache_mode = force_generic_plan', []);
      await statement(tx);
      const byTable: Record<string, number> = {};
      for (const [table, n] of await seqRowsRead(tx)) {
        const read = n - (before.get(table) ?? 0);
        if (read > 0) byTable[table] = read;
      }
      throw new Rollback({ byTable, total: Object.values(byTable).reduce((a, b) => a + b, 0) });
    });
  } catch (err) {
    if (err instanceof Rollback) return err.scanned;
    throw err;
  }
  throw new Error('the transaction was not rolled back');
}

function sizeCases(t: Test, db: Database): void {
  const store: TaskStore = new PgTaskStore({ ...db, close: async () => {} });
  const notify = { channel: 'devtool_store_size_test', origin: 'test' };

  t.test('setup: a filled store', async (t) => {
    await fillStore(db, FILLED);
    const [row] = await db.query<{ n: number | string }>('select count(*) as n from events', []);
    t.ok(Number(row?.n) >= FILLED * 10, `${String(row?.n)} events stored`);
  });

  t.test("a group commit that supersedes a card and closes the turn reads its own rows, not the tables'", async (t) => {
    const task = await seedTask(store);
    const call = makeCall(task.id, { turn: 1, phase: 'executing' });
    // A card of the call (keyed) and the call row, as a pause leaves them.
    await store.commit({
      events: [{ taskId: task.id, status: task.status, response: statusEvent(task, 1), final: false, key: `card:${call.id}` }],
      expect: [{ taskId: task.id, lastSeq: 0 }],
      calls: [call],
      history: [],
      trust: [],
      audit: [],
    });
    const step: WriteBatch = {
      events: [
        { taskId: task.id, status: task.status, response: statusEvent(task, 2), final: false, key: `card:${call.id}` },
        { taskId: task.id, status: task.status, response: statusEvent(task, 3), final: false },
      ],
      expect: [{ taskId: task.id, lastSeq: 1 }],
      calls: [{ ...call, phase: 'done' as const, response: { functionResponse: { name: 'read_file', response: { ok: true } } } }],
      history: [{ contextId: task.contextId, contents: [{ role: 'user', parts: [{ text: 'result' }] }] }],
      trust: [],
      audit: [{ taskId: task.id, contextId: task.contextId, toolCallId: call.id, decision: 'executed' }],
      closeTurns: [{ taskId: task.id, turn: 1 }],
    };
    const scanned = await scannedBy(db, (tx) => commitBatch(tx, notify, step));
    t.ok(scanned.total <= MAX_SCANNED, `rows read by sequential scans: ${JSON.stringify(scanned.byTable)}`);
    // The same batch, committed for real: what was measured is what a commit does.
    t.same(await commitBatch(db, notify, step), [2, 3], 'the measured batch commits (the card superseded, the turn closed)');
  });

  t.test('a claim reads its own rows', async (t) => {
    const task = await seedTask(store);
    const calls = [makeCall(task.id, { turn: 1, position: 0 }), makeCall(task.id, { turn: 1, position: 1 })];
    await store.saveCalls(calls);
    const claims = calls.map((c) => ({ id: c.id, answer: 'proceed_once', shownHash: c.shownHash }));
    const until = new Date(Date.now() + 60_000);
    const scanned = await scannedBy(db, (tx) => claimCalls(tx, task.id, claims, uid('owner'), until, 0));
    t.ok(scanned.total <= MAX_SCANNED, `rows read by sequential scans: ${JSON.stringify(scanned.byTable)}`);
    t.same(await claimCalls(db, task.id, claims, uid('owner'), until, 0), { ok: true, lastSeq: 0 }, 'the measured claim wins for real');
  });
}

t.test('PGlite', async (t) => {
  const db = await openDatabase({ dataDir: 'memory://' });
  t.teardown(() => db.close());
  sizeCases(t, db);
});

onPostgres('PostgreSQL', async (t, { url, schema }) => {
  const db = await openDatabase({ databaseUrl: url, schema });
  t.teardown(() => db.close());
  sizeCases(t, db);
});
