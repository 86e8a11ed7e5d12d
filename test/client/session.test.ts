/**
 * TaskSession and A2AConnection against the real server: a stream cut mid-way (a TCP proxy
 * breaks the connection after a chosen SSE frame) is resumed with tasks/resubscribe and
 * Last-Event-ID exactly after the last event applied — no event twice, none missing; attach
 * rebuilds a task from its log; detach leaves the task running; answers, errors, ListTasks.
 */
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { A2AClientError, A2AConnection, StreamDroppedError, TaskSession } from '../../src/client/index.js';
import type { TaskView } from '../../src/client/index.js';
import { CLIENT_SCRIPT } from '../support/client-streams.js';
import { dropProxy } from '../support/drop-proxy.js';
import { startServer, URI } from '../support/server.js';

/** Every view a session showed, and the ids it applied in order. */
function watch(session: TaskSession) {
  const views: TaskView[] = [];
  session.onChange((v) => views.push(v));
  return {
    views,
    ids: () =>
      views
        .map((v) => v.lastEventId)
        .filter((id, i, all): id is string => id !== undefined && id !== all[i - 1])
        .map(Number),
    connections: () => views.map((v) => v.connection).filter((c, i, all) => c !== all[i - 1]),
  };
}

const strictlyIncreasing = (ids: number[]) => ids.every((id, i) => i === 0 || id > ids[i - 1]);

/** A view's content without the fields a second reader of the same task sees differently. */
const content = (v: TaskView) => ({
  state: v.state,
  text: v.text,
  thoughts: v.thoughts,
  cards: v.cards.map(({ raw: _raw, ...c }) => c),
  lastEventId: v.lastEventId,
});

