/**
 * Slash commands over real HTTP (RFC §3.3): `commands/get` lists them; `command/execute`
 * answers ExecuteSlashCommandResponse at once and runs the command as a task of its own,
 * followed with `tasks/resubscribe` on the execution id (Last-Event-ID: 0 replays it from
 * the start). /memory add asks like any edit; /init has the model (the real SDK against
 * the fake Gemini API) draft GEMINI.md.
 */
import t from 'tap';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { INIT_PROMPT } from '../../src/agent/requests/slash-commands.js';
import { rpc } from '../support/sse.js';
import type { PostResult } from '../support/sse.js';
import { dataOf, devtool, startServer, tempDir, textOf, URI, userMessage } from '../support/server.js';
import type { TestServer } from '../support/server.js';
import { answer, modelBody, results, scenario, send, startGeminiServer } from '../support/gemini-server.js';
import { checkToolCalls, getTask, TaskWatch } from '../support/tool-call-watch.js';
import type { Test } from '../support/tool-call-watch.js';

/** The text a command's events said. */
const said = (events: any[]): string =>
  events
    .filter((r) => devtool(r)?.kind === 'TEXT_CONTENT')
    .map(textOf)
    .join('');
/** The first PENDING card among the events. */
const pendingCard = (events: any[]): any => dataOf(events.find((r) => dataOf(r)?.status === 'PENDING'));

const shape = (rs: any[]) => rs.map((r) => [r.kind === 'task' ? 'task' : devtool(r)?.kind, dataOf(r)?.status ?? r.status?.state]);

async function execute(srv: TestServer, params: unknown, version?: '0.3' | '1.0'): Promise<PostResult> {
  return rpc(srv.url, 'command/execute', params, { version });
}

/** command/execute that must start: returns the ExecuteSlashCommandResponse. */
async function started(
  t: Test,
  srv: TestServer,
  params: Record<string, unknown>,
  status = 'STARTED',
): Promise<{ execution_id: string; status: string }> {
  const res = await execute(srv, params);
  t.equal(res.status, 200);
  t.match(res.contentType, /^application\/json/, 'a plain JSON answer, not a stream');
  t.equal(res.json.error, undefined, `no error: ${JSON.stringify(res.json.error)}`);
  t.equal(res.json.result?.status, status, `status ${status}`);
  t.type(res.json.result?.execution_id, 'string', 'an execution_id');
  t.notOk('message' in res.json.result, 'no message when it started');
  return res.json.result;
}

/**
 * tasks/resubscribe on the execution id from the first event (Last-Event-ID: 0): the current
 * task snapshot, then every logged event (the first is the task as submitted).
 */
async function replay(srv: TestServer, id: string): Promise<{ task: any; events: any[]; ids: Array<string | undefined> }> {
  const res = await rpc(srv.url, 'tasks/resubscribe', { id }, { headers: { 'Last-Event-ID': '0' } });
  const rs = results(res);
  if (rs[0]?.kind !== 'task') throw new Error(`resubscribe did not start with the task: ${res.raw.slice(0, 300)}`);
  return { task: rs[0], events: rs.slice(1), ids: res.events!.map((e) => e.id) };
}

/** FAILED_TO_START with a message matching every pattern, and no task. */
async function failsToStart(t: Test, srv: TestServer, params: Record<string, unknown>, ...patterns: RegExp[]): Promise<void> {
  const res = await execute(srv, params);
  t.equal(res.json.error, undefined, 'not a JSON-RPC error');
  t.equal(res.json.result?.status, 'FAILED_TO_START');
  t.notOk('execution_id' in (res.json.result ?? {}), 'no execution_id');
  for (const p of patterns) t.match(res.json.result?.message, p);
}

/** A plain JSON-RPC -32602 answer. */
function invalid(t: Test, res: PostResult, ...patterns: RegExp[]): void {
  t.equal(res.status, 200);
  t.match(res.contentType, /^application\/json/);
  t.equal(res.json?.error?.code, -32602, `-32602: ${res.raw.slice(0, 300)}`);
  t.notOk(res.json && 'result' in res.json);
  for (const p of patterns) t.match(res.json?.error?.message, p);
}

