/**
 * Which calls wait for a person, over real HTTP with the real @google/genai SDK against the
 * fake Gemini API: AgentSettings.approval_mode (DEFAULT, AUTO_EDIT, YOLO, any case),
 * allowed_tools (tool names and run_shell_command(<prefix>)), proceed_always grants that
 * outlive the task, settings changed by a later message, and refused settings (-32602).
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { rpc } from '../support/sse.js';
import { dataOf, devtool, tempDir, textOf, URI } from '../support/server.js';
import { answer, functionResponses, scenario, send, startGeminiServer } from '../support/gemini-server.js';
import type { GeminiServer } from '../support/gemini-server.js';
import { checkToolCalls, refused, TaskWatch } from '../support/tool-call-watch.js';
import type { Test } from '../support/tool-call-watch.js';

interface Outcome {
  asked: boolean;
  /** The first PENDING card. */
  card: any;
  /** The call's last status. */
  status: string;
  watch: TaskWatch;
}

/**
 * Starts a task whose model makes one call, then says "ok". When the call asks, the card
 * is checked and the call declined with "no" (or answered with `reply`), so the queued
 * answer is always used and the task always completes.
 */
async function run(
  t: Test,
  srv: GeminiServer,
  name: string,
  args: Record<string, unknown>,
  opts: { contextId?: string; settings?: Record<string, unknown>; reply?: Record<string, unknown> | 'no' } = {},
): Promise<Outcome> {
  scenario(srv.fake).call(name, args).say('ok');
  const watch = new TaskWatch();
  const first = watch.take(await send(srv, `call ${name}`, { contextId: opts.contextId, settings: opts.settings }));
  const card = dataOf(first[2]);
  t.equal(card?.tool_name, name, `${name}: the card`);
  const asked = first.at(-1).status.state === 'input-required';
  if (asked) {
    t.ok(card.confirmation_request, 'an asking card carries confirmation_request');
    t.equal(card.status, 'PENDING');
    t.equal(first.at(-1).final, true);
    const reply = opts.reply ?? 'no';
    const res =
      reply === 'no'
        ? await send(srv, 'no', { taskId: watch.taskId, contextId: watch.contextId })
        : await answer(srv, watch.taskId, watch.contextId, { tool_call_id: card.tool_call_id, ...reply });
    watch.take(res);
  } else {
    t.notOk(card && 'confirmation_request' in card, 'a call that runs without asking has no confirmation_request');
    t.ok(
      first.every((r) => r.status?.state !== 'input-required'),
      'never input-required',
    );
  }
  const last = watch.results.at(-1);
  t.equal(last.status.state, 'completed', 'the task completes');
  const seqs = checkToolCalls(t, watch);
  const status = seqs.get(card.tool_call_id)?.at(-1) as string;
  return { asked, card, status, watch };
}

t.test('DEFAULT: edits and shell wait, reads run', async (t) => {
  const srv = await startGeminiServer(t);
  for (const settings of [undefined, { approval_mode: 'DEFAULT' }, { approval_mode: 'APPROVAL_MODE_UNSPECIFIED' }]) {
    await t.test(`settings ${JSON.stringify(settings)}`, async (t) => {
      const write = await run(t, srv, 'write_file', { file_path: 'w.txt', content: 'w\n' }, { settings });
      t.ok(write.asked, 'write_file asks');
      t.equal(write.status, 'CANCELLED');
      t.notOk(existsSync(path.join(srv.workspace, 'w.txt')), 'declined: nothing written');
      t.match(write.card.confirmation_request.file_edit_details, { file_name: 'w.txt', new_content: 'w\n' });

      const shell = await run(t, srv, 'run_shell_command', { command: 'touch shell.txt' }, { settings, contextId: write.watch.contextId });
      t.ok(shell.asked, 'run_shell_command asks');
      t.same(shell.card.confirmation_request.execute_details, { command: 'touch shell.txt', working_directory: srv.workspace });
      t.notOk(existsSync(path.join(srv.workspace, 'shell.txt')));

      const read = await run(t, srv, 'read_file', { file_path: 'nothing.txt' }, { contextId: write.watch.contextId });
      t.notOk(read.asked, 'read_file runs');
      t.equal(read.status, 'FAILED', 'and fails on its own terms');
      const glob = await run(t, srv, 'glob', { pattern: '*' }, { contextId: write.watch.contextId });
      t.notOk(glob.asked, 'glob runs');
      t.equal(glob.status, 'SUCCEEDED');
    });
  }
  t.equal(
    functionResponses(srv.fake, 1)[0].response.error,
    'The user declined this tool call. Do not retry it unless the user asks.',
    'a decline is told to the model',
  );
});

