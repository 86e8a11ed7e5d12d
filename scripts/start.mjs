// `npm start`: build dist/ only when what it is built from changed since the last build, then run
// the server in this same process. One npm script, not `prestart` + `start`: each lifecycle script
// costs npm a shell and this a second Node.js start (~0.15 s together on the 2-core machine), and
// a built checkout should start at once. Plain JavaScript on purpose: loading tsx and the build's
// imports costs more than the whole check (hashing the sources, 5–20 ms).
//
// The stamp (dist/.build-stamp.json, written by scripts/build.ts as its last step) holds the hash
// of every build input and the PGlite template directory the build made: `npm ci` empties
// node_modules/, and with it the template, so a missing template rebuilds too (see stampIsFresh).
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { stampIsFresh } from './build-inputs.mjs';

const root = fileURLToPath(new URL('../', import.meta.url));

if (process.env.FORCE_BUILD === '1' || !stampIsFresh(root)) {
  execFileSync(process.execPath, ['--import', 'tsx', `${root}scripts/build.ts`], { stdio: 'inherit', cwd: root });
}
// The server's entry runs its main() on import; its faults and signals are its own from here.
await import('../dist/main.js');
