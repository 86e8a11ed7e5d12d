/**
 * Each call of a turn is judged when it runs, after the calls before it ran, and what runs is
 * what was shown (issue 19, findings 7 and 9), through the server with the scripted model:
 * - a granted `git apply fix.patch` makes `lnk -> .git`; the same turn's `write_file lnk/hooks/pre-commit`,
 *   judged when the turn was planned (lnk did not exist: AUTO_EDIT runs it), is judged again
 *   before it runs, now writes into .git, and so gets a card instead of running;
 * - a `replace` on app.cfg whose card a person approved, after a granted `cp` of the same turn
 *   changed app.cfg: it writes nothing the card did not show; it asks again with a fresh diff
 *   (a new card under a new id, audited `re-proposed`; the old card closes CANCELLED `superseded`),
 *   only the answer to that card writes, and a repeated answer to the old card finds no call.
 */
import t from 'tap';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ModelPart } from '../../src/agent/model/model-client.js';
import type { ModelScript } from '../../src/agent/model/scripted-model-client.js';
import { answer, send } from '../support/gemini-server.js';
import { dataOf, sharedStore, startServer } from '../support/server.js';
import { checkToolCalls, TaskWatch } from '../support/tool-call-watch.js';

const call = (name: string, args: Record<string, unknown>): ModelPart => ({ functionCall: { name, args } });

const SCRIPT: ModelScript = {
  scripts: [
    {
      when: '^link then write$',
      steps: [
        {
          chunks: [
            [
              call('run_shell_command', { command: 'git apply fix.patch' }),
              call('write_file', { file_path: 'lnk/hooks/pre-commit', content: '#!/bin/sh\ntouch pwned\n' }),
            ],
          ],
        },
        { chunks: [[{ text: 'done' }]] },
      ],
    },
    {
      when: '^link then copy$',
      steps: [
        {
          chunks: [
            [
              call('run_shell_command', { command: 'git apply fix.patch' }),
              call('run_shell_command', { command: 'cp payload.ini lnk/hooks/pre-commit' }),
            ],
          ],
        },
        { chunks: [[{ text: 'done' }]] },
      ],
    },
    {
      when: '^copy then edit$',
      steps: [
        {
          chunks: [
            [
              call('replace', { file_path: 'app.cfg', old_string: 'log = off', new_string: 'log = on' }),
              call('run_shell_command', { command: 'cp app.cfg.example app.cfg' }),
            ],
          ],
        },
        { chunks: [[{ text: 'done' }]] },
      ],
    },
  ],
};

const PATCH = [
  'diff --git a/lnk b/lnk',
  'new file mode 120000',
  '--- /dev/null',
  '+++ b/lnk',
  '@@ -0,0 +1 @@',
  '+.git',
  '\\ No newline at end of file',
  '',
].join('\n');
const GIT_CONFIG = '[core]\n\trepositoryformatversion = 0\n';

/** The ToolCall DataParts of a stream, in order. */
const cards = (results: any[]) => results.map(dataOf).filter((d) => d?.tool_call_id !== undefined);
const states = (results: any[]) => results.map((r) => r.status?.state).filter((s) => s !== undefined);
/** The card that replaced call `id` (its new id), after `id`'s card closed CANCELLED `superseded`. */
function replacement(results: any[], id: string): any {
  const all = cards(results);
  const closed = all.findIndex((c) => c.tool_call_id === id && c.status === 'CANCELLED');
  const replaced = all[closed];
  const next = all.slice(closed + 1).find((c) => c.tool_name === replaced?.tool_name && c.tool_call_id !== id);
  return closed < 0 ? undefined : { closed: replaced, next };
}

