/**
 * The TaskStore and PushStore contracts on a real PostgreSQL (TEST_DATABASE_URL), in a fresh
 * schema `t_<random>` dropped at teardown. Each makeStore() opens its own pool, so the
 * two-store cases (notifications, concurrent appends, claim races) cross real connections.
 */
import t from 'tap';
import type { Test } from 'tap';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { sql } from 'drizzle-orm';
import { migrateDatabase, openDatabase, rowsOf } from '../../src/store/db.js';
import { PgTaskStore } from '../../src/store/pg-task-store.js';
import { seedTask, statusEvent } from './fixtures/builders.js';
import { pushStoreContract } from './fixtures/push-contract.js';
import { storedRunCase, type RunRow } from './fixtures/text-run-contract.js';
import { taskStoreContract } from './task-store-contract.js';

const url = process.env.TEST_DATABASE_URL;

if (url === undefined || url === '') {
  t.test('PostgreSQL contract', { skip: 'TEST_DATABASE_URL is unset (e.g. postgres://postgres@127.0.0.1:5432/test)' }, () => {});
} else {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  t.teardown(async () => {
    await admin.unsafe(`drop schema if exists "${schema}" cascade`);
    await admin.end({ timeout: 2 });
  });

  t.test('migrations: first run applies all, in the requested schema; rerun applies none', async (t) => {
    const first = await migrateDatabase({ databaseUrl: url, schema });
    t.match(first, { kind: 'postgres', target: `schema ${schema}` });
    t.equal(first.applied, first.available);
    t.equal((await migrateDatabase({ databaseUrl: url, schema })).applied, 0);
    const tables = await admin`select table_name from information_schema.tables where table_schema = ${schema} order by 1`;
    t.same(
      tables.map((r) => r.table_name),
      [
        '__drizzle_migrations',
        'audit_log',
        'checkpoints',
        'closed_turns',
        'context_history',
        'contexts',
        'events',
        'push_configs',
        'signing_keys',
        'tasks',
        'tool_calls',
        'trust_grants',
        'workspace_claims',
      ],
    );
    const fks = await admin`
      select distinct ccu.table_schema from information_schema.constraint_column_usage ccu
      join information_schema.table_constraints tc using (constraint_schema, constraint_name)
      where tc.constraint_type = 'FOREIGN KEY' and tc.table_schema = ${schema}`;
    t.same(
      fks.map((r) => r.table_schema),
      [schema],
      'foreign keys point inside the schema, not at public',
    );
    await t.rejects(openDatabase({ databaseUrl: url, schema: 'Bad-Name' }), /must match/);
  });

  t.test('contract (PostgreSQL)', async (t) => {
    taskStoreContract(t, async () => {
      const store = new PgTaskStore(await openDatabase({ databaseUrl: url, schema }));
      return { store, close: () => store.close() };
    });
  });

  t.test('push contract (PostgreSQL)', async (t) => {
    pushStoreContract(t, async () => {
      const store = new PgTaskStore(await openDatabase({ databaseUrl: url, schema }));
      return { store, close: () => store.close() };
    });
  });

  t.test('JSON columns hold JSON objects, not encoded strings', async (t) => {
    const kinds = await admin.unsafe(
      `select distinct jsonb_typeof(e.payload) as a, jsonb_typeof(t.task) as b, jsonb_typeof(e.payload->0) as c
       from "${schema}".events e join "${schema}".tasks t on t.id = e.task_id order by 1`,
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

  t.test('text runs: a batch of deltas is one row (PostgreSQL)', async (t) => {
    const store = new PgTaskStore(await openDatabase({ databaseUrl: url, schema }));
    t.teardown(() => store.close());
    await storedRunCase(t, store, async (taskId) =>
      admin.unsafe<RunRow[]>(`select seq, span, jsonb_typeof(payload) as kind from "${schema}".events where task_id = $1 order by seq`, [
        taskId,
      ]),
    );
  });

  t.test('notifications stay inside their schema', async (t) => {
    const other = `${schema}_b`;
    t.teardown(() => admin.unsafe(`drop schema if exists "${other}" cascade`).then(() => {}));
    const here = new PgTaskStore(await openDatabase({ databaseUrl: url, schema }));
    const there = new PgTaskStore(await openDatabase({ databaseUrl: url, schema: other }));
    t.teardown(() => Promise.all([here.close(), there.close()]).then(() => {}));
    const heard: number[] = [];
    await there.subscribe((_id, seq, _final) => heard.push(seq));
    const mine: number[] = [];
    await here.subscribe((_id, seq, _final) => mine.push(seq));
    const task = await seedTask(here);
    await here.appendEvent(task, statusEvent(task), false);
    while (mine.length === 0) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 100));
    t.same(heard, [], 'a store on another schema hears nothing');
  });

  // postgres.js's own begin() can write BEGIN on a connection it has not reserved when BEGIN
  // is the statement that fills the connection's pipeline (porsager/postgres#823, #1189): the
  // transaction fails with UNSAFE_TRANSACTION and the connection returns to the pool with the
  // transaction open. Here: the pool's 10 connections busy, a full pipeline of 100 statements on each
  // (postgres.js pipelines up to 100 per connection, round robin), then transactions.
  t.test('transactions when every pipeline is full: each on its own connection, none leaks', async (t) => {
    const database = await openDatabase({ databaseUrl: url, schema });
    t.teardown(() => database.close());
    const { db } = database;
    const rows = async (q: Promise<unknown>) => rowsOf<Record<string, unknown>>(await q);
    await Promise.all(Array.from({ length: 10 }, () => db.execute(sql`select pg_sleep(0.05)`))); // all 10 connections open
    const busy = Array.from({ length: 10 }, () => db.execute(sql`select pg_sleep(0.2)`));
    // A statement outside any transaction sees now() = its own start; inside a leaked one, not.
    const alone = () => rows(db.execute(sql`select now() = statement_timestamp() as alone`));
    const work: Promise<unknown>[] = Array.from({ length: 1000 }, alone);
    await new Promise((resolve) => setImmediate(resolve)); // postgres.js sends them a tick later; begin() sends at once
    const txIds = Array.from({ length: 20 }, () =>
      db.transaction(async (tx) => {
        const a = await rows(tx.execute(sql`select txid_current()::text as x`));
        const b = await rows(tx.execute(sql`select txid_current()::text as x`));
        return [a[0]?.x, b[0]?.x] as const;
      }),
    );
    work.push(...Array.from({ length: 200 }, alone));
    const [plain, txs] = await Promise.all([Promise.allSettled(work), Promise.allSettled(txIds), Promise.all(busy)]);
    const failed = [...plain, ...txs].filter((r) => r.status === 'rejected').map((r) => String(r.reason));
    t.same(failed.slice(0, 3), [], 'no statement and no transaction failed');
    const outside = plain.filter((r) => r.status === 'fulfilled' && (r.value as { alone: boolean }[])[0]?.alone !== true);
    t.equal(outside.length, 0, 'no plain statement ran inside a transaction');
    const ids = txs.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    t.equal(ids.length, 20);
    t.ok(
      ids.every(([a, b]) => a !== undefined && a === b),
      'each transaction ran its statements in one transaction',
    );
    t.equal(new Set(ids.map(([a]) => a)).size, ids.length, 'no two transactions shared one');
  });

  // postgres.js 3.4.9 throws an uncaught TypeError from a setImmediate when a connection's socket
  // closed under a pending write (porsager/postgres#1154, #1208): the process died whenever
  // PostgreSQL restarted under load. The vendored driver (vendor/postgres-3.4.9-devtool.2.tgz)
  // settles those writes with CONNECTION_CLOSED. Unpatched, this test ends the test process.
  // Backends are picked by an application_name of this test's own: other test files share the database.
  const own = (name: string) => `${url}${url.includes('?') ? '&' : '?'}application_name=${name}`;
  const terminate = (name: string) =>
    admin`select pg_terminate_backend(pid) from pg_stat_activity where application_name = ${name} and pid <> pg_backend_pid()`;

  t.test('a reserved connection whose backend died: its next statements reject, the process lives', async (t) => {
    const name = `lost_${randomBytes(4).toString('hex')}`;
    const client = postgres(own(name), { max: 2, onnotice: () => {} });
    t.teardown(() => client.end({ timeout: 1 }));
    const reserved = await client.reserve();
    await reserved`select 1`;
    t.ok((await terminate(name)).length >= 1, 'its backend was terminated');
    await new Promise((r) => setTimeout(r, 200));
    for (let i = 0; i < 3; i++) await t.rejects(reserved`select 1`, { code: 'CONNECTION_CLOSED' }, `statement ${i + 1} rejects`);
    reserved.release();
    // The pool reconnects (unpatched, the released dead connection rejected once more first).
    let rows: unknown;
    for (let i = 0; i < 5 && rows === undefined; i++) rows = await client`select 1 as one`.catch(() => undefined);
    t.same(rows, [{ one: 1 }], 'the pool works again');
  });

  // The hang after a PostgreSQL restart under load (docs/operations.md "Database outages"):
  // postgres.js 3.4.9 ran a reserved handle's statements on its connection after that connection
  // had closed. The first statement with parameters moved the dead connection into the pool's
  // `full` list (out of `closed`, so it never reconnected) and the next one — the transaction's
  // ROLLBACK — waited in the reservation's queue for ever; the store's write batch behind it
  // never settled, and every stream with it. devtool.2 rejects them with CONNECTION_CLOSED.
  // Without the patch the `settles` deadlines below fail (the promise never settles).
  const settles = <T>(p: Promise<T>, what: string): Promise<T> =>
    Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} never settled`)), 15_000).unref())]);
  /** A pool of one connection, and a promise for its next close. */
  const single = (t: Test, fetchTypes: boolean) => {
    const name = `one_${randomBytes(4).toString('hex')}`;
    let closed = () => {};
    const client = postgres(own(name), { max: 1, onnotice: () => {}, fetch_types: fetchTypes, onclose: () => closed() });
    t.teardown(() => client.end({ timeout: 1 }));
    return { client, name, nextClose: () => new Promise<void>((r) => (closed = r)) };
  };

  t.test('a reserved connection closed mid-transaction: statements and ROLLBACK reject, the pool reconnects', async (t) => {
    const { client, name, nextClose } = single(t, true);
    const reserved = await client.reserve();
    await reserved`begin`;
    await reserved`select ${1}::int as one`;
    const gone = nextClose();
    await terminate(name);
    await gone;
    await t.rejects(settles(reserved`select ${2}::int as two`, 'a statement after the close'), { code: 'CONNECTION_CLOSED' });
    await t.rejects(settles(reserved`rollback`, 'the ROLLBACK'), { code: 'CONNECTION_CLOSED' });
    reserved.release();
    t.same(await settles(client`select ${3}::int as three`, 'the pool'), [{ three: 3 }], 'the only connection rejoined the pool');
  });

  for (const fetchTypes of [true, false]) {
    t.test(`a reserve() waiting when the connection closes gets the reconnected one (fetch_types ${fetchTypes})`, async (t) => {
      // The waiting request is taken from the queue to open the connection again; postgres.js
      // 3.4.9 dropped it once the connection was ready (fetch_types on: never resolved; off: the
      // connection also stayed in `connecting`, lost to the pool).
      const { client, name, nextClose } = single(t, fetchTypes);
      const first = await client.reserve();
      const waiting = client.reserve();
      const gone = nextClose();
      await terminate(name);
      await gone;
      first.release();
      const second = await settles(waiting, 'the waiting reserve()');
      t.same(await settles(second`select ${4}::int as four`, 'a statement on it'), [{ four: 4 }]);
      second.release();
      t.same(await settles(client`select 5 as five`, 'the pool'), [{ five: 5 }], 'the pool works after the release');
    });
  }
}
