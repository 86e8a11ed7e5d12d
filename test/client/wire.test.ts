/**
 * The client library's edges, without a server: the v1.0 shapes normalised to v0.3, ToolCall
 * objects the scripted scenarios do not produce (MCP, generic, structured output, legacy MCP and
 * errors), SSE frames carrying errors, and HTTP answers that are not JSON-RPC.
 */
import t from 'tap';
import {
  A2AClientError,
  A2AConnection,
  emptyView,
  foldEvent,
  itemOf,
  normalizeResult,
  normalizeState,
  readSse,
  StreamDroppedError,
  TaskSession,
} from '../../src/client/index.js';
import { legacyCard, rfcCard } from '../../src/client/cards.js';
import { URI } from '../support/server.js';

t.test('states and results of either version', async (t) => {
  t.equal(normalizeState('TASK_STATE_INPUT_REQUIRED'), 'input-required');
  t.equal(normalizeState('TASK_STATE_CANCELLED'), 'canceled');
  t.equal(normalizeState('TASK_STATE_AUTH_REQUIRED'), 'auth-required');
  t.equal(normalizeState('working'), 'working');
  t.equal(normalizeState('sleeping'), 'unknown');
  t.equal(normalizeState(7), 'unknown');
  t.equal(normalizeResult('x'), undefined);
  t.equal(normalizeResult({ nothing: true }), undefined);
  t.strictSame(normalizeResult({ id: 't', contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' } }), {
    kind: 'task',
    id: 't',
    contextId: 'c',
    status: { state: 'completed' },
    history: [],
    artifacts: [],
  });
  t.strictSame(
    normalizeResult({
      messageId: 'm',
      parts: [{ text: 'hi', metadata: { a: 1 } }, 5, { url: 'https://x/y.png' }, { raw: 'AAA=' }, { file: { uri: 'f' } }, { other: 1 }],
    }),
    {
      kind: 'message',
      messageId: 'm',
      role: 'agent',
      parts: [
        { kind: 'text', text: 'hi', metadata: { a: 1 } },
        { kind: 'file', file: { url: 'https://x/y.png' } },
        { kind: 'file', file: { raw: 'AAA=' } },
        { kind: 'file', file: { uri: 'f' } },
      ],
    },
  );
  t.match(
    normalizeResult({
      artifactUpdate: {
        taskId: 't',
        contextId: 'c',
        artifact: { artifactId: 'a', name: 'n', parts: [{ text: 'x' }], metadata: { m: 1 } },
        append: true,
        lastChunk: true,
        metadata: { k: 1 },
      },
    }),
    {
      kind: 'artifact-update',
      append: true,
      lastChunk: true,
      artifact: { artifactId: 'a', name: 'n', metadata: { m: 1 } },
      metadata: { k: 1 },
    },
  );
  t.strictSame(normalizeResult({ kind: 'artifact-update', artifact: null }), {
    kind: 'artifact-update',
    taskId: '',
    contextId: '',
    artifact: { artifactId: '', parts: [] },
  });
  t.match(normalizeResult({ kind: 'status-update', status: null }), { kind: 'status-update', status: { state: 'unknown' }, final: false });
  t.strictSame(normalizeResult({ message: { role: 'ROLE_USER', parts: 'no', metadata: { x: 1 } } }), {
    kind: 'message',
    role: 'user',
    messageId: '',
    parts: [],
    metadata: { x: 1 },
  });
  t.strictSame(normalizeResult({ kind: 'task', history: 'no', artifacts: [null], metadata: { m: 1 } }), {
    kind: 'task',
    id: '',
    contextId: '',
    status: { state: 'unknown' },
    history: [],
    artifacts: [{ artifactId: '', parts: [] }],
    metadata: { m: 1 },
  });
});

t.test('cards the scripted scenarios do not draw', async (t) => {
  const mcp = rfcCard(
    undefined,
    {
      tool_call_id: 'tc1',
      status: 'PENDING',
      tool_name: 'gh__issue',
      confirmation_request: { options: [{ id: 'proceed_always_server' }, 'x'], mcp_details: { server_name: 'gh', tool_name: 'issue' } },
    },
    undefined,
  );
  t.same(mcp.mcp, { server: 'gh', tool: 'issue' });
  t.same(mcp.options, [{ id: 'proceed_always_server', label: 'proceed_always_server' }]);
  t.same(mcp.history, [{ status: 'PENDING' }]);
  const done = rfcCard(mcp, { tool_call_id: 'tc1', status: 'SUCCEEDED', output: { structured_data: { n: 1 } } }, 'now');
  t.same(done.result, {});
  t.equal(done.toolName, 'gh__issue', 'what a later update leaves out is kept');
  t.same(done.mcp, mcp.mcp);
  const odd = rfcCard(
    undefined,
    {
      status: 'SLEEPING',
      error: { type: 'x' },
      confirmation_request: { generic_details: { description: 'd' }, file_edit_details: { file_name: 'a.txt' } },
    },
    undefined,
    'reason',
  );
  t.equal(odd.status, 'PENDING', 'an unknown status reads as PENDING');
  t.same(odd.diff, { path: 'a.txt', unified: '', newContent: '' });
  t.equal(odd.id, '');
  const failed = rfcCard(odd, { tool_call_id: 'tc2', status: 'FAILED' }, undefined, 'from the text part');
  t.equal(failed.failureReason, 'from the text part');
  t.same(failed.options, []);

  const legacy = legacyCard(
    undefined,
    {
      request: { callId: 'c1', name: 'gh__issue', args: { n: 1 } },
      status: 'awaiting_approval',
      confirmationDetails: { type: 'mcp', serverName: 'gh', toolName: 'issue' },
      tool: { description: 'Issues' },
    },
    undefined,
  );
  t.same(legacy.mcp, { server: 'gh', tool: 'issue' });
  t.same(
    legacy.options.map((o) => o.id),
    ['proceed_once', 'proceed_always_tool', 'proceed_always_server', 'cancel'],
  );
  const errored = legacyCard(legacy, { request: {}, status: 'error', response: { error: { message: 'denied' } } }, 'now');
  t.equal(errored.failureReason, 'denied');
  t.equal(errored.id, 'c1');
  const text = legacyCard(
    undefined,
    { status: 'error', response: { responseParts: [{ functionResponse: { response: { output: 'exit 3' } } }, 1] } },
    undefined,
  );
  t.equal(text.failureReason, 'exit 3');
  const plain = legacyCard(
    undefined,
    { status: 'awaiting_approval', confirmationDetails: { type: 'info' }, response: { responseParts: 'x' } },
    undefined,
  );
  t.same(
    plain.options.map((o) => o.id),
    ['proceed_once', 'proceed_always', 'cancel'],
  );
  t.equal(plain.status, 'PENDING');
  const edit = legacyCard(
    undefined,
    { status: 'scheduled', confirmationDetails: { type: 'edit', fileName: 'a', fileDiff: '@@', originalContent: 'o' } },
    undefined,
  );
  t.same(edit.diff, { path: 'a', unified: '@@', oldContent: 'o', newContent: '' });
});

t.test('the fold: pauses, errors and other devtool events', async (t) => {
  const update = (kind: string, extra: Record<string, unknown> = {}) => ({
    kind: 'status-update',
    taskId: 't',
    contextId: 'c',
    status: { state: 'working' },
    final: false,
    metadata: { [URI]: { kind, model: 'm' } },
    ...extra,
  });
  let v = foldEvent(emptyView(), {
    id: '1',
    event: update('THOUGHT', {
      status: { state: 'working', message: { kind: 'message', role: 'agent', parts: [{ kind: 'data', data: { subject: 1 } }] } },
    }),
  });
  t.same(v.thoughts, [{ subject: '', description: '' }]);
  v = foldEvent(v, { id: '2', event: { ...update('STATE_CHANGE'), metadata: { [URI]: { kind: 'STATE_CHANGE', error: 'quota' } } } });
  t.equal(v.error, 'quota', 'an error beside a state');
  v = foldEvent(v, {
    id: '3',
    event: update('TOOL_CALL_UPDATE', {
      status: { state: 'working', message: { kind: 'message', role: 'agent', parts: [{ kind: 'data', data: { nope: 1 } }] } },
    }),
  });
  t.same(v.cards, [], 'a DataPart that is no ToolCall');
  v = foldEvent(v, { id: '4', event: { kind: 'status-update', taskId: 't', contextId: 'c', status: { state: 'failed' }, final: true } });
  t.equal(v.error, 'the task failed', 'a failure without a reason still says so');
  const legacyThought = foldEvent(emptyView(), {
    event: {
      kind: 'status-update',
      taskId: 't',
      contextId: 'c',
      status: {
        state: 'working',
        message: { kind: 'message', role: 'agent', parts: [{ kind: 'data', data: { subject: 's', description: 'd' } }] },
      },
      metadata: { coderAgent: { kind: 'thought' } },
    },
  });
  t.equal(legacyThought.dialect, 'legacy');
  t.equal(legacyThought.model, undefined);
  const plain = foldEvent(emptyView(), {
    event: {
      kind: 'status-update',
      taskId: 't',
      contextId: 'c',
      status: { state: 'working', message: { kind: 'message', role: 'agent', parts: [{ kind: 'text', text: 'plain A2A' }] } },
    },
  });
  t.equal(plain.statusMessage, 'plain A2A', 'an agent without the extension: its status text');
  const artifact = foldEvent(
    foldEvent(emptyView(), {
      event: {
        kind: 'artifact-update',
        taskId: 't',
        contextId: 'c',
        artifact: { artifactId: 'a', name: 'n', parts: [{ kind: 'text', text: 'x' }] },
      },
    }),
    {
      event: { kind: 'artifact-update', taskId: 't', contextId: 'c', artifact: { artifactId: 'a', parts: [{ kind: 'text', text: 'y' }] } },
    },
  );
  t.same(artifact.artifacts, [{ artifactId: 'a', name: 'n', text: 'y', data: [] }], 'a chunk without append replaces');
});

const body = (...chunks: string[]) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (const c of chunks) controller.enqueue(new TextEncoder().encode(c));
      controller.close();
    },
  });

