/**
 * Authentication and access rules end to end (AUTH_CONFIG), as raw HTTP
 * clients of the real server:
 * - no or bad credentials → HTTP 401 naming the problem, with a WWW-Authenticate challenge;
 *   the agent card and the JWKS stay public and the card declares the security schemes;
 * - API keys as `Authorization: Bearer` or `X-API-Key`; issuer-signed JWTs (principal = sub);
 * - a task belongs to the principal that started it: another principal's answer is refused
 *   (-32010), audited `denied_identity`, and leaves the call waiting; reading, resubscribing,
 *   cancelling and listing are the owner's (admins too: they read the audit log instead);
 * - approving needs an approver role (audited `denied_unauthorized`); declining does not;
 *   settings that skip approvals need it too;
 * - audit/list is for admins.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import Fastify from 'fastify';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import type { CryptoKey } from 'jose';
import { rpc } from '../support/sse.js';
import type { PostResult } from '../support/sse.js';
import { confirmMessage, dataOf, startServer, URI, userMessage } from '../support/server.js';
import type { TestServer } from '../support/server.js';
import type { Test } from '../support/tool-call-watch.js';

const KEYS = {
  alice: 'alice-key-0123456789abcdef',
  bob: 'bob-key-0123456789abcdef-x',
  vic: 'vic-key-0123456789abcdef-xy',
  root: 'root-key-0123456789abcdef-z',
} as const;
type Who = keyof typeof KEYS;

const API_KEYS = [
  { key: KEYS.alice, principal: 'alice', roles: ['approver'] },
  { key: KEYS.bob, principal: 'bob', roles: ['approver'] },
  { key: KEYS.vic, principal: 'vic', roles: ['viewer'] },
  { key: KEYS.root, principal: 'root', roles: ['admin'] },
];

const FORBIDDEN = -32010;
const UNAUTHORIZED = -32011;

const bearer = (who: Who) => ({ authorization: `Bearer ${KEYS[who]}` });
const results = (res: PostResult) => (res.events ?? []).map((e) => e.data.result);

/** Writes an AUTH_CONFIG file into the test's dir and starts a server with it. */
async function authServer(t: Test, config: unknown): Promise<TestServer> {
  const dir = t.testdir({});
  const file = path.join(dir, 'auth.json');
  writeFileSync(file, JSON.stringify(config));
  return startServer(t, { env: { AUTH_CONFIG: file } });
}

/** A raw POST of one JSON-RPC request, keeping the response headers (rpc() drops them). */
async function post(srv: TestServer, headers: Record<string, string>, method = 'tasks/get', params: unknown = { id: 'x' }) {
  const res = await fetch(srv.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
}

/** One HTTP/1.1 request written by hand, so the request target can be any form (RFC 9112 §3.2). */
async function rawPost(srv: TestServer, target: string, method: string, params: unknown, headers: Record<string, string> = {}) {
  const { hostname, port } = new URL(srv.url);
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
  const head = {
    host: `${hostname}:${port}`,
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    connection: 'close',
    ...headers,
  };
  const text = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () =>
      socket.write(
        `POST ${target} HTTP/1.1\r\n${Object.entries(head)
          .map(([k, v]) => `${k}: ${v}\r\n`)
          .join('')}\r\n${body}`,
      ),
    );
    let out = '';
    socket.setEncoding('utf8').on('data', (d: string) => (out += d));
    socket.on('end', () => resolve(out));
    socket.on('error', reject);
  });
  const split = text.indexOf('\r\n\r\n');
  const rest = text.slice(split + 4);
  let json: any;
  try {
    json = JSON.parse(rest);
  } catch {
    json = undefined;
  }
  return { status: Number(text.split(' ')[1]), json, raw: rest };
}

function as(srv: TestServer, who: Who | Record<string, string>) {
  const headers = typeof who === 'string' ? bearer(who) : who;
  return (method: string, params: unknown, version?: '0.3' | '1.0') => rpc(srv.url, method, params, { headers, version });
}

/** The pause of `who`'s tasks: vic (a viewer) may not approve, so his tasks wait auth-required. */
const pauseState = (who: Who) => (who === 'vic' ? 'auth-required' : 'input-required');

