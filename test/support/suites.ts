/**
 * Which test files run in one shared process. Starting a tap test file costs seconds (the
 * runner and the TypeScript loader), so the files that need no process of their own are
 * imported into one per suite; tap queues each file's tests on the suite's root, in order.
 * - `unit`: the fast loop (`npm run test:unit`): unit tests, the in-memory store contract and
 *   the store-failure flows — the agent core in process.
 * - `inprocess`: the end-to-end and HTTP tests whose servers run in the test's process.
 * Everything else is its own tap file (package.json `tap.include`): tests that start, kill and
 * restart server processes, and the PGlite and PostgreSQL store tests.
 * test/unit/test-layout.test.ts checks that every test file runs exactly once.
 */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import t from 'tap';

export const TEST_DIR = fileURLToPath(new URL('../', import.meta.url));

/** End-to-end tests that need real server processes (SIGKILL, SIGTERM, restarts, two instances, the exactly-once stress test, the log). */
export const OWN_PROCESS = [
  'e2e/restart.test.ts',
  'e2e/restore-restart.test.ts',
  'e2e/push-restart.test.ts',
  'e2e/instances.test.ts',
  'e2e/orphans.test.ts',
  'e2e/exactly-once.test.ts',
  'e2e/shutdown.test.ts',
  'e2e/shutdown-handoff.test.ts',
  'e2e/logs.test.ts',
  // Sets --expose-gc at run time, which stops V8 from collecting a suite process's coverage.
  'unit/transport/sse-memory.test.ts',
];

export const SUITES = {
  unit: ['unit', 'store/memory.test.ts', 'store/batch-plan.test.ts', 'http/store-failures.test.ts', 'http/store-races.test.ts'],
  inprocess: [
    'e2e',
    'client',
    'http/jsonrpc-errors.test.ts',
    'http/jsonrpc-limits.test.ts',
    'http/console-route.test.ts',
    'http/parked-copy.test.ts',
    'http/claim-races.test.ts',
    'fuzz/regressions.test.ts',
  ],
} as const;

/** Every `*.test.ts` below `entry` (a file or a folder of test/), sorted, relative to test/. */
export function testFiles(entry: string): string[] {
  const full = path.join(TEST_DIR, entry);
  if (!statSync(full).isDirectory()) return [entry];
  return readdirSync(full)
    .sort()
    .flatMap((name) => {
      const rel = path.join(entry, name);
      if (statSync(path.join(TEST_DIR, rel)).isDirectory()) return name.startsWith('fixture') ? [] : testFiles(rel);
      return name.endsWith('.test.ts') ? [rel] : [];
    });
}

/** The files of a suite, relative to test/. */
export function suiteFiles(suite: keyof typeof SUITES): string[] {
  return SUITES[suite].flatMap(testFiles).filter((f) => !OWN_PROCESS.includes(f));
}

/**
 * Imports every file of the suite into this process. The first test waits until every file is
 * imported: otherwise a quick first file can finish while the next one is still loading, and tap
 * ends the run before that file's tests are queued.
 */
export async function runSuite(suite: keyof typeof SUITES): Promise<void> {
  const files = suiteFiles(suite);
  let imported = 0;
  let loaded!: () => void;
  const allLoaded = new Promise<void>((resolve) => (loaded = resolve));
  t.test(`the ${suite} suite: every file is imported before its tests run`, async (t) => {
    await allLoaded;
    t.equal(imported, files.length, `${files.length} files`);
  });
  try {
    for (const file of files) {
      await import(pathToFileURL(path.join(TEST_DIR, file)).href);
      imported++;
    }
  } finally {
    loaded();
  }
}