t.test('AUTO_EDIT: write_file and replace run, shell asks', async (t) => {
  const srv = await startGeminiServer(t);
  const settings = { approval_mode: 'AUTO_EDIT' };
  const write = await run(t, srv, 'write_file', { file_path: 'auto.txt', content: 'one two\n' }, { settings });
  t.notOk(write.asked, 'write_file runs');
  t.equal(write.status, 'SUCCEEDED');
  t.equal(readFileSync(path.join(srv.workspace, 'auto.txt'), 'utf8'), 'one two\n');
  const ctx = write.watch.contextId;
  const replace = await run(t, srv, 'replace', { file_path: 'auto.txt', old_string: 'two', new_string: '2' }, { contextId: ctx });
  t.notOk(replace.asked, 'replace runs');
  t.equal(replace.status, 'SUCCEEDED');
  t.equal(readFileSync(path.join(srv.workspace, 'auto.txt'), 'utf8'), 'one 2\n');
  const shell = await run(t, srv, 'run_shell_command', { command: 'touch auto-shell.txt' }, { contextId: ctx });
  t.ok(shell.asked, 'run_shell_command asks');
  t.notOk(existsSync(path.join(srv.workspace, 'auto-shell.txt')));
});

t.test('YOLO: shell runs without asking; lowercase accepted', async (t) => {
  const srv = await startGeminiServer(t);
  for (const mode of ['YOLO', 'yolo', 'Yolo']) {
    await t.test(`approval_mode ${JSON.stringify(mode)}`, async (t) => {
      const file = `yolo-${mode}.txt`;
      const shell = await run(t, srv, 'run_shell_command', { command: `echo hi > ${file}` }, { settings: { approval_mode: mode } });
      t.notOk(shell.asked, 'run_shell_command runs');
      t.equal(shell.status, 'SUCCEEDED');
      t.equal(readFileSync(path.join(srv.workspace, file), 'utf8'), 'hi\n');
      const write = await run(t, srv, 'write_file', { file_path: `w-${file}`, content: 'x' }, { contextId: shell.watch.contextId });
      t.notOk(write.asked, 'write_file runs');
    });
  }
  await t.test('approval_mode "auto_edit": edits run, shell asks', async (t) => {
    const write = await run(t, srv, 'write_file', { file_path: 'ae.txt', content: 'x' }, { settings: { approval_mode: 'auto_edit' } });
    t.notOk(write.asked);
    const shell = await run(t, srv, 'run_shell_command', { command: 'true' }, { contextId: write.watch.contextId });
    t.ok(shell.asked);
  });
});

t.test('refused settings: -32602 before any event', async (t) => {
  const srv = await startGeminiServer(t);
  await t.test('approval_mode "sometimes"', async (t) => {
    const res = await send(srv, 'hello', { settings: { approval_mode: 'sometimes' } });
    refused(t, res, /approval_mode/, /DEFAULT, AUTO_EDIT, YOLO/, /"sometimes"/);
  });
  await t.test('approval_mode 3', async (t) => {
    refused(t, await send(srv, 'hello', { settings: { approval_mode: 3 } }), /approval_mode/, /DEFAULT, AUTO_EDIT, YOLO/);
  });
  await t.test('allowed_tools not an array', async (t) => {
    refused(t, await send(srv, 'hello', { settings: { allowed_tools: 'write_file' } }), /allowed_tools must be an array of strings/);
  });
  await t.test('allowed_tools with an empty entry', async (t) => {
    refused(t, await send(srv, 'hello', { settings: { allowed_tools: ['write_file', ' '] } }), /allowed_tools\[1\]/);
  });
  await t.test('an unknown AgentSettings field', async (t) => {
    refused(t, await send(srv, 'hello', { settings: { approval: 'YOLO' } }), /approval/);
  });
  t.equal(srv.fake.requests.length, 0, 'the model was never called');
});

