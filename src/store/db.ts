/**
 * Opens the store's database: embedded PGlite (a data directory, or in memory for tests)
 * or PostgreSQL through postgres.js, migrated on open from `<repo>/drizzle`, with a
 * LISTEN/NOTIFY channel for event notifications. Never logs the URL (it may hold a password).
 */
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { sql, type SQL } from 'drizzle-orm';
import { readMigrationFiles, type MigrationConfig, type MigrationMeta } from 'drizzle-orm/migrator';
import type { PgDatabase, PgDialect, PgQueryResultHKT, PgSession } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { PgliteThread } from './pglite-thread.js';
import { provisionDataDir, TEMPLATE_ROOT } from './pglite-template.js';
import type { TemplateRecipe } from './pglite-template.js';
import * as tables from './schema.js';

/** The drizzle handle both drivers share (their differences are in result metadata only). */
export type StoreDb = PgDatabase<PgQueryResultHKT, typeof tables>;

export interface OpenOptions {
  /** postgres:// URL; when absent the embedded PGlite is used. */
  databaseUrl?: string;
  /** PGlite data directory, created when missing; `memory://` or undefined = in memory. */
  dataDir?: string;
  /** PostgreSQL only: the search_path schema, created when missing (tests isolate with it). */
  schema?: string;
  /**
   * PostgreSQL only: `relaxed` (default) opens the store's connections with synchronous_commit
   * off — a commit returns before its WAL is flushed to disk (the claim of an answer still
   * waits, see claimCalls); `strict` keeps the server's setting. (PGlite never fsyncs: its
   * commits reach the operating system's files at once, whatever this says.)
   */
  durability?: 'relaxed' | 'strict';
}

/**
 * Fixed statement texts straight to the driver, no ORM: what the hot path runs (the group
 * commit, the claim, the log read). The text is a module constant with `$n` parameters, prepared
 * once per connection (postgres.js) or per worker (PGlite's prepared path); the rows come back
 * as the driver parsed them (jsonb parsed, column names as keys). A failure is the driver's own
 * error, unwrapped: a postgres.js PostgresError (or its CONNECTION_* error) or PGlite's
 * DatabaseError as the worker sends it back, each with its `code` — what sqlStateOf and
 * isStoreUnavailable read.
 */
export interface Queryable {
  query<T extends object>(text: string, params: readonly unknown[]): Promise<T[]>;
}

export interface Database extends Queryable {
  kind: 'pglite' | 'postgres';
  /** drizzle, for migrations and the cold paths. */
  db: StoreDb;
  /** BEGIN, `fn`'s statements (on the same connection), COMMIT; ROLLBACK when `fn` throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** The channel appendEvent notifies on; per schema so parallel test schemas stay apart. */
  notifyChannel: string;
  /** LISTENs on `channel`; resolves once listening, to a function that stops. */
  listen(channel: string, cb: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
  /** What opening it migrated. */
  migrations: MigrationReport;
}

export interface MigrationReport {
  kind: 'pglite' | 'postgres';
  /** Where: the data directory, `memory`, or the schema (never the URL). */
  target: string;
  /** Migrations in the folder and how many this run applied. */
  available: number;
  applied: number;
}

/** The rows of a raw `db.execute()`: PGlite wraps them in `{ rows }`, postgres.js is the array. */
export function rowsOf<T>(result: unknown): T[] {
  return (Array.isArray(result) ? result : (result as { rows: T[] }).rows) as T[];
}

/**
 * `any(array(select …ids))`, for `<key> = ${anyOf(ids)}`: the ids travel as ONE JSON parameter
 * (the statement text is the same for any number of ids), and the array is an InitPlan
 * computed before the scan, so the planner looks every id up in the key's index instead of
 * joining a set-returning function it guesses at 100 rows against the whole table.
 */
export function anyOf(ids: string[]): SQL {
  return sql`any(array(select jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb)))`;
}

/** `<repo>/drizzle`, from this file's location (src/store/ → ../../drizzle). */
export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../drizzle/', import.meta.url));

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

function checkSchema(schema: string | undefined): void {
  // The name goes into search_path, a channel name and DDL: only plain lower-case names.
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw new Error(`store schema "${schema}" must match ${SCHEMA_NAME}`);
  }
}

function channelFor(schema: string | undefined): string {
  return schema === undefined ? 'task_events' : `task_events_${schema}`;
}

