/**
 * Prepared statements in the PGlite worker (src/store/pglite-prepared.ts): a statement with
 * parameters gives what PGlite's `query()` gives (a worker with `statementCache: 0` runs every
 * statement through it), errors keep their fields inside and outside transactions, the LRU
 * closes what it evicts, and a statement whose result columns changed is prepared again.
 */
import t from 'tap';
import { PgliteThread } from '../../src/store/pglite-thread.js';

const plain = await PgliteThread.start({ statementCache: 0 });
const prepared = await PgliteThread.start({ statementCache: 3 });
t.teardown(() => Promise.all([plain.close(), prepared.close()]));
const both = [plain, prepared];
const TABLE = 'create table r (id int primary key, j jsonb, at timestamptz, tags text[], note text)';
for (const db of both) await db.exec(TABLE);

/** drizzle's PGlite driver asks for this on every statement (the worker maps it to its parsers). */
const DRIZZLE = { rowMode: 'array' as const, parsers: { 1184: (v: string) => v } };
type Run = (db: PgliteThread) => Promise<unknown>;

/** The error `run` rejects with, as its plain fields. */
async function failure(run: () => Promise<unknown>): Promise<Record<string, unknown>> {
  const e = await run().then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(e instanceof Error)) throw new Error('expected a rejection');
  return { ...e, message: e.message };
}

/** Protocol-level prepared statements of the worker's session. */
async function statements(db: PgliteThread): Promise<string[]> {
  const r = await db.query<{ statement: string }>(
    "select statement from pg_prepared_statements where name like 'a2a_%' order by statement",
  );
  return r.rows.map((row) => row.statement);
}

t.test('a statement with parameters gives what query() gives: jsonb, timestamptz, int, text[], null, both row modes', async (t) => {
  const at = new Date('2026-03-04T05:06:07.089Z');
  const runs: Run[] = [
    (db) =>
      db.query('insert into r values ($1, $2, $3, $4, $5) returning *', [
        1,
        { a: [1, 'x'], b: null },
        at,
        ['p', 'q,r', 'with "quote"'],
        null,
      ]),
    (db) => db.query('insert into r values ($1, $2, $3, $4, $5)', [2, [1, 2], '2026-01-01T00:00:00Z', [], 'two']),
    (db) => db.query('select * from r where id = $1', [1]),
    (db) => db.query('select id, j, at, tags, note from r where id = any($1) order by id', [[1, 2]], DRIZZLE),
    (db) => db.query('select id from r where j @> $1 and tags && $2', [{ a: [1] }, ['q,r']], DRIZZLE),
    (db) => db.query('select coalesce($1::text, $2) as v, $3::int + 1 as n', [null, 'fallback', 41]),
    (db) => db.query('update r set note = $1 where id >= $2', ['n', 1]),
    (db) => db.query('select * from r where id = $1', [99]),
    (db) => db.query('delete from r where id = $1', [2]),
  ];
  for (const [i, run] of runs.entries()) {
    const expected = await run(plain);
    t.strictSame(await run(prepared), expected, `statement ${i}`);
  }
  // The cache (3) is full and several were evicted: run again, from the cache and re-prepared.
  for (const db of both) await db.exec('delete from r');
  for (const [i, run] of runs.entries()) t.strictSame(await run(prepared), await run(plain), `statement ${i}, again`);
  t.type((await prepared.query<{ at: unknown }>('select at from r where id = $1', [1])).rows[0].at, Date);
  for (const db of both) await db.exec('delete from r');
});

t.test('an error keeps its fields; outside a transaction the next statement runs', async (t) => {
  for (const db of both) await db.query('insert into r (id) values ($1)', [7]);
  const runs: [string, (db: PgliteThread) => Promise<unknown>][] = [
    ['23505', (db) => db.query('insert into r (id, note) values ($1, $2)', [7, 'dup'])],
    ['42P01', (db) => db.query('select * from no_such where id = $1', [1])],
    ['22P02', (db) => db.query('select $1::int as n', ['nope'])],
  ];
  for (const [code, run] of runs) {
    const expected = await failure(() => run(plain));
    const got = await failure(() => run(prepared));
    t.equal(got.code, code);
    t.strictSame(got, expected, `${code}: the same fields`);
    t.same((await prepared.query('select $1::int as n', [1])).rows, [{ n: 1 }], `${code}: usable after`);
  }
  for (const db of both) await db.exec('delete from r');
});