t.test('allowed_tools', async (t) => {
  const srv = await startGeminiServer(t);
  execFileSync('git', ['init', '-q', srv.workspace]);
  const settings = { allowed_tools: ['run_shell_command(git status)'] };
  const first = await run(t, srv, 'run_shell_command', { command: 'git status' }, { settings });
  t.notOk(first.asked, '`git status` runs without asking');
  t.equal(first.status, 'SUCCEEDED');
  const ctx = first.watch.contextId;
  const cases: Array<[string, boolean]> = [
    ['git status --short', false],
    ['git status; git status -s', false],
    ['git status && rm x', true],
    ['git statusx', true],
    ['git stash', true],
    ['echo $(git status)', true],
    ['git status > status.txt', true],
    ['git status 2>&1', false],
    ['git status >/dev/null', false],
  ];
  for (const [command, asks] of cases) {
    await t.test(`${JSON.stringify(command)} ${asks ? 'asks' : 'runs'}`, async (t) => {
      const o = await run(t, srv, 'run_shell_command', { command }, { contextId: ctx });
      t.equal(o.asked, asks);
    });
  }
  await t.test('write_file is not covered by a shell prefix', async (t) => {
    const o = await run(t, srv, 'write_file', { file_path: 'nope.txt', content: 'x' }, { contextId: ctx });
    t.ok(o.asked);
  });

  await t.test("allowed_tools ['write_file'] runs writes, shell still asks", async (t) => {
    const w = await run(
      t,
      srv,
      'write_file',
      { file_path: 'allowed.txt', content: 'ok\n' },
      { settings: { allowed_tools: ['write_file'] } },
    );
    t.notOk(w.asked);
    t.equal(readFileSync(path.join(srv.workspace, 'allowed.txt'), 'utf8'), 'ok\n');
    const r = await run(
      t,
      srv,
      'replace',
      { file_path: 'allowed.txt', old_string: 'ok', new_string: 'OK' },
      { contextId: w.watch.contextId },
    );
    t.ok(r.asked, 'replace is another tool: it asks');
    const s = await run(t, srv, 'run_shell_command', { command: 'true' }, { contextId: w.watch.contextId });
    t.ok(s.asked);
  });
});

t.test('proceed_always on a shell command trusts its root command for the context', async (t) => {
  const srv = await startGeminiServer(t);
  const first = await run(t, srv, 'run_shell_command', { command: 'echo a' }, { reply: { selected_option_id: 'proceed_always' } });
  t.ok(first.asked, '`echo a` asks');
  t.equal(first.status, 'SUCCEEDED', 'and runs once allowed always');
  const always = first.card.confirmation_request.options.find((o: any) => o.id === 'proceed_always');
  t.ok(always, 'proceed_always is offered on the shell card');
  t.match(always.description, /"echo"/, 'its description names the root command');
  t.notMatch(always.description, /"a"/);
  t.same(
    first.card.confirmation_request.options.map((o: any) => o.id),
    ['proceed_once', 'proceed_always', 'cancel'],
  );
  const ctx = first.watch.contextId;

  await t.test('a new task of the context: `echo b` runs without asking', async (t) => {
    const o = await run(t, srv, 'run_shell_command', { command: 'echo b' }, { contextId: ctx });
    t.not(o.watch.taskId, first.watch.taskId, 'a new task');
    t.equal(o.watch.contextId, ctx);
    t.notOk(o.asked);
    t.equal(o.status, 'SUCCEEDED');
  });
  await t.test('`echo b > b.txt` asks (it writes where the redirection points)', async (t) => {
    t.ok((await run(t, srv, 'run_shell_command', { command: 'echo b > b.txt' }, { contextId: ctx })).asked);
  });
  await t.test('`pwd` asks', async (t) => {
    t.ok((await run(t, srv, 'run_shell_command', { command: 'pwd' }, { contextId: ctx })).asked);
  });
  await t.test('`echo c && pwd` asks (pwd is not trusted)', async (t) => {
    t.ok((await run(t, srv, 'run_shell_command', { command: 'echo c && pwd' }, { contextId: ctx })).asked);
  });
  await t.test('/tools in the context names the grant', async (t) => {
    const res = await rpc(srv.url, 'command/execute', { command_path: ['tools'], context_id: ctx });
    t.equal(res.json.result?.status, 'STARTED', JSON.stringify(res.json));
    const replay = await rpc(srv.url, 'tasks/resubscribe', { id: res.json.result?.execution_id }, { headers: { 'Last-Event-ID': '0' } });
    const text = (replay.events ?? [])
      .map((e) => e.data.result)
      .filter((r) => devtool(r)?.kind === 'TEXT_CONTENT')
      .map(textOf)
      .join('');
    t.match(text, /^- run_shell_command \[execute\]: .+ — asks; allowed always in this conversation: "echo"$/m);
  });
  await t.test('another context still asks for `echo b`', async (t) => {
    t.ok((await run(t, srv, 'run_shell_command', { command: 'echo b' })).asked);
  });
  await t.test('a command with command substitution is offered no "always"', async (t) => {
    const o = await run(t, srv, 'run_shell_command', { command: 'echo $(pwd)' }, { contextId: ctx });
    t.ok(o.asked);
    t.same(
      o.card.confirmation_request.options.map((x: any) => x.id),
      ['proceed_once', 'cancel'],
    );
  });
});

