/**
 * Push notifications end to end: the real server (in process) posts a task's events to a
 * real webhook receiver (test/support/webhook.ts) beside its SSE streams.
 * - v0.3 registration through message/stream's configuration: every event arrives once, in
 *   order, X-A2A-Event-Id = the SSE id; the body is the Task with that event's status; the
 *   input-required delivery carries the waiting ToolCall cards.
 * - The signed JWT (Authorization or X-A2A-Notification-JWT) verifies against the server's
 *   /.well-known/jwks.json and binds task, event and body hash.
 * - v1.0 registration (CreateTaskPushNotificationConfig): StreamResponse bodies; get, list
 *   and delete in both versions; errors for unknown configs and tasks.
 * - The SSRF guard without PUSH_ALLOW_PRIVATE, and a receiver that is down, failing or slow.
 * - APPROVAL_TIMEOUT: the reminder push comes before the expiry push.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { rpc } from '../support/sse.js';
import type { PostResult } from '../support/sse.js';
import { confirmMessage, dataOf, sharedStore, startServer, textOf, userMessage } from '../support/server.js';
import type { TestServer } from '../support/server.js';
import type { Test } from '../support/tool-call-watch.js';
import { DEFAULT_CONFIG_ID } from '../../src/protocol/push-config.js';
import { WebhookReceiver } from '../support/webhook.js';
import type { Delivery } from '../support/webhook.js';

/** Loopback receivers allowed; retries fast; nothing is dropped while a test keeps a receiver down. */
const ENV = {
  PUSH_ALLOW_PRIVATE: '1',
  PUSH_RETRY_BASE_MS: '50',
  PUSH_RETRY_MAX_MS: '200',
  PUSH_MAX_ATTEMPTS: '1000',
  PUSH_TIMEOUT_MS: '5000',
};

const results = (res: PostResult) => (res.events ?? []).map((e) => e.data.result);
const sseIds = (res: PostResult) => (res.events ?? []).map((e) => e.id);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => String(from + i));
const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts `prompt` with a v0.3 push config in message/stream's configuration. */
async function streamWithPush(srv: TestServer, prompt: string, pushNotificationConfig: Record<string, unknown>): Promise<PostResult> {
  const res = await rpc(srv.url, 'message/stream', { message: userMessage(prompt), configuration: { pushNotificationConfig } });
  if (res.events === undefined) throw new Error(`expected a stream: ${res.raw}`);
  return res;
}

/** Answers the (first) waiting card of the task a first stream paused, proceed_once. */
function approve(srv: TestServer, first: PostResult, option = 'proceed_once'): Promise<PostResult> {
  const ev = results(first);
  const card = dataOf(ev.find((r) => dataOf(r)?.status === 'PENDING'));
  return rpc(srv.url, 'message/stream', {
    message: confirmMessage(ev[0].id, ev[0].contextId, { tool_call_id: card.tool_call_id, selected_option_id: option }),
  });
}

/** The Authorization-less JWT header of a delivery (whichever header carries it). */
function jwtOf(d: Delivery): string {
  const own = d.headers['x-a2a-notification-jwt'];
  if (typeof own === 'string') return own;
  return String(d.headers.authorization ?? '').replace(/^Bearer /, '');
}

/** Verifies each delivery's JWT against the server's JWKS: kid, task, event, body hash. */
async function checkJwts(t: Test, srv: TestServer, taskId: string, deliveries: Delivery[]): Promise<void> {
  const jwks = createRemoteJWKSet(new URL('/.well-known/jwks.json', srv.url));
  const published = (await (await fetch(new URL('/.well-known/jwks.json', srv.url))).json()) as {
    keys: Array<{ kid: string; d?: string }>;
  };
  t.ok(published.keys.length > 0, 'the JWKS publishes a key');
  t.ok(
    published.keys.every((k) => k.d === undefined),
    'no private key material in the JWKS',
  );
  const problems: string[] = [];
  for (const d of deliveries) {
    try {
      const { payload, protectedHeader } = await jwtVerify(jwtOf(d), jwks);
      if (!protectedHeader.kid || !published.keys.some((k) => k.kid === protectedHeader.kid))
        problems.push(`${d.eventId}: kid ${protectedHeader.kid} not in the JWKS`);
      if (payload.task_id !== taskId) problems.push(`${d.eventId}: task_id ${String(payload.task_id)}`);
      if (payload.event_id !== d.eventId) problems.push(`${d.eventId}: event_id ${String(payload.event_id)}`);
      if (typeof payload.iat !== 'number') problems.push(`${d.eventId}: no iat`);
      if (payload.body_sha256 !== sha256(d.raw)) problems.push(`${d.eventId}: body_sha256 does not match the body received`);
    } catch (err) {
      problems.push(`${d.eventId}: ${(err as Error).message}`);
    }
  }
  t.same(problems, [], `${deliveries.length} JWTs verify against /.well-known/jwks.json and bind task, event and body`);
}

