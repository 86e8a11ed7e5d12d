/**
 * `npm run build`: compiles src/ into dist/ (src/tsconfig.json), emits the client library
 * again with its type declarations (src/client/tsconfig.json: the package's `./client` export),
 * makes the terminal client executable, copies the files the compiled server reads next to
 * its modules (the demo model script), and bundles the web console (src/console/, browser
 * code) into dist/console/ with esbuild. `npm start` runs the result.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
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