t.test('settings may change on a later message of the context', async (t) => {
  const srv = await startGeminiServer(t);
  const ws = tempDir();
  const first = await run(t, srv, 'run_shell_command', { command: 'touch later.txt' }, { settings: { workspace_path: ws } });
  t.ok(first.asked, 'DEFAULT: the shell asks');
  const ctx = first.watch.contextId;

  await t.test('approval_mode YOLO on the second task takes effect', async (t) => {
    const o = await run(
      t,
      srv,
      'run_shell_command',
      { command: 'touch later.txt' },
      { contextId: ctx, settings: { approval_mode: 'YOLO', workspace_path: ws } },
    );
    t.notOk(o.asked, 'the same workspace may be repeated');
    t.ok(existsSync(path.join(ws, 'later.txt')), 'ran in the context workspace');
  });
  await t.test('and stays for later tasks without settings', async (t) => {
    t.notOk((await run(t, srv, 'run_shell_command', { command: 'true' }, { contextId: ctx })).asked);
  });
  await t.test('back to DEFAULT on a follow-up message to a completed task', async (t) => {
    scenario(srv.fake).call('run_shell_command', { command: 'true' }).say('ok');
    const watch = new TaskWatch();
    watch.taskId = first.watch.taskId;
    const rs = watch.take(await send(srv, 'again', { taskId: first.watch.taskId, contextId: ctx, settings: { approval_mode: 'default' } }));
    t.equal(rs.at(-1).status.state, 'input-required', 'the shell asks again');
    t.ok(dataOf(rs.at(-2)).confirmation_request);
    watch.take(await send(srv, 'no', { taskId: first.watch.taskId, contextId: ctx }));
    t.equal(watch.results.at(-1).status.state, 'completed');
  });

  await t.test('workspace_path cannot change: -32602', async (t) => {
    const other = tempDir();
    const before = srv.fake.requests.length;
    refused(
      t,
      await send(srv, 'hello', { contextId: ctx, settings: { workspace_path: other } }),
      /workspace_path cannot change/,
      new RegExp(ws),
    );
    refused(
      t,
      await send(srv, 'hello', { taskId: first.watch.taskId, contextId: ctx, settings: { workspace_path: other } }),
      /workspace_path cannot change/,
    );
    refused(t, await send(srv, 'hello', { contextId: ctx, settings: { workspace_path: other, approval_mode: 'YOLO' } }), /workspace_path/);
    t.equal(srv.fake.requests.length, before, 'no model call');
    // The refused YOLO did not stick: DEFAULT (set above) still asks.
    t.ok((await run(t, srv, 'run_shell_command', { command: 'true' }, { contextId: ctx })).asked, 'a refused message changes no setting');
  });
  await t.test('a relative workspace_path: -32602', async (t) => {
    refused(t, await send(srv, 'hello', { settings: { workspace_path: 'rel/dir' } }), /absolute path/);
  });
  t.equal(textOf(first.watch.results.at(-2)), 'ok', 'the declined first task still completed with the model answer');
  t.equal(devtool(first.watch.results.at(-2)).kind, 'TEXT_CONTENT');
});

t.test('an answer that arrives with new settings: the paused call is judged as asked, later calls by the new mode', async (t) => {
  const srv = await startGeminiServer(t);
  scenario(srv.fake).call('run_shell_command', { command: 'echo one' }).call('run_shell_command', { command: 'echo two' }).say('done');
  const watch = new TaskWatch();
  const first = watch.take(await send(srv, 'two steps'));
  t.equal(first.at(-1).status.state, 'input-required');
  const card = dataOf(first[2]);
  const res = await answerWithYolo(srv, watch, card.tool_call_id);
  const rest = watch.take(res);
  const statuses = rest.map((r) => dataOf(r)?.status ?? r.status.state);
  t.ok(!statuses.includes('input-required'), `the second command ran without asking: ${statuses.join(', ')}`);
  t.equal(rest.at(-1).status.state, 'completed');
  checkToolCalls(t, watch);
});

/** Answers `id` with proceed_once and AgentSettings approval_mode YOLO in the same message. */
function answerWithYolo(srv: GeminiServer, watch: TaskWatch, id: string) {
  return rpc(srv.url, 'message/stream', {
    message: {
      kind: 'message',
      role: 'user',
      messageId: `yolo-answer-${id}`,
      taskId: watch.taskId,
      contextId: watch.contextId,
      parts: [{ kind: 'data', data: { tool_call_id: id, selected_option_id: 'proceed_once' } }],
      metadata: { [URI]: { approval_mode: 'YOLO' } },
    },
  });
}

