/**
 * Schema and migrations cannot drift: drizzle-kit regenerates from src/store/schema.ts
 * into a temp dir, and its snapshot must match the latest one drizzle/ holds. (A fresh
 * generate writes one migration from nothing, so its SQL cannot be compared with a history
 * of several; the snapshot comparison is what catches drift.)
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const COMMITTED = path.join(ROOT, 'drizzle');
const KIT = path.join(ROOT, 'node_modules', 'drizzle-kit', 'bin.cjs');

interface Journal {
  entries: Array<{ tag: string }>;
}

const readJson = <T>(file: string): T => JSON.parse(readFileSync(file, 'utf8')) as T;

/** The snapshot without its identity (id/prevId are random per generation). */
function shape(file: string): unknown {
  const { id: _id, prevId: _prev, ...rest } = readJson<Record<string, unknown>>(file);
  return rest;
}

t.test('drizzle/ matches a fresh drizzle-kit generate of the schema', async (t) => {
  const out = t.testdir({});
  // The same inputs as scripts/drizzle.config.ts, but written elsewhere (a config file would pin `out`).
  await promisify(execFile)(
    process.execPath,
    [KIT, 'generate', '--dialect', 'postgresql', '--schema', 'src/store/schema.ts', '--out', out],
    { cwd: ROOT, env: { ...process.env, _TAPJS_PROCESSINFO_COVERAGE_: '0' } }, // drizzle-kit loads src/store/schema.ts with maps of its own
  );
  const fresh = readJson<Journal>(path.join(out, 'meta', '_journal.json'));
  const committed = readJson<Journal>(path.join(COMMITTED, 'meta', '_journal.json'));
  t.equal(fresh.entries.length, 1, 'a fresh generate writes one migration');
  t.ok(committed.entries.length >= 1, 'drizzle/ holds migrations');

  const snapshots = readdirSync(path.join(COMMITTED, 'meta'))
    .filter((f) => f.endsWith('_snapshot.json'))
    .sort();
  t.same(
    shape(path.join(out, 'meta', '0000_snapshot.json')),
    shape(path.join(COMMITTED, 'meta', snapshots[snapshots.length - 1])),
    'the latest committed snapshot is the schema (else run: npx drizzle-kit generate --config scripts/drizzle.config.ts)',
  );
  for (const e of committed.entries) t.ok(readFileSync(path.join(COMMITTED, `${e.tag}.sql`), 'utf8').length > 0, `${e.tag}.sql exists`);
});