/**
 * drizzle-kit writes foreign keys as `REFERENCES "public"."t"`; unqualified, they resolve
 * through search_path like the tables themselves, which is what a non-public schema needs.
 */
function unqualify(migrations: MigrationMeta[]): MigrationMeta[] {
  return migrations.map((m) => ({ ...m, sql: m.sql.map((s) => s.replaceAll('"public".', '')) }));
}

/** Applies pending migrations; returns how many ran. Same as drizzle's migrate() plus unqualify. */
async function runMigrations(db: StoreDb, config: MigrationConfig): Promise<{ available: number; applied: number }> {
  const migrations = unqualify(readMigrationFiles(config));
  const tableName = config.migrationsTable ?? '__drizzle_migrations';
  const schemaName = config.migrationsSchema ?? 'drizzle';
  const count = async () => {
    // to_regclass first: counting a missing table would log an ERROR on the server at every first boot.
    const [table] = rowsOf<{ found: boolean }>(
      await db.execute(sql`select to_regclass(${`"${schemaName}"."${tableName}"`}) is not null as found`),
    );
    if (table?.found !== true) return 0;
    const rows = await db.execute(sql`select count(*)::int as n from ${sql.identifier(schemaName)}.${sql.identifier(tableName)}`);
    return rowsOf<{ n: number }>(rows)[0]?.n ?? 0; // count(*) answers one row
  };
  const before = await count();
  // The migrators of drizzle-orm/pglite and /postgres-js are exactly this call.
  const internals = db as unknown as { dialect: PgDialect; session: PgSession };
  await internals.dialect.migrate(migrations, internals.session, config);
  return { available: migrations.length, applied: (await count()) - before };
}

/**
 * PGlite's own start parameters, with a smaller buffer pool: PostgreSQL touches all of
 * shared_buffers at start, so PGlite's default 128 MB is resident from the first second;
 * 16 MB keeps a store of this size cached and saves ~120 MB of RSS.
 */
const PGLITE_START_PARAMS = [...PGlite.defaultStartParams, '-c', 'shared_buffers=16MB'];

/** The drizzle handle over a PGlite worker (drizzle's PGlite driver calls query/exec/transaction only, which the thread's client has). */
function pgliteDb(pg: PgliteThread): StoreDb {
  return drizzlePglite({ client: pg as unknown as PGlite, schema: tables });
}

/**
 * The embedded template's recipe: the store's migrations, applied in a worker of their own
 * that ends before the server opens its copy. The key is the migrations' hashes, so a new
 * migration makes a new template (an old directory is migrated on open as before).
 */
export function pgliteTemplateRecipe(): TemplateRecipe {
  const hashes = readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER }).map((m) => m.hash);
  return {
    key: `m${createHash('sha256').update(hashes.join('\n')).digest('hex').slice(0, 12)}`,
    async prepare(dataDir) {
      const pg = await PgliteThread.start({ dataDir, startParams: PGLITE_START_PARAMS });
      try {
        await runMigrations(pgliteDb(pg), { migrationsFolder: MIGRATIONS_FOLDER });
      } finally {
        await pg.close();
      }
    },
  };
}

async function openPglite(dataDir: string | undefined): Promise<Database> {
  const inMemory = dataDir === undefined || dataDir === 'memory://';
  if (!inMemory) await provisionDataDir(dataDir, TEMPLATE_ROOT, pgliteTemplateRecipe());
  const pg = await PgliteThread.start({ ...(inMemory ? {} : { dataDir }), startParams: PGLITE_START_PARAMS });
  try {
    const db = pgliteDb(pg);
    const counts = await runMigrations(db, { migrationsFolder: MIGRATIONS_FOLDER });
    const database: Database = {
      kind: 'pglite',
      db,
      query: pgliteQuery(pg),
      transaction: (fn) => pg.transaction((tx) => fn({ query: pgliteQuery(tx) })),
      notifyChannel: channelFor(undefined),
      listen: (channel, cb) => pg.listen(channel, cb),
      close: () => pg.close(),
      migrations: { kind: 'pglite', target: inMemory ? 'memory' : dataDir, ...counts },
    };
    return database;
  } catch (e) {
    await pg.close().catch(() => {});
    throw e;
  }
}

/**
 * Migrates on a connection of its own under an advisory lock, so several instances (or
 * parallel test runs) booting at once do not race each other's CREATE statements.
 */
