/**
 * The store a benchmarked server runs on: embedded PGlite in a fresh temp DATA_DIR, or
 * PostgreSQL in a fresh database `bench_<random>` created (and dropped `WITH (FORCE)`)
 * through postgres.js on the admin URL from BENCH_DATABASE_URL or TEST_DATABASE_URL.
 * Never logs a URL (it may hold a password).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import postgres from 'postgres';

export type StoreKind = 'pglite' | 'postgres';
export const STORE_KINDS: readonly StoreKind[] = ['pglite', 'postgres'];
export const STORE_LABEL: Record<StoreKind, string> = { pglite: 'PGlite', postgres: 'PostgreSQL' };

export interface BenchStore {
  kind: StoreKind;
  /** Where, for the log: the data directory or the database name. */
  where: string;
  /** Environment for the server child. */
  env: Record<string, string>;
  /** Deletes the directory / drops the database; idempotent. */
  dispose(): Promise<void>;
  /** Best effort, synchronous (process 'exit'): removes a directory; a database cannot be dropped here. */
  disposeSync(): void;
}

/** The admin URL for the PostgreSQL leg, or undefined when none is configured. */
export function postgresAdminUrl(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const url = (env.BENCH_DATABASE_URL ?? '').trim() || (env.TEST_DATABASE_URL ?? '').trim();
  return url === '' ? undefined : url;
}

export function pgliteStore(tmpRoot: string): BenchStore {
  const dir = mkdtempSync(path.join(tmpRoot, 'pglite-'));
  let gone = false;
  const rm = () => {
    if (gone) return;
    gone = true;
    rmSync(dir, { recursive: true, force: true });
  };
  return { kind: 'pglite', where: `DATA_DIR=${dir}`, env: { DATA_DIR: dir }, dispose: async () => rm(), disposeSync: rm };
}

export async function postgresStore(adminUrl: string): Promise<BenchStore> {
  const name = `bench_${randomBytes(6).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {}, connect_timeout: 5 });
  try {
    await admin.unsafe(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end({ timeout: 2 });
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  let dropped: Promise<void> | undefined;
  const dispose = () =>
    (dropped ??= (async () => {
      const sql = postgres(adminUrl, { max: 1, onnotice: () => {}, connect_timeout: 5 });
      try {
        await sql.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await sql.end({ timeout: 2 });
      }
    })());
  return {
    kind: 'postgres',
    where: `database ${name} on ${url.host}`,
    env: { DATABASE_URL: url.toString() },
    dispose,
    disposeSync: () => {},
  };
}

/** Parses `--stores pglite,postgres`. */
export function parseStores(value: string): StoreKind[] {
  const kinds = value
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  for (const k of kinds)
    if (!STORE_KINDS.includes(k as StoreKind)) throw new Error(`--stores: unknown store "${k}" (expected ${STORE_KINDS.join(', ')})`);
  if (kinds.length === 0) throw new Error('--stores needs at least one store');
  return [...new Set(kinds)] as StoreKind[];
}