t.test('TaskSession', async (t) => {
  const srv = await startServer(t, { script: CLIENT_SCRIPT });
  const settings = { metadata: { [URI]: { workspace_path: srv.workspace } } };
  const fast = { retryBaseMs: 10, retryMaxMs: 50 };

  t.test('a stream cut mid-text resumes exactly after the last event applied', async (t) => {
    const proxy = await dropProxy(t, srv.url);
    const session = new TaskSession(new A2AConnection({ baseUrl: proxy.url }), fast);
    const seen = watch(session);
    const cut = proxy.cutAfter(6);
    const view = await session.send('slow story', settings);
    await cut;
    t.equal(proxy.cuts, 1, 'the stream was cut');
    t.equal(view.state, 'completed');
    t.equal(view.text, Array.from({ length: 12 }, (_, i) => `word${i} `).join(''), 'every delta once, in order');
    t.ok(strictlyIncreasing(seen.ids()), `ids applied in order, none twice: ${seen.ids().join(',')}`);
    t.same(
      seen.ids(),
      Array.from({ length: seen.ids().length }, (_, i) => i + 1),
      'and none skipped',
    );
    t.same(seen.connections(), ['closed', 'live', 'reconnecting', 'live', 'closed']);
    const attached = await new TaskSession(new A2AConnection({ baseUrl: srv.url })).attach(view.taskId);
    t.same(content(attached), content(view), 'the same view as a replay of the whole log');
    t.same(attached.transcript, view.transcript);
  });

  t.test('a cut while a shell command runs after an answer: the card ends as the log has it', async (t) => {
    const proxy = await dropProxy(t, srv.url);
    const session = new TaskSession(new A2AConnection({ baseUrl: proxy.url }), fast);
    const seen = watch(session);
    const paused = await session.send('shell slow', settings);
    const card = paused.cards[0];
    t.equal(card?.waiting, true);
    const pauseId = Number(paused.lastEventId);
    const cut = proxy.cutAfter(pauseId + 2, 5);
    const done = await session.answer(card?.id ?? '', 'proceed_once');
    await cut;
    t.equal(done.state, 'completed');
    t.same(
      done.cards[0]?.history.map((h) => h.status),
      ['PENDING', 'EXECUTING', 'SUCCEEDED'],
    );
    t.match(done.cards[0]?.liveOutput, /line1\nline2\nline3\nline4\nline5/);
    t.equal(done.text, 'Slow command finished.');
    t.ok(strictlyIncreasing(seen.ids()), `no id twice: ${seen.ids().join(',')}`);
    t.same(
      done.transcript.map((e) => `${e.role}:${e.kind}`),
      ['user:text', 'agent:card', 'user:answer', 'agent:text'],
    );
    const attached = await new TaskSession(new A2AConnection({ baseUrl: srv.url })).attach(done.taskId);
    t.same(attached.transcript, done.transcript, 'a replay places the answer where the live session did');
    t.same(
      attached.cards[0]?.history.map((h) => h.status),
      ['PENDING', 'EXECUTING', 'SUCCEEDED'],
    );
  });

  t.test('the server unreachable: reconnecting, then the session gives up with StreamDroppedError', async (t) => {
    const proxy = await dropProxy(t, srv.url);
    const session = new TaskSession(new A2AConnection({ baseUrl: proxy.url }), { ...fast, maxRetries: 2 });
    const seen = watch(session);
    const cut = proxy.cutAfter(3);
    const sent = session.send('slow story', settings);
    await cut;
    proxy.refuse(true);
    await t.rejects(sent, StreamDroppedError);
    t.same(seen.connections(), ['closed', 'live', 'reconnecting', 'closed']);
    proxy.refuse(false);
    const view = await session.attach(session.view.taskId);
    t.equal(view.state, 'completed', 'the task went on meanwhile');
    t.match(view.text, /word11/);
  });

  t.test('attach to a paused task, answer from there; edit content and decline with feedback', async (t) => {
    const connection = new A2AConnection({ baseUrl: srv.url });
    const first = new TaskSession(connection);
    const paused = await first.send('write via attach', settings);
    first.detach();
    const second = new TaskSession(connection);
    const attached = await second.attach(paused.taskId);
    t.equal(attached.state, 'input-required');
    const card = attached.cards.find((c) => c.waiting);
    t.ok(card, 'the card waits in the attached view');
    t.same(attached.transcript, paused.transcript);
    const done = await second.answer(card?.id ?? '', 'modify_with_editor', { newContent: 'edited\n' });
    t.equal(done.state, 'completed');
    t.equal(readFileSync(path.join(srv.workspace, 'hello.txt'), 'utf8'), 'edited\n');

    const third = new TaskSession(connection);
    const waiting = await third.send('write declined with a note', settings);
    const declined = await third.answer(waiting.cards[0]?.id ?? '', 'cancel', { feedback: 'not in this folder' });
    t.equal(declined.cards[0]?.status, 'CANCELLED');
    t.match(
      declined.transcript.find((e) => e.kind === 'answer'),
      { optionId: 'cancel' },
    );
  });

  t.test('continue a completed task, start a new one in the same conversation', async (t) => {
    const session = new TaskSession(new A2AConnection({ baseUrl: srv.url }));
    const first = await session.send('hello there', settings);
    t.equal(first.state, 'completed');
    t.equal(first.text, 'You said: hello there');
    const again = await session.send('and again');
    t.equal(again.taskId, first.taskId, 'a completed task continues');
    t.equal(again.text, 'You said: hello thereYou said: and again');
    t.same(
      again.transcript.filter((e) => e.role === 'user').map((e) => (e.kind === 'text' ? e.text : '')),
      ['hello there', 'and again'],
    );
    const replayed = await new TaskSession(new A2AConnection({ baseUrl: srv.url })).attach(first.taskId);
    t.same(replayed.transcript, again.transcript, 'the follow-up prompt is placed at its turn in a replay');
  });

  t.test('detach leaves the task running; cancel cancels it', async (t) => {
    const connection = new A2AConnection({ baseUrl: srv.url });
    const session = new TaskSession(connection);
    const paused = await session.send('shell hang', settings);
    const running = new Promise<void>((resolve) => session.onChange((v) => v.cards[0]?.status === 'EXECUTING' && resolve()));
    const answered = session.answer(paused.cards[0]?.id ?? '', 'proceed_once');
    await running;
    session.detach();
    const view = await answered;
    t.equal(view.connection, 'closed');
    t.equal((await connection.getTask(view.taskId)).status.state, 'working', 'detaching did not stop it');
    const canceled = await session.cancel();
    t.equal(canceled.state, 'canceled');
    t.equal((await connection.getTask(view.taskId)).status.state, 'canceled');
  });

  t.test('errors carry the JSON-RPC code and message', async (t) => {
    const connection = new A2AConnection({ baseUrl: srv.url.replace(/\/$/, '') });
    await t.rejects(connection.getTask('no-such-task'), { name: 'A2AClientError', code: -32001 });
    const session = new TaskSession(connection);
    const paused = await session.send('write refused', settings);
    const card = paused.cards[0];
    await t.rejects(session.answer(card?.id ?? '', 'no_such_option'), { code: -32602, message: /no_such_option|selected_option_id/ });
    t.equal(session.view.cards[0]?.waiting, true, 'the card still waits');
    t.equal(session.view.connection, 'closed');
    await session.cancel();
    await t.rejects(session.send('more', { taskId: paused.taskId }), { code: -32004 });
    await t.rejects(new TaskSession(connection).answer('x', 'y'), /no task/);
    await t.rejects(new TaskSession(connection).cancel(), /no task/);
    await t.rejects(connection.cancel(paused.taskId), { code: -32002 });
  });

  t.test('a legacy-dialect task: its cards and its answers', async (t) => {
    const dir = t.testdir({});
    const session = new TaskSession(new A2AConnection({ baseUrl: srv.url }));
    const paused = await session.send('write the legacy way', { metadata: { coderAgent: { kind: 'agent-settings', workspacePath: dir } } });
    t.equal(paused.dialect, 'legacy');
    const card = paused.cards.find((c) => c.waiting);
    t.equal(card?.toolName, 'write_file');
    const done = await session.answer(card?.id ?? '', 'modify_with_editor', { newContent: 'legacy edit\n' });
    t.equal(done.cards.find((c) => c.id === card?.id)?.status, 'SUCCEEDED');
    t.equal(readFileSync(path.join(dir, 'hello.txt'), 'utf8'), 'legacy edit\n');
    const again = await session.send('write it once more');
    const next = again.cards.find((c) => c.waiting);
    const declined = await session.answer(next?.id ?? '', 'cancel', { feedback: 'keep the edit' });
    t.equal(declined.cards.find((c) => c.id === next?.id)?.status, 'CANCELLED');
  });

  t.test('ListTasks pages and filters; the agent card', async (t) => {
    const connection = new A2AConnection({ baseUrl: srv.url });
    const a = await new TaskSession(connection).send('list me one', settings);
    await new TaskSession(connection).send('list me two', { ...settings, contextId: a.contextId });
    const page = await connection.listTasks({ contextId: a.contextId, pageSize: 1 });
    t.equal(page.tasks.length, 1);
    t.type(page.nextPageToken, 'string');
    t.equal(page.tasks[0]?.title, 'list me two', 'the newest first');
    t.equal(page.tasks[0]?.state, 'completed');
    const next = await connection.listTasks({ contextId: a.contextId, pageSize: 1, pageToken: page.nextPageToken as string });
    t.equal(next.tasks[0]?.title, 'list me one');
    t.equal(next.nextPageToken, undefined);
    const card = await connection.getAgentCard();
    t.equal(card.name, 'devtool-a2a-server');
  });
});