async function items(stream: ReadableStream<Uint8Array>) {
  const out = [];
  for await (const item of readSse(stream)) out.push(item);
  return out;
}

t.test('SSE frames', async (t) => {
  t.same(await items(body('id: 1\ndata: {"jsonrpc":"2.0","id":1,', '"result":{"a":1}}\n\n: keep-alive\n\ndata: {"b":2}\n\n')), [
    { id: '1', event: { a: 1 } },
    { event: { b: 2 } },
  ]);
  await t.rejects(items(body('data: {"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error","data":{"x":1}}}\n\n')), {
    name: 'A2AClientError',
    code: -32603,
    data: { x: 1 },
  });
  await t.rejects(items(body('data: {"error":{}}\n\n')), { code: -32603, message: 'error in stream' });
  await t.rejects(items(body('data: not json\n\n')), { code: -32700 });
  const failing = new ReadableStream<Uint8Array>({
    pull(controller) {
      controller.error(new Error('socket hang up'));
    },
  });
  await t.rejects(items(failing), StreamDroppedError);
  t.same(itemOf({ data: '{"result":1}', id: '' }), { event: 1 }, 'an empty id is none');
});

t.test('HTTP answers that are not what a client expects', async (t) => {
  const answer =
    (status: number, text: string, type = 'application/json'): typeof fetch =>
    () =>
      Promise.resolve(new Response(text, { status, headers: { 'content-type': type } }));
  const conn = (f: typeof fetch) => new A2AConnection({ baseUrl: 'http://127.0.0.1:9/x', fetch: f });
  await t.rejects(conn(answer(500, 'oops')).getAgentCard(), { code: -32603, httpStatus: 500, message: /HTTP 500/ });
  await t.rejects(conn(answer(502, '<html>')).getTask('t'), { message: /not JSON/, httpStatus: 502 });
  await t.rejects(conn(answer(200, '{"jsonrpc":"2.0","id":1}')).getTask('t'), { message: /not a JSON-RPC answer/ });
  await t.rejects(conn(answer(200, '{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}')).getTask('t'), { code: -32603, message: 'HTTP 200' });
  await t.rejects(conn(answer(200, '{"jsonrpc":"2.0","id":1,"result":5}')).getTask('t'), { message: /answered no task/ });
  await t.rejects(conn(answer(200, '{"jsonrpc":"2.0","id":1,"result":{"kind":"message","messageId":"m","parts":[]}}')).cancel('t'), {
    message: /answered no task/,
  });
  t.same(await conn(answer(200, '{"jsonrpc":"2.0","id":1,"result":{}}')).listTasks(), { tasks: [] });
  const plain = [];
  for await (const item of conn(answer(200, '{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t"}}')).resubscribe('t'))
    plain.push(item);
  t.same(plain, [{ event: { kind: 'task', id: 't' } }], 'an answer without a stream is one item');
  const aborted = new AbortController();
  aborted.abort();
  const abortFetch: typeof fetch = (_input, init) =>
    Promise.reject(Object.assign(new Error('aborted'), { name: 'AbortError', signal: init?.signal }));
  await t.rejects(
    (async () => {
      for await (const _ of conn(abortFetch).stream({ text: 'x' }, { signal: aborted.signal })) void _;
    })(),
    { name: 'AbortError' },
    'an abort is not a dropped stream',
  );
  t.type(new A2AClientError(1, 'm'), Error);
});