/** Starts `write a greeting` as `who`; returns the Task, its PENDING card and the pause event. */
async function pause(t: Test, srv: TestServer, who: Who, extra: Record<string, unknown> = {}) {
  const res = await as(srv, who)('message/stream', { message: userMessage('write a greeting', extra) });
  const ev = results(res);
  t.equal(ev.at(-1)?.status?.state, pauseState(who), `${who}'s task pauses: ${res.json?.error?.message ?? 'ok'}`);
  return { task: ev[0], card: dataOf(ev.find((r) => dataOf(r)?.status === 'PENDING')), paused: ev.at(-1), raw: res.raw };
}

const answer = (task: any, card: any, option: string) => ({
  message: confirmMessage(task.id, task.contextId, { tool_call_id: card.tool_call_id, selected_option_id: option }),
});

function forbidden(t: Test, res: PostResult, ...patterns: RegExp[]): void {
  t.equal(res.status, 200, 'a JSON-RPC error on HTTP 200');
  t.equal(res.events, undefined, 'no SSE');
  t.equal(res.json?.error?.code, FORBIDDEN, `-32010: ${res.json?.error?.message ?? res.raw.slice(0, 200)}`);
  t.match(res.json?.error?.message, /^Forbidden: /);
  for (const p of patterns) t.match(res.json?.error?.message, p);
}

/** A v0.3 resubscription refused: one SSE event carrying the error (v0.3 clients read it only as a stream). */
function forbiddenInStream(t: Test, res: PostResult): void {
  t.equal(res.events?.length, 1, 'one SSE event');
  const error = res.events?.[0]?.data.error;
  t.equal(error?.code, FORBIDDEN, `-32010: ${error?.message}`);
  t.match(error?.message, /^Forbidden: /);
}

/** The call is still waiting: the task is paused and a resubscribe re-sends its PENDING card. */
async function stillPending(t: Test, srv: TestServer, owner: Who, task: any, card: any): Promise<void> {
  const got = await as(srv, owner)('tasks/get', { id: task.id });
  t.equal(got.json?.result?.status?.state, pauseState(owner), 'the task still waits');
  const again = await as(srv, owner)('tasks/resubscribe', { id: task.id });
  const cards = results(again)
    .map(dataOf)
    .filter((d) => d?.tool_call_id === card.tool_call_id);
  t.same(
    cards.map((c) => c.status),
    ['PENDING'],
    'the call is still PENDING',
  );
}

const audit = async (srv: TestServer, taskId: string) =>
  (await as(srv, 'root')('audit/list', { task_id: taskId })).json?.result?.entries ?? [];