/** The ToolCall DataParts of a v0.3 body's status message. */
const cardsIn = (status: any) => (status?.message?.parts ?? []).filter((p: any) => p.kind === 'data').map((p: any) => p.data);

t.test('v0.3: registered in message/stream, every event is pushed once, in order, signed', async (t) => {
  const srv = await startServer(t, { env: ENV });
  const hook = await WebhookReceiver.start(t);
  const path = '/v03';
  const first = await streamWithPush(srv, 'write a greeting', {
    url: hook.url(path),
    token: 'tok-v03',
    authentication: { schemes: ['Bearer'], credentials: 'abc' },
  });
  t.same(sseIds(first), range(1, 4), 'the first stream: ids 1..4, ending in the pause');
  t.equal(results(first).at(-1).status.state, 'input-required');
  await hook.waitForDeliveries(4, { path }); // the pause is pushed while the call waits
  const second = await approve(srv, first);
  t.same(sseIds(second), range(5, 9), 'the answer stream: ids 5..9');
  t.equal(results(second).at(-1).status.state, 'completed');
  const sse = [...(first.events ?? []), ...(second.events ?? [])];
  const taskId = results(first)[0].id;

  const got = await hook.waitForDeliveries(9, { path });
  t.same(
    got.map((d) => d.eventId),
    sse.map((e) => e.id),
    'X-A2A-Event-Id of each delivery = the SSE id of the same event, in order',
  );
  t.equal(hook.to(path).length, 9, 'no duplicate or extra request');

  await t.test('the body is the Task with that event’s status (v0.3 shape)', async (t) => {
    for (const [i, d] of got.entries()) {
      const ev = sse[i].data.result;
      t.match(d.headers['content-type'], /^application\/json/, `${d.eventId}: JSON`);
      t.match(d.json, { kind: 'task', id: taskId, contextId: ev.contextId }, `${d.eventId}: a Task snapshot`);
      if (ev.kind === 'task') {
        t.equal(d.json.status.state, ev.status.state, `${d.eventId}: the Task event's status (${ev.status.state})`);
        continue;
      }
      if (ev.status.state === 'input-required') {
        t.same(
          d.json.status.message.parts.slice(0, ev.status.message.parts.length),
          ev.status.message.parts,
          `${d.eventId}: the pause's own parts first`,
        );
        t.same(
          { ...d.json.status, message: undefined },
          { ...ev.status, message: undefined },
          `${d.eventId}: state and timestamp of the pause`,
        );
      } else {
        t.same(d.json.status, ev.status, `${d.eventId}: status = the SSE event's status (${ev.status.state})`);
      }
    }
  });

  await t.test('the input-required delivery carries the waiting card', async (t) => {
    const pauseAt = sse.findIndex((e) => e.data.result.status?.state === 'input-required');
    const card = dataOf(sse.find((e) => dataOf(e.data.result)?.status === 'PENDING')?.data.result);
    const cards = cardsIn(got[pauseAt].json.status);
    t.equal(cards.length, 1, 'one ToolCall DataPart');
    t.match(cards[0], { tool_call_id: card.tool_call_id, status: 'PENDING', tool_name: 'write_file' });
    t.same(
      cards[0].confirmation_request.options.map((o: any) => o.id),
      ['proceed_once', 'proceed_always', 'modify_with_editor', 'cancel'],
    );
    t.same(cards[0], card, 'the same card the stream showed: a client can draw it from the callback alone');
    t.match(textOf(got[pauseAt].json), /Waiting for approval/);
  });

  await t.test('headers: token, the config’s Authorization, the JWT beside it', async (t) => {
    for (const d of got) {
      t.equal(d.headers['x-a2a-notification-token'], 'tok-v03');
      t.equal(d.headers.authorization, 'Bearer abc', 'the config’s own credentials');
      t.match(d.headers['x-a2a-notification-jwt'], /^[\w-]+\.[\w-]+\.[\w-]+$/, 'the JWT in X-A2A-Notification-JWT');
    }
    await checkJwts(t, srv, taskId, got);
  });
});

