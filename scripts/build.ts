/**
 * `npm run build`: compiles src/ into dist/ (src/tsconfig.json), emits the client library
 * again with its type declarations (src/client/tsconfig.json: the package's `./client` export),
 * makes the terminal client executable, copies the files the compiled server reads next to
 * its modules (the demo model script), bundles the web console (src/console/, browser code)
 * into dist/console/ with esbuild, and makes the PGlite data-directory template a first start
 * copies, migrated (once per PGlite version and set of migrations; see src/store/pglite-template.ts). `npm start` runs the result,
 * building first only when the sources changed (scripts/start.mjs, the stamp written last here).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { pgliteTemplateRecipe } from '../src/store/db.js';
import { ensureTemplate } from '../src/store/pglite-template.js';
import { bundleConsole } from '../src/transport/http/console-assets.js';
import { buildInputsHash, STAMP } from './build-inputs.mjs';

const root = fileURLToPath(new URL('../', import.meta.url));
const ASSETS = ['agent/model/demo-script.json', 'agent/model/conformance-script.json'];

const hash = buildInputsHash(root); // what this build starts from (a change during it rebuilds next time)
rmSync(`${root}dist`, { recursive: true, force: true }); // no module of an older layout survives
const tsc = (project: string) =>
  execFileSync(process.execPath, [`${root}node_modules/typescript/bin/tsc`, '-p', `${root}${project}`], { stdio: 'inherit' });
tsc('src/tsconfig.json');
tsc('src/client/tsconfig.json');
const cli = `${root}dist/cli/devtool-a2a.js`;
chmodSync(cli, 0o755);
for (const asset of ASSETS) cpSync(`${root}src/${asset}`, `${root}dist/${asset}`);
await bundleConsole(`${root}src/console`, `${root}dist/console`);
const template = await ensureTemplate(undefined, pgliteTemplateRecipe());
// Last: `npm start` (scripts/start.mjs) skips the build while this matches.
writeFileSync(`${root}${STAMP}`, JSON.stringify({ hash, template }) + '\n');