t.test('API keys', async (t) => {
  const srv = await authServer(t, { api_keys: API_KEYS });

  await t.test('no credentials → 401 naming the problem, with a challenge', async (t) => {
    const res = await post(srv, {});
    t.equal(res.status, 401);
    t.match(res.headers.get('www-authenticate'), /^Bearer realm="a2a"$/, 'a bare Bearer challenge (RFC 6750 §3.1)');
    t.match(res.json, {
      jsonrpc: '2.0',
      id: null,
      error: { code: UNAUTHORIZED, message: /Missing credentials.*Authorization: Bearer.*X-API-Key/ },
    });
  });

  await t.test('bad credentials → 401 invalid_token / invalid_request, never echoing the key', async (t) => {
    const cases: Array<[string, Record<string, string>, RegExp, string]> = [
      ['a wrong bearer key', { authorization: 'Bearer not-a-key-but-long-enough' }, /Invalid API key/, 'invalid_token'],
      ['a wrong X-API-Key', { 'x-api-key': 'not-a-key-but-long-enough' }, /Invalid API key/, 'invalid_token'],
      ['Basic auth', { authorization: 'Basic YWxpY2U6eA==' }, /Unsupported Authorization scheme "Basic"/, 'invalid_request'],
      ['Bearer without a token', { authorization: 'Bearer' }, /has no token/, 'invalid_request'],
    ];
    for (const [name, headers, why, error] of cases) {
      const res = await post(srv, headers);
      t.equal(res.status, 401, `${name}: 401`);
      t.equal(res.json?.error?.code, UNAUTHORIZED, `${name}: -32011`);
      t.match(res.json?.error?.message, why, `${name}: ${res.json?.error?.message}`);
      t.match(res.headers.get('www-authenticate'), new RegExp(`error="${error}"`), `${name}: WWW-Authenticate error=${error}`);
      t.notMatch(
        JSON.stringify(res.json) + res.headers.get('www-authenticate'),
        /not-a-key-but-long-enough|YWxpY2U6eA/,
        'the credential is not echoed',
      );
    }
  });

  await t.test('the agent card and the JWKS are public and declare the schemes', async (t) => {
    const v03 = await fetch(new URL('/.well-known/agent-card.json', srv.url));
    t.equal(v03.status, 200, 'v0.3 card without credentials');
    const card: any = await v03.json();
    t.same(card.securitySchemes, {
      apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'API key' },
      apiKeyBearer: { type: 'http', scheme: 'bearer', description: 'API key as a bearer token' },
    });
    t.same(card.security, [{ apiKey: [] }, { apiKeyBearer: [] }], 'either scheme will do');
    const v1 = await fetch(new URL('/.well-known/agent-card.json', srv.url), { headers: { 'A2A-Version': '1.0' } });
    t.equal(v1.status, 200, 'v1.0 card without credentials');
    const card1: any = await v1.json();
    t.match(card1.securitySchemes, {
      apiKey: { apiKeySecurityScheme: { location: 'header', name: 'X-API-Key' } },
      apiKeyBearer: { httpAuthSecurityScheme: { scheme: 'bearer' } },
    });
    t.strictSame(
      card1.securityRequirements.map((r: any) => Object.keys(r.schemes)),
      [['apiKey'], ['apiKeyBearer']],
    );
    const jwks = await fetch(new URL('/.well-known/jwks.json', srv.url));
    t.equal(jwks.status, 200, 'the push JWKS without credentials');
    t.match(await jwks.json(), { keys: [{ kid: String }] });
  });

  await t.test('Authorization: Bearer <key> and X-API-Key both work', async (t) => {
    for (const headers of [bearer('alice'), { 'x-api-key': KEYS.alice }, { authorization: `bearer   ${KEYS.alice}` }]) {
      const res = await rpc(srv.url, 'message/stream', { message: userMessage('hello') }, { headers });
      t.equal(results(res).at(-1)?.status?.state, 'completed', `${Object.keys(headers)[0]}: ${res.json?.error?.message ?? 'a task ran'}`);
    }
  });

  await t.test('an absolute-form request target (POST http://host:port/ HTTP/1.1) needs credentials too', async (t) => {
    const origin = srv.url.replace(/\/$/, '');
    const plain = await rawPost(srv, '/', 'ListTasks', {}, { 'a2a-version': '1.0' });
    t.equal(plain.status, 401, 'origin-form without credentials: 401');
    const absolute = await rawPost(srv, `${origin}/`, 'ListTasks', {}, { 'a2a-version': '1.0' });
    t.equal(absolute.status, 401, `absolute-form without credentials: 401 (got ${absolute.status})`);
    t.same(absolute.json?.result?.tasks ?? [], [], 'an anonymous caller is listed no task');
    await rpc(srv.url, 'message/stream', { message: userMessage('hello from bob') }, { headers: bearer('bob') });
    const ids = (r: { json?: any }) => (r.json?.result?.tasks ?? []).map((x: any) => x.id).sort();
    const viaOrigin = await rawPost(srv, '/', 'ListTasks', {}, { 'a2a-version': '1.0', ...bearer('alice') });
    const viaAbsolute = await rawPost(srv, `${origin}/`, 'ListTasks', {}, { 'a2a-version': '1.0', ...bearer('alice') });
    t.ok(ids(viaOrigin).length > 0, 'alice lists her tasks');
    t.same(ids(viaAbsolute), ids(viaOrigin), 'with credentials the absolute form is the same caller (alice sees only hers)');
  });
});

