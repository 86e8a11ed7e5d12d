/**
 * What the hot path reads and hears from a store, on the in-memory store, PGlite and (with
 * TEST_DATABASE_URL) PostgreSQL: a task's version (what a parked copy is checked against),
 * one listTasks over several states, the context in one read, notifications of this store's
 * own commits heard as local (another store's not), the hot path's statements run without
 * drizzle (errors in the shapes the write queue reads), and the prepared statements and
 * DURABILITY settings of the PostgreSQL connections.
 */
import t from 'tap';
import { existsSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import type { TaskStore } from '../../src/agent/task-store.js';
import { stateName } from '../../src/protocol/a2a.js';
import { parseNotification } from '../../src/store/batch-plan.js';
import { driverTarget, openDatabase, rowsOf } from '../../src/store/db.js';
import type { Database, StoreDb } from '../../src/store/db.js';
import { rejectedByDatabase } from '../../src/agent/runtime/write-queue.js';
import { isStoreUnavailable, sqlStateOf } from '../../src/protocol/errors.js';
import { MemoryTaskStore } from '../../src/store/memory-store.js';
import { PgTaskStore } from '../../src/store/pg-task-store.js';
import { COMMIT_STATEMENT } from '../../src/store/commit.js';
import { eventually, makeCall, makeTask, seedTask, statusEvent, uid } from './fixtures/builders.js';
import { onPostgres } from './fixtures/open.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

t.test('parseNotification: an origin token may follow the flag', async (t) => {
  t.same(parseNotification('t-1:12:1:0a1b2c3d4e5f'), { taskId: 't-1', seq: 12, final: true, origin: '0a1b2c3d4e5f' });
  t.same(parseNotification('a:b:3:0:ff00'), { taskId: 'a:b', seq: 3, final: false, origin: 'ff00' });
  t.same(parseNotification('t:3:0'), { taskId: 't', seq: 3, final: false }, 'without one');
  t.equal(parseNotification('t:x:1:abcd'), undefined, 'malformed before the origin');
});

t.test("driverTarget: a Unix socket given as libpq does (?host=/dir) becomes the driver's path", async (t) => {
  t.same(driverTarget('postgres://u:p@db.example:6000/app'), { url: 'postgres://u:p@db.example:6000/app' }, 'a TCP URL as it is');
  t.same(driverTarget('postgres://u@localhost/app?host=/var/run/postgresql&sslmode=disable'), {
    url: 'postgres://u@localhost/app?sslmode=disable',
    path: '/var/run/postgresql/.s.PGSQL.5432',
  });
  t.same(
    driverTarget('postgresql://u@x:6432/app?host=/cloudsql/proj:region:db/'),
    {
      url: 'postgresql://u@x:6432/app',
      path: '/cloudsql/proj:region:db/.s.PGSQL.6432',
    },
    "the URL's port names the socket",
  );
  t.same(
    driverTarget('postgres://u@localhost/app?host=db.internal'),
    { url: 'postgres://u@localhost/app?host=db.internal' },
    'a host name is left to the driver',
  );
});

/** The cases every store passes; `a` and `b` are two stores on one database. */
function hotPathCases(t: Test, open: () => Promise<{ a: TaskStore; b: TaskStore }>): void {
  t.test('loadVersion moves with the log and with the context, not with a lease', async (t) => {
    const { a } = await open();
    const task = await seedTask(a);
    const v0 = await a.loadVersion(task.id);
    t.equal(v0?.lastSeq, 0);
    t.equal(await a.loadVersion('no-such-task'), undefined);
    await a.leaseTasks([task.id], 'me', new Date(Date.now() + 60_000));
    t.same(await a.loadVersion(task.id), v0, 'a lease is no change');
    await a.appendEvent(task, statusEvent(task), false);
    const v1 = await a.loadVersion(task.id);
    t.equal(v1?.lastSeq, 1);
    t.equal(v1?.context, v0?.context, 'an event of the task leaves the context as it was');
    await a.updateContextSettings(task.contextId, { approvalMode: 'YOLO' });
    const v2 = await a.loadVersion(task.id);
    t.not(v2?.context, v1?.context, 'a settings change');
    await a.appendHistory(task.contextId, [{ role: 'user', parts: [{ text: 'hi' }] }]);
    t.not((await a.loadVersion(task.id))?.context, v2?.context, 'a history append');
  });

  t.test('loadContext: history in order and grants in one read', async (t) => {
    const { a } = await open();
    const task = await seedTask(a);
    t.same((await a.loadContext(task.contextId))?.history, []);
    await a.appendHistory(task.contextId, [{ role: 'user', parts: [{ text: 'one' }] }]);
    await a.appendHistory(task.contextId, [{ role: 'model', parts: [{ text: 'two' }] }]);
    await a.addTrust(task.contextId, 'write_file');
    const ctx = await a.loadContext(task.contextId);
    t.same(
      ctx?.history.map((h) => h.parts[0]?.text),
      ['one', 'two'],
    );
    t.same(ctx?.trustedTools, ['write_file']);
  });

  t.test('listTasks over several states', async (t) => {
    const { a } = await open();
    const contextId = uid('ctx');
    await a.createContext({ id: contextId, workspace: '/tmp' });
    for (const state of ['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED', 'TASK_STATE_INPUT_REQUIRED'])
      await a.createTask(makeTask(contextId, state));
    const busy = await a.listTasks({ contextId, states: ['input-required', 'working'], limit: 10, offset: 0 });
    t.equal(busy.total, 2);
    t.same(busy.tasks.map((x) => stateName(x.status?.state)).sort(), ['input-required', 'working']);
    const past = await a.listTasks({ contextId, states: ['working', 'completed'], limit: 10, offset: 5 });
    t.same(past, { tasks: [], total: 2 }, 'a page past the end still counts');
    t.same(await a.listTasks({ contextId, states: ['canceled'], limit: 10, offset: 0 }), { tasks: [], total: 0 });
  });
}

/** A drizzle handle that fails the test wherever it is touched. */
const NO_DRIZZLE = new Proxy(
  {},
  {
    get(_target, key) {
      throw new Error(`drizzle was used on the hot path (${String(key)})`);
    },
  },
) as StoreDb;

/** The error `p` rejects with (fails when it resolves). */
async function failureOf(t: Test, p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => t.fail('expected a rejection'),
    (e: unknown) => e,
  );
}

