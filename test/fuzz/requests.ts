/**
 * Generated requests over every route: JSON-RPC (v0.3 and v1.0 method names, the extension
 * methods), the HTTP+JSON binding (v1.0 under `A2A-Version: 1.0`, v0.3 without), the legacy
 * REST side routes, and a few others; each from a valid request (the RFC's ToolCallConfirmation
 * DataParts, legacy `{callId, outcome}` answers) then mutated, with odd headers
 * (A2A-Version, A2A-Extensions, content-type, Last-Event-ID) and any of the principals.
 */
import fc from 'fast-check';
import { DEVTOOL_EXTENSION_URI } from '../../src/protocol/extension.js';
import type { FuzzRequest, Harness, Who } from './harness.js';
import { mutated, oddString, serialize } from './mutate.js';
import type { Json } from './mutate.js';

export interface Pool {
  /** Task ids, both principals', plus unknown ones. */
  tasks: string[];
  contexts: string[];
  calls: string[];
  /** Everything above, for mutations. */
  all: string[];
  workspace: string;
}

export function poolOf(h: Harness): Pool {
  const { a, b } = h.owned;
  const tasks = [a.rfc.taskId, a.legacy.taskId, a.done.taskId, b.rfc.taskId, b.legacy.taskId, b.done.taskId, 'no-such-task'];
  const contexts = [a.rfc.contextId, a.legacy.contextId, a.done.contextId, b.rfc.contextId, b.legacy.contextId, 'no-such-context'];
  const calls = [a.rfc.callId, a.legacy.callId, b.rfc.callId, b.legacy.callId, 'tc_nope'];
  return { tasks, contexts, calls, all: [...tasks, ...contexts, ...calls], workspace: h.workspace };
}

const who: fc.Arbitrary<Who> = fc.oneof({ weight: 4, arbitrary: fc.constant<Who>('b') }, fc.constantFrom<Who>('a', 'none', 'bad'));

const PROMPTS = ['write', 'read', 'hello', 'two writes', 'mixed', 'escape', 'unknown tool', 'yes', 'no', '/tools', '/memory show'];
const OPTIONS = [
  'proceed_once',
  'proceed_always',
  'proceed_always_tool',
  'proceed_always_server',
  'cancel',
  'modify_with_editor',
  'reject',
];

/** Percent-encoding; a lone surrogate (which encodeURIComponent refuses) becomes the invalid UTF-8 bytes of one. */
function enc(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    return `${encodeURIComponent(s.replace(/[\ud800-\udfff]/g, ''))}%ED%A0%80`;
  }
}

const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
/** Drops undefined members (an absent field). */
const compact = (o: Record<string, unknown>): Json => JSON.parse(JSON.stringify(o)) as Json;

/** What a user message says: a prompt (new task or follow-up), an RFC confirmation, a legacy answer. */
function partsData(p: Pool) {
  const confirmation = fc
    .record({
      tool_call_id: fc.constantFrom(...p.calls),
      selected_option_id: fc.constantFrom(...OPTIONS),
      file_details: maybe(fc.record({ new_content: fc.oneof(fc.constant('edited\n'), oddString) })),
    })
    .map(compact);
  const legacy = fc
    .record({ callId: fc.constantFrom(...p.calls), outcome: fc.constantFrom(...OPTIONS), newContent: maybe(fc.constant('edited\n')) })
    .map(compact);
  return { confirmation, legacy };
}

const metadataArb = (p: Pool) =>
  maybe(
    fc.constantFrom<Json>(
      { coderAgent: { kind: 'agent-settings', workspacePath: p.workspace } },
      { coderAgent: { kind: 'agent-settings', workspacePath: '/' } },
      { [DEVTOOL_EXTENSION_URI]: { slash_command: 'memory show' } },
      { [DEVTOOL_EXTENSION_URI]: { settings: { approvalMode: 'YOLO' } } },
      { [DEVTOOL_EXTENSION_URI]: { settings: { approvalMode: 'AUTO_EDIT', allowedTools: ['read_file'] } } },
    ),
  );

