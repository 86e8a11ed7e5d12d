/**
 * GET /metrics end to end, in process (app.inject): the Prometheus text parses, with a # TYPE for
 * every family; a confirm flow moves the counters and histograms with the right labels; the
 * waiting-cards gauge rises while a card waits and falls after its answer; the open-streams gauge
 * counts an SSE stream while it is open; with AUTH_CONFIG only an admin reads the metrics; and no
 * label carries a client's free-form text (an MCP server's secret-looking name, paths in args).
 */
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { ModelScript } from '../../src/agent/model/scripted-model-client.js';
import { ScriptedModelClient } from '../../src/agent/model/scripted-model-client.js';
import { HoldingModel, openStream, until } from '../support/core.js';
import { ownDir } from '../support/own-dir.js';
import { rpc } from '../support/sse.js';
import { buildServer, confirmMessage, dataOf, sharedStore, URI, userMessage } from '../support/server.js';
import type { Test } from '../support/tool-call-watch.js';
import { echoServer } from '../fixtures/mcp/servers.js';
import { WebhookReceiver } from '../support/webhook.js';
import { MemoryTaskStore } from '../../src/store/memory-store.js';
import { TEST_SCRIPT } from '../fixtures/test-script.js';
import { coderAgent, legacyCard, legacyMessage, stream } from '../support/legacy-client.js';

/** An MCP server name and arguments that look like secrets and paths: none may reach a label. */
const SECRET_SERVER = 'ghp_16C7e42F292c6912E7710c838347Ae178B4a';
const SECRET_TOOL = 'sk_live_51HqLyjWDarjtT1zdp7dc';
const SECRET_TEXTS = [SECRET_SERVER, SECRET_TOOL, '/etc/shadow', 'id_rsa'];

const call = (name: string, args: Record<string, unknown>) => ({ functionCall: { name, args } });
const say = (text: string) => ({ chunks: [[{ text }]] });

const SCRIPT: ModelScript = {
  model: 'scripted-metrics',
  scripts: [
    { when: '^secret', steps: [{ chunks: [[call(`${SECRET_SERVER}__echo`, { text: '/home/alice/.ssh/id_rsa' })]] }, say('Echoed.')] },
    { when: '^unknown', steps: [{ chunks: [[call(SECRET_TOOL, { path: '/etc/shadow' })]] }, say('No such tool.')] },
    ...TEST_SCRIPT.scripts,
  ],
};

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

interface Scrape {
  status: number;
  contentType: string;
  body: string;
  /** # TYPE of each family. */
  types: Map<string, string>;
  samples: Sample[];
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/gy;

/** Reads the text format strictly: every line a comment, a blank, or a sample of a family with a # TYPE before it. */
function parseProm(body: string): Pick<Scrape, 'types' | 'samples'> {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of body.split('\n')) {
    const type = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type) {
      if (types.has(type[1])) throw new Error(`two # TYPE lines for ${type[1]}`);
      types.set(type[1], type[2]);
      continue;
    }
    if (line === '' || line.startsWith('# HELP ')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a Prometheus text line: ${line}`);
    const [, name, rawLabels = '', value] = m;
    const family = types.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
    if (!types.has(family)) throw new Error(`sample ${name} has no # TYPE before it`);
    const labels: Record<string, string> = {};
    let end = 0;
    LABEL.lastIndex = 0;
    for (let l = LABEL.exec(rawLabels); l !== null; l = LABEL.exec(rawLabels)) {
      labels[l[1]] = l[2];
      end = LABEL.lastIndex;
    }
    if (end !== rawLabels.length) throw new Error(`bad labels: ${rawLabels}`);
    const n = value === '+Inf' ? Infinity : value === '-Inf' ? -Infinity : Number(value);
    // prom-client writes NaN as `Nan` (an empty event-loop histogram); Prometheus reads it case-insensitively.
    if (Number.isNaN(n) && value.toLowerCase() !== 'nan') throw new Error(`bad value in ${line}`);
    samples.push({ name, labels, value: n });
  }
  return { types, samples };
}

