/**
 * RFC Appendix A driven by the real @a2a-js/sdk 1.3.0 client over HTTP, in both wire
 * versions, plus the non-streaming v0.3 `message/send` (blocking by default, or not).
 *
 * What the SDK client does (found while writing these tests):
 * - `LegacyJsonRpcTransport` (compat/v0_3/client) takes v1.0-shaped requests (proto-shaped
 *   Message: `role: Role.ROLE_USER`, parts `{ content: { $case, value } }`) and translates them
 *   to v0.3 JSON-RPC (`message/stream`, no `A2A-Version` header). It yields v1.0 StreamResponse
 *   objects (`{ payload: { $case: 'task' | 'statusUpdate', value } }`, states as TaskState
 *   numbers), so the v0.3 `final` flag never reaches the caller: the stream simply ends.
 *   It only sends `configuration.blocking` when the request has a `configuration`
 *   (`blocking = !returnImmediately`); without one the server's default applies.
 * - `ClientFactory.createFromUrl` needs nothing special: its `DefaultAgentCardResolver` always
 *   sends `A2A-Version: 1.0` when it fetches `/.well-known/agent-card.json`, so this server
 *   answers the v1.0 card (`supportedInterfaces`). The factory picks the interface with
 *   `protocolVersion: '1.0'` over the duplicated legacy one, and the `Client` injects
 *   `A2A-Version: <transport.protocolVersion>` (1.0) into every JSON-RPC call. No custom
 *   fetchImpl is required; one is used below only to record and assert those headers.
 * - JSON-RPC errors come back as typed SDK errors (`TaskNotCancelableError`, …) carrying the
 *   wire code in `envelopeCode`.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { StreamResponse, Task } from '@a2a-js/sdk';
import { LegacyJsonRpcTransport } from '@a2a-js/sdk/compat/v0_3/client';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import type { Transport } from '@a2a-js/sdk/client';
import { rpc } from '../support/sse.js';
import { startServer, URI, userMessage } from '../support/server.js';
import type { TestServer } from '../support/server.js';
import { dataPart, sdkMessage as message, sendRequest as request, textPart } from '../support/sdk-messages.js';
import { collect, stateOf, toolCallOf } from '../support/sdk-client.js';

/** The subtest type (the last `t.test` overload takes just the callback). */
type Test = Parameters<Parameters<typeof t.test>[0]>[0];

