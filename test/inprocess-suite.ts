/**
 * The end-to-end and HTTP tests whose servers run in the test's own process, in ONE process
 * (see test/support/suites.ts): real sockets and SSE, the SDK client, the fake Gemini API, MCP
 * servers and push receivers — without a test runner start-up per file.
 */
import { runSuite } from './support/suites.js';

await runSuite('inprocess');
