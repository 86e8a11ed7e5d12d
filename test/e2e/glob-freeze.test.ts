/**
 * A glob pattern cannot freeze the server (security review: `{?,??}*` ×8 + U+0001 against a
 * 29-character name blocked the event loop for 7 s, and `glob` runs without approval). While
 * the scripted model calls `glob` with hostile patterns, the test keeps fetching the agent
 * card over real HTTP: every fetch must answer well within the pattern's old cost.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { pollAgentCard } from '../support/card-poll.js';
import type { ModelScript } from '../../src/agent/model/scripted-model-client.js';
import { rpc } from '../support/sse.js';
import { dataOf, startServer, URI, userMessage } from '../support/server.js';
import type { TestServer } from '../support/server.js';

/** The review's pattern. */
const REPORT_PATTERN = '{?,??}*'.repeat(8) + '\u0001';
/** Within the complexity limits, yet C(255,5) backtracking steps on a 255-character name. */
const BACKTRACKING_PATTERN = '*a*a*a*a*a*b';
/** Generous for a 2-core machine running other tests; the old cost was seconds to minutes. */
const CARD_LATENCY_LIMIT_MS = 1_000;

const call = (name: string, args: Record<string, unknown>) => ({ functionCall: { name, args } });
const say = (text: string) => ({ chunks: [[{ text }]] });

const SCRIPT: ModelScript = {
  model: 'scripted-glob-freeze',
  scripts: [
    { when: '^report pattern', steps: [{ chunks: [[call('glob', { pattern: REPORT_PATTERN })]] }, say('Glob answered.')] },
    { when: '^backtracking pattern', steps: [{ chunks: [[call('glob', { pattern: BACKTRACKING_PATTERN })]] }, say('Glob answered.')] },
  ],
};

const pollCard = (srv: TestServer, done: Promise<unknown>) => pollAgentCard(srv, done, { everyMs: 100 });

/** Sends `prompt` and reads its stream to the end: the results and how long it took. */
async function prompt(srv: TestServer, text: string): Promise<{ results: any[]; ms: number }> {
  const started = performance.now();
  const res = await rpc(srv.url, 'message/stream', {
    message: userMessage(text, { metadata: { [URI]: { workspace_path: srv.workspace } } }),
  });
  if (res.events === undefined) throw new Error(`expected an SSE stream, got ${res.status} ${res.raw}`);
  return { results: res.events.map((e) => e.data.result), ms: performance.now() - started };
}

/** Runs the prompt while polling the card; checks the card and returns the glob call's final card. */
async function globUnderLoad(t: Test, srv: TestServer, text: string): Promise<{ card: any; ms: number }> {
  const run = prompt(srv, text);
  const [{ results, ms }, gets] = await Promise.all([run, pollCard(srv, run)]);
  const slowest = Math.max(...gets.map((g) => g.ms));
  t.comment(`${gets.length} agent-card GETs during the call; slowest ${slowest.toFixed(0)} ms; the call's stream took ${ms.toFixed(0)} ms`);
  t.ok(gets.length >= 5, 'several GETs');
  t.ok(
    gets.every((g) => g.status === 200),
    'every GET answered 200',
  );
  t.ok(slowest < CARD_LATENCY_LIMIT_MS, `every GET answered within ${CARD_LATENCY_LIMIT_MS} ms (slowest ${slowest.toFixed(0)} ms)`);
  const calls = results.map(dataOf).filter((d: any) => d?.tool_name === 'glob');
  const card = calls.at(-1);
  t.ok(card, 'the glob call was reported');
  t.ok(['FAILED', 'SUCCEEDED'].includes(card?.status), `the glob call ended (${card?.status})`);
  t.equal(results.at(-1)?.status?.state, 'completed', 'the model was told and the task completed');
  return { card, ms };
}

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

t.test('the review pattern fails at once with pattern_too_complex; the agent card keeps answering', async (t) => {
  const srv = await startServer(t, { script: SCRIPT });
  // 29-character names, as in the report.
  for (const c of 'abc') writeFileSync(path.join(srv.workspace, `${c}bcdefghijklmnopqrstuvwxyz.ts`), 'x');
  const { card, ms } = await globUnderLoad(t, srv, 'report pattern please');
  t.equal(card.status, 'FAILED');
  t.equal(card.error.type, 'pattern_too_complex');
  t.match(card.error.message, /too complex to match safely: it has 32 wildcards .*Simplify it: /);
  t.ok(ms < 5_000, `answered in ${ms.toFixed(0)} ms, not the 7 s the pattern used to cost`);
});

t.test('a pattern within the limits that backtracks runs off the event loop and times out', async (t) => {
  const srv = await startServer(t, { script: SCRIPT });
  writeFileSync(path.join(srv.workspace, 'a'.repeat(255)), 'x');
  writeFileSync(path.join(srv.workspace, 'ok.ts'), 'x');
  const { card, ms } = await globUnderLoad(t, srv, 'backtracking pattern please');
  t.equal(card.status, 'FAILED');
  t.equal(card.error.type, 'search_timeout');
  t.match(card.error.message, /took more than \d+ ms.*Use a simpler pattern/);
  t.ok(ms < 30_000, `stopped by the time budget after ${ms.toFixed(0)} ms (the match alone would take minutes)`);
});