t.test('without authentication in the config the JWT rides Authorization: Bearer', async (t) => {
  const srv = await startServer(t, { env: ENV });
  const hook = await WebhookReceiver.start(t);
  const res = await streamWithPush(srv, 'hello there', { url: hook.url('/plain') });
  t.equal(results(res).at(-1).status.state, 'completed');
  const got = await hook.waitForDeliveries(res.events!.length, { path: '/plain' });
  t.same(
    got.map((d) => d.eventId),
    sseIds(res),
  );
  for (const d of got) {
    t.match(d.headers.authorization, /^Bearer [\w-]+\.[\w-]+\.[\w-]+$/, `${d.eventId}: Authorization: Bearer <jwt>`);
    t.notOk('x-a2a-notification-jwt' in d.headers, 'no separate JWT header');
    t.notOk('x-a2a-notification-token' in d.headers, 'no token header without a token');
  }
  await checkJwts(t, srv, results(res)[0].id, got);
  // A body changed on the way no longer matches the signed hash.
  const { payload } = await jwtVerify(jwtOf(got[0]), createRemoteJWKSet(new URL('/.well-known/jwks.json', srv.url)));
  t.not(payload.body_sha256, sha256(got[0].raw + ' '), 'the hash binds the exact bytes');
});

t.test('v1.0 registration, and get/list/delete in both versions', async (t) => {
  const srv = await startServer(t, { env: ENV });
  const hook = await WebhookReceiver.start(t);
  const first = await rpc(srv.url, 'message/stream', { message: userMessage('write a greeting') });
  const task = results(first)[0];
  t.equal(results(first).at(-1).status.state, 'input-required', 'a paused task');

  const created = await rpc(
    srv.url,
    'CreateTaskPushNotificationConfig',
    { taskId: task.id, id: 'cfg-v1', url: hook.url('/v1'), token: 'tok-v1', authentication: { scheme: 'Bearer', credentials: 'v1-cred' } },
    { version: '1.0' },
  );
  t.same(
    created.json?.result,
    { id: 'cfg-v1', taskId: task.id, url: hook.url('/v1'), token: 'tok-v1', authentication: { scheme: 'Bearer', credentials: 'v1-cred' } },
    `CreateTaskPushNotificationConfig answers the config: ${created.raw}`,
  );
  const set = await rpc(srv.url, 'tasks/pushNotificationConfig/set', {
    taskId: task.id,
    pushNotificationConfig: { id: 'cfg-v03', url: hook.url('/v03'), token: 'tok-v03' },
  });
  t.same(
    set.json?.result,
    { taskId: task.id, pushNotificationConfig: { id: 'cfg-v03', url: hook.url('/v03'), token: 'tok-v03' } },
    `tasks/pushNotificationConfig/set: ${set.raw}`,
  );
  for (const [id, path] of [
    ['cfg-del', '/del'],
    ['cfg-del03', '/del03'],
  ]) {
    const r = await rpc(srv.url, 'CreateTaskPushNotificationConfig', { taskId: task.id, id, url: hook.url(path) }, { version: '1.0' });
    t.equal(r.json?.result?.id, id, `${id} created`);
  }

  await t.test('get, across versions', async (t) => {
    const v1 = await rpc(srv.url, 'GetTaskPushNotificationConfig', { taskId: task.id, id: 'cfg-v03' }, { version: '1.0' });
    t.same(v1.json?.result, { id: 'cfg-v03', taskId: task.id, url: hook.url('/v03'), token: 'tok-v03' }, 'v1.0 reads the v0.3 config');
    const v03 = await rpc(srv.url, 'tasks/pushNotificationConfig/get', { id: task.id, pushNotificationConfigId: 'cfg-v1' });
    t.same(
      v03.json?.result,
      {
        taskId: task.id,
        pushNotificationConfig: {
          id: 'cfg-v1',
          url: hook.url('/v1'),
          token: 'tok-v1',
          authentication: { schemes: ['Bearer'], credentials: 'v1-cred' },
        },
      },
      'v0.3 reads the v1.0 config',
    );
  });

  await t.test('list, both versions', async (t) => {
    const v1 = await rpc(srv.url, 'ListTaskPushNotificationConfigs', { taskId: task.id }, { version: '1.0' });
    t.same(v1.json?.result?.configs?.map((c: any) => c.id).sort(), ['cfg-del', 'cfg-del03', 'cfg-v03', 'cfg-v1']);
    const v03 = await rpc(srv.url, 'tasks/pushNotificationConfig/list', { id: task.id });
    t.same(v03.json?.result?.map((c: any) => c.pushNotificationConfig.id).sort(), ['cfg-del', 'cfg-del03', 'cfg-v03', 'cfg-v1']);
    t.ok(v03.json?.result?.every((c: any) => c.taskId === task.id));
  });

  await t.test('delete, both versions', async (t) => {
    const v1 = await rpc(srv.url, 'DeleteTaskPushNotificationConfig', { taskId: task.id, id: 'cfg-del' }, { version: '1.0' });
    t.notOk(v1.json?.error, `v1.0 delete: ${v1.raw}`);
    const v03 = await rpc(srv.url, 'tasks/pushNotificationConfig/delete', { id: task.id, pushNotificationConfigId: 'cfg-del03' });
    t.equal(v03.json?.result, null, `v0.3 delete answers null: ${v03.raw}`);
    const left = await rpc(srv.url, 'tasks/pushNotificationConfig/list', { id: task.id });
    t.same(left.json?.result?.map((c: any) => c.pushNotificationConfig.id).sort(), ['cfg-v03', 'cfg-v1'], 'the deleted configs are gone');
    const again = await rpc(srv.url, 'DeleteTaskPushNotificationConfig', { taskId: task.id, id: 'cfg-del' }, { version: '1.0' });
    t.equal(again.json?.error, undefined, 'deleting it again succeeds: delete is idempotent');
  });

  await t.test('unknown config id → -32602 (get); unknown task → -32001', async (t) => {
    const cases: Array<[string, string, unknown, '0.3' | '1.0', number]> = [
      ['v1.0 get, unknown id', 'GetTaskPushNotificationConfig', { taskId: task.id, id: 'nope' }, '1.0', -32602],
      ['v0.3 get, unknown id', 'tasks/pushNotificationConfig/get', { id: task.id, pushNotificationConfigId: 'nope' }, '0.3', -32602],
      ['v1.0 get, unknown task', 'GetTaskPushNotificationConfig', { taskId: 'no-such-task', id: 'x' }, '1.0', -32001],
      ['v0.3 get, unknown task', 'tasks/pushNotificationConfig/get', { id: 'no-such-task' }, '0.3', -32001],
      ['v1.0 list, unknown task', 'ListTaskPushNotificationConfigs', { taskId: 'no-such-task' }, '1.0', -32001],
      ['v0.3 list, unknown task', 'tasks/pushNotificationConfig/list', { id: 'no-such-task' }, '0.3', -32001],
      ['v1.0 delete, unknown task', 'DeleteTaskPushNotificationConfig', { taskId: 'no-such-task', id: 'x' }, '1.0', -32001],
      ['v1.0 create, unknown task', 'CreateTaskPushNotificationConfig', { taskId: 'no-such-task', url: hook.url('/x') }, '1.0', -32001],
      [
        'v0.3 set, unknown task',
        'tasks/pushNotificationConfig/set',
        { taskId: 'no-such-task', pushNotificationConfig: { url: hook.url('/x') } },
        '0.3',
        -32001,
      ],
    ];
    for (const [name, method, params, version, code] of cases) {
      const r = await rpc(srv.url, method, params, { version });
      t.equal(r.json?.error?.code, code, `${name}: ${r.json?.error?.message}`);
    }
  });

  const second = await approve(srv, first);
  t.same(sseIds(second), range(5, 9), 'the task goes on: 5..9');
  const v1 = await hook.waitForDeliveries(5, { path: '/v1' });
  const v03 = await hook.waitForDeliveries(5, { path: '/v03' });

  await t.test('the v1.0 config gets StreamResponse JSON, from the event after it was set', async (t) => {
    t.same(
      v1.map((d) => d.eventId),
      range(5, 9),
      'events 5..9 (none from before it was set)',
    );
    for (const [i, d] of v1.entries()) {
      const ev = second.events![i].data.result;
      t.match(d.headers['content-type'], /^application\/a2a\+json/, 'application/a2a+json');
      t.same(Object.keys(d.json), ['statusUpdate'], `${d.eventId}: a StreamResponse with statusUpdate`);
      t.match(d.json.statusUpdate, { taskId: task.id, contextId: task.contextId, status: { timestamp: ev.status.timestamp } });
      t.equal(
        d.json.statusUpdate.status.state,
        `TASK_STATE_${ev.status.state.toUpperCase().replace('-', '_')}`,
        `${d.eventId}: v1.0 state name`,
      );
      t.equal(d.headers['x-a2a-notification-token'], 'tok-v1');
      t.equal(d.headers.authorization, 'Bearer v1-cred');
    }
    await checkJwts(t, srv, task.id, v1);
  });

  await t.test('the v0.3 config set by tasks/pushNotificationConfig/set gets Task bodies', async (t) => {
    t.same(
      v03.map((d) => d.eventId),
      range(5, 9),
    );
    t.ok(v03.every((d) => d.json?.kind === 'task' && d.json.id === task.id));
    t.same(
      v03.map((d) => d.json.status.state),
      results(second).map((r) => r.status.state),
    );
  });

  t.same(hook.to('/del').length + hook.to('/del03').length, 0, 'deleted configs got nothing');

  await t.test('a v1.0 input-required push carries the waiting card as a data part', async (t) => {
    const more = await rpc(srv.url, 'message/stream', {
      message: userMessage('write it again', { taskId: task.id, contextId: task.contextId }),
    });
    const ev = results(more);
    t.equal(ev.at(-1)?.status?.state, 'input-required', `the completed task goes on and pauses again: ${more.raw.slice(0, 200)}`);
    const card = dataOf(ev.find((r) => dataOf(r)?.status === 'PENDING'));
    const pause = await hook.waitForDelivery((d) => d.json?.statusUpdate?.status?.state === 'TASK_STATE_INPUT_REQUIRED', { path: '/v1' });
    t.equal(pause.eventId, more.events!.at(-1)!.id, 'the pause event');
    const data = pause.json.statusUpdate.status.message.parts.filter((p: any) => p.data !== undefined).map((p: any) => p.data);
    t.same(data, [card], 'the card, as a v1.0 data part');
  });
});