/** A v0.3 message (JSON-RPC and the legacy dialect). */
export function v03Message(p: Pool): fc.Arbitrary<Json> {
  const { confirmation, legacy } = partsData(p);
  const parts = fc.oneof(
    fc.constantFrom(...PROMPTS).map((text) => [{ kind: 'text', text }]),
    fc.array(confirmation, { minLength: 1, maxLength: 2 }).map((d) => d.map((data) => ({ kind: 'data', data }))),
    fc.array(legacy, { minLength: 1, maxLength: 2 }).map((d) => d.map((data) => ({ kind: 'data', data }))),
  );
  return fc
    .record({
      kind: fc.constant('message'),
      role: fc.constant('user'),
      messageId: fc.uuid(),
      parts,
      taskId: maybe(fc.constantFrom(...p.tasks)),
      contextId: maybe(fc.constantFrom(...p.contexts)),
      metadata: metadataArb(p),
    })
    .map(compact);
}

/** A v1.0 message (`parts: [{text}|{data}]`, ROLE_USER). */
function v1Message(p: Pool): fc.Arbitrary<Json> {
  const { confirmation } = partsData(p);
  return fc
    .record({
      messageId: fc.uuid(),
      role: fc.constant('ROLE_USER'),
      parts: fc.oneof(
        fc.constantFrom(...PROMPTS).map((text) => [{ text }]),
        confirmation.map((data) => [{ data }]),
      ),
      taskId: maybe(fc.constantFrom(...p.tasks)),
      contextId: maybe(fc.constantFrom(...p.contexts)),
      metadata: metadataArb(p),
    })
    .map(compact);
}

/** A v0.3 HTTP+JSON (proto JSON) message: `content: [{text}|{data: {data}}]`. */
function v03ProtoMessage(p: Pool): fc.Arbitrary<Json> {
  const { confirmation } = partsData(p);
  return fc
    .record({
      messageId: fc.uuid(),
      role: fc.constant('ROLE_USER'),
      content: fc.oneof(
        fc.constantFrom(...PROMPTS).map((text) => [{ text }]),
        confirmation.map((data) => [{ data: { data } }]),
      ),
      taskId: maybe(fc.constantFrom(...p.tasks)),
      contextId: maybe(fc.constantFrom(...p.contexts)),
    })
    .map(compact);
}

const HOOK = 'http://127.0.0.1:9/hook';

/** Valid params of each JSON-RPC method, by version. */
function rpcParams(p: Pool): { v03: fc.Arbitrary<[string, Json]>; v1: fc.Arbitrary<[string, Json]> } {
  const task = fc.constantFrom(...p.tasks);
  const ctx = fc.constantFrom(...p.contexts);
  const send = fc.record({ message: v03Message(p), configuration: maybe(fc.record({ blocking: fc.boolean(), historyLength: fc.nat(5) })) });
  const ext: Array<fc.Arbitrary<[string, Json]>> = [
    fc.constant(['commands/get', {}]),
    fc
      .record({
        command_path: fc.constantFrom<Json>(['memory', 'show'], ['tools'], ['init'], ['memory', 'add']),
        args: fc.constantFrom('', 'use pnpm'),
        context_id: maybe(ctx),
      })
      .map((x) => ['command/execute', compact(x)] as [string, Json]),
    fc
      .oneof(
        task.map((id) => ({ task_id: id })),
        ctx.map((id) => ({ context_id: id })),
      )
      .map((x) => ['audit/list', x] as [string, Json]),
  ];
  const v03 = fc.oneof(
    send.map((x) => ['message/send', compact(x)] as [string, Json]),
    send.map((x) => ['message/stream', compact(x)] as [string, Json]),
    task.map((id) => ['tasks/get', { id, historyLength: 2 }] as [string, Json]),
    task.map((id) => ['tasks/cancel', { id }] as [string, Json]),
    task.map((id) => ['tasks/resubscribe', { id }] as [string, Json]),
    task.map(
      (id) => ['tasks/pushNotificationConfig/set', { taskId: id, pushNotificationConfig: { url: HOOK, token: 'tok' } }] as [string, Json],
    ),
    task.map((id) => ['tasks/pushNotificationConfig/get', { id, pushNotificationConfigId: 'cfg' }] as [string, Json]),
    task.map((id) => ['tasks/pushNotificationConfig/list', { id }] as [string, Json]),
    task.map((id) => ['tasks/pushNotificationConfig/delete', { id, pushNotificationConfigId: 'cfg' }] as [string, Json]),
    fc.constant(['agent/getAuthenticatedExtendedCard', {}] as [string, Json]),
    ...ext,
  );
  const v1send = fc.record({ message: v1Message(p), configuration: maybe(fc.record({ historyLength: fc.nat(5) })) });
  const v1 = fc.oneof(
    v1send.map((x) => ['SendMessage', compact(x)] as [string, Json]),
    v1send.map((x) => ['SendStreamingMessage', compact(x)] as [string, Json]),
    task.map((id) => ['GetTask', { id, historyLength: 2 }] as [string, Json]),
    task.map((id) => ['CancelTask', { id }] as [string, Json]),
    task.map((id) => ['SubscribeToTask', { id }] as [string, Json]),
    fc
      .record({
        contextId: maybe(ctx),
        status: maybe(fc.constantFrom('TASK_STATE_WORKING', 'TASK_STATE_INPUT_REQUIRED')),
        pageSize: maybe(fc.nat(120)),
      })
      .map((x) => ['ListTasks', compact(x)] as [string, Json]),
    task.map((id) => ['CreateTaskPushNotificationConfig', { taskId: id, url: HOOK, token: 'tok' }] as [string, Json]),
    task.map((id) => ['GetTaskPushNotificationConfig', { taskId: id, id: 'cfg' }] as [string, Json]),
    task.map((id) => ['ListTaskPushNotificationConfigs', { taskId: id }] as [string, Json]),
    task.map((id) => ['DeleteTaskPushNotificationConfig', { taskId: id, id: 'cfg' }] as [string, Json]),
    fc.constant(['GetExtendedAgentCard', {}] as [string, Json]),
    ...ext,
  );
  return { v03, v1 };
}

