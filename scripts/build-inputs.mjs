// What dist/ is built from, hashed: every file under src/, proto/ and drizzle/, the build script,
// the TypeScript configurations and the lock file (a dependency's new version can change the
// emitted code and the PGlite template), and the Node.js version that runs the build.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** Where scripts/build.ts records what it built from (relative to the repository). */
export const STAMP = 'dist/.build-stamp.json';

const TREES = ['src', 'proto', 'drizzle'];
const FILES = ['package.json', 'package-lock.json', 'tsconfig.json', 'scripts/build.ts', 'scripts/build-inputs.mjs'];

function walk(dir, out) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(p, out);
    else if (entry.isFile()) out.push(p);
  }
}

/** A hash of the build's inputs under `root` (names and contents, in a fixed order). */
export function buildInputsHash(root) {
  const files = FILES.map((f) => path.join(root, f));
  for (const tree of TREES) walk(path.join(root, tree), files);
  files.sort();
  const hash = createHash('sha256').update(process.version);
  for (const file of files) {
    hash.update(`\0${path.relative(root, file)}\0`);
    hash.update(readFileSync(file));
  }
  return hash.digest('hex');
}

/**
 * Whether dist/ under `root` is what the build would make now: dist/main.js and the stamp exist,
 * the stamp's hash is the inputs' hash, and the PGlite template it names is still there (`npm ci`
 * empties node_modules/, where the template lives). An unreadable stamp is not fresh.
 */
export function stampIsFresh(root) {
  if (!existsSync(path.join(root, 'dist', 'main.js'))) return false;
  try {
    const stamp = JSON.parse(readFileSync(path.join(root, STAMP), 'utf8'));
    return stamp.hash === buildInputsHash(root) && typeof stamp.template === 'string' && existsSync(stamp.template);
  } catch {
    return false;
  }
}