t.test(
  'commands/get lists tools, mcp, memory (show, refresh, list, add <fact>), init, extensions (list) and restore (<checkpoint>, list)',
  async (t) => {
    const srv = await startServer(t);
    for (const version of ['0.3', '1.0'] as const) {
      await t.test(`A2A-Version ${version}`, async (t) => {
        const res = await rpc(srv.url, 'commands/get', {}, { version });
        t.equal(res.json.error, undefined);
        const { commands } = res.json.result;
        t.same(
          commands.map((c: any) => c.name),
          ['tools', 'mcp', 'memory', 'init', 'extensions', 'restore'],
        );
        for (const c of commands) t.type(c.description, 'string', `${c.name} has a description`);
        const memory = commands[2];
        t.same(
          memory.sub_commands.map((c: any) => c.name),
          ['show', 'refresh', 'list', 'add'],
        );
        t.same(memory.sub_commands[3].arguments, [{ name: 'fact', description: 'The text to remember', is_required: true }]);
        t.strictSame(
          commands[4].sub_commands.map((c: any) => c.name),
          ['list'],
        );
        t.match(commands[5], { arguments: [{ name: 'checkpoint', is_required: true }] });
        t.strictSame([commands[5].arguments.length, commands[5].sub_commands.map((c: any) => c.name)], [1, ['list']]);
        t.notOk('arguments' in memory.sub_commands[0], 'show takes no arguments');
        t.notOk('sub_commands' in commands[0]);
        t.same(Object.keys(res.json.result), ['commands'], 'GetAllSlashCommandsResponse JSON, nothing else');
        t.notMatch(res.raw, /"run"/, 'no internals leak');
      });
    }
    await t.test('without params', async (t) => {
      const res = await rpc(srv.url, 'commands/get', undefined, {
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'commands/get' }),
      });
      t.equal(res.json.id, 9);
      t.equal(res.json.result.commands.length, 6);
    });
  },
);

t.test('/tools: STARTED, then the task replays from the start', async (t) => {
  const srv = await startServer(t);
  const { execution_id: id } = await started(t, srv, { command_path: ['tools'] });
  const { task, events, ids } = await replay(srv, id);
  t.equal(task.id, id, 'execution_id is the task id');
  t.equal(ids[0], undefined, 'the snapshot has no SSE id');
  t.same(
    ids.slice(1),
    events.map((_, i) => String(i + 1)),
    'events numbered from 1',
  );
  t.same(shape(events), [
    ['task', 'submitted'],
    ['STATE_CHANGE', 'working'],
    ['TEXT_CONTENT', 'working'],
    ['STATE_CHANGE', 'completed'],
  ]);
  t.equal(events.at(-1).final, true);
  const text = said(events);
  t.match(text, /^Approval mode: DEFAULT\. 8 tools:\n/);
  t.match(text, /^- read_file \[read\]: .+ — runs without asking \(read-only\)$/m);
  t.match(text, /^- glob \[read\]: .+ — runs without asking \(read-only\)$/m);
  t.match(text, /^- write_file \[edit\]: .+ — asks$/m);
  t.match(text, /^- replace \[edit\]: .+ — asks$/m);
  t.match(text, /^- run_shell_command \[execute\]: .+ — asks$/m);
  const stored = await getTask(srv, id);
  t.equal(stored.status.state, 'completed');
  t.equal(stored.metadata?.[URI]?.slash_command, '/tools');
  t.equal(stored.history[0].role, 'user');
  t.equal(stored.history[0].parts[0].text, '/tools', 'the command as typed is the user message');

  await t.test('a leading "/" is accepted', async (t) => {
    await started(t, srv, { command_path: ['/tools'] });
  });
  await t.test('under A2A-Version 1.0', async (t) => {
    const res = await execute(srv, { command_path: ['tools'] }, '1.0');
    t.equal(res.json.result.status, 'STARTED');
    const { events } = await replay(srv, res.json.result.execution_id);
    t.match(said(events), /^Approval mode: DEFAULT/);
  });
});

t.test("a command that would change a busy conversation's settings is refused and changes nothing", async (t) => {
  const srv = await startServer(t);
  const first = results(await rpc(srv.url, 'message/stream', { message: userMessage('write a file') }));
  t.equal(first.at(-1).status.state, 'input-required', 'the conversation waits for an answer');
  const contextId = first[0].contextId;
  const refused = await execute(srv, { command_path: ['tools'], context_id: contextId, metadata: { [URI]: { approval_mode: 'YOLO' } } });
  t.equal(refused.json.error?.code, -32004, `refused: ${JSON.stringify(refused.json.error)}`);
  t.match(refused.json.error?.message, new RegExp(`^Context ${contextId} is busy: task .* is waiting for approval`));
  const { execution_id } = await started(t, srv, { command_path: ['tools'], context_id: contextId });
  t.match(said((await replay(srv, execution_id)).events), /^Approval mode: DEFAULT\./, 'the conversation kept its approval mode');
});

