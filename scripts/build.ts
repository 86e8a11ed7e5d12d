/**
 * `npm run build`: compiles src/ into dist/ (src/tsconfig.json) and copies the files the
 * compiled server reads next to its modules (the demo model script), and makes the PGlite
 * data-directory template a first start copies (once per PGlite version; see
 * src/store/pglite-template.ts). `npm start` runs the result.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ensureTemplate } from '../src/store/pglite-template.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const ASSETS = ['agent/model/demo-script.json', 'agent/model/conformance-script.json'];

rmSync(`${root}dist`, { recursive: true, force: true }); // no module of an older layout survives
execFileSync(process.execPath, [`${root}node_modules/typescript/bin/tsc`, '-p', `${root}src/tsconfig.json`], { stdio: 'inherit' });
for (const asset of ASSETS) cpSync(`${root}src/${asset}`, `${root}dist/${asset}`);
await ensureTemplate();
