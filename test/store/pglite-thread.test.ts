/**
 * The PGlite worker thread (src/store/pglite-thread.ts + pglite-worker.ts) and the data
 * directory template (src/store/pglite-template.ts): statements, transactions and
 * notifications across the thread boundary, a dead worker failing calls instead of hanging,
 * close(), and a first start copying the template instead of running initdb.
 */
import t from 'tap';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { openDatabase, pgliteTemplateRecipe, rowsOf } from '../../src/store/db.js';
import { ensureTemplate, provisionDataDir, templateDir } from '../../src/store/pglite-template.js';
import { PgliteThread } from '../../src/store/pglite-thread.js';

const thread = await PgliteThread.start({});
t.teardown(() => thread.close());
await thread.exec('create table kv (k text primary key, v int not null)');

t.test('statements run in the worker: rows, parameters, row modes, several statements at once', async (t) => {
  await thread.query('insert into kv values ($1, $2), ($3, $4)', ['a', 1, 'b', 2]);
  t.same((await thread.query<{ k: string; v: number }>('select k, v from kv order by k')).rows, [
    { k: 'a', v: 1 },
    { k: 'b', v: 2 },
  ]);
  t.same((await thread.query('select k, v from kv order by k', [], { rowMode: 'array' })).rows, [
    ['a', 1],
    ['b', 2],
  ]);
  const results = await thread.exec('select 1 as one; select 2 as two');
  t.same(
    results.map((r) => r.rows),
    [[{ one: 1 }], [{ two: 2 }]],
  );
  // drizzle's PGlite driver asks for date/time values as text (a parser per type).
  const stamp = await thread.query<[string]>("select '2026-01-02 03:04:05+00'::timestamptz", [], {
    rowMode: 'array',
    parsers: { 1184: (v: string) => v },
  });
  t.type(stamp.rows[0][0], 'string');
  t.type((await thread.query<{ d: unknown }>("select '2026-01-02'::timestamptz as d")).rows[0].d, Date, 'without parsers: a Date');
  await thread.exec('delete from kv');
});

t.test('a database error keeps its message and fields (code, constraint)', async (t) => {
  await thread.query("insert into kv values ('dup', 1)");
  const err = (await thread.query("insert into kv values ('dup', 2)").catch((e: unknown) => e)) as Error & Record<string, unknown>;
  t.match(err.message, /duplicate key/);
  t.equal(err.code, '23505');
  t.equal(err.constraint, 'kv_pkey');
  await thread.exec('delete from kv');
});

t.test('a transaction commits, rolls back on a throw, and holds statements outside it until it ends', async (t) => {
  let outside: Promise<{ rows: { n: number }[] }> | undefined;
  const result = await thread.transaction(async (tx) => {
    await tx.query("insert into kv values ('t1', 1)");
    // Started while the transaction is open: it must see the transaction's whole effect.
    outside = thread.query<{ n: number }>('select count(*)::int as n from kv');
    await tx.exec("insert into kv values ('t2', 2)");
    return 'done';
  });
  t.equal(result, 'done');
  t.same((await outside)?.rows, [{ n: 2 }], 'the statement outside ran after the commit');

  await t.rejects(
    thread.transaction(async (tx) => {
      await tx.query("insert into kv values ('t3', 3)");
      throw new Error('changed my mind');
    }),
    /changed my mind/,
  );
  await thread.transaction(async (tx) => {
    await tx.query("insert into kv values ('t4', 4)");
    await tx.rollback();
    t.ok(tx.closed);
    await t.rejects(tx.query('select 1'), /Transaction is closed/);
  });
  t.same((await thread.query<{ k: string }>('select k from kv order by k')).rows, [{ k: 't1' }, { k: 't2' }]);

  // A failed statement aborts the transaction; the throw rolls it back and the next one starts clean.
  await t.rejects(
    thread.transaction((tx) => tx.query('select * from no_such_table')),
    /no_such_table/,
  );
  await thread.transaction((tx) => tx.query("insert into kv values ('t5', 5)"));
  t.equal((await thread.query<{ n: number }>('select count(*)::int as n from kv')).rows[0].n, 3);
  await thread.exec('delete from kv');
});