/**
 * The hot path's statements (the group commit, a commit while calls are awaiting, the claim, the
 * log read) go straight to the driver: they work on a store whose drizzle handle throws when
 * touched, and their refusals keep the shape the write queue and the error mapping read.
 */
function noOrmCases(t: Test, database: Database): void {
  const none = { events: [], calls: [], history: [], trust: [], audit: [] };
  t.test('the hot path runs without drizzle', async (t) => {
    const hot = new PgTaskStore({ ...database, db: NO_DRIZZLE, close: async () => {} });
    const contextId = uid('ctx');
    const task = makeTask(contextId);
    const call = makeCall(task.id, { phase: 'awaiting', shownHash: 'h1' });
    const created = { contexts: [{ id: contextId, workspace: '/tmp/ws' }], tasks: [{ task }] };
    const first = { taskId: task.id, task, response: statusEvent(task, 1), final: false };
    t.same(await hot.commit({ ...none, create: created, events: [first], calls: [call] }), [1], 'a start, as one commit');
    const second = { taskId: task.id, task, response: statusEvent(task, 2), final: false };
    t.same(await hot.commitWhileAwaiting({ ...none, events: [second] }, task.id, [call.id]), [2], 'a commit while the call awaits');
    const until = new Date(Date.now() + 60_000);
    t.same(await hot.claimCalls(task.id, [{ id: call.id, answer: 'proceed_once', shownHash: 'h1' }], 'me', until, 2), {
      ok: true,
      lastSeq: 2,
    });
    t.equal(await hot.commitWhileAwaiting({ ...none, events: [second] }, task.id, [call.id]), undefined, 'no longer awaiting: nothing');
    t.same(
      (await hot.eventsAfter(task.id, 0)).map((e) => e.seq),
      [1, 2],
    );
    t.same(
      (await hot.eventsAfter(task.id, 0, 1)).map((e) => e.seq),
      [1],
      'a page',
    );

    const ghost = makeTask(uid('nope'));
    const ghostEvent = { taskId: ghost.id, task: ghost, response: statusEvent(ghost), final: false };
    const unknown = await failureOf(t, hot.commit({ ...none, events: [ghostEvent] }));
    t.ok(rejectedByDatabase(unknown), 'an unknown task: refused, and the write queue can tell');
    const other = makeTask(uid('ctx'));
    const withCreation = { contexts: [{ id: other.contextId, workspace: '/tmp/ws' }], tasks: [{ task: other }] };
    const afterCreating = await failureOf(t, hot.commit({ ...none, create: withCreation, events: [ghostEvent] }));
    t.match(
      afterCreating,
      { message: `commit: unknown task ${ghost.id}`, code: '23503' },
      'refused after creating (DVCM1): the answer is read',
    );
    const cold = new PgTaskStore({ ...database, close: async () => {} });
    t.equal(await cold.loadContext(other.contextId), undefined, 'and the creations rolled back');
    const duplicate = await failureOf(t, hot.commit({ ...none, create: { contexts: [], tasks: [{ task }] } }));
    t.equal(sqlStateOf(duplicate), '23505', "the database's own refusal: its SQLSTATE, on the driver's error");
    t.ok(rejectedByDatabase(duplicate) && !isStoreUnavailable(duplicate));
  });
}

t.test('in-memory store', async (t) => {
  const db = new MemoryTaskStore();
  t.teardown(() => db.close());
  hotPathCases(t, async () => ({ a: db, b: db.connect() }));
});