t.test('a task belongs to its principal', async (t) => {
  const srv = await authServer(t, { api_keys: API_KEYS });
  const alice = as(srv, 'alice');
  const bob = as(srv, 'bob');
  const { task, card, raw: cardStream } = await pause(t, srv, 'alice');

  await t.test('bob answering alice’s call: -32010, audited, the call still waits', async (t) => {
    forbidden(
      t,
      await bob('message/stream', answer(task, card, 'proceed_once')),
      new RegExp(`task ${task.id} belongs to another principal`),
      /bob may not use it/,
    );
    forbidden(t, await bob('message/send', answer(task, card, 'cancel')), /belongs to another principal/);
    await stillPending(t, srv, 'alice', task, card);
    const denied = (await audit(srv, task.id)).filter((e: any) => e.decision === 'denied_identity');
    t.equal(denied.length, 2, 'both refused answers are in the audit log');
    const madeUp = { ...answer(task, card, 'proceed_once') };
    (madeUp.message as any).parts = [{ kind: 'data', data: { tool_call_id: 'tc_made_up', selected_option_id: 'proceed_once' } }];
    forbidden(t, await bob('message/stream', madeUp), /belongs to another principal/);
    const after = (await audit(srv, task.id)).filter((e: any) => e.decision === 'denied_identity');
    t.equal(after.length, 2, 'an answer naming no call of the task is refused without an audit row (no log flooding)');
    t.match(denied[0], {
      principal: 'bob',
      tool_call_id: card.tool_call_id,
      task_id: task.id,
      detail: { owner: 'alice' },
    });
    t.strictSame(denied[0].detail.roles, ['approver'], "the owner's roles, exactly");
  });

  await t.test('bob may not read, resubscribe to, cancel or push-subscribe alice’s task', async (t) => {
    forbidden(t, await bob('tasks/get', { id: task.id }));
    forbiddenInStream(t, await bob('tasks/resubscribe', { id: task.id }));
    forbidden(t, await bob('tasks/cancel', { id: task.id }));
    forbidden(t, await bob('GetTask', { id: task.id }, '1.0'));
    forbidden(
      t,
      await bob('tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { url: 'https://example.com/hook' } }),
    );
    forbidden(t, await bob('tasks/pushNotificationConfig/list', { id: task.id }));
    forbidden(
      t,
      await bob('message/stream', { message: userMessage('hello', { contextId: task.contextId }) }),
      new RegExp(`context ${task.contextId}`),
    );
    await stillPending(t, srv, 'alice', task, card);
  });

  await t.test('tasks/list shows each principal its own tasks, admins included (they have audit/list)', async (t) => {
    const own = results(await bob('message/stream', { message: userMessage('hello') }))[0];
    const ids = async (who: Who) =>
      ((await as(srv, who)('ListTasks', { pageSize: 100 }, '1.0')).json?.result?.tasks ?? []).map((x: any) => x.id);
    const bobs = await ids('bob');
    t.ok(bobs.includes(own.id), 'bob sees his task');
    t.notOk(bobs.includes(task.id), 'bob does not see alice’s');
    t.ok((await ids('alice')).includes(task.id), 'alice sees hers');
    t.notOk((await ids('alice')).includes(own.id), 'and not bob’s');
    const all = await ids('root');
    t.notOk(all.includes(task.id) || all.includes(own.id), 'root (admin) sees neither');
    forbidden(t, await as(srv, 'root')('tasks/get', { id: task.id }), /root may not use it/);
    forbidden(t, await as(srv, 'root')('tasks/cancel', { id: task.id }), /root may not use it/);
  });

  await t.test('alice approves; the audit names who did what', async (t) => {
    const done = await alice('message/stream', answer(task, card, 'proceed_once'));
    t.equal(results(done).at(-1)?.status?.state, 'completed', done.json?.error?.message ?? 'completed');
    const entries = await audit(srv, task.id);
    const mine = entries.filter((e: any) => e.tool_call_id === card.tool_call_id);
    t.same(
      mine.map((e: any) => e.decision),
      ['proposed', 'denied_identity', 'denied_identity', 'authorized', 'executed', 'succeeded'],
    );
    t.same(
      mine.map((e: any) => e.principal),
      [null, 'key:bob', 'key:bob', 'key:alice', null, null],
    );
    for (const e of mine) t.match(e, { at: /^\d{4}-\d\d-\d\dT/, task_id: task.id, context_id: task.contextId, decision: String });
    t.match(
      mine.find((e: any) => e.decision === 'authorized'),
      { principal: 'alice', option_id: 'proceed_once', shown_hash: /^[0-9a-f]{16,}$/ },
    );
    const hashes = new Set(mine.filter((e: any) => e.shown_hash !== null).map((e: any) => e.shown_hash));
    t.equal(hashes.size, 1, 'one shown_hash: what was approved is what was shown');
    // …and what was shown is the card alice's client received: the ToolCall's bytes in its SSE frame, hashed here.
    const shown = JSON.stringify(card);
    t.ok(cardStream.includes(shown), 'these are the bytes of the card in the SSE frame alice received');
    t.strictSame([...hashes], [createHash('sha256').update(shown).digest('hex')], 'the hash of the card on the wire');
    t.ok(
      entries.every((e: any, i: number) => i === 0 || e.at >= entries[i - 1].at),
      'in time order',
    );
  });

  await t.test('audit/list: admins only; params checked', async (t) => {
    forbidden(t, await alice('audit/list', { task_id: task.id }), /audit\/list needs role admin/);
    const missing = await as(srv, 'root')('audit/list', {});
    t.equal(missing.json?.error?.code, -32602, 'no task_id or context_id: -32602');
    t.match(missing.json?.error?.message, /task_id or params\.context_id/);
    const extra = await as(srv, 'root')('audit/list', { task_id: task.id, user: 'x' });
    t.equal(extra.json?.error?.code, -32602);
    t.match(extra.json?.error?.message, /params\.user is not a field of audit\/list/);
    const bad = await as(srv, 'root')('audit/list', { task_id: 42 });
    t.equal(bad.json?.error?.code, -32602);
    const byContext = await as(srv, 'root')('audit/list', { context_id: task.contextId });
    t.ok(byContext.json?.result?.entries?.length >= 6, 'by context_id too');
  });
});

t.test('roles: approving and risky settings need an approver; declining does not', async (t) => {
  const srv = await authServer(t, { api_keys: API_KEYS });
  const vic = as(srv, 'vic');
  const { task, card, paused } = await pause(t, srv, 'vic');

  t.test("vic's task waits auth-required: the text names the role, the schema offers only cancel", async (t) => {
    t.match(paused.status.message.parts[0].text, /Approving needs role approver/);
    t.match(paused.status.message.parts[0].text, /"cancel"/);
    const schema = paused.metadata.inputSchema;
    t.same(schema.properties.selected_option_id, { enum: ['cancel'] });
    t.same(schema.properties.tool_call_id, { enum: [card.tool_call_id] });
    const again = results(await vic('tasks/resubscribe', { id: task.id }));
    t.equal(again.at(-1)?.status?.state, 'auth-required', 'resubscribe re-sends the auth-required pause');
    t.same(again.at(-1)?.metadata?.inputSchema, schema, 'with the same schema');
  });

  await t.test('vic approving his own call: -32010 naming the role, audited, still pending', async (t) => {
    forbidden(
      t,
      await vic('message/stream', answer(task, card, 'proceed_once')),
      /vic may not authorize tool calls/,
      /needs role approver/,
      new RegExp(card.tool_call_id),
      /"cancel" is allowed/,
    );
    forbidden(
      t,
      await vic('message/stream', { message: userMessage('yes', { taskId: task.id, contextId: task.contextId }) }),
      /needs role approver/,
    );
    await stillPending(t, srv, 'vic', task, card);
    const denied = (await audit(srv, task.id)).filter((e: any) => e.decision === 'denied_unauthorized');
    t.equal(denied.length, 2);
    t.match(denied[0], { principal: 'vic', tool_call_id: card.tool_call_id, detail: { owner: 'vic' } });
    t.strictSame(denied[0].detail.roles, ['viewer'], "the caller's roles, exactly");
  });

  await t.test('vic may decline', async (t) => {
    const res = await vic('message/stream', answer(task, card, 'cancel'));
    const ev = results(res);
    t.ok(ev.length > 0, res.json?.error?.message ?? 'a stream');
    t.match(dataOf(ev.find((r) => dataOf(r)?.tool_call_id === card.tool_call_id)), { status: 'CANCELLED' });
    t.equal(ev.at(-1)?.status?.state, 'completed');
    const decisions = (await audit(srv, task.id)).map((e: any) => [e.decision, e.principal]);
    t.same(decisions, [
      ['proposed', null],
      ['denied_unauthorized', 'key:vic'],
      ['denied_unauthorized', 'key:vic'],
      ['declined', 'key:vic'],
    ]);
  });

  await t.test('settings that skip approvals need an approver', async (t) => {
    const settings = (s: Record<string, unknown>) => ({ metadata: { [URI]: s } });
    forbidden(
      t,
      await vic('message/stream', { message: userMessage('hello', settings({ approval_mode: 'YOLO' })) }),
      /approval_mode YOLO/,
      /role approver/,
    );
    forbidden(
      t,
      await vic('message/stream', { message: userMessage('hello', settings({ approval_mode: 'AUTO_EDIT' })) }),
      /approval_mode AUTO_EDIT/,
    );
    forbidden(
      t,
      await vic('message/stream', { message: userMessage('hello', settings({ allowed_tools: ['write_file'] })) }),
      /allowed_tools/,
    );
    // Not on a follow-up to his (completed) task either.
    forbidden(
      t,
      await vic('message/stream', {
        message: userMessage('hello', { taskId: task.id, contextId: task.contextId, ...settings({ approval_mode: 'YOLO' }) }),
      }),
      /approval_mode YOLO/,
    );
    const plain = await vic('message/stream', { message: userMessage('hello', settings({ approval_mode: 'DEFAULT' })) });
    t.equal(results(plain).at(-1)?.status?.state, 'completed', 'DEFAULT is fine');
    const bob = await as(srv, 'bob')('message/stream', { message: userMessage('write a greeting', settings({ approval_mode: 'YOLO' })) });
    t.equal(
      results(bob).at(-1)?.status?.state,
      'completed',
      `an approver may set YOLO (the write runs unasked): ${bob.json?.error?.message ?? 'ok'}`,
    );
  });
});

t.test('JWTs from a configured issuer', async (t) => {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'issuer-key-1', alg: 'ES256', use: 'sig' };
  const jwksApp = Fastify({ logger: false });
  let jwksFetches = 0;
  jwksApp.get('/jwks.json', async () => {
    jwksFetches++;
    return { keys: [jwk] };
  });
  await jwksApp.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => jwksApp.close());
  const address = jwksApp.server.address();
  const jwksUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/jwks.json`;
  const issuer = 'https://issuer.example';
  const audience = 'devtool-agent';
  const srv = await authServer(t, { api_keys: [API_KEYS[3]], jwt: { issuer, jwks_url: jwksUrl, audience, roles_claim: 'roles' } });

  const token = (
    sub: string,
    claims: Record<string, unknown> = {},
    opts: { exp?: number; aud?: string; key?: CryptoKey; kid?: string } = {},
  ) =>
    new SignJWT({ roles: ['approver'], ...claims })
      .setProtectedHeader({ alg: 'ES256', kid: opts.kid ?? 'issuer-key-1' })
      .setSubject(sub)
      .setIssuer(issuer)
      .setAudience(opts.aud ?? audience)
      .setIssuedAt()
      .setExpirationTime(opts.exp ?? Math.floor(Date.now() / 1000) + 300)
      .sign(opts.key ?? privateKey);

  await t.test('the card declares the JWT scheme', async (t) => {
    const card: any = await (await fetch(new URL('/.well-known/agent-card.json', srv.url))).json();
    t.match(card.securitySchemes?.jwt, { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    t.strictSame(card.security, [{ apiKey: [] }, { apiKeyBearer: [] }, { jwt: [] }]);
  });

  await t.test('a valid JWT: principal = sub, roles from the claim', async (t) => {
    const carol = { authorization: `Bearer ${await token('carol')}` };
    const first = await rpc(srv.url, 'message/stream', { message: userMessage('write a greeting') }, { headers: carol });
    const ev = results(first);
    t.equal(ev.at(-1)?.status?.state, 'input-required', first.json?.error?.message ?? 'paused');
    const task = ev[0];
    const card = dataOf(ev.find((r) => dataOf(r)?.status === 'PENDING'));
    const done = await rpc(srv.url, 'message/stream', answer(task, card, 'proceed_once'), { headers: carol });
    t.equal(results(done).at(-1)?.status?.state, 'completed', 'an approver by the roles claim');
    t.match(
      (await audit(srv, task.id)).find((e: any) => e.decision === 'authorized'),
      { principal: 'carol', option_id: 'proceed_once' },
    );
    const dave = { authorization: `Bearer ${await token('dave')}` };
    forbidden(t, await rpc(srv.url, 'tasks/get', { id: task.id }, { headers: dave }), /dave may not use it/);
    const viewer = { authorization: `Bearer ${await token('erin', { roles: ['viewer'] })}` };
    const paused = await rpc(srv.url, 'message/stream', { message: userMessage('write a greeting') }, { headers: viewer });
    const pev = results(paused);
    forbidden(
      t,
      await rpc(srv.url, 'message/stream', answer(pev[0], dataOf(pev[2]), 'proceed_once'), { headers: viewer }),
      /erin may not authorize/,
    );
  });

  await t.test('bad JWTs → 401', async (t) => {
    const other = await generateKeyPair('ES256');
    const cases: Array<[string, Promise<string>, RegExp]> = [
      ['expired', token('carol', {}, { exp: Math.floor(Date.now() / 1000) - 600 }), /JWT expired at \d{4}-/],
      ['another audience', token('carol', {}, { aud: 'someone-else' }), /JWT audience is wrong/],
      ['signed by another key', token('carol', {}, { key: other.privateKey }), /signature verification failed/],
      ['an unknown kid', token('carol', {}, { key: other.privateKey, kid: 'nope' }), /kid\) "nope" is unknown/],
    ];
    for (const [name, jwt, why] of cases) {
      const res = await post(srv, { authorization: `Bearer ${await jwt}` });
      t.equal(res.status, 401, `${name}: 401`);
      t.equal(res.json?.error?.code, UNAUTHORIZED);
      t.match(res.json?.error?.message, why, `${name}: ${res.json?.error?.message}`);
      t.match(res.headers.get('www-authenticate'), /error="invalid_token"/);
    }
    t.ok(jwksFetches >= 1, `the issuer's JWKS was fetched (${jwksFetches}×)`);
  });

  await t.test("a JWT whose sub is an API key's principal name is someone else", async (t) => {
    const root = as(srv, 'root');
    const mine = results(await root('message/stream', { message: userMessage('hello from the key') }));
    const task = mine[0];
    t.equal(mine.at(-1)?.status?.state, 'completed', 'the API key "root" made a task');
    const fake = { authorization: `Bearer ${await token('root', { roles: ['admin'] })}` };
    forbidden(t, await rpc(srv.url, 'tasks/get', { id: task.id }, { headers: fake }), /jwt:https:\/\/issuer\.example:root may not use it/);
    const listed = await rpc(srv.url, 'ListTasks', {}, { version: '1.0', headers: fake });
    t.same(listed.json?.result?.tasks, [], "ListTasks of the JWT shows none of the key's tasks");
    forbidden(
      t,
      await rpc(srv.url, 'message/stream', { message: userMessage('hi', { contextId: task.contextId }) }, { headers: fake }),
      /context/,
    );
    t.equal((await root('tasks/get', { id: task.id })).json?.result?.id, task.id, 'the key still reads it');
  });

  await t.test('API keys still work beside JWTs', async (t) => {
    const res = await as(srv, 'root')('tasks/get', { id: 'no-such-task' });
    t.equal(res.json?.error?.code, -32001, 'authenticated: the handler answers (task not found)');
  });
});

