/**
 * ToolCall lifecycle details over real HTTP (v0.3 message/stream): live shell output,
 * failures with their reason in both the DataPart and a TextPart (for text-only clients), refused
 * calls, and cancelling a running command (RFC §3.2 Tool Call Lifecycle).
 */
import t from 'tap';
import { readdirSync, readlinkSync, readFileSync } from 'node:fs';
import { parseSse, rpc } from '../support/sse.js';
import { confirmMessage, dataOf, devtool, startServer, textOf, URI, userMessage } from '../support/server.js';
import type { TestServer } from '../support/server.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts `prompt`, reads its first stream to the end. */
async function start(srv: TestServer, prompt: string): Promise<any[]> {
  const res = await rpc(srv.url, 'message/stream', {
    message: userMessage(prompt, { metadata: { [URI]: { workspace_path: srv.workspace } } }),
  });
  if (res.events === undefined) throw new Error(`expected an SSE stream, got ${res.status} ${res.raw}`);
  return res.events.map((e) => e.data.result);
}

/** Starts `prompt`, approves its one pending call with proceed_once, and returns both streams. */
async function approve(srv: TestServer, prompt: string): Promise<{ first: any[]; second: any[]; card: any }> {
  const first = await start(srv, prompt);
  const card = dataOf(first.find((r) => dataOf(r)?.status === 'PENDING'));
  const task = first[0];
  const res = await rpc(srv.url, 'message/stream', {
    message: confirmMessage(task.id, task.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' }),
  });
  return { first, second: res.events!.map((e) => e.data.result), card };
}

/** Pids of live processes whose working directory is `dir` (the shell tool runs there). */
function processesIn(dir: string): Array<{ pid: number; cmd: string }> {
  const out: Array<{ pid: number; cmd: string }> = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readlinkSync(`/proc/${name}/cwd`) !== dir) continue;
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (/\) Z /.test(stat)) continue; // a zombie is already dead
      out.push({ pid: Number(name), cmd: readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0/g, ' ').trim() });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out;
}

t.test('shell slow: live_content grows while EXECUTING, the output replaces it', async (t) => {
  const srv = await startServer(t);
  const { first, second, card } = await approve(srv, 'shell slow please');
  t.match(dataOf(first[2]), {
    tool_name: 'run_shell_command',
    status: 'PENDING',
    input_parameters: { command: 'for i in 1 2 3 4 5; do echo line$i; sleep 0.2; done' },
    confirmation_request: {
      execute_details: { command: 'for i in 1 2 3 4 5; do echo line$i; sleep 0.2; done', working_directory: srv.workspace },
    },
  });
  t.same(
    card.confirmation_request.options.map((o: { id: string }) => o.id),
    ['proceed_once', 'cancel'],
    'a shell command cannot be modified; a for-loop has no root command an "always" grant could name, so only once or reject',
  );

  const calls = second.map(dataOf).filter(Boolean);
  const executing = calls.filter((c: any) => c.status === 'EXECUTING');
  t.ok(
    calls.every((c: any) => c.tool_call_id === card.tool_call_id),
    'one call id throughout',
  );
  t.same(
    calls.map((c: any) => c.status),
    [...executing.map(() => 'EXECUTING'), 'SUCCEEDED'],
    'EXECUTING updates, then one SUCCEEDED',
  );
  const live: string[] = executing.map((c: any) => c.live_content).filter((s: unknown): s is string => typeof s === 'string');
  t.ok(new Set(live).size >= 2, `live_content changed while the command ran (${live.length} updates)`);
  for (let i = 1; i < live.length; i++) {
    t.ok(live[i].startsWith(live[i - 1]), `live update ${i} extends the one before`);
  }
  t.equal(live[0].startsWith('line1\n'), true, 'the first live text starts with line1');
  t.equal(live.at(-1), 'line1\nline2\nline3\nline4\nline5\n', 'the last live text is the whole output');
  const done = calls.at(-1);
  t.equal(done.output.text, 'line1\nline2\nline3\nline4\nline5\n\n(exit code 0)');
  t.notOk('live_content' in done, 'no live_content once SUCCEEDED');
  t.notOk('error' in done);
  t.same(
    second.slice(calls.length).map((r) => [devtool(r).kind, r.status.state]),
    [
      ['TEXT_CONTENT', 'working'],
      ['STATE_CHANGE', 'completed'],
    ],
  );
  t.equal(textOf(second.at(-2)), 'Slow command finished.');
});