function textOfUpdate(r: StreamResponse): string {
  if (r.payload?.$case !== 'statusUpdate') return '';
  return (r.payload.value.status?.message?.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
}

/** [case, state, dev-tool kind, ToolCall status] per event. */
function summary(events: StreamResponse[]): unknown[] {
  return events.map((r) => {
    if (r.payload?.$case === 'task') return ['task', stateOf(r.payload.value.status?.state), null, null];
    if (r.payload?.$case === 'statusUpdate') {
      const u = r.payload.value;
      return ['statusUpdate', stateOf(u.status?.state), u.metadata?.[URI]?.kind ?? null, toolCallOf(r)?.status ?? null];
    }
    return [r.payload?.$case ?? 'none', null, null, null];
  });
}

/** The flow shared by both wire versions, over anything with the Transport's stream/get/cancel. */
async function appendixA(t: Test, srv: TestServer, client: Pick<Transport, 'sendMessageStream' | 'getTask' | 'cancelTask'>): Promise<void> {
  const first = await collect(
    client.sendMessageStream(request(message([textPart('write a greeting')], { metadata: { [URI]: { workspace_path: srv.workspace } } }))),
  );
  t.same(
    summary(first),
    [
      ['task', 'submitted', null, null],
      ['statusUpdate', 'working', 'STATE_CHANGE', null],
      ['statusUpdate', 'working', 'TOOL_CALL_UPDATE', 'PENDING'],
      ['statusUpdate', 'input-required', 'STATE_CHANGE', null],
    ],
    'Task, working, PENDING card, input-required; then the stream ends',
  );
  const task = first[0].payload!.value as Task;
  t.match(task.id, /^[0-9a-f-]{36}$/, 'the Task carries a new task id');
  t.match(task.contextId, /^[0-9a-f-]{36}$/, 'and a new context id');
  const card = toolCallOf(first[2]);
  t.match(card, {
    tool_name: 'write_file',
    status: 'PENDING',
    input_parameters: { file_path: 'hello.txt', content: 'hello world\n' },
    confirmation_request: {
      file_edit_details: { file_name: 'hello.txt', file_path: path.join(srv.workspace, 'hello.txt'), new_content: 'hello world\n' },
    },
  });
  t.same(
    card.confirmation_request.options.map((o: { id: string }) => o.id),
    ['proceed_once', 'proceed_always', 'modify_with_editor', 'cancel'],
  );
  t.match(textOfUpdate(first[3]), card.tool_call_id, 'the pause names the waiting call');

  const second = await collect(
    client.sendMessageStream(
      request(
        message([dataPart({ tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' })], {
          taskId: task.id,
          contextId: task.contextId,
        }),
      ),
    ),
  );
  t.same(
    summary(second),
    [
      ['statusUpdate', 'working', 'TOOL_CALL_UPDATE', 'EXECUTING'],
      ['statusUpdate', 'working', 'TOOL_CALL_UPDATE', 'SUCCEEDED'],
      ['statusUpdate', 'working', 'TEXT_CONTENT', null],
      ['statusUpdate', 'working', 'TEXT_CONTENT', null],
      ['statusUpdate', 'completed', 'STATE_CHANGE', null],
    ],
    'EXECUTING, SUCCEEDED, text deltas, completed',
  );
  t.ok(
    second.every(
      (r) => r.payload?.$case === 'statusUpdate' && r.payload.value.taskId === task.id && r.payload.value.contextId === task.contextId,
    ),
    'every update names the same task and context',
  );
  const done = toolCallOf(second[1]);
  t.equal(done.tool_call_id, card.tool_call_id, 'the same tool_call_id on every update');
  t.match(done.output, { diff: { file_name: 'hello.txt', new_content: 'hello world\n' } });
  t.notOk('confirmation_request' in done, 'no confirmation_request once answered');
  t.equal(second.slice(2, 4).map(textOfUpdate).join(''), 'Wrote hello.txt.');
  t.equal(readFileSync(path.join(srv.workspace, 'hello.txt'), 'utf8'), 'hello world\n', 'the file was written');

  const got = await client.getTask({ tenant: '', id: task.id });
  t.equal(got.id, task.id);
  t.equal(stateOf(got.status?.state), 'completed', 'getTask after completion: completed');

  const err: any = await client.cancelTask({ tenant: '', id: task.id, metadata: undefined }).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err, 'cancelTask on a completed task rejects');
  t.equal(err?.envelopeCode, -32002, 'with JSON-RPC code -32002');
  t.equal(err?.name, 'TaskNotCancelableError');
}

t.test('Appendix A with the SDK v0.3 LegacyJsonRpcTransport', async (t) => {
  const srv = await startServer(t);
  const transport = new LegacyJsonRpcTransport({ endpoint: srv.url });
  t.equal(transport.protocolVersion, '0.3');
  await appendixA(t, srv, transport);
});

t.test('Appendix A with the SDK v1.0 client from ClientFactory.createFromUrl', async (t) => {
  const srv = await startServer(t);

  t.test('the default factory negotiates v1.0 on its own', async (t) => {
    const client = await new ClientFactory().createFromUrl(srv.url);
    t.equal(client.protocolVersion, '1.0');
    t.equal(client.transport.protocolName, 'JSONRPC');
    const card = await client.getAgentCard();
    t.equal(card.capabilities?.streaming, true);
    t.match(card.capabilities?.extensions, [{ uri: URI, required: true }]);
    t.equal(card.capabilities?.extensions.length, 1, 'the development-tool extension only');
    // The SDK client posts to the URL the card advertises, so it must be where the server listens.
    t.same(
      card.supportedInterfaces.map((i) => [i.url, i.protocolBinding, i.protocolVersion]),
      [
        [srv.url, 'JSONRPC', '1.0'],
        [`${srv.url}v1`, 'HTTP+JSON', '1.0'],
        [srv.url, 'HTTP+JSON', '0.3'],
        [srv.url, 'JSONRPC', '0.3'],
      ],
      'the card advertises the address the server actually listens on',
    );
  });

  t.test('the flow, with the A2A-Version header of every request recorded', async (t) => {
    const seen: Array<{ url: string; version: string | null; method?: string }> = [];
    const listening = new URL(srv.url);
    const fetchImpl: typeof fetch = async (input, init) => {
      const body = typeof init?.body === 'string' ? (JSON.parse(init.body) as { method?: string }) : undefined;
      const href = input instanceof Request ? input.url : String(input);
      seen.push({ url: href, version: new Headers(init?.headers).get('a2a-version'), method: body?.method });
      // Workaround, see the test above: the server (started with PORT=0) advertises port 0
      // in its card; send those requests to the port it really listens on.
      const url = new URL(href);
      if (url.port === '0') url.port = listening.port;
      return fetch(url, init);
    };
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl })],
        cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
      }),
    );
    const client = await factory.createFromUrl(srv.url);
    t.equal(client.protocolVersion, '1.0');
    await appendixA(t, srv, {
      sendMessageStream: (p) => client.sendMessageStream(p),
      getTask: (p) => client.getTask(p),
      cancelTask: (p) => client.cancelTask(p),
    });
    t.same(seen[0], { url: new URL('/.well-known/agent-card.json', srv.url).href, version: '1.0', method: undefined });
    t.same(
      seen.slice(1).map((s) => [s.method, s.version]),
      [
        ['SendStreamingMessage', '1.0'],
        ['SendStreamingMessage', '1.0'],
        ['GetTask', '1.0'],
        ['CancelTask', '1.0'],
      ],
      'v1.0 method names, each with A2A-Version: 1.0',
    );
  });
});