t.test('the extended agent card: only where authentication is on, only for an authenticated caller', async (t) => {
  const srv = await authServer(t, { api_keys: API_KEYS });
  const v03card: any = await (await fetch(new URL('/.well-known/agent-card.json', srv.url))).json();
  t.equal(v03card.supportsAuthenticatedExtendedCard, true, 'the v0.3 card says it has one');
  const v1card: any = await (await fetch(new URL('/.well-known/agent-card.json', srv.url), { headers: { 'A2A-Version': '1.0' } })).json();
  t.equal(v1card.capabilities.extendedAgentCard, true, 'the v1.0 card says it has one');
  t.notOk(
    v1card.skills.some((s: any) => s.id.startsWith('tool:')),
    'the public card does not list the tools',
  );

  const v03 = await as(srv, 'vic')('agent/getAuthenticatedExtendedCard', {});
  const skills = v03.json?.result?.skills ?? [];
  const byId = new Map(skills.map((s: any) => [s.id, s]));
  t.match(byId.get('tool:read_file'), { name: 'read_file', description: /runs without asking/ }, 'a read tool');
  t.match(byId.get('tool:write_file'), { description: /asks for approval first/ }, 'a writing tool');
  t.match(byId.get('tool:run_shell_command'), { description: /asks for approval first/ });
  t.ok(byId.has('development'), 'beside the public skill');
  const v1 = await as(srv, 'vic')('GetExtendedAgentCard', {}, '1.0');
  t.same(
    v1.json?.result?.skills?.map((s: any) => s.id),
    skills.map((s: any) => s.id),
    'v1.0: the same card',
  );
  const rest = await fetch(new URL('/v1/extendedAgentCard', srv.url), { headers: { ...bearer('vic'), 'a2a-version': '1.0' } });
  t.equal(rest.status, 200, 'HTTP+JSON too');
  t.equal((await post(srv, {}, 'agent/getAuthenticatedExtendedCard', {})).status, 401, 'never without credentials');

  const open = await startServer(t);
  const none = await rpc(open.url, 'agent/getAuthenticatedExtendedCard', {});
  t.equal(none.json?.error?.code, -32007, 'authentication off: no extended card');
});