t.test('shell fail: FAILED with the exit code, the reason also as text, and the task completes', async (t) => {
  const srv = await startServer(t);
  const { second, card } = await approve(srv, 'shell fail now');
  t.same(
    second.map((r) => [devtool(r).kind, dataOf(r)?.status ?? r.status.state]),
    [
      ['TOOL_CALL_UPDATE', 'EXECUTING'],
      ...second.slice(1, -3).map(() => ['TOOL_CALL_UPDATE', 'EXECUTING']),
      ['TOOL_CALL_UPDATE', 'FAILED'],
      ['TEXT_CONTENT', 'working'],
      ['STATE_CHANGE', 'completed'],
    ],
  );
  const failedEv = second.at(-3);
  const failed = dataOf(failedEv);
  t.equal(failed.tool_call_id, card.tool_call_id);
  t.same(failed.error, { message: 'Command exited with code 3:\noops', type: 'shell_exit_nonzero', status_code: 3 });
  t.notOk('output' in failed, 'error and output are a oneof');
  t.notOk('live_content' in failed);
  const parts = failedEv.status.message.parts;
  t.same(
    parts.map((p: any) => p.kind),
    ['data', 'text'],
    'the FAILED update carries a TextPart besides the DataPart (text-only clients see why)',
  );
  t.equal(parts[1].text, 'run_shell_command failed: Command exited with code 3:\noops', 'the reason, readable by text-only clients');
  t.equal(textOf(second.at(-2)), 'It failed.', 'the model was told and answered');
  t.equal(second.at(-1).final, true);
  t.equal((await rpc(srv.url, 'tasks/get', { id: second.at(-1).taskId })).json.result.status.state, 'completed');
});

t.test('escape: read_file outside the workspace fails without asking', async (t) => {
  const srv = await startServer(t);
  const ev = await start(srv, 'escape the workspace');
  t.same(
    ev.map((r) => [r.kind, devtool(r)?.kind ?? null, dataOf(r)?.status ?? r.status.state]),
    [
      ['task', null, 'submitted'],
      ['status-update', 'STATE_CHANGE', 'working'],
      ['status-update', 'TOOL_CALL_UPDATE', 'PENDING'],
      ['status-update', 'TOOL_CALL_UPDATE', 'EXECUTING'],
      ['status-update', 'TOOL_CALL_UPDATE', 'FAILED'],
      ['status-update', 'TEXT_CONTENT', 'working'],
      ['status-update', 'STATE_CHANGE', 'completed'],
    ],
    'no input-required: a read never waits for approval',
  );
  t.notOk('confirmation_request' in dataOf(ev[2]), 'the PENDING card asks nothing');
  const failed = dataOf(ev[4]);
  t.equal(failed.tool_name, 'read_file');
  t.equal(failed.error.type, 'path_outside_workspace');
  t.match(failed.error.message, /file_path "\.\.\/\.\.\/etc\/passwd" is outside the workspace/);
  t.match(textOf(ev[4]), /^read_file failed: file_path "\.\.\/\.\.\/etc\/passwd" is outside the workspace/);
  t.equal(textOf(ev[5]), 'Could not read it.');
});

