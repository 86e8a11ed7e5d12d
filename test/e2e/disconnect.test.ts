/**
 * A client connection is not the task: dropping it never cancels or stalls a task, a
 * paused task is answered on a new connection, and `tasks/resubscribe` replays what a
 * client that lost its stream needs (snapshot, pending cards, the pause).
 */
import t from 'tap';
import http from 'node:http';
import { parseSse, rpc } from '../support/sse.js';
import type { SseEvent } from '../support/sse.js';
import { until } from '../support/core.js';
import { confirmMessage, dataOf, devtool, startServer, URI, userMessage } from '../support/server.js';

let nextId = 1000;
const envelope = (method: string, params: unknown) => JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params });

/**
 * POSTs a JSON-RPC stream request on its own TCP connection (no keep-alive agent) and reads
 * SSE events until `dropWhen` says so, then destroys the socket; or until the server ends it.
 */
function streamOnOwnConnection(
  url: string,
  body: string,
  dropWhen: (ev: SseEvent) => boolean = () => false,
): Promise<{ events: SseEvent[]; localPort: number; dropped: boolean }> {
  return new Promise((resolve, reject) => {
    const events: SseEvent[] = [];
    let buf = '';
    let localPort = 0;
    let dropped = false;
    const req = http.request(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (dropped) return;
        buf += chunk;
        const blocks = buf.split(/\r?\n\r?\n/);
        buf = blocks.pop() ?? '';
        for (const ev of parseSse(blocks.join('\n\n') + '\n\n')) {
          events.push(ev);
          if (dropWhen(ev)) {
            dropped = true;
            req.destroy();
            resolve({ events, localPort, dropped });
            return;
          }
        }
      });
      res.on('end', () => resolve({ events, localPort, dropped }));
      res.on('error', (err) => (dropped ? undefined : reject(err)));
    });
    req.on('socket', (s) => s.on('connect', () => (localPort = s.localPort ?? 0)));
    req.on('error', (err) => (dropped ? undefined : reject(err)));
    req.end(body);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function pollState(url: string, taskId: string, want: string, timeoutMs = 10_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  let task: any;
  while (Date.now() < deadline) {
    task = (await rpc(url, 'tasks/get', { id: taskId })).json.result;
    if (task?.status?.state === want) return task;
    await sleep(50);
  }
  return task;
}

/** Starts `prompt`, reads to its pause, and returns the task and its pending card. */
async function pauseOn(url: string, workspace: string, prompt: string): Promise<{ task: any; card: any; events: any[] }> {
  const res = await rpc(url, 'message/stream', { message: userMessage(prompt, { metadata: { [URI]: { workspace_path: workspace } } }) });
  const events = res.events!.map((e) => e.data.result);
  const task = events[0];
  const card = dataOf(events.find((r) => dataOf(r)?.status === 'PENDING'));
  return { task, card, events };
}

t.test('a client that drops right after input-required confirms on a new connection', async (t) => {
  const srv = await startServer(t);
  const first = await streamOnOwnConnection(
    srv.url,
    envelope('message/stream', { message: userMessage('write a greeting', { metadata: { [URI]: { workspace_path: srv.workspace } } }) }),
    (ev) => ev.data.result?.status?.state === 'input-required',
  );
  t.equal(first.dropped, true, 'the client hung up on seeing input-required');
  const ev = first.events.map((e) => e.data.result);
  t.same(
    ev.map((r) => [r.kind, r.status.state]),
    [
      ['task', 'submitted'],
      ['status-update', 'working'],
      ['status-update', 'working'],
      ['status-update', 'input-required'],
    ],
  );
  const task = ev[0];
  const card = dataOf(ev[2]);
  t.equal(card.status, 'PENDING');

  // The server saw the hang-up: the dropped connection was this server's only one, and it is closed on its side.
  const connections = () =>
    new Promise<number>((resolve, reject) => srv.app.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
  await until('the server to close the dropped connection', async () => (await connections()) === 0);
  const got = (await rpc(srv.url, 'tasks/get', { id: task.id })).json.result;
  t.equal(got.status.state, 'input-required', 'the task still waits after the hang-up');

  const second = await streamOnOwnConnection(
    srv.url,
    envelope('message/stream', {
      message: confirmMessage(task.id, task.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' }),
    }),
  );
  t.not(second.localPort, first.localPort, 'a new TCP connection');
  const ev2 = second.events.map((e) => e.data.result);
  t.same(
    ev2.map((r) => [devtool(r)?.kind, dataOf(r)?.status ?? r.status.state]),
    [
      ['TOOL_CALL_UPDATE', 'EXECUTING'],
      ['TOOL_CALL_UPDATE', 'SUCCEEDED'],
      ['TEXT_CONTENT', 'working'],
      ['TEXT_CONTENT', 'working'],
      ['STATE_CHANGE', 'completed'],
    ],
  );
  t.equal(ev2.at(-1).final, true);
  t.equal((await rpc(srv.url, 'tasks/get', { id: task.id })).json.result.status.state, 'completed');
});

t.test('a client that drops mid-stream does not cancel the task', async (t) => {
  const srv = await startServer(t);
  const { task, card } = await pauseOn(srv.url, srv.workspace, 'shell slow please');
  t.match(card, { tool_name: 'run_shell_command', status: 'PENDING', confirmation_request: { execute_details: {} } });

  const abort = new AbortController();
  const res = await fetch(srv.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: envelope('message/stream', {
      message: confirmMessage(task.id, task.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' }),
    }),
    signal: abort.signal,
  });
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^text\/event-stream/);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  const seen: any[] = [];
  read: for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    const blocks = buf.split(/\r?\n\r?\n/);
    buf = blocks.pop() ?? '';
    for (const ev of parseSse(blocks.join('\n\n') + '\n\n')) {
      seen.push(ev.data.result);
      if (dataOf(ev.data.result)?.status === 'EXECUTING') break read;
    }
  }
  abort.abort();
  await reader.cancel().catch(() => undefined);
  t.same(
    seen.map((r) => dataOf(r)?.status),
    ['EXECUTING'],
    'the client saw only the first EXECUTING update before it dropped',
  );

  const mid = (await rpc(srv.url, 'tasks/get', { id: task.id })).json.result;
  t.equal(mid.status.state, 'working', 'right after the drop the task still runs');

  const done = await pollState(srv.url, task.id, 'completed');
  t.equal(done?.status?.state, 'completed', 'the task completed with nobody listening');
  // What the dropped client missed must be recoverable from the task: its history holds the
  // agent's messages, the ToolCall's final update among them.
  const calls = (done?.history ?? [])
    .flatMap((m: any) => m.parts ?? [])
    .filter((p: any) => p.kind === 'data' && p.data?.tool_call_id === card.tool_call_id)
    .map((p: any) => p.data);
  const final = calls.find((c: any) => c.status === 'SUCCEEDED');
  t.ok(final, 'tasks/get history holds the SUCCEEDED ToolCall');
  t.match(final?.output?.text, /line1\nline2\nline3\nline4\nline5\n/, 'with the whole output, line5 included');
});