async function scrape(app: FastifyInstance, headers: Record<string, string> = {}): Promise<Scrape> {
  const res = await app.inject({ method: 'GET', url: '/metrics', headers: { host: '127.0.0.1', ...headers } });
  const contentType = String(res.headers['content-type'] ?? '');
  const parsed = res.statusCode === 200 ? parseProm(res.body) : { types: new Map(), samples: [] };
  return { status: res.statusCode, contentType, body: res.body, ...parsed };
}

/** The value of one series (0 when absent): the sample named `name` whose labels include `labels`. */
function value(s: Scrape, name: string, labels: Record<string, string> = {}): number {
  const found = s.samples.filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  return found.reduce((sum, x) => sum + x.value, 0);
}

const P = 'devtool_a2a_';

/** Starts `prompt` and expects it to pause on one card; returns the task and the card. */
async function pauseOn(t: Test, app: FastifyInstance, prompt: string) {
  const res = await rpc(app, 'message/stream', { message: userMessage(prompt) });
  const ev = (res.events ?? []).map((e) => e.data.result);
  t.equal(ev.at(-1)?.status?.state, 'input-required', `${prompt}: pauses`);
  return { task: ev[0], card: dataOf(ev.find((r) => dataOf(r)?.status === 'PENDING')) };
}

async function answer(app: FastifyInstance, paused: { task: any; card: any }, option: string): Promise<string | undefined> {
  const message = confirmMessage(paused.task.id, paused.task.contextId, {
    tool_call_id: paused.card.tool_call_id,
    selected_option_id: option,
  });
  const res = await rpc(app, 'message/stream', { message });
  return (res.events ?? []).at(-1)?.data.result?.status?.state;
}

t.test('a confirm flow moves the counters, the histograms and the waiting gauge', async (t) => {
  const { app } = await buildServer(t, { script: SCRIPT });
  const before = await scrape(app);
  t.equal(before.status, 200, 'open without authentication');
  t.match(before.contentType, /^text\/plain; version=0\.0\.4/);
  t.equal(value(before, `${P}tool_calls_awaiting_approval`), 0, 'nothing waits yet');
  t.equal(value(before, `${P}confirmations_total`, { outcome: 'approved' }), 0, 'closed label sets start at 0');

  const approved = await pauseOn(t, app, 'write hello');
  const waiting = await scrape(app);
  t.equal(value(waiting, `${P}tool_calls_awaiting_approval`), 1, 'the gauge rises while the card waits');
  t.equal(await answer(app, approved, 'proceed_once'), 'completed');
  const after = await scrape(app);
  t.equal(value(after, `${P}tool_calls_awaiting_approval`), 0, 'and falls after the answer');
  t.equal(value(after, `${P}confirmations_total`, { outcome: 'approved' }), 1);
  t.equal(value(after, `${P}approval_wait_seconds_count`, { outcome: 'approved' }), 1, 'one wait observed');
  t.equal(value(after, `${P}tool_calls_total`, { tool: 'write_file', status: 'SUCCEEDED' }), 1);
  t.equal(value(after, `${P}tool_run_seconds_count`, { tool: 'write_file' }), 1, 'one run timed');
  t.equal(value(after, `${P}tasks_ended_total`, { state: 'completed' }), 1);
  const commits = value(after, `${P}store_commit_seconds_count`);
  t.ok(commits > 0, `commits timed (${commits})`);
  t.equal(value(after, `${P}store_commit_writes_count`), commits, 'a batch size per commit');
  t.ok(value(after, `${P}store_commit_writes_sum`) >= commits, 'each commit carries a write or more');

  const declined = await pauseOn(t, app, 'write again');
  t.equal(value(await scrape(app), `${P}tool_calls_awaiting_approval`), 1);
  t.equal(await answer(app, declined, 'cancel'), 'completed');
  const end = await scrape(app);
  t.equal(value(end, `${P}tool_calls_awaiting_approval`), 0);
  t.equal(value(end, `${P}confirmations_total`, { outcome: 'declined' }), 1);
  t.equal(value(end, `${P}tool_calls_total`, { tool: 'write_file', status: 'CANCELLED' }), 1);
  t.equal(value(end, `${P}tasks_ended_total`, { state: 'completed' }), 2);
});