t.test(
  'a call is judged again after the calls before it ran: a symlink made by a granted line turns an AUTO_EDIT write into a card',
  async (t) => {
    const srv = await startServer(t, { script: SCRIPT });
    mkdirSync(path.join(srv.workspace, '.git', 'hooks'), { recursive: true });
    writeFileSync(path.join(srv.workspace, '.git', 'config'), GIT_CONFIG);
    writeFileSync(path.join(srv.workspace, 'fix.patch'), PATCH);
    const settings = { approval_mode: 'AUTO_EDIT', allowed_tools: ['run_shell_command(git apply)'] };
    const watch = new TaskWatch();
    const first = watch.take(await send(srv, 'link then write', { settings }));
    const [apply, write] = [...new Map(cards(first).map((c) => [c.tool_call_id, c])).keys()];
    t.equal(states(first).at(-1), 'input-required', 'the task pauses');
    const writeCards = cards(first).filter((c) => c.tool_call_id === write);
    t.notOk(writeCards[0].confirmation_request, 'when the turn was planned, the write needed no approval');
    const { closed, next: asked } = replacement(first, write);
    t.match(closed.error, { message: new RegExp(`Replaced by a new card \\(${asked.tool_call_id}\\)`) }, 'the planned card is superseded');
    t.equal(asked.status, 'PENDING', 'judged again before it ran: it waits');
    t.match(asked.confirmation_request.file_edit_details, { new_content: '#!/bin/sh\ntouch pwned\n' });
    t.same(
      cards(first)
        .filter((c) => c.tool_call_id === apply)
        .map((c) => c.status)
        .filter((s, i, a) => s !== a[i - 1]),
      ['PENDING', 'EXECUTING', 'SUCCEEDED'],
      'the granted line ran first',
    );
    t.notOk(existsSync(path.join(srv.workspace, '.git', 'hooks', 'pre-commit')), 'no hook was written');

    const audit = await (await sharedStore()).listAudit({ taskId: watch.taskId });
    const reproposed = audit.find((a) => a.toolCallId === asked.tool_call_id && a.decision === 're-proposed');
    t.ok(reproposed, 'the new card is audited re-proposed');
    t.match(reproposed?.detail, { reason: /judged again before it ran/, previousToolCallId: write });
    t.notOk(
      audit.some((a) => (a.toolCallId === write || a.toolCallId === asked.tool_call_id) && a.decision === 'executed'),
      'the write never ran',
    );

    watch.take(await answer(srv, watch.taskId, watch.contextId, { tool_call_id: asked.tool_call_id, selected_option_id: 'cancel' }));
    t.equal(states(watch.results).at(-1), 'completed');
    t.notOk(existsSync(path.join(srv.workspace, '.git', 'hooks', 'pre-commit')), 'declined: still not written');
    checkToolCalls(t, watch);
  },
);

t.test('the same across two granted lines: the cp judged after the patch made lnk -> .git asks', async (t) => {
  const srv = await startServer(t, { script: SCRIPT });
  mkdirSync(path.join(srv.workspace, '.git', 'hooks'), { recursive: true });
  writeFileSync(path.join(srv.workspace, '.git', 'config'), GIT_CONFIG);
  writeFileSync(path.join(srv.workspace, 'fix.patch'), PATCH);
  writeFileSync(path.join(srv.workspace, 'payload.ini'), '[core]\n\tfsmonitor = touch pwned\n');
  const settings = { allowed_tools: ['run_shell_command(git apply)', 'run_shell_command(cp)'] };
  const watch = new TaskWatch();
  const first = watch.take(await send(srv, 'link then copy', { settings }));
  t.equal(states(first).at(-1), 'input-required', 'the task pauses');
  const copy = cards(first).filter((c) => c.input_parameters?.command === 'cp payload.ini lnk/hooks/pre-commit');
  t.notOk(copy[0]?.confirmation_request, 'when the turn was planned, the cp was covered');
  t.equal(copy[1]?.status, 'CANCELLED', 'the planned card is superseded');
  t.equal(copy.at(-1)?.status, 'PENDING', 'judged again after the patch ran: it waits');
  t.not(copy.at(-1)?.tool_call_id, copy[0]?.tool_call_id, 'under a new id');
  t.ok(copy.at(-1)?.confirmation_request?.execute_details, 'with a card');
  t.notOk(existsSync(path.join(srv.workspace, '.git', 'hooks', 'pre-commit')), 'no hook was written');
  watch.take(await answer(srv, watch.taskId, watch.contextId, { tool_call_id: copy.at(-1).tool_call_id, selected_option_id: 'cancel' }));
  t.equal(states(watch.results).at(-1), 'completed');
  t.notOk(existsSync(path.join(srv.workspace, '.git', 'hooks', 'pre-commit')));
  checkToolCalls(t, watch);
});