t.test('PGlite', async (t) => {
  const shared = await openDatabase({ dataDir: 'memory://' });
  t.teardown(() => shared.close());
  const store = () => new PgTaskStore({ ...shared, close: async () => {} });
  hotPathCases(t, async () => ({ a: store(), b: store() }));
  noOrmCases(t, shared);

  t.test("a store hears its own commits as local, another store's as not", async (t) => {
    const [a, b] = [store(), store()];
    const heard: string[] = [];
    const task = await seedTask(a);
    await a.subscribe((id, seq, _final, local) => id === task.id && heard.push(`a:${seq}:${local}`));
    await b.subscribe((id, seq, _final, local) => id === task.id && heard.push(`b:${seq}:${local}`));
    await a.appendEvent(task, statusEvent(task), false);
    await eventually(() => heard.length === 2);
    t.same(heard.sort(), ['a:1:true', 'b:1:false']);
  });
});

onPostgres('PostgreSQL', async (t, { url, schema }) => {
  const relaxed = await openDatabase({ databaseUrl: url, schema });
  const strict = await openDatabase({ databaseUrl: url, schema, durability: 'strict' });
  t.teardown(() => Promise.all([relaxed.close(), strict.close()]));
  hotPathCases(t, async () => ({
    a: new PgTaskStore({ ...relaxed, close: async () => {} }),
    b: new PgTaskStore({ ...strict, close: async () => {} }),
  }));
  noOrmCases(t, relaxed);

  t.test('a connection lost under a raw statement: the store-unavailable error, and the pool carries on', async (t) => {
    // The statement ends its own session, as a restart or failover ends it mid-statement.
    const killed = await failureOf(t, relaxed.query('select pg_terminate_backend(pg_backend_pid())', []));
    t.ok(isStoreUnavailable(killed), `unavailable (${String((killed as { code?: unknown }).code)})`);
    t.notOk(rejectedByDatabase(killed), 'its outcome is unknown to the write queue');
    const inTx = await failureOf(
      t,
      relaxed.transaction((tx) => tx.query('select pg_terminate_backend(pg_backend_pid())', [])),
    );
    t.ok(isStoreUnavailable(inTx), 'in a transaction too');
    t.same(await relaxed.query('select $1::int as n', [7]), [{ n: 7 }], 'the next statement runs');
  });

  const socketDir = '/var/run/postgresql';
  const local =
    ['127.0.0.1', 'localhost'].includes(new URL(url).hostname) && existsSync(`${socketDir}/.s.PGSQL.${new URL(url).port || 5432}`);
  t.test('a store opens on the Unix socket named in the URL', { skip: local ? false : `no local socket in ${socketDir}` }, async (t) => {
    const viaSocket = new URL(url);
    viaSocket.searchParams.set('host', socketDir);
    const db = await openDatabase({ databaseUrl: viaSocket.toString(), schema });
    t.teardown(() => db.close());
    const [row] = rowsOf<{ addr: string | null }>(await db.db.execute(sql`select inet_client_addr()::text as addr`));
    t.equal(row?.addr, null, 'the connection is not TCP (no client address)');
    const store = new PgTaskStore({ ...db, close: async () => {} });
    const task = await seedTask(store);
    t.equal((await store.loadTask(task.id))?.task.id, task.id, 'and the store works on it');
  });

  t.test('DURABILITY: relaxed connections commit asynchronously, strict ones synchronously', async (t) => {
    const setting = async (db: typeof relaxed) =>
      rowsOf<{ synchronous_commit: string }>(await db.db.execute(sql`show synchronous_commit`))[0]?.synchronous_commit;
    t.equal(await setting(relaxed), 'off');
    t.equal(await setting(strict), 'on');
    const inTx = await relaxed.db.transaction(async (tx) =>
      rowsOf<{ s: string }>(await tx.execute(sql`select current_setting('synchronous_commit') as s`)),
    );
    t.equal(inTx[0]?.s, 'off', 'transactions on the same connections too');
  });

  t.test('parameterised statements are prepared once per connection and reused', async (t) => {
    const db = await openDatabase({ databaseUrl: url, schema });
    t.teardown(() => db.close());
    const store = new PgTaskStore({ ...db, close: async () => {} });
    const task = await seedTask(store);
    for (let i = 0; i < 30; i++) await store.loadTask(task.id);
    const [row] = rowsOf<{ n: number }>(
      await db.db.execute(sql`select count(*)::int as n from pg_prepared_statements where statement like ${'%from "tasks"%'}`),
    );
    t.ok((row?.n ?? 0) >= 1, 'a prepared statement of the task read on this connection');
    for (let i = 0; i < 30; i++) await store.appendEvent(task, statusEvent(task, i), false);
    const raw = await db.query<{ n: number }>('select count(*)::int as n from pg_prepared_statements where statement = $1', [
      COMMIT_STATEMENT,
    ]);
    t.ok((raw[0]?.n ?? 0) >= 1, 'and the group commit, a raw statement, too');
  });
});