t.test('LISTEN/NOTIFY: notifications cross the thread; stopping one listener keeps the others', async (t) => {
  const a: string[] = [];
  const b: string[] = [];
  const stopA = await thread.listen('chan', (p) => a.push(p));
  let gotB!: () => void;
  const stopB = await thread.listen('chan', (p) => {
    b.push(p);
    gotB();
  });
  let seen = new Promise<void>((resolve) => (gotB = resolve));
  await thread.query("select pg_notify('chan', 'one')");
  await seen;
  t.same([a, b], [['one'], ['one']]);
  await stopA();
  seen = new Promise<void>((resolve) => (gotB = resolve));
  await thread.query("select pg_notify('chan', 'two')");
  await seen;
  t.same([a, b], [['one'], ['one', 'two']]);
  await stopB();
  await stopB(); // twice is harmless
});

t.test('a worker that dies fails the calls waiting on it and every later call, naming the database', async (t) => {
  const doomed = await PgliteThread.start({});
  const waiting = doomed.query('select pg_sleep(30)');
  await doomed.kill();
  await t.rejects(waiting, /embedded database \(PGlite, in memory\) is not available: its thread exited/);
  await t.rejects(doomed.query('select 1'), /not available: its thread exited/);
  await doomed.close(); // nothing left to close: resolves
});

t.test('close() stops the worker: later calls fail at once', async (t) => {
  const closing = await PgliteThread.start({});
  t.same((await closing.query<{ x: number }>('select 1 as x')).rows, [{ x: 1 }]);
  await closing.close();
  await t.rejects(closing.query('select 1'), /not available: it was closed/);
  await t.rejects(
    closing.listen('c', () => {}),
    /it was closed/,
  );
});

t.test('a data directory PGlite cannot open fails the start with its reason', async (t) => {
  const file = path.join(t.testdir({ 'not-a-dir': 'x' }), 'not-a-dir');
  await t.rejects(PgliteThread.start({ dataDir: file }));
});

t.test('a first start copies the template; the template is built once; without one, initdb runs', async (t) => {
  const dir = t.testdir({ blocked: 'a file where the template root should be' });
  const root = path.join(dir, 'templates');
  const template = await ensureTemplate(root);
  t.equal(template, templateDir(root));
  t.ok(existsSync(path.join(template, 'PG_VERSION')), 'an initialised cluster');
  const builtAt = statSync(path.join(template, 'PG_VERSION')).mtimeMs;
  writeFileSync(path.join(template, 'marker'), 'from the template');

  const dataDir = path.join(dir, 'data', 'nested');
  t.equal(await provisionDataDir(dataDir, root), 'template');
  t.equal(readFileSync(path.join(dataDir, 'marker'), 'utf8'), 'from the template', 'the new directory is a copy');
  t.equal(statSync(path.join(template, 'PG_VERSION')).mtimeMs, builtAt, 'the template was not rebuilt');
  t.equal(await provisionDataDir(dataDir, root), 'existing');

  const db = await openDatabase({ dataDir });
  t.teardown(() => db.close());
  t.equal(db.migrations.applied, db.migrations.available, 'the copy is migrated on open like any new directory');
  t.same(rowsOf(await db.db.execute(sql`select 'ok' as x`)), [{ x: 'ok' }]);

  const elsewhere = path.join(dir, 'data2');
  t.equal(await provisionDataDir(elsewhere, path.join(dir, 'blocked')), 'initdb', 'no template can be made under a file');
  t.ok(existsSync(path.join(elsewhere, 'PG_VERSION')));
});

t.test("the store's template is migrated: a new data directory opens with nothing left to apply", async (t) => {
  const recipe = pgliteTemplateRecipe();
  t.match(templateDir(undefined, recipe), new RegExp(`-${recipe.key}-template$`), 'the migrations name the template');
  const dataDir = path.join(t.testdir({}), 'data');
  const db = await openDatabase({ dataDir });
  t.teardown(() => db.close());
  t.ok(db.migrations.available > 0);
  t.equal(db.migrations.applied, 0, 'the copy already holds every migration');
  t.ok(existsSync(path.join(templateDir(undefined, recipe), 'PG_VERSION')), 'the template is kept for the next first start');
  t.same(rowsOf(await db.db.execute(sql`select count(*)::int as n from tasks`)), [{ n: 0 }], 'the schema is there, empty');
});