t.test('unknown tool: FAILED with type unknown_tool', async (t) => {
  const srv = await startServer(t);
  const ev = await start(srv, 'unknown tool please');
  const calls = ev.map(dataOf).filter(Boolean);
  t.same(
    calls.map((c: any) => c.status),
    ['PENDING', 'EXECUTING', 'FAILED'],
  );
  const failed = calls.at(-1);
  t.equal(failed.tool_name, 'frobnicate');
  t.same(failed.input_parameters, { x: 1 });
  t.equal(failed.error.type, 'unknown_tool');
  t.match(failed.error.message, /^Unknown tool "frobnicate"\. Available tools: /);
  t.match(failed.error.message, /run_shell_command/);
  t.equal(ev.at(-1).status.state, 'completed');
  t.equal(textOf(ev.at(-2)), 'No such tool.');
});

t.test('tasks/cancel while shell hang runs', async (t) => {
  const srv = await startServer(t);
  const first = await start(srv, 'shell hang forever');
  const task = first[0];
  const card = dataOf(first[2]);
  t.equal(card.confirmation_request.execute_details.command, 'sleep 30');

  const abort = new AbortController();
  t.teardown(() => abort.abort());
  const res = await fetch(srv.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 77,
      method: 'message/stream',
      params: { message: confirmMessage(task.id, task.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' }) },
    }),
    signal: abort.signal,
  });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  const events: any[] = [];
  const readUntil = async (stop: (r: any) => boolean): Promise<boolean> => {
    for (;;) {
      const blocks = buf.split(/\r?\n\r?\n/);
      buf = blocks.pop() ?? '';
      for (const ev of parseSse(blocks.join('\n\n') + '\n\n')) {
        events.push(ev.data.result);
        if (stop(ev.data.result)) return true;
      }
      const { value, done } = await reader.read();
      if (done) return false;
      buf += decoder.decode(value, { stream: true });
    }
  };
  t.ok(await readUntil((r) => dataOf(r)?.status === 'EXECUTING'), 'the command started');

  let running: Array<{ pid: number; cmd: string }> = [];
  for (let i = 0; i < 100 && !running.some((p) => /^sleep 30$/.test(p.cmd)); i++) {
    running = processesIn(srv.workspace);
    await sleep(50);
  }
  t.ok(
    running.some((p) => /^sleep 30$/.test(p.cmd)),
    'sleep 30 runs in the workspace',
  );

  const canceled = await rpc(srv.url, 'tasks/cancel', { id: task.id });
  t.equal(canceled.status, 200);
  t.equal(canceled.json.error, undefined);
  t.equal(canceled.json.result.kind, 'task');
  t.equal(canceled.json.result.id, task.id);
  t.equal(canceled.json.result.status.state, 'canceled', 'tasks/cancel returns the canceled task');

  t.equal(await readUntil(() => false), false, 'the stream then ends');
  const tail = events.slice(events.findIndex((r) => dataOf(r)?.status === 'EXECUTING') + 1);
  t.same(
    tail.map((r) => [devtool(r).kind, dataOf(r)?.status ?? r.status.state, r.final]),
    [
      ['TOOL_CALL_UPDATE', 'CANCELLED', false],
      ['STATE_CHANGE', 'canceled', true],
    ],
    'the call goes CANCELLED, then the task ends canceled (final)',
  );
  const cancelled = dataOf(tail[0]);
  t.equal(cancelled.tool_call_id, card.tool_call_id);
  t.notOk('live_content' in cancelled);

  let left = processesIn(srv.workspace);
  for (let i = 0; i < 100 && left.length > 0; i++) {
    await sleep(50);
    left = processesIn(srv.workspace);
  }
  t.same(left, [], 'no process of the command is left (sleep 30 and its bash are gone)');
  t.equal((await rpc(srv.url, 'tasks/get', { id: task.id })).json.result.status.state, 'canceled');
  const again = await rpc(srv.url, 'tasks/cancel', { id: task.id });
  t.equal(again.json.error.code, -32002, 'a second cancel: not cancelable');
});