t.test('the output is Prometheus text: # HELP and # TYPE for every family, the default process metrics too', async (t) => {
  const { app } = await buildServer(t, { script: SCRIPT });
  const s = await scrape(app);
  const expected: Record<string, string> = {
    tasks_ended_total: 'counter',
    confirmations_total: 'counter',
    tool_calls_total: 'counter',
    tool_calls_awaiting_approval: 'gauge',
    approval_wait_seconds: 'histogram',
    tool_run_seconds: 'histogram',
    store_commit_seconds: 'histogram',
    store_commit_writes: 'histogram',
    sse_streams_open: 'gauge',
    push_deliveries_total: 'counter',
    push_retries_total: 'counter',
    lease_takeovers_total: 'counter',
    stale_copy_retries_total: 'counter',
  };
  for (const [name, type] of Object.entries(expected)) {
    t.equal(s.types.get(P + name), type, `# TYPE ${P}${name} ${type}`);
    t.match(s.body, new RegExp(`^# HELP ${P}${name} \\S`, 'm'), `# HELP ${P}${name}`);
  }
  t.same(
    [...s.types.keys()].filter((n) => n.startsWith(P)).sort(),
    Object.keys(expected)
      .map((n) => P + n)
      .sort(),
    'no other metric of ours',
  );
  t.equal(s.types.get('process_cpu_user_seconds_total'), 'counter', 'the default process metrics');
  t.equal(s.types.get('nodejs_eventloop_lag_seconds'), 'gauge', 'and the Node ones');
  const again = await scrape(app);
  t.equal(again.types.size, s.types.size, 'a second scrape renders the same families (nothing registered twice)');
});

