/**
 * The TaskStore and PushStore contracts on embedded PGlite (in memory: one database shared
 * by every case, because each `new PGlite()` costs seconds), plus persistence in a real data
 * directory.
 */
import t from 'tap';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { openDatabase, rowsOf } from '../../src/store/db.js';
import { PgTaskStore } from '../../src/store/pg-task-store.js';
import { makeCall, seedTask, statusEvent } from './fixtures/builders.js';
import { pushStoreContract } from './fixtures/push-contract.js';
import { storedRunCase, type RunRow } from './fixtures/text-run-contract.js';
import { taskStoreContract } from './task-store-contract.js';

const shared = await openDatabase({ dataDir: 'memory://' });
t.teardown(() => shared.close());

t.test('contract (in-memory PGlite)', async (t) => {
  t.equal(shared.kind, 'pglite');
  t.match(shared.migrations, { kind: 'pglite', target: 'memory' });
  t.ok(
    shared.migrations.available >= 1 && shared.migrations.applied === shared.migrations.available,
    'a new database gets every migration',
  );
  taskStoreContract(t, async () => {
    // Every store wraps the one PGlite; only the test's teardown really closes it.
    const store = new PgTaskStore({ ...shared, close: async () => {} });
    return { store, close: () => store.close() };
  });
});

t.test('push contract (in-memory PGlite)', async (t) => {
  pushStoreContract(t, async () => {
    const store = new PgTaskStore({ ...shared, close: async () => {} });
    return { store, close: () => store.close() };
  });
});

t.test('JSON columns hold JSON objects, not encoded strings', async (t) => {
  const kinds = rowsOf<{ a: string; b: string; c: string | null }>(
    await shared.db.execute(
      sql`select distinct jsonb_typeof(e.payload) as a, jsonb_typeof(t.task) as b, jsonb_typeof(e.payload->0) as c
        from events e join tasks t on t.id = e.task_id order by 1`,
    ),
  );
  t.same(
    kinds.map((r) => [r.a, r.b, r.c]),
    [
      ['array', 'object', 'object'],
      ['object', 'object', null],
    ],
    'an event is an object; a text run (the contract writes some) an array of them',
  );
});

t.test('text runs: a batch of deltas is one row (PGlite)', async (t) => {
  const store = new PgTaskStore({ ...shared, close: async () => {} });
  await storedRunCase(t, store, async (taskId) =>
    rowsOf<RunRow>(
      await shared.db.execute(sql`select seq, span, jsonb_typeof(payload) as kind from events where task_id = ${taskId} order by seq`),
    ),
  );
});

t.test('a data directory: created when missing, data survives close and reopen', async (t) => {
  const dataDir = path.join(t.testdir({}), 'nested', 'pgdata');
  t.notOk(existsSync(dataDir));
  const firstDb = await openDatabase({ dataDir });
  t.ok(existsSync(dataDir), 'the directory was created');
  t.equal(firstDb.migrations.applied, 0, 'a new directory is a copy of the migrated template');
  const first = new PgTaskStore(firstDb);
  const task = await seedTask(first, 'TASK_STATE_WORKING', 'alice');
  await first.appendEvent(task, statusEvent(task, 7), true);
  const call = makeCall(task.id);
  await first.saveCalls([call]);
  await first.audit({ taskId: task.id, contextId: task.contextId, decision: 'proposed' });
  await first.close();

  const againDb = await openDatabase({ dataDir });
  t.match(againDb.migrations, { kind: 'pglite', target: dataDir, applied: 0 }, 'reopening migrates nothing');
  const again = new PgTaskStore(againDb);
  t.teardown(() => again.close());
  t.same((await again.loadTask(task.id))?.task, task);
  t.equal((await again.loadTask(task.id))?.principal, 'alice');
  t.same(
    (await again.eventsAfter(task.id, 0)).map((e) => [e.seq, e.final]),
    [[1, true]],
  );
  t.same(await again.loadCall(call.id), call);
  t.equal((await again.listAudit({ taskId: task.id })).length, 1);
});
