/**
 * Attack (approval review of issue 19): the grant catalogue skipped the word after an option it
 * believed takes a value, but git does not read one there, so git took that word as an option:
 * - `git grep --and`, `--or`, `--not` are operators, not options with a value: after "always" on
 *   `git grep -n TODO`, `git grep -e TODO --and '--open-files-in-pager=touch P;' -e TODO` ran the
 *   pager command with no card (finding 2 of issue 19 again);
 * - `git diff`/`log`/`show` `-U` and `--unified` take their value only glued (`-U5`,
 *   `--unified=5`): `git diff -U --output=P` wrote P with no card.
 * Each must ask (and offer no "always"); nothing may run.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { dataOf } from '../support/server.js';
import { answer, scenario, send, startGeminiServer } from '../support/gemini-server.js';
import type { GeminiServer } from '../support/gemini-server.js';
import { TaskWatch } from '../support/tool-call-watch.js';
import type { Test } from '../support/tool-call-watch.js';

/** One task whose model runs `command`; a card is answered "always" (when offered, else once) or declined. */
async function run(
  t: Test,
  srv: GeminiServer,
  command: string,
  opts: { contextId?: string; reply?: 'always' | 'no' } = {},
): Promise<{ asked: boolean; options: string[]; contextId: string }> {
  scenario(srv.fake).call('run_shell_command', { command }).say('ok');
  const watch = new TaskWatch();
  const first = watch.take(await send(srv, 'call run_shell_command', { contextId: opts.contextId }));
  const card = dataOf(first[2]);
  const asked = first.at(-1).status.state === 'input-required';
  const options: string[] = asked ? card.confirmation_request.options.map((o: any) => o.id) : [];
  if (asked) {
    const option = opts.reply === 'always' ? (options.includes('proceed_always') ? 'proceed_always' : 'proceed_once') : 'cancel';
    watch.take(await answer(srv, watch.taskId, watch.contextId, { tool_call_id: card.tool_call_id, selected_option_id: option }));
  }
  t.equal(watch.results.at(-1).status.state, 'completed', 'the task completes');
  return { asked, options, contextId: watch.contextId };
}

t.test('"always" on git grep / diff / log covers no option hidden behind one git reads without a value', async (t) => {
  const srv = await startGeminiServer(t);
  const ws = srv.workspace;
  execFileSync('git', ['init', '-q'], { cwd: ws });
  writeFileSync(path.join(ws, 'a.txt'), 'TODO one\n');
  execFileSync('git', ['add', '.'], { cwd: ws });
  execFileSync('git', ['-c', 'user.name=a', '-c', 'user.email=a@b', 'commit', '-qm', 'a'], { cwd: ws });
  writeFileSync(path.join(ws, 'a.txt'), 'TODO two\n');
  let ctx: string | undefined;
  for (const command of ['git grep -n TODO', 'git diff', 'git log -n 1', 'git show']) {
    const o = await run(t, srv, command, { contextId: ctx, reply: 'always' });
    t.ok(o.asked && o.options.includes('proceed_always'), `${command}: asks once, "always" offered`);
    ctx = o.contextId;
  }
  t.notOk((await run(t, srv, 'git grep -e TODO --and -e one', { contextId: ctx })).asked, '--and as git reads it is covered');
  t.notOk((await run(t, srv, 'git diff -U5', { contextId: ctx })).asked, '-U with its value glued is covered');
  for (const [command, marker] of [
    ["git grep -e TODO --and '--open-files-in-pager=touch P1;' -e TODO", 'P1'],
    ["git grep -e TODO --or '--open-files-in-pager=touch P2;' -e x", 'P2'],
    ["git grep --not -e x --or '-Otouch P3;' -e TODO", 'P3'],
    ['git diff -U --output=P4', 'P4'],
    ['git diff --unified --output=P5', 'P5'],
    ['git log -p -U --output=P6', 'P6'],
    ['git show -U --output=P7', 'P7'],
  ] as const) {
    const o = await run(t, srv, command, { contextId: ctx });
    t.ok(o.asked, `asks: ${command}`);
    t.notOk(o.options.includes('proceed_always'), 'and offers no "always"');
    t.notOk(existsSync(path.join(ws, marker)), `${marker}: nothing ran`);
  }
});
