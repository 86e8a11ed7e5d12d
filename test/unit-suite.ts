/**
 * The fast loop (`npm run test:unit`): the unit tests, the in-memory store contract and the
 * store-failure flows in ONE process (see test/support/suites.ts). `npm test` runs it as one
 * tap file, with coverage, beside the other suites.
 */
import { runSuite } from './support/suites.js';

await runSuite('unit');