const ODD_METHODS = [
  '',
  'constructor',
  '__proto__',
  'toString',
  'hasOwnProperty',
  'valueOf',
  'message/send ',
  'MESSAGE/SEND',
  'tasks/list',
];

/** Header values a client controls (visible ASCII: what HTTP lets through). */
const ascii = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 40 });

function headersArb(version: fc.Arbitrary<string | undefined>): fc.Arbitrary<Record<string, string>> {
  return fc
    .record({
      'a2a-version': version,
      'content-type': fc.oneof(
        { weight: 6, arbitrary: fc.constant('application/json') },
        fc.constantFrom(
          'application/a2a+json',
          'application/json; charset=utf-8',
          'APPLICATION/JSON',
          'text/plain',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=x',
          'application/json;;',
          '',
        ),
        ascii,
      ),
      'a2a-extensions': maybe(fc.oneof(fc.constant(DEVTOOL_EXTENSION_URI), fc.constant(`${DEVTOOL_EXTENSION_URI}, ,,x`), ascii)),
      'last-event-id': maybe(
        fc.oneof(fc.constantFrom('0', '1', '3', '-1', 'abc', '1e3', '999999999999999', '99999999999999999999', ' 5 ', '0x1'), ascii),
      ),
    })
    .map((h) => JSON.parse(JSON.stringify(h)) as Record<string, string>);
}

const versions = (preferred: string | undefined) =>
  fc.oneof(
    { weight: 6, arbitrary: fc.constant(preferred) },
    fc.constantFrom(undefined, '1.0', '0.3', '', '1', '1.0.9', '2.0', '0.2', 'abc', ' 1.0 ', '01.00'),
    ascii,
  );

/** A raw body that is not one JSON-RPC object. */
const oddBody = fc.constantFrom(
  '',
  'not json',
  '[]',
  '[{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"}}]',
  'null',
  '"str"',
  '1',
  '{"jsonrpc":"2.0",',
  '\ufeff{}',
  '{}',
);

