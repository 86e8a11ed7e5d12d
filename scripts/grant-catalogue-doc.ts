/**
 * Writes docs/grant-catalogue.md from the grant catalogue (src/agent/policy/grant-catalogue.ts):
 * `node --import tsx scripts/grant-catalogue-doc.ts`. test/unit/agent/grant-catalogue.test.ts
 * fails when the two differ.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { catalogueTable } from '../src/agent/policy/grant-catalogue.js';

const file = new URL('../docs/grant-catalogue.md', import.meta.url);
const text = readFileSync(file, 'utf8');
const start = text.indexOf('| command |');
const end = text.indexOf('\n\n', start);
writeFileSync(file, `${text.slice(0, start)}${catalogueTable()}${end < 0 ? '\n' : text.slice(end)}`);