async function migratePostgres(url: string, schema: string | undefined) {
  const conn = connect(url, { max: 1, ...(schema ? { connection: { search_path: schema } } : {}) });
  try {
    await conn`select pg_advisory_lock(hashtext(${'a2a-store-migrate:' + (schema ?? '')}))`;
    if (schema !== undefined) await conn.unsafe(`create schema if not exists "${schema}"`);
    const db = drizzlePostgres({ client: conn, schema: tables }) as unknown as StoreDb;
    return await runMigrations(db, { migrationsFolder: MIGRATIONS_FOLDER, ...(schema ? { migrationsSchema: schema } : {}) });
  } finally {
    await conn.end({ timeout: 2 });
  }
}

/**
 * The client drizzle is given: the same, but every query with parameters is a prepared
 * statement (drizzle's postgres-js driver asks postgres.js for one only for `.prepare(name)`).
 * postgres.js keeps them per connection by statement text; the store's texts are fixed (rows
 * travel as JSON parameters), so each is parsed and planned once per connection, and its
 * Parse/Describe round trip is skipped from then on.
 *
 * Transactions run on a connection reserved first (`reservedTransaction`), not through
 * postgres.js's `begin()`: that one can write BEGIN without reserving its connection when
 * BEGIN is the statement that fills the connection's pipeline or meets a full socket buffer
 * (porsager/postgres#823, #1189, postgres 3.4.9). The server then fails the transaction with
 * UNSAFE_TRANSACTION, and the connection goes back to the pool inside an open transaction
 * where unrelated statements run. Under 200 concurrent clients it happened tens of times a run.
 */