t.test('v0.3 message/send through the SDK', async (t) => {
  const srv = await startServer(t);
  const transport = new LegacyJsonRpcTransport({ endpoint: srv.url });
  const settings = { [URI]: { workspace_path: srv.workspace } };

  t.test('without blocking it waits until the task pauses', async (t) => {
    const result = await transport.sendMessage(request(message([textPart('write a greeting')], { metadata: settings })));
    t.ok('status' in result, 'a Task, not a Message');
    const task = result as Task;
    t.equal(stateOf(task.status?.state), 'input-required');
    const parts = task.status?.message?.parts ?? [];
    const text = parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
    // The pause event itself is text-only (ToolCalls travel only as TOOL_CALL_UPDATEs); the
    // card that asks for approval is in the task's history, so a non-streaming client sees it.
    const cards = task.history.flatMap((m) => m.parts).filter((p) => p.content?.$case === 'data');
    const call = cards.at(-1)?.content?.value;
    t.match(text, /write_file \(tc_[0-9a-f-]{36}\)/, 'the prompt names the waiting tool call');
    t.match(
      call,
      {
        tool_name: 'write_file',
        status: 'PENDING',
        confirmation_request: { file_edit_details: { file_name: 'hello.txt', new_content: 'hello world\n' } },
      },
      'the pending ToolCall (with its confirmation_request) is in the history',
    );
    if (call) t.match(text, call.tool_call_id, 'the text and the DataPart name the same call');
  });

  t.test('the same request, raw: no configuration at all', async (t) => {
    const res = await rpc(srv.url, 'message/send', {
      message: userMessage('write a greeting', { metadata: settings }),
    });
    t.equal(res.status, 200);
    t.match(res.contentType, /^application\/json/);
    t.equal(res.json.result.kind, 'task');
    t.equal(res.json.result.status.state, 'input-required');
  });

  t.test('with blocking:false it returns at once with a non-final state', async (t) => {
    const result = await transport.sendMessage(
      request(message([textPart('write a greeting')], { metadata: settings }), {
        acceptedOutputModes: [],
        taskPushNotificationConfig: undefined,
        returnImmediately: true,
      }),
    );
    const task = result as Task;
    t.equal(stateOf(task.status?.state), 'working', 'working: the run goes on without the caller');
    // The task still reaches its pause afterwards.
    let state = '';
    for (let i = 0; i < 100 && state !== 'input-required'; i++) {
      state = stateOf((await transport.getTask({ tenant: '', id: task.id })).status?.state);
      if (state !== 'input-required') await new Promise((r) => setTimeout(r, 50));
    }
    t.equal(state, 'input-required', 'then pauses for the write_file approval');
  });

  t.test('blocking:false, raw', async (t) => {
    const res = await rpc(srv.url, 'message/send', {
      message: userMessage('hello there', { metadata: settings }),
      configuration: { blocking: false },
    });
    t.equal(res.json.result.kind, 'task');
    t.equal(res.json.result.status.state, 'working');
  });
});