t.test('an approved replace writes only what its card showed: its file changed, so it asks again with a fresh diff', async (t) => {
  const srv = await startServer(t, { script: SCRIPT });
  const cfg = path.join(srv.workspace, 'app.cfg');
  writeFileSync(cfg, 'mode = safe\nlog = off\n');
  writeFileSync(path.join(srv.workspace, 'app.cfg.example'), 'mode = safe\nlog = off\nallow_remote_exec = true\n');
  const settings = { allowed_tools: ['run_shell_command(cp)'] };
  const watch = new TaskWatch();
  const first = watch.take(await send(srv, 'copy then edit', { settings }));
  t.equal(states(first).at(-1), 'input-required');
  const shown = cards(first).find((c) => c.tool_name === 'replace' && c.confirmation_request);
  const id = shown.tool_call_id;
  t.equal(shown.confirmation_request.file_edit_details.new_content, 'mode = safe\nlog = on\n', 'the card shows the file as planned');
  t.equal(readFileSync(cfg, 'utf8'), 'mode = safe\nlog = off\nallow_remote_exec = true\n', 'the granted cp ran before the pause');

  const second = watch.take(await answer(srv, watch.taskId, watch.contextId, { tool_call_id: id, selected_option_id: 'proceed_once' }));
  t.equal(readFileSync(cfg, 'utf8'), 'mode = safe\nlog = off\nallow_remote_exec = true\n', 'nothing the card did not show was written');
  t.equal(states(second).at(-1), 'input-required', 'it asks again');
  const fresh = replacement(second, id)?.next;
  t.equal(fresh?.status, 'PENDING');
  const freshId = fresh.tool_call_id;
  t.equal(
    fresh?.confirmation_request.file_edit_details.new_content,
    'mode = safe\nlog = on\nallow_remote_exec = true\n',
    'the fresh card shows what would be written now',
  );

  const audit = await (await sharedStore()).listAudit({ taskId: watch.taskId });
  const mine = audit.filter((a) => a.toolCallId === id || a.toolCallId === freshId);
  t.same(
    mine.map((a) => a.decision),
    ['proposed', 'authorized', 're-proposed'],
  );
  const [proposed, authorized, reproposed] = mine;
  t.equal(authorized?.shownHash, proposed?.shownHash, 'the first answer approved the first card');
  t.not(reproposed?.shownHash, proposed?.shownHash, 'the fresh card has its own hash');
  t.match(reproposed?.detail, {
    reason: /app\.cfg changed after the card was shown/,
    previousShownHash: proposed?.shownHash,
    previousToolCallId: id,
  });

  // A client's retry of the first answer (the same words, sent again) must not approve the fresh card.
  const retry = (await answer(srv, watch.taskId, watch.contextId, { tool_call_id: id, selected_option_id: 'proceed_once' })).json;
  t.match(retry, { error: { code: -32602, message: new RegExp(`has no tool call "${id}" \\(waiting: ${freshId}\\)`) } });
  t.equal(readFileSync(cfg, 'utf8'), 'mode = safe\nlog = off\nallow_remote_exec = true\n', 'the retry wrote nothing');

  watch.take(await answer(srv, watch.taskId, watch.contextId, { tool_call_id: freshId, selected_option_id: 'proceed_once' }));
  t.equal(readFileSync(cfg, 'utf8'), 'mode = safe\nlog = on\nallow_remote_exec = true\n', 'the approved fresh card is written');
  t.equal(states(watch.results).at(-1), 'completed');
  const after = (await (await sharedStore()).listAudit({ taskId: watch.taskId })).filter(
    (a) => a.toolCallId === id || a.toolCallId === freshId,
  );
  t.same(
    after.slice(3).map((a) => [a.decision, a.shownHash]),
    [
      ['authorized', reproposed?.shownHash],
      ['executed', reproposed?.shownHash],
      ['succeeded', undefined],
    ],
    'the second answer approved, and ran, the fresh card',
  );
  checkToolCalls(t, watch);
});