t.test('inside a transaction an error keeps its code, aborts the transaction, and the transaction rolls back', async (t) => {
  for (const db of both) await db.query('insert into r (id) values ($1)', [1]);
  for (const db of both) {
    let code: unknown;
    let afterwards: unknown;
    await t.rejects(
      db.transaction(async (tx) => {
        await tx.query('insert into r (id) values ($1)', [2]);
        code = (await failure(() => tx.query('insert into r (id) values ($1)', [1]))).code;
        afterwards = (await failure(() => tx.query('select id from r where id = $1', [2]))).code;
        throw new Error('give up');
      }),
      /give up/,
    );
    t.equal(code, '23505');
    t.equal(afterwards, '25P02', 'the transaction is aborted: the next statement fails');
    t.same(
      (await db.query('select id from r where id >= $1 order by id', [0])).rows,
      [{ id: 1 }],
      'the insert before the error was rolled back',
    );
    // A serialization-like failure surfaces from inside `transaction` with its code (callers retry on it).
    const err = await failure(() => db.transaction((tx) => tx.query('select 1 / $1 as x', [0])));
    t.equal(err.code, '22012');
  }
  for (const db of both) await db.exec('delete from r');
});

t.test('a statement outside an open transaction waits until it ends, as with query()', async (t) => {
  let outside: Promise<{ rows: unknown[] }> | undefined;
  await prepared.transaction(async (tx) => {
    await tx.query('insert into r (id) values ($1)', [1]);
    outside = prepared.query('select count(*)::int as n from r where id > $1', [0]);
    await tx.query('insert into r (id) values ($1)', [2]);
  });
  t.same((await outside)?.rows, [{ n: 2 }], 'it ran after the commit');
  await prepared.exec('delete from r');
});

t.test('the cache is an LRU: the least recently used statement is closed when a new one needs room', async (t) => {
  await prepared.exec('create table lru (n int)'); // DDL: the cache starts empty
  const q = (n: number) => `select n from lru where n = $1 or ${n} = 0`;
  for (const n of [1, 2, 3]) await prepared.query(q(n), [n]);
  t.same(await statements(prepared), [q(1), q(2), q(3)]);
  await prepared.query(q(1), [1]); // 1 is now the most recently used
  await prepared.query(q(4), [4]);
  t.same(await statements(prepared), [q(1), q(3), q(4)], '2 was evicted and closed');
  t.same((await prepared.query(q(2), [2])).rows, [], 'an evicted statement is prepared again');
  t.same(await statements(prepared), [q(1), q(2), q(4)]);
  t.same(await statements(plain), [], 'query() prepares nothing by name');
});

t.test('a statement whose result columns changed is prepared again', async (t) => {
  await prepared.exec(`create table wide (id int primary key);
    create function widen(col text) returns void language plpgsql as $$ begin execute format('alter table wide add column %I int', col); end $$`);
  await prepared.query('insert into wide values ($1)', [1]);
  const all = (db: PgliteThread | Parameters<Parameters<PgliteThread['transaction']>[0]>[0]) =>
    db.query<Record<string, unknown>>('select * from wide where id = $1', [1]);
  t.same((await all(prepared)).rows, [{ id: 1 }]);

  // DDL through the worker drops the cache: even inside a transaction nothing fails.
  await prepared.transaction(async (tx) => {
    await tx.exec('alter table wide add column a int');
    t.same((await all(tx)).rows, [{ id: 1, a: null }], 'after DDL by exec');
    await tx.query('alter table wide drop column a'); // drizzle's migrator sends DDL this way
    t.same((await all(tx)).rows, [{ id: 1 }], 'after DDL by a query without parameters');
    await tx.exec('alter table wide add column a int');
  });

  // DDL the worker cannot see (run by a function): outside a transaction, prepared again and rerun.
  await prepared.query('select widen($1)', ['b']);
  t.same((await all(prepared)).rows, [{ id: 1, a: null, b: null }]);

  // Inside a transaction the error has aborted it: it is thrown, and the next attempt prepares again.
  await prepared.query('select widen($1)', ['c']);
  const err = await failure(() => prepared.transaction((tx) => all(tx)));
  t.equal(err.code, '0A000');
  t.match(err.message, /cached plan must not change result type/);
  t.same((await prepared.transaction((tx) => all(tx))).rows, [{ id: 1, a: null, b: null, c: null }]);
});