t.test('authentication: X-API-Key, a bearer token, or HTTP 401 as A2AClientError', async (t) => {
  const dir = t.testdir({
    'auth.json': JSON.stringify({ api_keys: [{ key: 'client-key-0123456789abcdef', principal: 'cli', roles: ['approver'] }] }),
  });
  const srv = await startServer(t, { script: CLIENT_SCRIPT, env: { AUTH_CONFIG: path.join(dir, 'auth.json') } });
  const settings = { metadata: { [URI]: { workspace_path: srv.workspace } } };
  const seen: Array<Record<string, string>> = [];
  const spy: typeof fetch = (input, init) => {
    seen.push({ ...(init?.headers as Record<string, string>) });
    return fetch(input, init);
  };
  const byKey = new A2AConnection({ baseUrl: srv.url, apiKey: 'client-key-0123456789abcdef', fetch: spy });
  const view = await new TaskSession(byKey).send('hello with a key', settings);
  t.equal(view.state, 'completed');
  t.equal(seen[0]?.['x-api-key'], 'client-key-0123456789abcdef');
  const byToken = new A2AConnection({ baseUrl: srv.url, bearerToken: 'client-key-0123456789abcdef' });
  t.equal((await byToken.listTasks()).tasks[0]?.id, view.taskId, 'the same principal');
  const anonymous = new A2AConnection({ baseUrl: srv.url });
  const err = await anonymous.listTasks().catch((e: unknown) => e);
  t.type(err, A2AClientError);
  t.match(err, { code: -32011, httpStatus: 401, message: /Unauthorized/ });
  await t.rejects(new TaskSession(anonymous).send('hi'), { code: -32011 });
  t.equal((await anonymous.getAgentCard()).name, 'devtool-a2a-server', 'the card is public');
});

t.test('restore: a succeeded edit’s checkpoint, through its own card; a command that does not start throws', async (t) => {
  const srv = await startServer(t, { script: CLIENT_SCRIPT, env: { CHECKPOINTING: 'true' } });
  const connection = new A2AConnection({ baseUrl: srv.url });
  const file = path.join(srv.workspace, 'hello.txt');
  writeFileSync(file, 'mine\n');
  const session = new TaskSession(connection);
  const paused = await session.send('write a file');
  const written = await session.answer(paused.cards[0]?.id ?? '', 'proceed_once');
  const card = written.cards[0];
  t.equal(card?.status, 'SUCCEEDED');
  t.match(card?.checkpoint, /^\d{4}-.*-hello\.txt-write_file$/, 'the card names its checkpoint');
  t.equal(readFileSync(file, 'utf8'), 'hello world\n');
  const asking = await session.restore(card?.checkpoint ?? '');
  t.not(asking.taskId, written.taskId, 'the restore is a task of its own');
  t.equal(asking.contextId, written.contextId, 'in the same conversation');
  const restoring = asking.cards.find((c) => c.waiting);
  t.equal(restoring?.toolName, 'restore_file');
  t.match(restoring?.diff, { oldContent: 'hello world\n', newContent: 'mine\n' }, 'its card shows the diff it will apply');
  const done = await session.answer(restoring?.id ?? '', 'proceed_once');
  t.equal(done.state, 'completed');
  t.equal(readFileSync(file, 'utf8'), 'mine\n', 'restored');
  await t.rejects(session.restore('no-such-checkpoint'), { name: 'A2AClientError', message: /No checkpoint "no-such-checkpoint"/ });
  const started = await connection.executeCommand(['restore', 'list'], { contextId: written.contextId });
  t.equal(started.status, 'STARTED');
  t.type(started.executionId, 'string');
});