t.test('after "always" grants, the review’s bypass lines still ask and nothing runs unasked', async (t) => {
  const srv = await startGeminiServer(t);
  const outside = tempDir('devtool-outside-');
  writeFileSync(path.join(outside, 'secret.txt'), 'secret\n');
  writeFileSync(path.join(outside, 'file'), 'keep\n');
  writeFileSync(path.join(srv.workspace, 'a.txt'), 'a\n');
  mkdirSync(path.join(srv.workspace, 'sub'));
  execFileSync('git', ['init', '-q'], { cwd: srv.workspace });
  let ctx: string | undefined;
  for (const command of ['echo hello', 'cat a.txt', 'rm -f nothing', 'cd sub', 'find . -name a.txt', 'git status']) {
    const o = await run(t, srv, 'run_shell_command', { command }, { contextId: ctx, reply: { selected_option_id: 'proceed_always' } });
    t.ok(o.asked, `${command}: asks once`);
    ctx = o.watch.contextId;
  }
  t.equal((await run(t, srv, 'run_shell_command', { command: 'cat a.txt' }, { contextId: ctx })).asked, false, 'a granted line runs');
  const rel = path.relative(srv.workspace, outside);
  const bypasses = [
    "x='$(touch PWNED)'; echo ${x@P}",
    "x='a[$(touch PWNED)]'; echo ${y[x]}",
    `cat \\${outside}/secret.txt`,
    `cat .\\./${rel.slice(3)}/secret.txt`,
    `cat .""./${rel.slice(3)}/secret.txt`,
    'cat $HOME/secret.txt',
    `rm -f \\${outside}/file`,
    `rm -f ${outside}/file`,
    'cd && cat secret.txt',
    `find . -exec touch PWNED \\;`,
    'find . -exec touch PWNED ;',
    'echo PWNED | xargs touch',
    "git -c core.fsmonitor='touch PWNED' status",
    'git -c core.fsmonitor=touch status',
  ];
  for (const command of bypasses) {
    const o = await run(t, srv, 'run_shell_command', { command }, { contextId: ctx });
    t.ok(o.asked, `asks: ${command}`);
    t.equal(o.status, 'CANCELLED', 'declined');
    t.notOk(
      o.card.confirmation_request.options.some((x: any) => x.id === 'proceed_always'),
      'and is offered no "always"',
    );
  }
  t.notOk(existsSync(path.join(srv.workspace, 'PWNED')), 'nothing ran: no PWNED file');
  t.equal(readFileSync(path.join(outside, 'file'), 'utf8'), 'keep\n', 'the file outside is still there');
});

t.test('AUTO_EDIT with allowed_tools ["run_shell_command(git status)"]: writing .git/config asks', async (t) => {
  const srv = await startGeminiServer(t);
  execFileSync('git', ['init', '-q'], { cwd: srv.workspace });
  const settings = { approval_mode: 'AUTO_EDIT', allowed_tools: ['run_shell_command(git status)'] };
  const config = '[core]\n\tfsmonitor = touch PWNED\n';
  const planted = await run(t, srv, 'write_file', { file_path: '.git/config', content: config }, { settings });
  t.ok(planted.asked, 'a write to .git/config waits for a person even in AUTO_EDIT');
  t.notMatch(readFileSync(path.join(srv.workspace, '.git/config'), 'utf8'), /fsmonitor/, 'declined: not written');
  const hook = await run(t, srv, 'write_file', { file_path: '.git/hooks/pre-commit', content: '#!/bin/sh\ntouch PWNED\n' }, { settings });
  t.ok(hook.asked, 'a hook too');
  const npmrc = await run(t, srv, 'write_file', { file_path: '.npmrc', content: 'script-shell=/x\n' }, { settings });
  t.ok(npmrc.asked, '.npmrc too');
  const src = await run(t, srv, 'write_file', { file_path: 'src.txt', content: 'x\n' }, { settings });
  t.notOk(src.asked, 'other files are written without asking');
  const status = await run(t, srv, 'run_shell_command', { command: 'git status --short' }, { settings });
  t.notOk(status.asked, 'git status runs by the prefix');
  t.equal(status.status, 'SUCCEEDED');
  t.notOk(existsSync(path.join(srv.workspace, 'PWNED')), 'nothing was planted, nothing ran');
});
