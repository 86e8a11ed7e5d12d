/**
 * The legacy dialect's REST side routes, with the request and answer shapes recorded from
 * gemini-cli's a2a-server (test/fixtures/legacy/rest.json); authentication and the Host guard
 * apply to them as to `POST /`.
 */
import t from 'tap';
import type { Test } from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../support/server.js';
import { rpc } from '../support/sse.js';
import { fixture, legacyCard, legacyMessage, missingKeys, stream } from '../support/legacy-client.js';
import { MemoryTaskStore } from '../../src/store/memory-store.js';

const rest = fixture('rest') as unknown as Record<string, any>;

async function call(app: FastifyInstance, method: 'GET' | 'POST', url: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await app.inject({
    method,
    url,
    headers: { host: '127.0.0.1', ...headers },
    ...(body === undefined
      ? {}
      : { payload: JSON.stringify(body), headers: { host: '127.0.0.1', 'content-type': 'application/json', ...headers } }),
  });
  return { status: res.statusCode, body: res.body === '' ? undefined : JSON.parse(res.body), type: res.headers['content-type'] };
}

t.test('GET /listCommands: the recorded shape, subcommands named by their full path', async (t) => {
  const { app } = await buildServer(t);
  const res = await call(app, 'GET', '/listCommands');
  t.equal(res.status, 200);
  const theirs = rest.listCommands.commands.find((c: any) => c.name === 'memory');
  const ours = res.body.commands.find((c: any) => c.name === 'memory');
  t.same(missingKeys(ours, theirs), [], 'a command has the recorded keys and types');
  t.same(
    ours.subCommands.map((c: any) => c.name),
    ['memory show', 'memory refresh', 'memory list', 'memory add'],
    'the original’s memory subcommands, in its order',
  );
  t.match(ours.subCommands[3].arguments, [{ name: 'fact', isRequired: true }]);
  t.equal(ours.subCommands[3].arguments.length, 1, 'one argument');
  const originals = rest.listCommands.commands
    .map((c: any) => c.name)
    .filter((n: string) => res.body.commands.some((c: any) => c.name === n));
  t.same(
    res.body.commands.slice(0, originals.length).map((c: any) => c.name),
    originals,
    'the original’s commands first, in its order',
  );
  t.notOk(
    res.body.commands.some((c: any) => c.name === 'init'),
    'init runs but is not listed, as in the original',
  );
});

t.test('POST /executeCommand: an answer at once, a started task, and the original refusals', async (t) => {
  const { app, workspace } = await buildServer(t);
  const shown = await call(app, 'POST', '/executeCommand', { command: 'memory show', args: [] });
  t.equal(shown.status, 200);
  t.same(missingKeys(shown.body, rest.executeMemoryShow.body), [], '{name, data} as recorded');
  t.equal(shown.body.name, 'memory show');
  t.type(shown.body.data, 'string');
  const added = await call(app, 'POST', '/executeCommand', { command: '/memory add', args: ['use', 'pnpm'] });
  t.equal(added.status, 200);
  t.match(added.body, { name: '/memory add', data: { taskId: String, status: 'AWAITING_ACTION_CONFIRMATION' } });
  const replay = await rpc(app, 'tasks/resubscribe', { id: added.body.data.taskId }, { headers: { 'Last-Event-ID': '0' } });
  const kinds = (replay.events ?? []).map((e) => e.data?.result?.metadata?.coderAgent?.kind).filter(Boolean);
  t.ok(kinds.includes('tool-call-confirmation'), `the command's task speaks the legacy dialect (${kinds.join(', ')})`);
  t.same(await call(app, 'POST', '/executeCommand', { command: 'nope', args: [] }), {
    status: rest.executeUnknown.status,
    body: rest.executeUnknown.body,
    type: 'application/json; charset=utf-8',
  });
  const bad = await call(app, 'POST', '/executeCommand', { command: 5 });
  t.same([bad.status, bad.body], [rest.executeBad.status, rest.executeBad.body], 'a bad command field: as recorded');
  const badArgs = await call(app, 'POST', '/executeCommand', { command: 'memory show', args: 'x' });
  t.same([badArgs.status, badArgs.body], [400, { error: '"args" field must be an array.' }]);
  const missing = await call(app, 'POST', '/executeCommand', { command: 'memory add' });
  t.equal(missing.status, 400);
  t.match(missing.body.error, /needs <fact>/);
  const unparsable = await app.inject({
    method: 'POST',
    url: '/executeCommand',
    headers: { host: '127.0.0.1', 'content-type': 'application/json' },
    payload: '{',
  });
  t.equal(unparsable.statusCode, 400);
  void workspace;
});