t.test('a stream the server ends before a pause is resumed like a dropped one', async (t) => {
  const frame = (id: number, result: unknown) => `id: ${id}\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: 1, result })}\n\n`;
  const calls: Array<{ method: string; lastEventId?: string }> = [];
  const sse = (text: string) => new Response(text, { headers: { 'content-type': 'text/event-stream' } });
  const fake: typeof fetch = (_input, init) => {
    const headers = init?.headers as Record<string, string>;
    const { method } = JSON.parse(init?.body as string) as { method: string };
    calls.push({ method, ...(headers['last-event-id'] !== undefined ? { lastEventId: headers['last-event-id'] } : {}) });
    if (method === 'message/stream')
      return Promise.resolve(sse(frame(1, { kind: 'task', id: 't', contextId: 'c', status: { state: 'working' } })));
    return Promise.resolve(
      sse(frame(2, { kind: 'status-update', taskId: 't', contextId: 'c', status: { state: 'completed' }, final: true })),
    );
  };
  const view = await new TaskSession(new A2AConnection({ baseUrl: 'http://127.0.0.1:9/', fetch: fake }), { retryBaseMs: 1 }).send('hi');
  t.equal(view.state, 'completed');
  t.same(calls, [{ method: 'message/stream' }, { method: 'tasks/resubscribe', lastEventId: '1' }]);
});
