/**
 * The diff on an edit's card cannot freeze the server. It is computed on the event loop when the
 * call is proposed; a `write_file` over a large file with every line changed took minutes (8000
 * changed lines: 40 s; 2 MiB: unbounded), and a 20 MiB `content` 17 s. Now the shortest-diff search
 * is bounded (tools/diff.ts DIFF_LIMITS: past it the card shows the whole file replaced), new
 * content is capped at 2 MiB, and a `replace` whose result would pass that fails before it is
 * built. While the scripted model proposes such edits, the test fetches the agent card every
 * 50 ms: every fetch answers well within the old cost.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { pollAgentCard } from '../support/card-poll.js';
import type { ModelScript } from '../../src/agent/model/scripted-model-client.js';
import { send } from '../support/gemini-server.js';
import { dataOf, startServer } from '../support/server.js';
import type { TestServer } from '../support/server.js';

/**
 * What this guards against is a diff that never ends (the old cost outlasted the test's timeout).
 * Carrying megabytes of model arguments through a turn costs about 1–1.5 s of event loop on this
 * 2-core machine alone, and 4–7 s while CI runs three test files at once: the bound leaves room.
 */
const CARD_LATENCY_LIMIT_MS = 15_000;

const lines = (n: number, word: string) => Array.from({ length: n }, (_, i) => `${word} line ${i}`).join('\n') + '\n';
/** About 0.7 MiB (8000 such lines took 40 s): every line differs from the file on disk. */
const OLD = lines(40_000, 'old');
const NEW = lines(40_000, 'new');

const call = (name: string, args: Record<string, unknown>) => ({ functionCall: { name, args } });

const SCRIPT: ModelScript = {
  model: 'scripted-diff-bounds',
  scripts: [
    {
      when: '^rewrite$',
      steps: [
        {
          chunks: [
            [
              call('write_file', { file_path: 'big.txt', content: NEW }),
              call('write_file', { file_path: 'huge.txt', content: 'x\n'.repeat(1024 * 1024 + 1) }),
              call('replace', { file_path: 'small.txt', old_string: 'a', new_string: 'b'.repeat(1024 * 1024), expected_replacements: 64 }),
            ],
          ],
        },
        { chunks: [[{ text: 'done' }]] },
      ],
    },
  ],
};

const pollCard = async (srv: TestServer, done: Promise<unknown>): Promise<number[]> =>
  (await pollAgentCard(srv, done, { everyMs: 50 })).map((g) => (g.status === 200 ? g.ms : Infinity));

t.test('edit cards over large changes are made in bounded time; oversized content fails; the agent card keeps answering', async (t) => {
  const srv = await startServer(t, { script: SCRIPT });
  writeFileSync(path.join(srv.workspace, 'big.txt'), OLD);
  writeFileSync(path.join(srv.workspace, 'small.txt'), 'a'.repeat(64));
  const run = send(srv, 'rewrite');
  const [res, gets] = await Promise.all([run, pollCard(srv, run)]);
  const slowest = Math.max(...gets);
  t.comment(`${gets.length} agent-card GETs during the turn; slowest ${slowest.toFixed(0)} ms`);
  t.ok(slowest < CARD_LATENCY_LIMIT_MS, `every GET answered within ${CARD_LATENCY_LIMIT_MS} ms (slowest ${slowest.toFixed(0)} ms)`);

  const results = (res.events ?? []).map((e) => e.data.result);
  const byName = (name: string) => results.map(dataOf).filter((d) => d?.tool_name === name);
  const write = byName('write_file').find((d) => d.confirmation_request?.file_edit_details?.file_name === 'big.txt');
  t.ok(write, 'the write to big.txt got a card');
  const diff: string = write?.confirmation_request?.file_edit_details?.formatted_diff ?? '';
  t.ok(
    diff.includes('-old line 0\n') && diff.includes('+new line 39999\n'),
    'the card shows every old line removed and every new line added',
  );
  const failures = results
    .map(dataOf)
    .filter((d) => d?.status === 'FAILED' || d?.error !== undefined)
    .map((d) => d?.error?.message ?? '');
  t.ok(
    failures.some((m: string) => /limit is \d+ bytes/.test(m)),
    'oversized new content fails with the limit named',
  );
  t.equal(readFileSync(path.join(srv.workspace, 'big.txt'), 'utf8'), OLD, 'nothing was written before a person said yes');
});