t.test('task metadata: one task, all tasks, not found', async (t) => {
  const store = new MemoryTaskStore();
  t.teardown(() => store.close());
  const { app, workspace } = await buildServer(t, { app: { store } });
  t.equal((await call(app, 'GET', '/tasks/metadata')).status, 204, 'no tasks: 204');
  const created = await call(app, 'POST', '/tasks', { agentSettings: { kind: 'agent-settings', workspacePath: workspace } });
  t.equal(created.status, 201);
  const one = await call(app, 'GET', `/tasks/${created.body}/metadata`);
  t.equal(one.status, 200);
  t.same(missingKeys(one.body, rest.taskMetadata.body, ['availableTools']), [], '{metadata: {...}} as recorded');
  t.match(one.body.metadata, { id: created.body, taskState: 'input-required', model: 'scripted-test' });
  t.strictSame(one.body.metadata.mcpServers, [], 'no MCP servers configured');
  t.same(missingKeys(one.body.metadata.availableTools, rest.taskMetadata.body.metadata.availableTools), []);
  t.ok(
    one.body.metadata.availableTools.some((x: any) => x.name === 'write_file'),
    'the tools the task can call',
  );
  const all = await call(app, 'GET', '/tasks/metadata');
  t.equal(all.status, 200);
  t.same(
    all.body.map((m: any) => m.id),
    [created.body],
  );
  const none = await call(app, 'GET', '/tasks/nope/metadata');
  t.equal(none.status, rest.taskMetadataMissing.status);
  t.match(none.body, { error: /not found/ });
  const busy = await call(app, 'POST', '/tasks', { contextId: 5 });
  t.equal(busy.status, 400, 'a contextId that is not a string');
});

t.test("POST /tasks into a busy conversation is refused and leaves the conversation's settings as they were", async (t) => {
  const store = new MemoryTaskStore();
  t.teardown(() => store.close());
  const { app, workspace } = await buildServer(t, { app: { store } });
  const paused = await rpc(app, 'message/stream', {
    message: { kind: 'message', role: 'user', messageId: 'm-busy', parts: [{ kind: 'text', text: 'write a file' }] },
  });
  const first = paused.events?.[0]?.data?.result;
  t.equal(paused.events?.at(-1)?.data?.result?.status?.state, 'input-required', 'the conversation waits for an answer');
  const refused = await call(app, 'POST', '/tasks', {
    contextId: first.contextId,
    agentSettings: { kind: 'agent-settings', workspacePath: workspace, autoExecute: true },
  });
  t.equal(refused.status, 409, `refused: ${JSON.stringify(refused.body)}`);
  t.match(JSON.stringify(refused.body), /is busy/);
  t.equal((await store.loadContext(first.contextId))?.settings.approvalMode, undefined, 'autoExecute was not stored');
});

t.test('authentication and the Host guard apply to every side route', async (t: Test) => {
  const dir = t.testdir({});
  const file = path.join(dir, 'auth.json');
  const keys = { alice: 'alice-key-0123456789abcdef', bob: 'bob-key-0123456789abcdef-x' };
  writeFileSync(
    file,
    JSON.stringify({
      api_keys: [
        { key: keys.alice, principal: 'alice', roles: ['approver'] },
        { key: keys.bob, principal: 'bob', roles: ['approver'] },
      ],
    }),
  );
  const store = new MemoryTaskStore(); // its own: other files' tests have tasks of a principal "bob" too
  t.teardown(() => store.close());
  const { app, workspace } = await buildServer(t, { env: { AUTH_CONFIG: file }, app: { store } });
  const as = (who: keyof typeof keys) => ({ authorization: `Bearer ${keys[who]}` });
  const routes: Array<['GET' | 'POST', string, unknown]> = [
    ['GET', '/listCommands', undefined],
    ['POST', '/executeCommand', { command: 'tools' }],
    ['POST', '/tasks', {}],
    ['GET', '/tasks/metadata', undefined],
    ['GET', '/tasks/x/metadata', undefined],
  ];
  for (const [method, url, body] of routes) {
    const res = await call(app, method, url, body);
    t.equal(res.status, 401, `${method} ${url} without credentials: 401`);
    const evil = await call(app, method, url, body, { ...as('alice'), host: 'evil.example' });
    t.equal(evil.status, 403, `${method} ${url} from another Host: 403`);
  }
  const created = await call(app, 'POST', '/tasks', { agentSettings: { workspacePath: workspace } }, as('alice'));
  t.equal(created.status, 201, 'alice creates a task');
  t.equal((await call(app, 'GET', `/tasks/${created.body}/metadata`, undefined, as('alice'))).status, 200);
  const stranger = await call(app, 'GET', `/tasks/${created.body}/metadata`, undefined, as('bob'));
  t.equal(stranger.status, 403, "bob may not read alice's task");
  t.equal((await call(app, 'GET', '/tasks/metadata', undefined, as('bob'))).status, 204, 'bob has no tasks');
  const first = await stream(app, legacyMessage('write hello', { taskId: created.body }), as('alice'));
  t.ok(legacyCard(first, 'awaiting_approval'), "alice's first message runs in her task");
});