t.test('SSRF guard: private, loopback and metadata URLs are refused and nothing is stored', async (t) => {
  const strict = await startServer(t); // no PUSH_ALLOW_PRIVATE
  const open = await startServer(t, { env: ENV });
  const done = await rpc(strict.url, 'message/stream', { message: userMessage('hello') });
  const task = results(done)[0];
  const cases: Array<[string, RegExp]> = [
    ['http://127.0.0.1:9/x', /resolves to 127\.0\.0\.1, a loopback address/],
    ['http://localhost:9/x', /loopback/],
    ['http://169.254.169.254/', /169\.254\.169\.254, a cloud metadata address/],
    ['http://10.0.0.1/', /10\.0\.0\.1, a private address/],
    ['http://[::1]:9/', /a loopback address/],
    ['ftp://example.com/x', /must use http or https/],
  ];
  for (const [url, why] of cases) {
    await t.test(url, async (t) => {
      const contextId = `ctx-ssrf-${Math.random().toString(36).slice(2)}`;
      const stream = await rpc(strict.url, 'message/stream', {
        message: userMessage('hello', { contextId }),
        configuration: { pushNotificationConfig: { url } },
      });
      t.equal(stream.json?.error?.code, -32602, `message/stream: -32602 before any SSE (${stream.json?.error?.message})`);
      t.match(stream.json?.error?.message, /configuration\.pushNotificationConfig\.url/);
      t.match(stream.json?.error?.message, why, 'names the address class');
      const listed = await rpc(strict.url, 'ListTasks', { contextId }, { version: '1.0' });
      t.same(listed.json?.result?.tasks, [], 'no task was started');

      const set = await rpc(strict.url, 'tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { url } });
      t.equal(set.json?.error?.code, -32602, 'tasks/pushNotificationConfig/set: -32602');
      t.match(set.json?.error?.message, why);
      const v1 = await rpc(strict.url, 'CreateTaskPushNotificationConfig', { taskId: task.id, url }, { version: '1.0' });
      t.equal(v1.json?.error?.code, -32602, 'CreateTaskPushNotificationConfig: -32602');
      const list = await rpc(strict.url, 'tasks/pushNotificationConfig/list', { id: task.id });
      t.same(list.json?.result, [], 'nothing stored');
    });
  }

  await t.test('PUSH_ALLOW_PRIVATE lifts private classes but never cloud metadata', async (t) => {
    const meta = await rpc(open.url, 'tasks/pushNotificationConfig/set', {
      taskId: task.id,
      pushNotificationConfig: { url: 'http://169.254.169.254/latest/' },
    });
    t.equal(meta.json?.error?.code, -32602);
    t.match(meta.json?.error?.message, /cloud metadata endpoints are always refused/);
    const priv = await rpc(open.url, 'tasks/pushNotificationConfig/set', {
      taskId: task.id,
      pushNotificationConfig: { id: 'p', url: 'http://10.0.0.1/' },
    });
    t.equal(priv.json?.result?.pushNotificationConfig?.url, 'http://10.0.0.1/', 'a private address is accepted');
    await rpc(open.url, 'tasks/pushNotificationConfig/delete', { id: task.id, pushNotificationConfigId: 'p' });
  });
});

t.test('a receiver name that does not resolve yet is accepted at registration, with a stable id', async (t) => {
  // `.invalid` never resolves (RFC 6761). The check that matters runs at each delivery, which
  // connects only to the addresses it then resolved and approved.
  const strict = await startServer(t); // no PUSH_ALLOW_PRIVATE
  const task = results(await rpc(strict.url, 'message/stream', { message: userMessage('hello') }))[0];
  const url = 'https://hooks.invalid/a2a';
  const set = await rpc(strict.url, 'tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { url } });
  t.equal(set.json?.result?.pushNotificationConfig?.url, url, 'accepted');
  const id = set.json?.result?.pushNotificationConfig?.id;
  t.equal(id, 'default', 'a config without an id is given the stable id "default"');
  const again = await rpc(strict.url, 'tasks/pushNotificationConfig/get', { id: task.id, pushNotificationConfigId: id });
  t.equal(again.json?.result?.pushNotificationConfig?.url, url, 'and can be read back by it');
  const idless = await rpc(strict.url, 'tasks/pushNotificationConfig/get', { id: task.id });
  t.equal(idless.json?.result?.pushNotificationConfig?.id, 'default', 'a get without an id means the default config');
  const deleted = await rpc(strict.url, 'tasks/pushNotificationConfig/delete', { id: task.id });
  t.equal(deleted.json?.result, null, 'so does a delete');
  const gone = await rpc(strict.url, 'tasks/pushNotificationConfig/get', { id: task.id });
  t.match(gone.json?.error?.message, /has no push notification config "default"/);
  // Configs stored before the default id was "default" had the task's id: an id-less get still finds them.
  await rpc(strict.url, 'tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { id: task.id, url } });
  const older = await rpc(strict.url, 'tasks/pushNotificationConfig/get', { id: task.id });
  t.equal(older.json?.result?.pushNotificationConfig?.id, task.id, 'an id-less get falls back to the task-id config');
  t.equal((await rpc(strict.url, 'tasks/pushNotificationConfig/delete', { id: task.id })).json?.result, null);
  t.same((await rpc(strict.url, 'tasks/pushNotificationConfig/list', { id: task.id })).json?.result, [], 'and an id-less delete too');
  const v1 = await rpc(strict.url, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: 'v1', url }, { version: '1.0' });
  t.equal(v1.json?.result?.url, url, 'v1.0 registration too');
  const literal = await rpc(strict.url, 'tasks/pushNotificationConfig/set', {
    taskId: task.id,
    pushNotificationConfig: { url: 'http://192.168.0.9/a2a' },
  });
  t.equal(literal.json?.error?.code, -32602, 'an address of a refused class is still refused at once');
});

t.test('a receiver that fails, then is down, then comes back gets everything once, in order', async (t) => {
  const srv = await startServer(t, { env: ENV });
  const store = await sharedStore();
  const hook = await WebhookReceiver.start(t);
  const path = '/flaky';
  hook.answer(500);
  const first = await streamWithPush(srv, 'write a greeting', { url: hook.url(path) });
  const taskId = results(first)[0].id;
  t.equal(results(first).at(-1).status.state, 'input-required', 'the stream is not held up by the failing receiver');
  const failed = await hook.waitForRequests(3, { path });
  t.same(
    failed.slice(0, 3).map((d) => [d.eventId, d.status]),
    [
      ['1', 500],
      ['1', 500],
      ['1', 500],
    ],
    'event 1 is retried; nothing later goes first',
  );
  // Backoff (PUSH_RETRY_BASE_MS=50): retry k waits at least min(200, 50·2^(k−1))/2 ms.
  const gaps = failed.slice(1, 3).map((d, i) => d.at - failed[i].at);
  t.ok(gaps[0] >= 24 && gaps[1] >= 49, `the retries back off (gaps ${gaps.join(', ')} ms)`);

  await hook.stop(); // the port is closed now
  const deadline = Date.now() + 10_000;
  let config = await store.getPushConfig(taskId, DEFAULT_CONFIG_ID);
  while (!/ECONNREFUSED/.test(config?.lastError ?? '') && Date.now() < deadline) {
    await sleep(25);
    config = await store.getPushConfig(taskId, DEFAULT_CONFIG_ID);
  }
  t.match(config?.lastError, /ECONNREFUSED/, 'a delivery was tried against the closed port');
  t.equal(config?.deliveredSeq, 0, 'nothing counted as delivered');

  const second = await approve(srv, first);
  t.same(sseIds(second), range(5, 9), 'the task goes on while the receiver is down');

  hook.ok();
  await hook.start();
  const got = await hook.waitForDeliveries(9, { path });
  t.same(
    got.map((d) => d.eventId),
    range(1, 9),
    'after it is back: 1..9 accepted, once each, in order',
  );
  const seen = hook.to(path).map((d) => Number(d.eventId));
  t.ok(
    seen.every((n, i) => i === 0 || n >= seen[i - 1]),
    `requests never went back or skipped ahead: ${seen.join(' ')}`,
  );
  const sse = [...results(first), ...results(second)];
  t.same(
    got.slice(1).map((d) => d.json.status.state),
    sse.slice(1).map((r) => r.status.state),
    'each status-update push has its event’s state',
  );
  t.same(
    cardsIn(got[3].json.status).map((c: any) => c.status),
    ['PENDING'],
    'the late input-required push still carries the card it paused on',
  );
  t.equal((await store.getPushConfig(taskId, DEFAULT_CONFIG_ID))?.dropped, 0, 'nothing dropped');
});

t.test('PUSH_MAX_ATTEMPTS: an event that keeps failing is dropped, the next ones go', async (t) => {
  const srv = await startServer(t, { env: { ...ENV, PUSH_MAX_ATTEMPTS: '3' } });
  const store = await sharedStore();
  const hook = await WebhookReceiver.start(t);

  await t.test('5xx: retried up to the limit, then dropped', async (t) => {
    hook.answerWith((d) => (d.path === '/drop5xx' && d.eventId === '1' ? 503 : 200));
    const res = await streamWithPush(srv, 'hello again', { url: hook.url('/drop5xx') });
    const n = res.events!.length;
    const got = await hook.waitForDeliveries(n - 1, { path: '/drop5xx' });
    t.same(
      got.map((d) => d.eventId),
      range(2, n),
      'events 2.. arrive in order',
    );
    t.same(
      hook
        .to('/drop5xx')
        .filter((d) => d.eventId === '1')
        .map((d) => d.status),
      [503, 503, 503],
      'event 1: three attempts, then given up',
    );
    const taskId = results(res)[0].id;
    const config = await store.getPushConfig(taskId, DEFAULT_CONFIG_ID);
    t.equal(config?.dropped, 1, 'counted as dropped');
    t.match(config?.lastError, /event 1 dropped after 3 attempts: receiver answered HTTP 503/);
  });

  await t.test('4xx: final at once (a 404 will not fix itself)', async (t) => {
    hook.answerWith((d) => (d.path === '/drop4xx' && d.eventId === '1' ? 404 : 200));
    const res = await streamWithPush(srv, 'hello once more', { url: hook.url('/drop4xx') });
    const n = res.events!.length;
    await hook.waitForDeliveries(n - 1, { path: '/drop4xx' });
    t.equal(hook.to('/drop4xx').filter((d) => d.eventId === '1').length, 1, 'event 1 (answered 404) is not retried');
  });
});

t.test('a slow receiver does not slow the SSE stream', async (t) => {
  const srv = await startServer(t, { env: ENV });
  const hook = await WebhookReceiver.start(t);
  const path = '/slow';
  hook.answer(200, 2000);
  const started = Date.now();
  const first = await streamWithPush(srv, 'write a greeting', { url: hook.url(path) });
  const firstMs = Date.now() - started;
  t.same(sseIds(first), range(1, 4));
  t.ok(firstMs < 1500, `the first stream ended in ${firstMs} ms while the receiver takes 2 s per call`);
  t.equal(hook.delivered(path).length, 0, 'no delivery was answered yet when the stream ended');
  const resumed = Date.now();
  const second = await approve(srv, first);
  const secondMs = Date.now() - resumed;
  t.same(sseIds(second), range(5, 9));
  t.ok(secondMs < 1500, `the answer stream ended in ${secondMs} ms`);
  t.ok(hook.delivered(path).length <= 1, 'the receiver is still working through the backlog');
  hook.answer(200, 0, false); // the call in progress still takes its 2 s; the rest go fast
  const got = await hook.waitForDeliveries(9, { path });
  t.ok((got[0].answeredAt ?? 0) - got[0].at >= 1990, 'the first delivery really took 2 s');
  t.same(
    got.map((d) => d.eventId),
    range(1, 9),
    'everything arrives, in order, once',
  );
  t.equal(hook.to(path).length, 9, 'no retry: a slow 200 is a delivery');
});

t.test('APPROVAL_TIMEOUT: a reminder push, then the expiry push', async (t) => {
  const srv = await startServer(t, { env: { ...ENV, APPROVAL_TIMEOUT: '2s' }, app: { sweepMs: 100 } });
  const hook = await WebhookReceiver.start(t);
  const path = '/remind';
  const first = await streamWithPush(srv, 'write a greeting', { url: hook.url(path) });
  const card = dataOf(results(first).find((r) => dataOf(r)?.status === 'PENDING'));
  t.equal(results(first).at(-1).status.state, 'input-required');
  const reminder = await hook.waitForDelivery((d) => d.json?.status?.state === 'input-required' && /^Reminder:/.test(textOf(d.json)), {
    path,
    timeoutMs: 10_000,
  });
  const expired = await hook.waitForDelivery((d) => cardsIn(d.json?.status).some((c: any) => c.status === 'CANCELLED'), {
    path,
    timeoutMs: 10_000,
  });
  t.match(textOf(reminder.json), new RegExp(`^Reminder: write_file \\(${card.tool_call_id}\\) will be cancelled in about \\d+ s`));
  t.ok(
    Number(reminder.eventId) < Number(expired.eventId) && reminder.n < expired.n,
    `the reminder (${reminder.eventId}) comes before the expiry (${expired.eventId})`,
  );
  const cancelled = cardsIn(expired.json.status).find((c: any) => c.status === 'CANCELLED');
  t.match(cancelled, { tool_call_id: card.tool_call_id, status: 'CANCELLED', error: { type: 'approval_timeout' } });
  const end = await hook.waitForDelivery((d) => d.json?.status?.state === 'completed', { path });
  const ids = hook.delivered(path).map((d) => Number(d.eventId));
  t.same(
    ids,
    Array.from({ length: Number(end.eventId) }, (_, i) => i + 1),
    'every event up to completion, in order, once',
  );
});

t.test('the agent card offers push notifications', async (t) => {
  const srv = await startServer(t, { env: ENV });
  const v03: any = await (await fetch(new URL('/.well-known/agent-card.json', srv.url))).json();
  t.equal(v03.capabilities?.pushNotifications, true, 'v0.3 card');
  const v1: any = await (await fetch(new URL('/.well-known/agent-card.json', srv.url), { headers: { 'A2A-Version': '1.0' } })).json();
  t.equal(v1.capabilities?.pushNotifications, true, 'v1.0 card');
  const jwks = await fetch(new URL('/.well-known/jwks.json', srv.url));
  t.equal(jwks.status, 200, 'the JWKS is served');
  t.match(await jwks.json(), { keys: [{ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig', kid: String }] });
});