t.test('tasks/resubscribe', async (t) => {
  const srv = await startServer(t);

  t.test('on a task paused at input-required: snapshot, pending card, pause, end', async (t) => {
    const { task, card, events } = await pauseOn(srv.url, srv.workspace, 'write a greeting');
    const res = await rpc(srv.url, 'tasks/resubscribe', { id: task.id });
    t.equal(res.status, 200);
    t.match(res.contentType, /^text\/event-stream/);
    const ev = res.events!.map((e) => e.data.result);
    t.same(
      ev.map((r) => [r.kind, r.status.state, devtool(r)?.kind ?? null, dataOf(r)?.status ?? null, r.final ?? null]),
      [
        ['task', 'input-required', null, null, null],
        ['status-update', 'working', 'TOOL_CALL_UPDATE', 'PENDING', false],
        ['status-update', 'input-required', 'STATE_CHANGE', null, true],
      ],
    );
    t.equal(ev[0].id, task.id);
    t.same(dataOf(ev[1]), card, 'the same card the original stream carried');
    t.same(ev[2].status.message, events.at(-1).status.message, 'the same pause message');
    // Still answerable afterwards.
    const after = await rpc(srv.url, 'message/stream', {
      message: confirmMessage(task.id, task.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'cancel' }),
    });
    const ev2 = after.events!.map((e) => e.data.result);
    t.equal(dataOf(ev2[0])?.status, 'CANCELLED', 'the call is declined');
    t.equal(ev2.at(-1).status.state, 'completed');
  });

  t.test('on a completed task: the snapshot, then the end', async (t) => {
    const first = await rpc(srv.url, 'message/stream', { message: userMessage('hello there') });
    const task = first.events![0].data.result;
    t.equal(first.events!.at(-1)!.data.result.status.state, 'completed');
    const res = await rpc(srv.url, 'tasks/resubscribe', { id: task.id });
    const ev = res.events!.map((e) => e.data.result);
    t.same(
      ev.map((r) => [r.kind, r.id, r.status.state]),
      [['task', task.id, 'completed']],
    );
  });

  t.test('on a working task: the snapshot, then live events to the end', async (t) => {
    const { task, card } = await pauseOn(srv.url, srv.workspace, 'shell slow again');
    const confirm = rpc(srv.url, 'message/stream', {
      message: confirmMessage(task.id, task.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' }),
    });
    await pollState(srv.url, task.id, 'working', 5000);
    const res = await rpc(srv.url, 'tasks/resubscribe', { id: task.id });
    const ev = res.events!.map((e) => e.data.result);
    t.equal(ev[0].kind, 'task');
    t.equal(ev[0].status.state, 'working');
    t.equal(ev.at(-1).status.state, 'completed');
    t.equal(ev.at(-1).final, true);
    t.ok(
      ev.some((r) => dataOf(r)?.status === 'SUCCEEDED'),
      'the live SUCCEEDED update reaches the resubscriber',
    );
    await confirm;
  });

  t.test('on an unknown task: -32001 (v0.3: as the one event of a stream; v1.0: before any SSE)', async (t) => {
    const res = await rpc(srv.url, 'tasks/resubscribe', { id: 'no-such-task' });
    t.equal(res.status, 200);
    t.equal(res.events?.length, 1);
    t.equal(res.events?.[0]?.data.error.code, -32001);
    const v1 = await rpc(srv.url, 'SubscribeToTask', { id: 'no-such-task' }, { version: '1.0' });
    t.equal(v1.json.error.code, -32001);
  });
});