function jsonRpcCase(p: Pool): fc.Arbitrary<FuzzRequest> {
  const { v03, v1 } = rpcParams(p);
  const envelope = (call: fc.Arbitrary<[string, Json]>) =>
    fc
      .tuple(
        call,
        fc.oneof(fc.constant<Json>(1), fc.constant<Json>('req-1'), fc.constant<Json>(null), fc.constant<Json>('@@absent@@')),
        fc.option(fc.constantFrom(...ODD_METHODS), { freq: 8, nil: undefined }),
      )
      .map(([[method, params], id, odd]) => {
        const env: Record<string, Json> = { jsonrpc: '2.0', method: odd ?? method, params };
        if (id !== '@@absent@@') env.id = id; // without an id: a notification
        return env;
      });
  const build = (version: string | undefined, call: fc.Arbitrary<[string, Json]>) =>
    fc
      .tuple(fc.oneof({ weight: 9, arbitrary: mutated(envelope(call), p.all).map(serialize) }, oddBody), headersArb(versions(version)), who)
      .map(([body, headers, w]): FuzzRequest => ({ method: 'POST', url: '/', headers, body, who: w }));
  return fc.oneof(build(undefined, v03), build('1.0', v1));
}

/** A path segment from an id (a pool id or an odd string), percent-encoded, maybe with an action. */
function segment(p: Pool): fc.Arbitrary<string> {
  return fc
    .tuple(
      fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom(...p.tasks) },
        oddString.map((s) => s.slice(0, 200)),
      ),
      fc.constantFrom('', ':cancel', ':subscribe', ':bogus', ':'),
    )
    .map(([id, action]) => enc(id) + action);
}

const queryArb = fc
  .array(
    fc.tuple(
      fc.constantFrom(
        'historyLength',
        'history_length',
        'pageSize',
        'status',
        'contextId',
        'pageToken',
        'includeArtifacts',
        'A2A-Version',
        '__proto__',
      ),
      fc.oneof(
        fc.constantFrom('1', '0', '-1', '1.5', 'NaN', '1e3', '101', 'TASK_STATE_WORKING', 'true'),
        oddString.map((s) => s.slice(0, 100)),
      ),
    ),
    { maxLength: 3 },
  )
  .map((q) => (q.length === 0 ? '' : `?${q.map(([k, v]) => `${k}=${enc(v)}`).join('&')}`));

function restCase(p: Pool, version: string | undefined): fc.Arbitrary<FuzzRequest> {
  const message = version === '1.0' ? v1Message(p) : v03ProtoMessage(p);
  const sendBody = mutated(
    fc.record({ message }).map((x) => x as Json),
    p.all,
  );
  const pushBody = mutated(
    fc.constant<Json>(version === '1.0' ? { url: HOOK, token: 'tok' } : { pushNotificationConfig: { url: HOOK, token: 'tok' } }),
    p.all,
  );
  const route = fc.oneof(
    fc
      .tuple(fc.constantFrom('/v1/message:send', '/v1/message:stream'), sendBody)
      .map(([url, body]) => ({ method: 'POST' as const, url, body: serialize(body) })),
    fc
      .tuple(segment(p), fc.constantFrom<FuzzRequest['method']>('GET', 'POST', 'DELETE', 'PUT'), queryArb)
      .map(([s, method, q]) => ({ method, url: `/v1/tasks/${s}${q}`, body: method === 'POST' ? '{}' : undefined })),
    queryArb.map((q) => ({ method: 'GET' as const, url: `/v1/tasks${q}`, body: undefined })),
    fc
      .tuple(segment(p), pushBody)
      .map(([s, body]) => ({ method: 'POST' as const, url: `/v1/tasks/${s}/pushNotificationConfigs`, body: serialize(body) })),
    fc
      .tuple(segment(p), fc.constantFrom<FuzzRequest['method']>('GET', 'DELETE'), fc.constantFrom('cfg', '%00', '..', '__proto__'))
      .map(([s, method, c]) => ({
        method,
        url: `/v1/tasks/${s}/pushNotificationConfigs${c === 'cfg' && method === 'GET' ? '' : `/${c}`}`,
        body: undefined,
      })),
    fc
      .constantFrom('/v1/extendedAgentCard', '/v1/card', '/v1/', '/v1/tasks/', '/v1/message:bogus')
      .map((url) => ({ method: 'GET' as const, url, body: undefined })),
  );
  return fc.tuple(route, headersArb(versions(version)), who).map(([r, headers, w]) => ({ ...r, headers, who: w }));
}

