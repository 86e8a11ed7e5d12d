/**
 * Judging a shell line cannot freeze the server. A line is judged on the event loop when the
 * turn is planned, for the options of its card, and again right before it runs; a model proposes
 * many calls a turn. A hostile 2 KiB line (`ls x=a/=a/=a/…`, a glued `-aaaa…`, `cd a && cd a &&
 * … ls x=a/x=a/…`) used to cost seconds each (one 1.6 KiB line with four `cd`s: 28 s), because
 * every `=`-suffix of every word was resolved folder by folder. Now a line longer than 2 KiB,
 * a path deeper than 64 folders and a line past its budget of path checks and file-system probes
 * simply ask (shell-rules.ts JUDGE_LIMITS): while the scripted model proposes such calls, the
 * test fetches the agent card every 50 ms and every fetch answers well within the old cost.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { pollAgentCard } from '../support/card-poll.js';
import type { ModelScript } from '../../src/agent/model/scripted-model-client.js';
import { send } from '../support/gemini-server.js';
import { dataOf, startServer } from '../support/server.js';
import type { TestServer } from '../support/server.js';

/** Generous for a 2-core machine running other tests; the old cost was seconds per judgement. */
const CARD_LATENCY_LIMIT_MS = 1_000;

/** Hostile lines, each costing 0.3–5 s to judge before the bounds (8 KiB: 2.5 s). */
const HOSTILE_LINES = [
  'ls ' + 'a='.repeat(1016),
  'ls ' + 'a/'.repeat(1016),
  'ls x' + '=a/'.repeat(676),
  'ls -' + 'a'.repeat(2040),
  'ls ' + 'a='.repeat(4093),
];

const call = (name: string, args: Record<string, unknown>) => ({ functionCall: { name, args } });

const SCRIPT: ModelScript = {
  model: 'scripted-judge-bounds',
  scripts: [
    {
      when: '^hostile lines$',
      steps: [
        { chunks: [[...HOSTILE_LINES, ...HOSTILE_LINES].map((command) => call('run_shell_command', { command }))] },
        { chunks: [[{ text: 'done' }]] },
      ],
    },
  ],
};

const pollCard = async (srv: TestServer, done: Promise<unknown>): Promise<number[]> =>
  (await pollAgentCard(srv, done, { everyMs: 50 })).map((g) => (g.status === 200 ? g.ms : Infinity));

t.test('a turn of hostile shell lines is judged in bounded time: each asks, and the agent card keeps answering', async (t) => {
  const srv = await startServer(t, { script: SCRIPT });
  mkdirSync(path.join(srv.workspace, 'a', 'a', 'a'), { recursive: true });
  // The prefix makes the gate judge every line when the turn is planned; the cards judge them again.
  const run = send(srv, 'hostile lines', { settings: { allowed_tools: ['run_shell_command(ls)'] } });
  const [res, gets] = await Promise.all([run, pollCard(srv, run)]);
  const slowest = Math.max(...gets);
  t.comment(`${gets.length} agent-card GETs during the turn; slowest ${slowest.toFixed(0)} ms`);
  t.ok(slowest < CARD_LATENCY_LIMIT_MS, `every GET answered within ${CARD_LATENCY_LIMIT_MS} ms (slowest ${slowest.toFixed(0)} ms)`);

  const results = (res.events ?? []).map((e) => e.data.result);
  t.equal(results.at(-1)?.status?.state, 'input-required', 'the turn pauses for a person');
  const cards = new Map(
    results
      .map(dataOf)
      .filter((d) => d?.tool_name === 'run_shell_command')
      .map((d) => [d.tool_call_id, d]),
  );
  t.equal(cards.size, HOSTILE_LINES.length * 2, 'every call got a card');
  for (const card of cards.values()) {
    t.equal(card.status, 'PENDING', 'it waits for a person: no prefix covers it');
    const options = (card.confirmation_request?.options ?? []).map((o: any) => o.id);
    t.notOk(options.includes('proceed_always'), 'and no "Allow always" is offered for it');
  }
});
