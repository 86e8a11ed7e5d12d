/**
 * `npm start` (scripts/start.mjs) builds only when dist/ is not what the sources make now, then
 * runs dist/main.js in its own process. Run here on a fixture checkout: the real start script
 * and build-inputs module, a build script that records each build and writes dist/ and the
 * stamp as scripts/build.ts does, and a dist/main.js that says it ran.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildInputsHash, STAMP, stampIsFresh } from '../../../scripts/build-inputs.mjs';
import { ownDir } from '../../support/own-dir.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));

/** A build like scripts/build.ts as far as the stamp goes: hash first, dist/ and the template, the stamp last. */
const FAKE_BUILD = `
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildInputsHash, STAMP } from './build-inputs.mjs';
const root = fileURLToPath(new URL('../', import.meta.url));
const hash = buildInputsHash(root);
appendFileSync(root + 'builds.log', 'built\\n');
mkdirSync(root + 'dist', { recursive: true });
writeFileSync(root + 'dist/main.js', "process.stdout.write('served ' + process.argv[1].split('/').pop() + '\\\\n');\\n");
mkdirSync(root + 'template', { recursive: true });
writeFileSync(root + STAMP, JSON.stringify({ hash, template: root + 'template' }) + '\\n');
`;

function checkout(name: string): string {
  return ownDir(name, {
    'package.json': '{"type":"module"}',
    'package-lock.json': '{}',
    'tsconfig.json': '{}',
    node_modules: { symlink: path.join(REPO, 'node_modules') },
    scripts: {
      'build.ts': FAKE_BUILD,
      'build-inputs.mjs': fs.readFileSync(path.join(REPO, 'scripts/build-inputs.mjs'), 'utf8'),
      'start.mjs': fs.readFileSync(path.join(REPO, 'scripts/start.mjs'), 'utf8'),
    },
    src: { 'main.ts': 'export {};', agent: { 'a.ts': 'export const a = 1;' } },
    proto: { 'x.proto': 'syntax = "proto3";' },
    drizzle: { '0000.sql': 'SELECT 1;' },
  });
}

/** Runs the start script as `npm start` does; returns what the server printed and how many builds ran so far. */
function start(root: string, env: Record<string, string> = {}): { out: string; builds: number } {
  const out = execFileSync(process.execPath, ['scripts/start.mjs'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    encoding: 'utf8',
  });
  const log = path.join(root, 'builds.log');
  return { out, builds: fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter(Boolean).length : 0 };
}

t.test('start builds when dist/ is missing or stale, never when it is fresh, and serves in its own process', (t) => {
  const root = checkout('start');
  t.same(start(root), { out: 'served start.mjs\n', builds: 1 }, 'no dist/: built, then served by the start process itself');
  t.same(start(root), { out: 'served start.mjs\n', builds: 1 }, 'fresh: not built again');
  fs.writeFileSync(path.join(root, 'src/agent/a.ts'), 'export const a = 2;');
  t.equal(start(root).builds, 2, 'a source changed: built');
  t.equal(start(root).builds, 2, 'and not again');
  fs.writeFileSync(path.join(root, 'drizzle/0001.sql'), 'SELECT 2;');
  t.equal(start(root).builds, 3, 'a new migration: built');
  fs.rmSync(path.join(root, 'template'), { recursive: true });
  t.equal(start(root).builds, 4, 'the PGlite template is gone (npm ci emptied node_modules/): built');
  t.equal(start(root, { FORCE_BUILD: '1' }).builds, 5, 'FORCE_BUILD=1: built anyway');
  fs.rmSync(path.join(root, 'dist/main.js'));
  t.equal(start(root).builds, 6, 'dist/main.js gone: built');
  t.equal(start(root).builds, 6, 'then fresh');
  t.end();
});

t.test('stampIsFresh: the stamp matches the inputs, names a template that exists, and dist/main.js is there', (t) => {
  const root = ownDir('stamp', {
    'package.json': '{}',
    'package-lock.json': '{}',
    'tsconfig.json': '{}',
    scripts: { 'build.ts': '// build', 'build-inputs.mjs': '// inputs' },
    src: { 'main.ts': 'export {};' },
    proto: {},
    drizzle: {},
    dist: { 'main.js': '// built' },
    template: {},
  });
  const stamp = (value: string) => fs.writeFileSync(path.join(root, STAMP), value);
  t.notOk(stampIsFresh(root), 'no stamp');
  stamp(JSON.stringify({ hash: buildInputsHash(root), template: path.join(root, 'template') }));
  t.ok(stampIsFresh(root), 'the stamp of these inputs');
  fs.writeFileSync(path.join(root, 'src/main.ts'), 'export const x = 1;');
  t.notOk(stampIsFresh(root), 'a source changed since');
  fs.writeFileSync(path.join(root, 'src/main.ts'), 'export {};');
  t.ok(stampIsFresh(root), 'changed back: the hash is of contents, not times');
  stamp(JSON.stringify({ hash: buildInputsHash(root) }));
  t.notOk(stampIsFresh(root), 'a stamp without its template');
  stamp('{"hash":');
  t.notOk(stampIsFresh(root), 'an unreadable stamp');
  t.end();
});