t.test('the open-streams gauge counts an SSE stream while it is open', async (t) => {
  const model = new HoldingModel(new ScriptedModelClient(SCRIPT));
  const { app } = await buildServer(t, { model });
  t.equal(value(await scrape(app), `${P}sse_streams_open`), 0);
  const stream = await openStream(app, 'message/stream', { message: userMessage('hold on') });
  t.ok(await stream.next(), 'the stream started');
  t.equal(value(await scrape(app), `${P}sse_streams_open`), 1, 'one stream open');
  await until('the model holds', () => model.held === 1);
  model.release();
  await stream.rest();
  t.equal(value(await scrape(app), `${P}sse_streams_open`), 0, 'none once it ended');

  // The HTTP+JSON binding's streams are counted too.
  const rest = await app.inject({
    method: 'POST',
    url: '/v1/message:stream',
    headers: { host: '127.0.0.1', 'content-type': 'application/json', accept: 'text/event-stream', 'a2a-version': '1.0' },
    payload: JSON.stringify({ message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hold the rest' }] } }),
    payloadAsStream: true,
  });
  t.match(String(rest.headers['content-type']), /^text\/event-stream/);
  const body = rest.stream();
  t.equal(value(await scrape(app), `${P}sse_streams_open`), 1, 'an HTTP+JSON stream open');
  await until('the model holds', () => model.held === 1);
  model.release();
  for await (const _chunk of body) void _chunk; // read to its end
  t.equal(value(await scrape(app), `${P}sse_streams_open`), 0, 'none once it ended');
});

t.test('with AUTH_CONFIG only an admin reads /metrics', async (t) => {
  const dir = ownDir('metrics-auth');
  const file = path.join(dir, 'auth.json');
  writeFileSync(
    file,
    JSON.stringify({
      api_keys: [
        { key: 'alice-key-0123456789abcdef', principal: 'alice', roles: ['approver'] },
        { key: 'root-key-0123456789abcdef-z', principal: 'root', roles: ['admin'] },
      ],
    }),
  );
  const { app } = await buildServer(t, { env: { AUTH_CONFIG: file } });
  const none = await app.inject({ method: 'GET', url: '/metrics', headers: { host: '127.0.0.1' } });
  t.equal(none.statusCode, 401, 'no credentials: 401');
  t.ok(none.headers['www-authenticate'], 'with a challenge');
  t.notMatch(none.body, /devtool_a2a_/, 'and no metrics');
  const bad = await scrape(app, { authorization: 'Bearer not-a-key-at-all-0123456789' });
  t.equal(bad.status, 401, 'a bad key: 401');
  const approver = await scrape(app, { authorization: 'Bearer alice-key-0123456789abcdef' });
  t.equal(approver.status, 403, 'an approver who is no admin: 403');
  t.notMatch(approver.body, /devtool_a2a_/);
  const admin = await scrape(app, { authorization: 'Bearer root-key-0123456789abcdef-z' });
  t.equal(admin.status, 200, 'an admin: 200');
  t.ok(admin.types.has(`${P}tool_calls_total`), 'with the metrics');
});

t.test('no label carries a client-chosen name, a path or a secret', async (t) => {
  const { app, workspace } = await buildServer(t, { script: SCRIPT });
  const metadata = { [URI]: { workspace_path: workspace, mcp_servers: { [SECRET_SERVER]: echoServer() }, approval_mode: 'YOLO' } };
  const echoed = await rpc(app, 'message/stream', { message: userMessage('secret echo', { metadata }) });
  const ev = (echoed.events ?? []).map((e) => e.data.result);
  t.equal(ev.at(-1)?.status?.state, 'completed', 'the MCP call ran (YOLO)');
  t.ok(
    ev.some((r) => dataOf(r)?.status === 'SUCCEEDED' && dataOf(r)?.tool_name === `${SECRET_SERVER}__echo`),
    'as the secret-named server',
  );
  const unknown = await rpc(app, 'message/stream', { message: userMessage('unknown tool please') });
  t.equal((unknown.events ?? []).at(-1)?.data.result?.status?.state, 'completed');
  const paused = await pauseOn(t, app, 'write one more');
  t.equal(await answer(app, paused, 'proceed_once'), 'completed');

  const s = await scrape(app);
  for (const secret of SECRET_TEXTS) t.notOk(s.body.includes(secret), `"${secret}" appears nowhere in the output`);
  const allowed: Record<string, ReadonlySet<string>> = {
    tool: new Set(['write_file', 'mcp', 'unknown']),
    status: new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']),
    state: new Set(['completed', 'failed', 'canceled', 'rejected']),
    outcome: new Set(['approved', 'declined', 'expired', 'cancelled', 'delivered', 'dropped', 'interrupted', 'paused']),
  };
  const ours = s.samples.filter((x) => x.name.startsWith(P));
  const offenders = ours.flatMap((x) =>
    Object.entries(x.labels)
      .filter(([k, v]) => (k === 'le' ? !/^(\d+(\.\d+)?(e[+-]?\d+)?|\+Inf)$/.test(v) : !allowed[k]?.has(v)))
      .map(([k, v]) => `${x.name}{${k}="${v}"}`),
  );
  t.same(offenders, [], 'every label value is from its closed set');
  t.equal(value(s, `${P}tool_calls_total`, { tool: 'mcp', status: 'SUCCEEDED' }), 1, 'the MCP call counted as mcp');
  t.equal(value(s, `${P}tool_calls_total`, { tool: 'unknown', status: 'FAILED' }), 1, 'the unknown tool as unknown');
  t.equal(value(s, `${P}tool_calls_total`, { tool: 'write_file', status: 'SUCCEEDED' }), 1, 'a built-in by its name');
});

t.test('push deliveries by outcome, and retries', async (t) => {
  const store = new MemoryTaskStore(); // its own: no other app's dispatcher takes these configs
  t.teardown(() => store.close());
  const env = { PUSH_ALLOW_PRIVATE: '1', PUSH_RETRY_BASE_MS: '20', PUSH_RETRY_MAX_MS: '50', PUSH_MAX_ATTEMPTS: '5' };
  const { app } = await buildServer(t, { script: SCRIPT, env, app: { store } });
  const hook = await WebhookReceiver.start(t);
  // The first request to /ok fails once (retried), every request to /refuse is refused (dropped at once).
  hook.answerWith((d) => (d.path === '/refuse' ? 400 : d.n === hook.to('/ok')[0]?.n ? 503 : 200));
  for (const path of ['/ok', '/refuse']) {
    const res = await rpc(app, 'message/stream', {
      message: userMessage('hello'),
      configuration: { pushNotificationConfig: { url: hook.url(path) } },
    });
    t.equal((res.events ?? []).at(-1)?.data.result?.status?.state, 'completed');
    const events = (res.events ?? []).length;
    if (path === '/ok') await hook.waitForDeliveries(events, { path });
    else await until('every event refused', () => hook.to(path).length >= events);
  }
  const settledTo = (name: string, labels: Record<string, string>, want: number) =>
    until(`${name} ${JSON.stringify(labels)} = ${want}`, async () => value(await scrape(app), name, labels) === want);
  await settledTo(`${P}push_deliveries_total`, { outcome: 'delivered' }, hook.delivered('/ok').length);
  await settledTo(`${P}push_deliveries_total`, { outcome: 'dropped' }, hook.to('/refuse').length);
  const s = await scrape(app);
  t.ok(value(s, `${P}push_deliveries_total`, { outcome: 'delivered' }) > 0, 'deliveries counted');
  t.ok(value(s, `${P}push_deliveries_total`, { outcome: 'dropped' }) > 0, 'refused events counted dropped');
  t.equal(value(s, `${P}push_retries_total`), 1, 'the one failed attempt was retried');
  t.equal(hook.to('/ok').length, hook.delivered('/ok').length + 1, 'as the receiver saw it');
});

t.test(
  'a message decided once more because the copy here was behind the store is counted; flows on one instance, on either dialect, never are',
  async (t) => {
    // Two apps on one in-memory database: two instances. `deaf` mutes this instance's notifications
    // from the database, as while its LISTEN connection reconnects: a change made elsewhere meanwhile
    // goes unheard here, and the copy this instance keeps of the task stays behind the store.
    const database = (await sharedStore()).database;
    const before = new Set(database.hearers);
    const here = await buildServer(t, { script: SCRIPT, app: { store: (await sharedStore()).connect() } });
    const ours = [...database.hearers].filter((h) => !before.has(h));
    t.equal(ours.length, 1, "this instance's one listener");
    const deaf = async <T>(during: () => Promise<T>): Promise<T> => {
      for (const h of ours) database.hearers.delete(h);
      try {
        const result = await during();
        await new Promise((r) => setImmediate(r)); // the notes of its commits have been handed out (to nobody here)
        return result;
      } finally {
        for (const h of ours) database.hearers.add(h);
      }
    };
    const there = await buildServer(t, { script: SCRIPT });
    const retries = async (app: FastifyInstance) => value(await scrape(app), `${P}stale_copy_retries_total`);
    t.equal(await retries(here.app), 0, 'the series reads 0 before the first retry');

    // One instance, the RFC dialect: a pause, a text that is no answer (re-prompted), the answer.
    const rfc = await pauseOn(t, here.app, 'write one');
    const chatter = await rpc(here.app, 'message/stream', {
      message: userMessage('what will it write?', { taskId: rfc.task.id, contextId: rfc.task.contextId }),
    });
    t.equal((chatter.events ?? []).at(-1)?.data.result?.status?.state, 'input-required', 're-prompted');
    t.equal(await answer(here.app, rfc, 'proceed_once'), 'completed');
    // One instance, the legacy dialect (gemini-cli's wire): the same.
    const first = await stream(here.app, legacyMessage('write two', { metadata: coderAgent(here.workspace) }));
    const taskId = first[0].id as string;
    const card = legacyCard(first, 'awaiting_approval');
    t.ok(card?.request?.callId, 'the legacy card waits');
    await stream(here.app, legacyMessage('and why?', { taskId }));
    const done = await stream(
      here.app,
      legacyMessage(undefined, { taskId, parts: [{ kind: 'data', data: { callId: card.request.callId, outcome: 'proceed_once' } }] }),
    );
    t.ok(legacyCard(done, 'success'), 'the legacy call ran');
    t.equal(await retries(here.app), 0, 'no flow on one instance is found behind (no false "behind" on either dialect)');

    // Two instances: the other one re-prompts a task paused here; the answer here finds its copy behind.
    const paused = await pauseOn(t, here.app, 'write three');
    const elsewhere = await deaf(() =>
      rpc(there.app, 'message/stream', {
        message: userMessage('what will it write?', { taskId: paused.task.id, contextId: paused.task.contextId }),
      }),
    );
    t.equal((elsewhere.events ?? []).at(-1)?.data.result?.status?.state, 'input-required', 're-prompted on the other instance');
    t.equal(await answer(here.app, paused, 'proceed_once'), 'completed', 'the answer is accepted on a fresh read');
    t.equal(await retries(here.app), 1, 'and counted once, here');
    t.equal(await retries(there.app), 0, 'not on the other instance');
  },
);
