/**
 * The TaskStore and PushStore contracts on a real PostgreSQL (TEST_DATABASE_URL), in a fresh
 * schema `t_<random>` dropped at teardown. Each makeStore() opens its own pool, so the
 * two-store cases (notifications, concurrent appends, claim races) cross real connections.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { migrateDatabase, openDatabase } from '../../src/store/db.js';
import { PgTaskStore } from '../../src/store/pg-task-store.js';
import { seedTask, statusEvent } from './fixtures/builders.js';
import { pushStoreContract } from './fixtures/push-contract.js';
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
        'closed_turns',
        'context_history',
        'contexts',
        'events',
        'push_configs',
        'signing_keys',
        'tasks',
        'tool_calls',
        'trust_grants',
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
      `select distinct jsonb_typeof(e.payload) as a, jsonb_typeof(t.task) as b from "${schema}".events e join "${schema}".tasks t on t.id = e.task_id`,
    );
    t.same(
      kinds.map((r) => [r.a, r.b]),
      [['object', 'object']],
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
}
