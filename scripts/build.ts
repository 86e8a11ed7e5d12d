/**
 * `npm run build`: compiles src/ into dist/ (src/tsconfig.json), emits the client library
 * again with its type declarations (src/client/tsconfig.json: the package's `./client` export),
 * makes the terminal client executable, copies the files the compiled server reads next to
 * its modules (the demo model script), bundles the web console (src/console/, browser code)
 * into dist/console/ with esbuild, and makes the PGlite data-directory template a first start
 * copies, migrated (once per PGlite version and set of migrations; see src/store/pglite-template.ts). `npm start` runs the result.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { pgliteTemplateRecipe } from '../src/store/db.js';
import { ensureTemplate } from '../src/store/pglite-template.js';
import { bundleConsole } from '../src/transport/http/console-assets.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const ASSETS = ['agent/model/demo-script.json', 'agent/model/conformance-script.json'];

rmSync(`${root}dist`, { recursive: true, force: true }); // no module of an older layout survives
const tsc = (project: string) =>
  execFileSync(process.execPath, [`${root}node_modules/typescript/bin/tsc`, '-p', `${root}${project}`], { stdio: 'inherit' });
tsc('src/tsconfig.json');
tsc('src/client/tsconfig.json');
const cli = `${root}dist/cli/devtool-a2a.js`;
chmodSync(cli, 0o755);
for (const asset of ASSETS) cpSync(`${root}src/${asset}`, `${root}dist/${asset}`);
await bundleConsole(`${root}src/console`, `${root}dist/console`);
await ensureTemplate(undefined, pgliteTemplateRecipe());