function legacyCase(p: Pool): fc.Arbitrary<FuzzRequest> {
  const create = mutated(
    fc
      .record({
        contextId: maybe(fc.constantFrom(...p.contexts)),
        agentSettings: fc.constant({ kind: 'agent-settings', workspacePath: p.workspace }),
      })
      .map(compact),
    p.all,
  );
  const execute = mutated(
    fc
      .record({
        command: fc.constantFrom('memory show', '/memory add', 'tools', 'init', 'nope'),
        args: fc.constantFrom<Json>([], ['use', 'pnpm']),
      })
      .map((x) => x as Json),
    p.all,
  );
  const route = fc.oneof(
    create.map((b) => ({ method: 'POST' as const, url: '/tasks', body: serialize(b) })),
    execute.map((b) => ({ method: 'POST' as const, url: '/executeCommand', body: serialize(b) })),
    fc.constantFrom('/tasks/metadata', '/listCommands').map((url) => ({ method: 'GET' as const, url, body: undefined })),
    segment(p).map((s) => ({ method: 'GET' as const, url: `/tasks/${s}/metadata`, body: undefined })),
  );
  return fc.tuple(route, headersArb(fc.constant(undefined)), who).map(([r, headers, w]) => ({ ...r, headers, who: w }));
}

const otherCase: fc.Arbitrary<FuzzRequest> = fc
  .tuple(
    fc.constantFrom(
      '/.well-known/agent-card.json',
      '/.well-known/agent.json',
      '/healthz',
      '/readyz',
      '/metrics',
      '/nope',
      '/%',
      '//x',
      '/?A2A-Version=1.0',
    ),
    fc.constantFrom<FuzzRequest['method']>('GET', 'POST', 'PUT'),
    who,
  )
  .map(([url, method, w]) => ({ method, url, headers: {}, body: method === 'GET' ? undefined : '{}', who: w }));

/** Any request to any route. */
export function anyRequest(p: Pool): fc.Arbitrary<FuzzRequest> {
  return fc.oneof(
    { weight: 5, arbitrary: jsonRpcCase(p) },
    { weight: 2, arbitrary: restCase(p, '1.0') },
    { weight: 2, arbitrary: restCase(p, undefined) },
    { weight: 2, arbitrary: legacyCase(p) },
    { weight: 1, arbitrary: otherCase },
  );
}

/** A mutated answer to one paused task, over one of the routes that carry answers, as `a` or `b`. */
export function answerTo(p: Pool, task: { taskId: string; contextId: string; callId: string }): fc.Arbitrary<FuzzRequest> {
  const own = { ...p, tasks: [task.taskId], contexts: [task.contextId], calls: [task.callId, ...p.calls] };
  const message = v03Message(own).map((m) => ({ ...(m as Record<string, Json>), taskId: task.taskId, contextId: task.contextId }));
  const body = mutated(message, own.all).map((m) => serialize({ jsonrpc: '2.0', id: 7, method: 'message/stream', params: { message: m } }));
  const asker = fc.oneof({ weight: 3, arbitrary: fc.constant<Who>('a') }, fc.constant<Who>('b'));
  return fc
    .tuple(body, asker)
    .map(([b, w]) => ({ method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, body: b, who: w }));
}

/** Streams over a real socket: message/stream, resubscriptions with Last-Event-ID, REST :subscribe. */
export function sseRequest(p: Pool): fc.Arbitrary<FuzzRequest> {
  const lastEventId = fc.oneof(fc.constant(undefined), fc.constantFrom('0', '1', '2', '5', '1000', '-1', 'x', '  3'));
  const rpc = fc
    .tuple(fc.constantFrom('tasks/resubscribe', 'message/stream'), fc.constantFrom(...p.tasks), v03Message(p))
    .map(([method, id, message]) =>
      JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: method === 'tasks/resubscribe' ? { id } : { message } }),
    );
  const req = fc.oneof(
    rpc.map((body) => ({ url: '/', version: undefined as string | undefined, body })),
    fc
      .tuple(fc.constantFrom(...p.tasks), fc.constantFrom(undefined, '1.0'))
      .map(([id, version]) => ({ url: `/v1/tasks/${enc(id)}:subscribe`, version, body: undefined as string | undefined })),
  );
  return fc.tuple(req, lastEventId, fc.constantFrom<Who>('a', 'b', 'b')).map(([r, last, w]) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (r.version) headers['a2a-version'] = r.version;
    if (last !== undefined) headers['last-event-id'] = last;
    return { method: r.body === undefined ? 'GET' : 'POST', url: r.url, headers, body: r.body, who: w };
  });
}
