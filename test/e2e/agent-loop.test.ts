/**
 * The model loop end to end: the real server, the real @google/genai SDK talking HTTP to
 * the fake Gemini API, raw v0.3 JSON-RPC + SSE. Multi-step function calling, text and
 * thought events, every built-in tool's success and failure reason as the model sees it,
 * model errors and retries, and tasks/cancel while a command or the model call runs.
 */
import t from 'tap';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { openStream } from '../support/process.js';
import { rpc } from '../support/sse.js';
import { dataOf, devtool, textOf, URI } from '../support/server.js';
import { answer, functionResponses, MODEL, modelBody, results, scenario, send, startGeminiServer } from '../support/gemini-server.js';
import type { GeminiServer } from '../support/gemini-server.js';
import { checkToolCalls, TaskWatch } from '../support/tool-call-watch.js';
import type { Test } from '../support/tool-call-watch.js';

/** [event kind, ToolCall status or task state] per result. */
const shape = (rs: any[]) => rs.map((r) => [r.kind === 'task' ? 'task' : devtool(r)?.kind, dataOf(r)?.status ?? r.status?.state]);

/** Polls an outside observation (the fake's request log, /proc) until it holds. Bounded. */
async function eventually(what: string, pred: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The host pid of `sleep <marker>`, if it runs. */
function sleepPid(marker: string): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8') === `sleep\0${marker}\0`) return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

/** Runs one YOLO task (nothing asks) whose model makes `call` and then says `reply`. */
async function oneCall(t: Test, srv: GeminiServer, name: string, args: Record<string, unknown>, reply = 'Done.') {
  const before = srv.fake.requests.length;
  scenario(srv.fake).call(name, args, 'c-1').say(reply);
  const watch = new TaskWatch();
  const rs = watch.take(await send(srv, `please ${name}`, { settings: { approval_mode: 'YOLO' } }));
  t.same(
    shape(rs),
    [
      ['task', 'submitted'],
      ['STATE_CHANGE', 'working'],
      ['TOOL_CALL_UPDATE', 'PENDING'],
      ['TOOL_CALL_UPDATE', 'EXECUTING'],
      ...rs.slice(4, -3).map(() => ['TOOL_CALL_UPDATE', 'EXECUTING']),
      ['TOOL_CALL_UPDATE', rs.at(-3).status.message.parts[0].data.status],
      ['TEXT_CONTENT', 'working'],
      ['STATE_CHANGE', 'completed'],
    ],
    'PENDING → EXECUTING → result, the model answers, completed',
  );
  checkToolCalls(t, watch);
  t.equal(srv.fake.requests.length, before + 2, 'two model requests: the call, then the answer');
  t.equal(textOf(rs.at(-2)), reply);
  const done = dataOf(rs.at(-3));
  t.equal(done.tool_name, name);
  const told = functionResponses(srv.fake, before + 1);
  t.equal(told.length, 1, 'one functionResponse sent back');
  t.equal(told[0].name, name);
  t.equal(told[0].id, 'c-1', 'the model call id is echoed');
  return { rs, done, failedEvent: rs.at(-3), told: told[0].response };
}

t.test('multi-step function calling: thought, read_file, thought, text; model name on every event', async (t) => {
  const srv = await startGeminiServer(t);
  writeFileSync(path.join(srv.workspace, 'seed.txt'), 'hi from seed\n');
  scenario(srv.fake)
    .chunks(
      [{ text: '**Planning** the read of seed.txt', thought: true, thoughtSignature: 'sig-1' }],
      [{ functionCall: { id: 'call-1', name: 'read_file', args: { file_path: 'seed.txt' } } }],
    )
    .chunks([{ text: '**Answering**  the user', thought: true }], [{ text: 'The seed ' }], [{ text: 'says hi.' }]);
  const watch = new TaskWatch();
  const rs = watch.take(await send(srv, 'what does seed.txt say?'));
  t.same(shape(rs), [
    ['task', 'submitted'],
    ['STATE_CHANGE', 'working'],
    ['THOUGHT', 'working'],
    ['TOOL_CALL_UPDATE', 'PENDING'],
    ['TOOL_CALL_UPDATE', 'EXECUTING'],
    ['TOOL_CALL_UPDATE', 'SUCCEEDED'],
    ['THOUGHT', 'working'],
    ['TEXT_CONTENT', 'working'],
    ['TEXT_CONTENT', 'working'],
    ['STATE_CHANGE', 'completed'],
  ]);
  t.same(
    dataOf(rs[2]),
    { subject: 'Planning', description: 'the read of seed.txt' },
    'AgentThought DataPart from "**Subject** description"',
  );
  t.same(dataOf(rs[6]), { subject: 'Answering', description: 'the user' });
  t.same(
    rs[2].status.message.parts.map((p: any) => p.kind),
    ['data'],
    'a thought is one DataPart, no text',
  );
  const pending = dataOf(rs[3]);
  t.match(pending, { tool_name: 'read_file', input_parameters: { file_path: 'seed.txt' }, description: 'Read seed.txt' });
  t.notOk('confirmation_request' in pending, 'a read never asks');
  t.same(dataOf(rs[5]).output, { text: 'hi from seed\n' });
  t.same([textOf(rs[7]), textOf(rs[8])], ['The seed ', 'says hi.'], 'each text chunk is one TEXT_CONTENT delta');
  t.equal(rs.at(-1).final, true);
  for (const r of rs.slice(1)) t.equal(devtool(r)?.model, MODEL, `${devtool(r)?.kind}: model in metadata`);
  checkToolCalls(t, watch);

  t.equal(srv.fake.requests.length, 2, 'two model requests');
  t.equal(srv.fake.requests[0].path, `/v1beta/models/${MODEL}:streamGenerateContent`);
  const first = modelBody(srv.fake, 0);
  t.same(first.contents, [{ role: 'user', parts: [{ text: 'what does seed.txt say?' }] }]);
  t.match(first.systemInstruction.parts[0].text, /software development agent/);
  t.same(
    first.tools[0].functionDeclarations.map((d: any) => d.name),
    ['read_file', 'read_many_files', 'list_directory', 'glob', 'search_file_content', 'write_file', 'replace', 'run_shell_command'],
    'the eight built-in tools are declared',
  );
  const second = modelBody(srv.fake, 1);
  t.equal(second.contents.length, 3, 'user, model, function responses');
  t.same(
    second.contents[1],
    {
      role: 'model',
      parts: [
        { text: '**Planning** the read of seed.txt', thought: true, thoughtSignature: 'sig-1' },
        { functionCall: { id: 'call-1', name: 'read_file', args: { file_path: 'seed.txt' } } },
      ],
    },
    'the model turn goes back verbatim (thought signature included)',
  );
  t.same(second.contents[2], {
    role: 'user',
    parts: [{ functionResponse: { id: 'call-1', name: 'read_file', response: { output: 'hi from seed\n' } } }],
  });

  await t.test('a follow-up in the same task carries the whole conversation', async (t) => {
    scenario(srv.fake).say('Still hi.');
    const more = results(await send(srv, 'and again?', { taskId: watch.taskId, contextId: watch.contextId }));
    t.same(shape(more), [
      ['STATE_CHANGE', 'working'],
      ['TEXT_CONTENT', 'working'],
      ['STATE_CHANGE', 'completed'],
    ]);
    const body = modelBody(srv.fake, 2);
    t.equal(body.contents.length, 5);
    t.same(
      body.contents[3],
      {
        role: 'model',
        parts: [{ text: '**Answering**  the user', thought: true }, { text: 'The seed ' }, { text: 'says hi.' }],
      },
      'the earlier answer is kept',
    );
    t.same(body.contents[4], { role: 'user', parts: [{ text: 'and again?' }] });
  });
});

t.test('read tools through the loop', async (t) => {
  const srv = await startGeminiServer(t);
  const ws = srv.workspace;
  mkdirSync(path.join(ws, 'docs'));
  writeFileSync(path.join(ws, 'docs', 'guide.md'), '# Guide\nfind the needle here\n');
  writeFileSync(path.join(ws, 'README.md'), 'no match\n');
  writeFileSync(path.join(ws, 'notes.txt'), 'plain\n');

  await t.test('read_file of a missing file: FAILED file_not_found, reason as text and to the model', async (t) => {
    const { done, failedEvent, told } = await oneCall(t, srv, 'read_file', { file_path: 'missing.txt' }, 'No such file.');
    t.equal(done.status, 'FAILED');
    t.equal(done.error.type, 'file_not_found');
    t.equal(done.error.message, `File not found: missing.txt (relative to the workspace ${srv.workspace})`);
    t.notOk('output' in done);
    t.same(
      failedEvent.status.message.parts.map((p: any) => p.kind),
      ['data', 'text'],
    );
    t.equal(failedEvent.status.message.parts[1].text, `read_file failed: ${done.error.message}`);
    t.same(told, { error: done.error.message, error_type: 'file_not_found' }, 'functionResponse.response: the reason and its type');
  });

  await t.test('read_file ../x: FAILED path_outside_workspace', async (t) => {
    const { done, failedEvent, told } = await oneCall(t, srv, 'read_file', { file_path: '../x' });
    t.equal(done.status, 'FAILED');
    t.equal(done.error.type, 'path_outside_workspace');
    t.match(done.error.message, /file_path "\.\.\/x" is outside the workspace/);
    t.match(textOf(failedEvent), /^read_file failed: file_path "\.\.\/x" is outside the workspace/);
    t.match(told.error, /outside the workspace/);
  });

  await t.test('glob **/*.md: SUCCEEDED with absolute paths', async (t) => {
    const { done, told } = await oneCall(t, srv, 'glob', { pattern: '**/*.md' });
    t.equal(done.status, 'SUCCEEDED');
    t.match(done.output.text, /^Found 2 file\(s\) matching "\*\*\/\*\.md"/);
    t.match(done.output.text, path.join(ws, 'docs', 'guide.md'));
    t.match(done.output.text, path.join(ws, 'README.md'));
    t.equal(told.output, done.output.text, 'the model gets the same listing');
  });

  await t.test('search_file_content needle: SUCCEEDED with file and line', async (t) => {
    const { done, told } = await oneCall(t, srv, 'search_file_content', { pattern: 'need+le' });
    t.equal(done.status, 'SUCCEEDED');
    t.match(done.output.text, /^Found 1 match for pattern "need\+le"/);
    t.match(done.output.text, /File: docs\/guide\.md\nL2: find the needle here/);
    t.match(told.output, /L2: find the needle here/);
  });

  await t.test('search_file_content with a bad regex: FAILED', async (t) => {
    const { done } = await oneCall(t, srv, 'search_file_content', { pattern: '(' });
    t.equal(done.status, 'FAILED');
    t.ok(done.error.type, `typed: ${done.error.type}`);
  });

  await t.test('list_directory .: SUCCEEDED, directories first', async (t) => {
    const { done } = await oneCall(t, srv, 'list_directory', { dir_path: '.' });
    t.equal(done.status, 'SUCCEEDED');
    t.match(done.output.text, /docs\//);
    t.ok(done.output.text.indexOf('docs/') < done.output.text.indexOf('README.md'), 'directories come first');
  });

  await t.test('list_directory of a file: FAILED path_is_not_a_directory', async (t) => {
    const { done } = await oneCall(t, srv, 'list_directory', { dir_path: 'notes.txt' });
    t.equal(done.status, 'FAILED');
    t.equal(done.error.type, 'path_is_not_a_directory');
  });

  await t.test('read_many_files: SUCCEEDED with each file under its header', async (t) => {
    const { done, told } = await oneCall(t, srv, 'read_many_files', { paths: ['docs', 'notes.txt'] });
    t.equal(done.status, 'SUCCEEDED');
    t.equal(done.output.text, 'Read 2 file(s):\n- docs/guide.md\n- notes.txt', 'the card lists the files');
    t.match(told.output, /--- .*docs\/guide\.md ---\n# Guide\nfind the needle here/, 'the model gets each file under its header');
    t.match(told.output, /--- .*notes\.txt ---\nplain/);
  });

  await t.test('read_many_files without paths: FAILED invalid_argument', async (t) => {
    const { done } = await oneCall(t, srv, 'read_many_files', {});
    t.equal(done.status, 'FAILED');
    t.equal(done.error.type, 'invalid_argument');
    t.match(done.error.message, /paths/);
  });
});

t.test('replace through the loop', async (t) => {
  const srv = await startGeminiServer(t);
  const file = path.join(srv.workspace, 'a.txt');

  await t.test('a non-unique old_string fails before anyone is asked; the reason asks for more context', async (t) => {
    writeFileSync(file, 'x = 1\nx = 1\n');
    scenario(srv.fake).call('replace', { file_path: 'a.txt', old_string: 'x = 1', new_string: 'x = 2' }, 'r-1').say('I need more context.');
    const watch = new TaskWatch();
    const rs = watch.take(await send(srv, 'edit a.txt'));
    t.ok(
      rs.every((r) => r.status?.state !== 'input-required'),
      'never input-required',
    );
    const failed = rs.map(dataOf).find((d) => d?.status === 'FAILED');
    t.equal(failed.tool_name, 'replace');
    t.match(failed.error.message, /Expected 1 occurrence of old_string in a\.txt but found 2; add more surrounding context/);
    t.equal(failed.error.type, 'edit_expected_occurrence_mismatch', "the tool's own type, though it failed while preparing the card");
    t.match(functionResponses(srv.fake, srv.fake.requests.length - 1)[0].response.error, /add more surrounding context/);
    t.equal(readFileSync(file, 'utf8'), 'x = 1\nx = 1\n', 'unchanged');
    t.equal(rs.at(-1).status.state, 'completed');
    checkToolCalls(t, watch);
  });

  await t.test('the same failure when it runs without asking (AUTO_EDIT)', async (t) => {
    scenario(srv.fake).call('replace', { file_path: 'a.txt', old_string: 'x = 1', new_string: 'x = 2' }).say('ok');
    const rs = results(await send(srv, 'edit a.txt', { settings: { approval_mode: 'AUTO_EDIT' } }));
    const failed = rs.map(dataOf).find((d) => d?.status === 'FAILED');
    t.equal(failed.error.type, 'edit_expected_occurrence_mismatch');
    t.match(failed.error.message, /add more surrounding context to make old_string unique, or set expected_replacements to 2/);
  });

  await t.test('a unique edit waits for approval with a diff, then changes the file', async (t) => {
    writeFileSync(file, 'one\ntwo\nthree\n');
    scenario(srv.fake).call('replace', { file_path: 'a.txt', old_string: 'two', new_string: 'TWO' }, 'r-2').say('Edited.');
    const watch = new TaskWatch();
    const first = watch.take(await send(srv, 'edit a.txt'));
    t.same(shape(first), [
      ['task', 'submitted'],
      ['STATE_CHANGE', 'working'],
      ['TOOL_CALL_UPDATE', 'PENDING'],
      ['STATE_CHANGE', 'input-required'],
    ]);
    const card = dataOf(first[2]);
    t.match(card.confirmation_request.file_edit_details, {
      file_name: 'a.txt',
      file_path: file,
      old_content: 'one\ntwo\nthree\n',
      new_content: 'one\nTWO\nthree\n',
    });
    t.match(card.confirmation_request.file_edit_details.formatted_diff, /-two\n\+TWO/);
    t.equal(readFileSync(file, 'utf8'), 'one\ntwo\nthree\n', 'nothing changed before approval');
    const requestsBefore = srv.fake.requests.length;
    const second = watch.take(
      await answer(srv, watch.taskId, watch.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' }),
    );
    t.same(shape(second), [
      ['TOOL_CALL_UPDATE', 'EXECUTING'],
      ['TOOL_CALL_UPDATE', 'SUCCEEDED'],
      ['TEXT_CONTENT', 'working'],
      ['STATE_CHANGE', 'completed'],
    ]);
    t.equal(readFileSync(file, 'utf8'), 'one\nTWO\nthree\n', 'the file changed on disk');
    t.equal(dataOf(second[1]).output.diff.new_content, 'one\nTWO\nthree\n');
    t.equal(srv.fake.requests.length, requestsBefore + 1);
    t.same(functionResponses(srv.fake, requestsBefore)[0], {
      id: 'r-2',
      name: 'replace',
      response: { output: 'Replaced 1 occurrence in a.txt' },
    });
    checkToolCalls(t, watch);
  });
});

t.test('run_shell_command failures', async (t) => {
  const srv = await startGeminiServer(t, { env: { SHELL_TIMEOUT_MS: '1000' } });

  await t.test('non-zero exit: FAILED with the exit code in the reason', async (t) => {
    const { done, failedEvent, told } = await oneCall(t, srv, 'run_shell_command', { command: 'echo oops >&2; exit 3' }, 'It failed.');
    t.equal(done.status, 'FAILED');
    t.same(done.error, { type: 'shell_exit_nonzero', status_code: 3, message: 'Command exited with code 3:\noops' });
    t.equal(textOf(failedEvent), 'run_shell_command failed: Command exited with code 3:\noops');
    t.equal(told.error, 'Command exited with code 3:\noops', 'the model is told the reason');
    t.equal(told.error_type, 'shell_exit_nonzero');
    t.match(told.output, /Command: echo oops >&2; exit 3/, 'and gets the whole output');
    t.match(told.output, /Output:\noops/);
    t.match(told.output, /Exit Code: 3/);
  });

  await t.test('success: the output and exit code', async (t) => {
    const { done, told } = await oneCall(t, srv, 'run_shell_command', { command: 'echo hello' });
    t.equal(done.status, 'SUCCEEDED');
    t.equal(done.output.text, 'hello\n\n(exit code 0)');
    t.match(told.output, /Output:\nhello\n/);
    t.match(told.output, /Exit Code: 0/);
  });

  await t.test('timeout (SHELL_TIMEOUT_MS=1000, sleep 5): FAILED shell_timeout, killed', async (t) => {
    const started = Date.now();
    const { done, told } = await oneCall(t, srv, 'run_shell_command', { command: 'sleep 5' });
    t.ok(Date.now() - started < 4500, `killed before sleep 5 ended (${Date.now() - started} ms)`);
    t.equal(done.status, 'FAILED');
    t.equal(done.error.type, 'shell_timeout');
    t.match(done.error.message, /^Command timed out after 1000 ms and was killed/);
    t.equal(told.error, done.error.message, 'the model is told it timed out');
    t.equal(told.error_type, 'shell_timeout');
    t.match(told.output, /Command: sleep 5/);
  });
});

t.test('model errors', async (t) => {
  await t.test('503 then 429 are retried, then the answer streams', async (t) => {
    const srv = await startGeminiServer(t);
    scenario(srv.fake)
      .fail(503, 'The model is overloaded.', 'UNAVAILABLE')
      .fail(429, 'Resource has been exhausted.', 'RESOURCE_EXHAUSTED')
      .say('Recovered.');
    const rs = results(await send(srv, 'hello'));
    t.same(
      shape(rs),
      [
        ['task', 'submitted'],
        ['STATE_CHANGE', 'working'],
        ['TEXT_CONTENT', 'working'],
        ['STATE_CHANGE', 'completed'],
      ],
      'the client sees no trace of the retries',
    );
    t.equal(textOf(rs[2]), 'Recovered.');
    t.equal(srv.fake.requests.length, 3, 'three HTTP requests');
    t.same(modelBody(srv.fake, 2).contents, modelBody(srv.fake, 0).contents, 'the same request each time');
  });

  await t.test('400 is not retried: the task fails with the reason as text and in DevelopmentToolEvent.error', async (t) => {
    const srv = await startGeminiServer(t);
    scenario(srv.fake).fail(400, 'Invalid value at contents[0]', 'INVALID_ARGUMENT');
    const rs = results(await send(srv, 'hello'));
    t.same(shape(rs), [
      ['task', 'submitted'],
      ['STATE_CHANGE', 'working'],
      ['STATE_CHANGE', 'failed'],
    ]);
    const failed = rs.at(-1);
    t.equal(failed.final, true);
    const reason = textOf(failed);
    t.equal(
      reason,
      'Model call failed: Gemini API rejected the request as invalid (HTTP 400 INVALID_ARGUMENT): Invalid value at contents[0]',
    );
    t.equal(devtool(failed).error, reason, 'DevelopmentToolEvent.error');
    t.equal(devtool(failed).kind, 'STATE_CHANGE');
    t.equal(srv.fake.requests.length, 1, 'one request, no retry');
    const task = (await rpc(srv.url, 'tasks/get', { id: failed.taskId })).json.result;
    t.equal(task.status.state, 'failed');
  });

  await t.test('at most 3 attempts', async (t) => {
    const srv = await startGeminiServer(t);
    scenario(srv.fake)
      .fail(503, 'overloaded 1', 'UNAVAILABLE')
      .fail(503, 'overloaded 2', 'UNAVAILABLE')
      .fail(503, 'overloaded 3', 'UNAVAILABLE')
      .say('never asked for');
    const rs = results(await send(srv, 'hello'));
    t.same(shape(rs).at(-1), ['STATE_CHANGE', 'failed']);
    t.match(
      textOf(rs.at(-1)),
      /^Model call failed: Gemini API is unavailable or failed \(HTTP 503 UNAVAILABLE\): overloaded 3 \(after 3 attempts\)$/,
    );
    t.equal(devtool(rs.at(-1)).error, textOf(rs.at(-1)));
    t.equal(srv.fake.requests.length, 3, 'exactly three requests');
  });
});

t.test('tasks/cancel', async (t) => {
  await t.test('mid-shell: the call ends CANCELLED, the task canceled, the process killed', async (t) => {
    const srv = await startGeminiServer(t);
    // A unique sleep, found on the host by its command line (in a sandbox, $! is a pid of its own namespace).
    const marker = `30.${process.pid}${Date.now() % 100_000}`;
    scenario(srv.fake)
      .call('run_shell_command', { command: `sleep ${marker} & echo started; wait` })
      .say('unreachable');
    const stream = await openStream(srv.url, 'message/stream', {
      message: {
        kind: 'message',
        role: 'user',
        messageId: 'cancel-shell',
        parts: [{ kind: 'text', text: 'run it' }],
        metadata: { [URI]: { approval_mode: 'YOLO' } },
      },
    });
    t.teardown(() => stream.close());
    const live = await stream.until((ev) => /started/.test(dataOf(ev.data.result)?.live_content ?? ''));
    t.ok(live, 'the command runs');
    await eventually('the sleep is seen', () => sleepPid(marker) !== undefined);
    const pid = sleepPid(marker)!;
    const alive = () => {
      try {
        return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8')); // a zombie is already dead
      } catch {
        return false;
      }
    };
    t.ok(alive(), `sleep 30 (pid ${pid}) is running`);
    const task = stream.events[0].data.result;

    const canceled = await rpc(srv.url, 'tasks/cancel', { id: task.id });
    t.equal(canceled.json.result?.status?.state, 'canceled', `tasks/cancel: ${canceled.raw.slice(0, 200)}`);
    const rest = (await stream.rest()).map((e) => e.data.result);
    t.ok(stream.ended, 'the stream ends');
    const tail = rest.slice(rest.findIndex((r) => r === live!.data.result) + 1).filter((r) => dataOf(r)?.status !== 'EXECUTING');
    t.same(shape(tail), [
      ['TOOL_CALL_UPDATE', 'CANCELLED'],
      ['STATE_CHANGE', 'canceled'],
    ]);
    t.equal(dataOf(tail[0]).error?.type, 'cancelled');
    t.equal(tail.at(-1).final, true);
    await eventually(`pid ${pid} gone`, () => !alive());
    t.notOk(alive(), 'the command process is gone');
    t.equal((await rpc(srv.url, 'tasks/get', { id: task.id })).json.result.status.state, 'canceled');
    t.equal(srv.fake.requests.length, 1, 'the model is not asked again after the cancel');
  });

  await t.test('while the model call hangs: canceled promptly', async (t) => {
    const srv = await startGeminiServer(t);
    scenario(srv.fake).hang();
    const stream = await openStream(srv.url, 'message/stream', {
      message: { kind: 'message', role: 'user', messageId: 'cancel-model', parts: [{ kind: 'text', text: 'think hard' }] },
    });
    t.teardown(() => stream.close());
    await stream.until((ev) => ev.data.result?.status?.state === 'working');
    await eventually('the model request reached the fake', () => srv.fake.requests.length === 1);
    const task = stream.events[0].data.result;
    const started = Date.now();
    const canceled = await rpc(srv.url, 'tasks/cancel', { id: task.id });
    t.equal(canceled.json.result?.status?.state, 'canceled');
    const rest = (await stream.rest(5000)).map((e) => e.data.result);
    const elapsed = Date.now() - started;
    t.ok(elapsed < 2000, `canceled within ${elapsed} ms`);
    t.same(shape(rest).slice(-1), [['STATE_CHANGE', 'canceled']]);
    t.equal(rest.at(-1).final, true);
    t.equal(textOf(rest.at(-1)), 'The task was canceled by the client.');
    t.equal(srv.fake.requests.length, 1, 'no retry after the abort');
    t.equal((await rpc(srv.url, 'tasks/get', { id: task.id })).json.result.status.state, 'canceled');
  });
});

t.test('write_file through the loop (YOLO): the file is written and the model told', async (t) => {
  const srv = await startGeminiServer(t);
  const { done, told } = await oneCall(t, srv, 'write_file', { file_path: 'sub/new.txt', content: 'fresh\n' });
  t.equal(done.status, 'SUCCEEDED');
  t.equal(readFileSync(path.join(srv.workspace, 'sub', 'new.txt'), 'utf8'), 'fresh\n');
  t.ok(told.output, `output: ${told.output}`);
  t.notOk(existsSync(path.join(srv.workspace, 'new.txt')));
});
