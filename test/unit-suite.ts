/**
 * The fast loop (`npm run test:unit`): the unit tests, the in-memory store contract and the
 * store-failure flows, imported into ONE process so that the per-file start-up of a test
 * runner (a second or two each) is paid once; tap queues every file's tests on its one root.
 * `npm test` runs every file in its own process, with coverage.
 */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const ROOTS = ['unit', 'store/memory.test.ts', 'store/batch-plan.test.ts', 'http/store-failures.test.ts', 'http/store-races.test.ts'];

function testFiles(entry: string): string[] {
  const full = path.join(here, entry);
  if (!statSync(full).isDirectory()) return [full];
  return readdirSync(full)
    .sort()
    .flatMap((name) =>
      name.endsWith('.test.ts') || statSync(path.join(full, name)).isDirectory() ? testFiles(path.join(entry, name)) : [],
    );
}

// Every file's top-level t.test() calls queue on the one root test, in import order.
for (const file of ROOTS.flatMap(testFiles)) await import(pathToFileURL(file).href);