t.test('context_id runs the command in an existing context', async (t) => {
  const srv = await startServer(t);
  const ws = tempDir();
  const first = results(
    await rpc(srv.url, 'message/stream', {
      message: userMessage('hello', {
        metadata: { [URI]: { workspace_path: ws, approval_mode: 'AUTO_EDIT', allowed_tools: ['run_shell_command(git status)'] } },
      }),
    }),
  );
  const contextId = first[0].contextId;
  t.equal(first.at(-1).status.state, 'completed');
  const { execution_id: id } = await started(t, srv, { command_path: ['tools'], context_id: contextId });
  const { task, events } = await replay(srv, id);
  t.equal(task.contextId, contextId, 'the command task belongs to the context');
  const text = said(events);
  t.match(text, /^Approval mode: AUTO_EDIT\./);
  t.match(text, /^- write_file \[edit\]: .+ — runs without asking \(approval mode AUTO_EDIT\)$/m);
  t.match(text, /^- run_shell_command \[execute\]: .+ — asks; runs without asking: commands starting with "git status"$/m);

  await t.test('without context_id: a new context with DEFAULT', async (t) => {
    const { execution_id } = await started(t, srv, { command_path: ['tools'] });
    const { task, events } = await replay(srv, execution_id);
    t.not(task.contextId, contextId);
    t.match(said(events), /^Approval mode: DEFAULT\./);
  });
  await t.test('settings in params.metadata set the new context up', async (t) => {
    const { execution_id } = await started(t, srv, { command_path: ['tools'], metadata: { [URI]: { approval_mode: 'yolo' } } });
    t.match(said((await replay(srv, execution_id)).events), /^Approval mode: YOLO\..*— runs without asking \(approval mode YOLO\)$/ms);
  });
  await t.test('another workspace for the existing context: -32602', async (t) => {
    invalid(
      t,
      await execute(srv, { command_path: ['tools'], context_id: contextId, metadata: { [URI]: { workspace_path: tempDir() } } }),
      /workspace_path cannot change/,
    );
  });
  await t.test('a bad approval_mode in params.metadata: -32602', async (t) => {
    invalid(
      t,
      await execute(srv, { command_path: ['tools'], metadata: { [URI]: { approval_mode: 'sometimes' } } }),
      /approval_mode/,
      /DEFAULT, AUTO_EDIT, YOLO/,
    );
  });
});

t.test('/mcp and /memory show with nothing configured', async (t) => {
  const srv = await startServer(t);
  const ws = tempDir();
  const meta = { metadata: { [URI]: { workspace_path: ws } } };
  const mcp = await started(t, srv, { command_path: ['mcp'], ...meta });
  const mcpEvents = (await replay(srv, mcp.execution_id)).events;
  t.match(said(mcpEvents), /^No MCP servers are configured\./);
  t.equal(mcpEvents.at(-1).status.state, 'completed');

  const show = await started(t, srv, { command_path: ['memory', 'show'], ...meta });
  const showEvents = (await replay(srv, show.execution_id)).events;
  t.equal(said(showEvents), `There is no GEMINI.md in ${ws} yet. /memory add <fact> starts one; /init drafts one.`);
  t.equal(showEvents.at(-1).status.state, 'completed');
});

