/**
 * `npm start` builds only when dist/ is stale (scripts/prestart.mjs): the hash of the build's
 * inputs must change with every input that changes the output, and only with those.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { buildInputsHash } from '../../../scripts/build-inputs.mjs';
import { ownDir } from '../../support/own-dir.js';

const root = ownDir('build-inputs', {
  'package.json': '{}',
  'package-lock.json': '{}',
  'tsconfig.json': '{}',
  scripts: { 'build.ts': '// build', 'build-inputs.mjs': '// inputs' },
  src: { 'main.ts': 'export {};', agent: { 'a.ts': 'export const a = 1;' } },
  proto: { 'x.proto': 'syntax = "proto3";' },
  drizzle: { '0000.sql': 'SELECT 1;' },
  dist: { 'main.js': '// built' },
});

const write = (rel: string, text: string) => fs.writeFileSync(path.join(root, rel), text);

t.test('the hash follows the sources, the lock file and the migrations, not dist/', (t) => {
  const first = buildInputsHash(root);
  t.equal(buildInputsHash(root), first, 'stable while nothing changes');
  write('dist/main.js', '// rebuilt');
  t.equal(buildInputsHash(root), first, 'the output is not an input');

  const changes: [string, string][] = [
    ['src/agent/a.ts', 'export const a = 2;'],
    ['package-lock.json', '{"lockfileVersion":3}'],
    ['drizzle/0000.sql', 'SELECT 2;'],
    ['proto/x.proto', 'syntax = "proto2";'],
    ['tsconfig.json', '{"compilerOptions":{}}'],
  ];
  let previous = first;
  for (const [file, text] of changes) {
    write(file, text);
    const next = buildInputsHash(root);
    t.not(next, previous, `${file} changed`);
    previous = next;
  }
  write('src/agent/b.ts', '');
  const added = buildInputsHash(root);
  t.not(added, previous, 'a new source file');
  fs.renameSync(path.join(root, 'src/agent/b.ts'), path.join(root, 'src/agent/c.ts'));
  t.not(buildInputsHash(root), added, 'a renamed source file');
  t.end();
});
