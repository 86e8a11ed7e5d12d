// `npm start`'s first step: build dist/ only when what it is built from changed since the last
// build, so a built checkout starts at once. Plain JavaScript on purpose: loading tsx and the
// build's imports costs more than the whole check (a hash of the sources, ~20 ms).
//
// The stamp (dist/.build-stamp.json, written by scripts/build.ts as its last step) holds the hash
// of every input below and the PGlite template directory the build made: `npm ci` empties
// node_modules/, and with it the template, so a missing template rebuilds too.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildInputsHash, STAMP } from './build-inputs.mjs';

const root = fileURLToPath(new URL('../', import.meta.url));

function fresh() {
  if (process.env.FORCE_BUILD === '1' || !existsSync(`${root}dist/main.js`) || !existsSync(`${root}${STAMP}`)) return false;
  try {
    const stamp = JSON.parse(readFileSync(`${root}${STAMP}`, 'utf8'));
    return stamp.hash === buildInputsHash(root) && typeof stamp.template === 'string' && existsSync(stamp.template);
  } catch {
    return false; // an unreadable stamp: build
  }
}

if (!fresh()) {
  execFileSync(process.execPath, ['--import', 'tsx', `${root}scripts/build.ts`], { stdio: 'inherit', cwd: root });
}