t.test('/memory add asks, writes GEMINI.md on approval, and the model reads it', async (t) => {
  const srv = await startGeminiServer(t);
  const ws = tempDir();
  const file = path.join(ws, 'GEMINI.md');
  const first = await started(
    t,
    srv,
    { command_path: ['memory', 'add'], args: 'use pnpm, not npm', metadata: { [URI]: { workspace_path: ws } } },
    'AWAITING_ACTION_CONFIRMATION',
  );
  const watch = new TaskWatch();
  const { task, events } = await replay(srv, first.execution_id);
  watch.taskId = task.id;
  watch.contextId = task.contextId;
  watch.results.push(...events.slice(1));
  t.same(shape(events), [
    ['task', 'submitted'],
    ['STATE_CHANGE', 'working'],
    ['TOOL_CALL_UPDATE', 'PENDING'],
    ['STATE_CHANGE', 'input-required'],
  ]);
  const card = pendingCard(events);
  t.equal(card.tool_name, 'write_file');
  t.same(card.input_parameters, { file_path: 'GEMINI.md', content: '## Gemini Added Memories\n\n- use pnpm, not npm\n' });
  const diff = card.confirmation_request.file_edit_details;
  t.match(diff, { file_name: 'GEMINI.md', file_path: file, new_content: '## Gemini Added Memories\n\n- use pnpm, not npm\n' });
  t.notOk('old_content' in diff, 'a new file has no old content');
  t.match(diff.formatted_diff, /\+- use pnpm, not npm/);
  t.notOk(existsSync(file), 'nothing written before approval');

  const done = watch.take(
    await answer(srv, task.id, task.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' }),
  );
  t.same(shape(done), [
    ['TOOL_CALL_UPDATE', 'EXECUTING'],
    ['TOOL_CALL_UPDATE', 'SUCCEEDED'],
    ['STATE_CHANGE', 'completed'],
  ]);
  t.match(textOf(done.at(-1)), /^\/memory add: done: /);
  t.equal(done.at(-1).final, true);
  checkToolCalls(t, watch);
  const written = readFileSync(file, 'utf8');
  t.match(written, /^## Gemini Added Memories\n/);
  t.match(written, /- use pnpm, not npm/);
  t.equal(srv.fake.requests.length, 0, 'the model took no part');
  t.equal((await getTask(srv, task.id)).status.state, 'completed');

  await t.test('/memory show shows it', async (t) => {
    const show = await started(t, srv, { command_path: ['memory', 'show'], context_id: task.contextId });
    const text = said((await replay(srv, show.execution_id)).events);
    t.match(text, new RegExp(`^GEMINI\\.md \\(${ws}\\):\\n`));
    t.match(text, /## Gemini Added Memories\n\n- use pnpm, not npm/);
  });

  await t.test('a second fact is appended under the same heading (the diff shows the old content)', async (t) => {
    const second = await started(
      t,
      srv,
      { command_path: ['memory', 'add'], args: 'tests live in test/', context_id: task.contextId },
      'AWAITING_ACTION_CONFIRMATION',
    );
    const { events } = await replay(srv, second.execution_id);
    const card2 = pendingCard(events);
    t.equal(card2.confirmation_request.file_edit_details.old_content, written);
    results(
      await answer(srv, second.execution_id, task.contextId, { tool_call_id: card2.tool_call_id, selected_option_id: 'proceed_once' }),
    );
    t.equal(readFileSync(file, 'utf8'), '## Gemini Added Memories\n\n- use pnpm, not npm\n- tests live in test/\n');
  });

  await t.test('declined: nothing written, the command task still completes', async (t) => {
    const third = await started(
      t,
      srv,
      { command_path: ['memory', 'add'], args: 'never mind', context_id: task.contextId },
      'AWAITING_ACTION_CONFIRMATION',
    );
    const { events } = await replay(srv, third.execution_id);
    const rs = results(
      await answer(srv, third.execution_id, task.contextId, {
        tool_call_id: pendingCard(events).tool_call_id,
        selected_option_id: 'cancel',
      }),
    );
    t.same(shape(rs), [
      ['TOOL_CALL_UPDATE', 'CANCELLED'],
      ['STATE_CHANGE', 'completed'],
    ]);
    t.match(textOf(rs.at(-1)), /^\/memory add: not done \(declined\)/);
    t.notMatch(readFileSync(file, 'utf8'), /never mind/);
  });

  await t.test('a later model request carries GEMINI.md in its systemInstruction', async (t) => {
    scenario(srv.fake).say('Noted.');
    const rs = results(await send(srv, 'what do you know?', { contextId: task.contextId }));
    t.equal(rs.at(-1).status.state, 'completed');
    t.equal(srv.fake.requests.length, 1);
    const system = modelBody(srv.fake, 0)
      .systemInstruction.parts.map((p: any) => p.text)
      .join('');
    t.match(system, /software development agent/);
    t.match(
      system,
      /--- GEMINI\.md ---\n## Gemini Added Memories\n\n- use pnpm, not npm\n- tests live in test\/\n--- end of GEMINI\.md ---/,
    );
    const contents = modelBody(srv.fake, 0).contents;
    t.notMatch(JSON.stringify(contents), /\/memory add/, 'slash command tasks do not enter the model conversation');
  });
});

t.test('/memory add in a YOLO context writes without asking', async (t) => {
  const srv = await startServer(t);
  const ws = tempDir();
  const res = await started(t, srv, {
    command_path: ['memory', 'add'],
    args: 'deploys go through CI',
    metadata: { [URI]: { workspace_path: ws, approval_mode: 'YOLO' } },
  });
  const { events } = await replay(srv, res.execution_id);
  t.same(shape(events), [
    ['task', 'submitted'],
    ['STATE_CHANGE', 'working'],
    ['TOOL_CALL_UPDATE', 'PENDING'],
    ['TOOL_CALL_UPDATE', 'EXECUTING'],
    ['TOOL_CALL_UPDATE', 'SUCCEEDED'],
    ['STATE_CHANGE', 'completed'],
  ]);
  t.notOk('confirmation_request' in pendingCard(events));
  t.equal(readFileSync(path.join(ws, 'GEMINI.md'), 'utf8'), '## Gemini Added Memories\n\n- deploys go through CI\n');

  await t.test('an existing GEMINI.md keeps its text; the fact goes under the section', async (t) => {
    const ws2 = tempDir();
    writeFileSync(path.join(ws2, 'GEMINI.md'), '# Project\n\nNotes.\n');
    const r = await started(t, srv, {
      command_path: ['memory', 'add'],
      args: 'one\nfact',
      metadata: { [URI]: { workspace_path: ws2, approval_mode: 'YOLO' } },
    });
    t.equal((await replay(srv, r.execution_id)).events.at(-1).status.state, 'completed');
    t.equal(readFileSync(path.join(ws2, 'GEMINI.md'), 'utf8'), '# Project\n\nNotes.\n\n## Gemini Added Memories\n\n- one fact\n');
  });
});

t.test('/init', async (t) => {
  await t.test('GEMINI.md exists: says so, changes nothing, completed', async (t) => {
    const srv = await startGeminiServer(t);
    const ws = tempDir();
    writeFileSync(path.join(ws, 'GEMINI.md'), '# Mine\n');
    const res = await started(t, srv, { command_path: ['init'], metadata: { [URI]: { workspace_path: ws } } });
    const { events } = await replay(srv, res.execution_id);
    t.same(shape(events), [
      ['task', 'submitted'],
      ['STATE_CHANGE', 'working'],
      ['TEXT_CONTENT', 'working'],
      ['STATE_CHANGE', 'completed'],
    ]);
    t.match(said(events), new RegExp(`^GEMINI\\.md already exists in ${ws}; nothing was changed\\.`));
    t.equal(readFileSync(path.join(ws, 'GEMINI.md'), 'utf8'), '# Mine\n');
    t.equal(srv.fake.requests.length, 0, 'no model call');
  });

  await t.test('no GEMINI.md: the model gets the init prompt and its write_file asks', async (t) => {
    const srv = await startGeminiServer(t);
    const ws = tempDir();
    writeFileSync(path.join(ws, 'package.json'), '{"name":"demo"}\n');
    const draft = '# demo\n\n## Project overview\nA demo.\n';
    scenario(srv.fake)
      .call('list_directory', { dir_path: '.' })
      .call('write_file', { file_path: 'GEMINI.md', content: draft })
      .say('Drafted GEMINI.md.');
    const res = await started(t, srv, { command_path: ['init'], metadata: { [URI]: { workspace_path: ws } } });
    const { task, events } = await replay(srv, res.execution_id);
    const watch = new TaskWatch();
    watch.taskId = task.id;
    watch.contextId = task.contextId;
    watch.results.push(...events.slice(1));
    t.equal(events.at(-1).status.state, 'input-required', 'paused for the write');
    const card = dataOf(events.at(-2));
    t.equal(card.tool_name, 'write_file');
    t.equal(card.confirmation_request.file_edit_details.file_path, path.join(ws, 'GEMINI.md'));
    t.equal(card.confirmation_request.file_edit_details.new_content, draft);
    t.ok(
      events.some((r) => dataOf(r)?.tool_name === 'list_directory' && dataOf(r)?.status === 'SUCCEEDED'),
      'the read-only exploration ran',
    );
    t.same(modelBody(srv.fake, 0).contents, [{ role: 'user', parts: [{ text: INIT_PROMPT }] }], 'the init prompt is the user turn');
    t.notOk(existsSync(path.join(ws, 'GEMINI.md')));
    t.equal(task.metadata?.[URI]?.slash_command, undefined, 'a model-driven command task');

    const done = watch.take(
      await answer(srv, task.id, task.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' }),
    );
    t.same(shape(done).at(-1), ['STATE_CHANGE', 'completed']);
    t.equal(textOf(done.at(-2)), 'Drafted GEMINI.md.');
    t.equal(readFileSync(path.join(ws, 'GEMINI.md'), 'utf8'), draft);
    t.equal(srv.fake.requests.length, 3);
    checkToolCalls(t, watch);
  });
});

t.test('command/execute errors', async (t) => {
  const srv = await startServer(t);
  await t.test('unknown command: FAILED_TO_START listing the commands', async (t) => {
    await failsToStart(t, srv, { command_path: ['nope'] }, /Unknown command "nope"/, /\/tools, \/mcp, \/memory, \/init, \/extensions/);
  });
  await t.test('/memory without a subcommand: FAILED_TO_START naming show, refresh, list, add', async (t) => {
    await failsToStart(t, srv, { command_path: ['memory'] }, /\/memory needs a subcommand: show, refresh, list, add/);
  });
  await t.test('unknown subcommand', async (t) => {
    await failsToStart(
      t,
      srv,
      { command_path: ['memory', 'forget'] },
      /Unknown subcommand of \/memory "forget"/,
      /show, refresh, list, add/,
    );
  });
  await t.test('/memory add without args: FAILED_TO_START naming <fact>', async (t) => {
    await failsToStart(t, srv, { command_path: ['memory', 'add'] }, /\/memory add needs <fact>/);
    await failsToStart(t, srv, { command_path: ['memory', 'add'], args: '   ' }, /<fact>/);
  });
  await t.test('/tools with args: FAILED_TO_START', async (t) => {
    await failsToStart(t, srv, { command_path: ['tools'], args: 'all' }, /\/tools takes no arguments \(got "all"\)/);
  });
  await t.test('a subcommand under a command without any', async (t) => {
    await failsToStart(t, srv, { command_path: ['tools', 'x'] }, /Unknown subcommand of \/tools "x"/);
  });
  await t.test('FAILED_TO_START under A2A-Version 1.0 too', async (t) => {
    const res = await execute(srv, { command_path: ['nope'] }, '1.0');
    t.equal(res.json.result.status, 'FAILED_TO_START');
  });

  const malformed: Array<[string, unknown, RegExp]> = [
    ['command_path missing', {}, /command_path/],
    ['command_path not an array', { command_path: 'tools' }, /command_path must be a non-empty array/],
    ['command_path empty', { command_path: [] }, /command_path must be a non-empty array/],
    ['command_path with a non-string', { command_path: ['memory', 3] }, /command_path\[1\]/],
    ['command_path with an empty string', { command_path: [''] }, /command_path\[0\]/],
    ['args not a string', { command_path: ['tools'], args: 5 }, /args/],
    ['an extra unknown key', { command_path: ['tools'], extra: 1 }, /extra/],
    ['context_id not a string', { command_path: ['tools'], context_id: 7 }, /context_id/],
    ['metadata not an object', { command_path: ['tools'], metadata: 'x' }, /metadata/],
    ['params an array', ['tools'], /ExecuteSlashCommandRequest/],
  ];
  for (const [name, params, pattern] of malformed) {
    await t.test(`${name}: -32602`, async (t) => {
      invalid(t, await execute(srv, params), pattern);
      invalid(t, await execute(srv, params, '1.0'), pattern);
    });
  }
  await t.test('jsonrpc other than "2.0": -32600', async (t) => {
    const res = await rpc(
      srv.url,
      'command/execute',
      {},
      { body: JSON.stringify({ jsonrpc: '1.0', id: 1, method: 'command/execute', params: { command_path: ['tools'] } }) },
    );
    t.equal(res.json.error.code, -32600);
  });
});

t.test('/memory refresh and /memory list: what the next model step reads', async (t) => {
  const srv = await startServer(t);
  const text = async (path_: string[]) => said((await replay(srv, (await started(t, srv, { command_path: path_ })).execution_id)).events);
  t.match(await text(['memory', 'refresh']), /there is no GEMINI\.md in /);
  t.equal(await text(['memory', 'list']), 'No GEMINI.md file is in use.');
  writeFileSync(path.join(srv.workspace, 'GEMINI.md'), 'use pnpm\n');
  t.equal(
    await text(['memory', 'refresh']),
    'Memory refreshed: 9 characters from 1 file (GEMINI.md), read afresh before every model step.',
  );
  t.equal(await text(['memory', 'list']), `There is 1 GEMINI.md file in use:\n${path.join(srv.workspace, 'GEMINI.md')}`);
});