function preparing(client: postgres.Sql, savepoint?: (fn: TxBody) => Promise<unknown>): postgres.Sql {
  return new Proxy(client, {
    get(target, key, receiver) {
      if (key === 'unsafe') {
        return (query: string, args?: unknown[], options?: Record<string, unknown>) =>
          target.unsafe(query, args as postgres.ParameterOrJSON<never>[], { ...options, prepare: (args?.length ?? 0) > 0 });
      }
      if (key === 'begin') {
        // begin(fn) or begin(options, fn): the callback is the last argument.
        return (...args: unknown[]) => {
          const options = args.length > 1 && typeof args[0] === 'string' ? args[0] : '';
          return reservedTransaction(target, options, args.at(-1) as TxBody);
        };
      }
      if (key === 'savepoint' && savepoint) return savepoint;
      const value: unknown = Reflect.get(target, key, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

type TxBody = (tx: postgres.Sql) => unknown;

/**
 * BEGIN … COMMIT on a connection reserved before anything is written, with savepoints for
 * nested transactions; ROLLBACK (to the savepoint) when the body throws. The connection goes
 * back to the pool once the transaction has ended either way.
 */
async function reservedTransaction(client: postgres.Sql, options: string, body: TxBody): Promise<unknown> {
  const conn = await client.reserve();
  let savepoints = 0;
  const scope = async (name: string | undefined, fn: TxBody): Promise<unknown> => {
    await conn.unsafe(name ? `savepoint ${name}` : `begin ${options.replace(/[^a-z ]/gi, '')}`);
    try {
      const result = await fn(tx);
      await conn.unsafe(name ? `release savepoint ${name}` : 'commit');
      return result;
    } catch (e) {
      // A failed COMMIT has already ended the transaction; ROLLBACK then only warns. A lost
      // connection fails the ROLLBACK too: the body's error is the one to report.
      await conn.unsafe(name ? `rollback to savepoint ${name}` : 'rollback').catch(() => undefined);
      throw e;
    }
  };
  const tx = preparing(conn, (fn) => scope(`s${savepoints++}`, fn));
  try {
    return await scope(undefined, body);
  } finally {
    conn.release();
  }
}

/** Database.query on PGlite (the worker's prepared path), on the database or inside a transaction. */
function pgliteQuery(q: Pick<PgliteThread, 'query'>): Queryable['query'] {
  return async <T extends object>(text: string, params: readonly unknown[]) => (await q.query<T>(text, [...params])).rows;
}

/** Database.query on postgres.js: the text prepared (once per connection, kept by text), on the pool or a reserved connection. */
function rawQuery(client: postgres.Sql): Queryable['query'] {
  return <T extends object>(text: string, params: readonly unknown[]) =>
    client.unsafe<T[]>(text, params as postgres.ParameterOrJSON<never>[], { prepare: true }) as unknown as Promise<T[]>;
}

/**
 * Seconds before a connection is tried again after its last one failed. postgres.js counts the
 * failures of all its connections together and, by default, waits 3^failures/100 s (up to
 * 20 s): after a few seconds of outage a pool of 10 has failed often enough that each
 * connection sleeps 10–20 s after the database is back, and every query waits behind it. A
 * short, capped wait gets the pool back within a second; a query made while the database is
 * down still fails at once (connection refused), so the client gets the retryable error.
 */
export function reconnectBackoff(failures: number): number {
  return Math.min(0.05 * 2 ** failures, 1) * (0.5 + Math.random() / 2);
}

/**
 * What every postgres.js client of the store is opened with.
 * - `backoff`: see reconnectBackoff.
 * - `connect_timeout` (postgres.js: 30 s): an address that does not answer (failover) fails in 5 s.
 * (`fetch_types` stays on, postgres.js's default. The vendored driver, devtool.2, handles the
 * per-connection array-type query's rejection when the connection is lost during it, and keeps
 * a `reserve()` that opens a new connection with or without it; see docs/operations.md.)
 */
const DRIVER_OPTIONS = {
  onnotice: () => {},
  backoff: reconnectBackoff,
  connect_timeout: 5,
} satisfies postgres.Options<Record<string, postgres.PostgresType>>;

/**
 * The driver's target for a DATABASE_URL. postgres.js takes a Unix socket only as an option
 * (`path`); libpq, psql and most tools take it in the URL as `?host=/var/run/postgresql`. That
 * form is read here (the socket is `<dir>/.s.PGSQL.<port>`, the URL's host is then ignored, as
 * libpq does). On one machine a Unix socket spares each statement the kernel's TCP path on both
 * ends, which the sending thread pays (docs/performance.md).
 */
export function driverTarget(url: string): { url: string; path?: string } {
  const parsed = new URL(url);
  const host = parsed.searchParams.get('host');
  if (host === null || !host.startsWith('/')) return { url };
  parsed.searchParams.delete('host');
  return { url: parsed.toString(), path: `${host.replace(/\/+$/, '')}/.s.PGSQL.${parsed.port || '5432'}` };
}

/** A postgres.js client for DATABASE_URL (see driverTarget) with the store's driver options. */
export function connect(url: string, options: postgres.Options<Record<string, postgres.PostgresType>>) {
  const target = driverTarget(url);
  return postgres(target.url, { ...DRIVER_OPTIONS, ...(target.path !== undefined ? { path: target.path } : {}), ...options });
}

async function openPostgres(url: string, schema: string | undefined, durability: 'relaxed' | 'strict'): Promise<Database> {
  const counts = await migratePostgres(url, schema);
  const connection = {
    ...(schema ? { search_path: schema } : {}),
    ...(durability === 'relaxed' ? { synchronous_commit: 'off' } : {}),
  };
  const client = connect(url, { max: 10, connection });
  // The store's statements send JSON as text to a `$n::jsonb` parameter: as given, not
  // JSON.stringify'd again (postgres.js's default). drizzle's driver sets the same on this
  // client; set here too so the raw statements do not depend on it.
  client.options.serializers[114] = client.options.serializers[3802] = (x: unknown) => x;
  const database: Database = {
    kind: 'postgres',
    db: drizzlePostgres({ client: preparing(client), schema: tables }),
    query: rawQuery(client),
    transaction: async (fn) =>
      (await reservedTransaction(client, '', (tx) => fn({ query: rawQuery(tx) }))) as Awaited<ReturnType<typeof fn>>,
    notifyChannel: channelFor(schema),
    listen: async (channel, cb) => {
      // A dedicated connection that postgres.js re-LISTENs on after a reconnect.
      const req = await client.listen(channel, cb);
      return () => req.unlisten();
    },
    close: () => client.end({ timeout: 2 }),
    migrations: { kind: 'postgres', target: schema ? `schema ${schema}` : 'the default search_path schema', ...counts },
  };
  return database;
}

/** Opens (and migrates) the database the options name; `migrations` says what ran. */
export async function openDatabase(opts: OpenOptions): Promise<Database> {
  checkSchema(opts.schema);
  return opts.databaseUrl !== undefined
    ? openPostgres(opts.databaseUrl, opts.schema, opts.durability ?? 'relaxed')
    : openPglite(opts.dataDir);
}

/** Opens, migrates and closes: for `npm run db:migrate`. Reports what it did. */
export async function migrateDatabase(opts: OpenOptions): Promise<MigrationReport> {
  const database = await openDatabase(opts);
  await database.close();
  return database.migrations;
}
