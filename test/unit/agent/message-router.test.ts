/**
 * What a message means (message-router.ts), driven in process through buildServer and
 * app.inject (no socket): a new task, a follow-up to a completed one, answers to a paused
 * one, and every refusal — plain JSON-RPC errors before any event, changing nothing.
 */
import t from 'tap';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { ScriptedModelClient } from '../../../src/agent/model/scripted-model-client.js';
import { TEST_SCRIPT } from '../../fixtures/test-script.js';
import { randomUUID } from 'node:crypto';
import type { SendMessageRequest } from '@a2a-js/sdk';
import { textPart, userMessage as v1Message } from '../../../src/protocol/a2a.js';
import { DEVTOOL_EXTENSION_URI } from '../../../src/protocol/extension.js';
import { HoldingModel, makeCore, until } from '../../support/core.js';
import { buildServer, confirmMessage, dataOf, devtool, textOf, userMessage } from '../../support/server.js';
import { routerFor } from '../../support/resume.js';
import { rpc } from '../../support/sse.js';
import type { PostResult } from '../../support/sse.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const model = new HoldingModel(new ScriptedModelClient(TEST_SCRIPT));
let app: FastifyInstance;
let workspace: string;

t.before(async () => {
  ({ app, workspace } = await buildServer(t, { model }));
});

/** [kind or state, final] per result, and the SSE ids. */
const results = (res: PostResult): any[] => (res.events ?? []).map((e) => e.data.result);
const shapeOf = (res: PostResult) =>
  results(res).map((r) => (r.kind === 'task' ? 'task' : `${dataOf(r)?.status ?? r.status.state}${r.final ? '!' : ''}`));
const ids = (res: PostResult) => (res.events ?? []).map((e) => (e.id === undefined ? null : Number(e.id)));

const send = (message: Record<string, unknown>, configuration?: Record<string, unknown>) =>
  rpc(app, 'message/stream', { message, ...(configuration ? { configuration } : {}) });

/** Asserts a plain JSON-RPC error (no stream) with `code` and a message matching `pattern`. */
function refused(t: Test, res: PostResult, code: number, pattern: RegExp): void {
  t.equal(res.events, undefined, 'no SSE');
  t.equal(res.json?.error?.code, code, `code ${code}: ${res.json?.error?.message}`);
  t.match(res.json?.error?.message, pattern);
}

async function newTask(text: string, extra: Record<string, unknown> = {}): Promise<{ res: PostResult; id: string; contextId: string }> {
  const res = await send(userMessage(text, extra));
  const first = results(res)[0];
  if (first?.kind !== 'task') throw new Error(`expected a task: ${res.raw}`);
  return { res, id: first.id, contextId: first.contextId };
}

/** A task that stays working until model.release(). */
async function holding(): Promise<{ id: string; contextId: string }> {
  const held = model.held;
  const res = await rpc(app, 'message/send', { message: userMessage('hold on'), configuration: { blocking: false } });
  const task = res.json?.result;
  if (task?.kind !== 'task') throw new Error(`expected a task: ${res.raw}`);
  await until('the model to hold', () => model.held > held);
  return { id: task.id, contextId: task.contextId };
}

const listed = async (contextId: string) =>
  (await rpc(app, 'ListTasks', { contextId }, { version: '1.0' })).json?.result?.tasks?.map((x: any) => x.id) ?? [];

t.test('a new task: the snapshot, working, the answer and completed, numbered from 1', async (t) => {
  const { res, id, contextId } = await newTask('hello there');
  t.same(shapeOf(res), ['task', 'working', 'working', 'completed!']);
  t.same(ids(res), [1, 2, 3, 4]);
  t.equal(textOf(results(res)[2]), 'You said: hello there');
  t.equal(devtool(results(res)[2]).kind, 'TEXT_CONTENT');
  t.match(results(res)[0], { id, contextId, status: { state: 'submitted' } });
  t.same(await listed(contextId), [id], 'one task in a new context');
});

t.test('a follow-up to a completed task continues it: same task, ids go on, the model sees the conversation', async (t) => {
  const first = await newTask('hello');
  const again = await send(userMessage('again', { taskId: first.id, contextId: first.contextId }));
  t.same(shapeOf(again), ['working', 'working', 'completed!'], 'no snapshot: the stream starts after what was sent');
  t.same(ids(again), [5, 6, 7]);
  t.equal(textOf(results(again)[1]), 'You said: again');
  t.ok(
    results(again).every((r) => r.taskId === first.id),
    'the same task',
  );
  const task = (await rpc(app, 'tasks/get', { id: first.id })).json.result;
  t.same(
    task.history.filter((m: any) => m.role === 'user').map((m: any) => m.parts[0].text),
    ['hello', 'again'],
  );
  const noContext = await send(userMessage('third', { taskId: first.id }));
  t.same(shapeOf(noContext), ['working', 'working', 'completed!'], 'the contextId may be left out');
});

t.test('an answer to a paused task resumes it; the write happens only then', async (t) => {
  const paused = await newTask('write a file');
  t.same(shapeOf(paused.res), ['task', 'working', 'PENDING', 'input-required!']);
  t.notOk(existsSync(path.join(workspace, 'hello.txt')), 'nothing written before the answer');
  const card = dataOf(results(paused.res)[2]);
  const resumed = await send(
    confirmMessage(paused.id, paused.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' }),
  );
  t.same(shapeOf(resumed), ['EXECUTING', 'SUCCEEDED', 'working', 'working', 'completed!']);
  t.same(ids(resumed), [5, 6, 7, 8, 9]);
  t.ok(existsSync(path.join(workspace, 'hello.txt')));
  const again = await send(
    confirmMessage(paused.id, paused.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' }),
  );
  refused(t, again, -32602, /already answered \(proceed_once; status SUCCEEDED\)/);
});

t.test('-32004: one model turn at a time per conversation', async (t) => {
  t.test('a context whose task waits for approval takes no new task', async (t) => {
    const paused = await newTask('write it');
    const res = await send(userMessage('something else', { contextId: paused.contextId }));
    refused(
      t,
      res,
      -32004,
      new RegExp(`^Context ${paused.contextId} is busy: task ${paused.id} is waiting for approval; answer or cancel it`),
    );
    t.same(await listed(paused.contextId), [paused.id], 'no task was created');
  });

  t.test("a refused new task's settings are not applied: the busy conversation keeps its approval mode", async (t) => {
    const paused = await newTask('write it');
    const yolo = { metadata: { [DEVTOOL_EXTENSION_URI]: { approval_mode: 'YOLO' } } };
    const res = await send(userMessage('write it again', { contextId: paused.contextId, ...yolo }));
    refused(t, res, -32004, /is busy/);
    const card = dataOf(results(paused.res)[2]);
    await send(confirmMessage(paused.id, paused.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'cancel' }));
    const next = await send(userMessage('write it once more', { contextId: paused.contextId }));
    t.same(
      shapeOf(next).slice(-2),
      ['PENDING', 'input-required!'],
      'the next write still waits for a person (YOLO was not stored by the refused message)',
    );
  });

  t.test('a working task takes no message, and its context no new task, until it pauses or ends', async (t) => {
    const task = await holding();
    const toTask = await send(userMessage('and now?', { taskId: task.id, contextId: task.contextId }));
    refused(
      t,
      toTask,
      -32004,
      new RegExp(`^Task ${task.id} is still working; send the next message after it pauses or completes, or cancel it$`),
    );
    const toContext = await send(userMessage('meanwhile', { contextId: task.contextId }));
    refused(t, toContext, -32004, /is busy: task .* is still working; wait for it or cancel it/);
    t.same(await listed(task.contextId), [task.id]);
    model.release();
    await until(
      'the task to complete',
      async () => (await rpc(app, 'tasks/get', { id: task.id })).json?.result?.status?.state === 'completed',
    );
    const after = await send(userMessage('now', { contextId: task.contextId }));
    t.same(shapeOf(after), ['task', 'working', 'working', 'completed!'], 'once it completed the context takes a new task');
  });

  t.test('a canceled or failed task cannot be continued', async (t) => {
    const paused = await newTask('write again');
    t.equal((await rpc(app, 'tasks/cancel', { id: paused.id })).json?.result?.status?.state, 'canceled');
    const res = await send(userMessage('continue', { taskId: paused.id, contextId: paused.contextId }));
    refused(
      t,
      res,
      -32004,
      new RegExp(`^Task ${paused.id} is canceled and cannot be continued; start a new task in context ${paused.contextId}$`),
    );
  });
});

t.test('-32602 and -32001: refused before anything changes', async (t) => {
  const done = await newTask('hi');
  const paused = await newTask('write that');
  const card = dataOf(results(paused.res)[2]);
  const cases: Array<[string, Record<string, unknown>, number, RegExp]> = [
    [
      'a confirmation without taskId',
      { ...confirmMessage('', '', { tool_call_id: 'tc_x', selected_option_id: 'proceed_once' }), taskId: undefined, contextId: undefined },
      -32602,
      /message\.taskId is required to answer a tool call/,
    ],
    [
      "a contextId that is not the task's",
      userMessage('x', { taskId: done.id, contextId: 'other-context' }),
      -32602,
      /message\.contextId "other-context" does not match task/,
    ],
    [
      'a confirmation to a completed task',
      confirmMessage(done.id, done.contextId, { confirmation: 'yes' }),
      -32602,
      new RegExp(`^Task ${done.id} is not waiting for a confirmation \\(state: completed\\)$`),
    ],
    [
      'an unknown call on a completed task',
      confirmMessage(done.id, done.contextId, { tool_call_id: 'tc_nope', selected_option_id: 'proceed_once' }),
      -32602,
      /has no tool call "tc_nope" \(it is not waiting for any; state completed\)/,
    ],
    [
      'an option that was not offered',
      confirmMessage(paused.id, paused.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_always_server' }),
      -32602,
      /"proceed_always_server" was not offered/,
    ],
    [
      '{"confirmation":"maybe"}',
      confirmMessage(paused.id, paused.contextId, { confirmation: 'maybe' }),
      -32602,
      /confirmation must be "yes" or "no"/,
    ],
    ['an unknown task', userMessage('x', { taskId: 'no-such-task' }), -32001, /Task no-such-task not found/],
    ['no parts', userMessage('x', { parts: [] }), -32602, /parts must not be empty/],
  ];
  for (const [name, message, code, pattern] of cases) {
    await t.test(name, async (t) => refused(t, await send(message), code, pattern));
  }
  const res = await send(userMessage('yes', { taskId: paused.id, contextId: paused.contextId }));
  t.same(
    shapeOf(res),
    ['EXECUTING', 'SUCCEEDED', 'working', 'working', 'completed!'],
    'the paused task is still answerable after the refusals',
  );
});

t.test('a text that is no answer re-prompts the paused task', async (t) => {
  const paused = await newTask('write here');
  const res = await send(userMessage('what will it write?', { taskId: paused.id, contextId: paused.contextId }));
  t.same(shapeOf(res), ['PENDING', 'input-required!']);
  t.match(
    textOf(results(res)[1]),
    /^That reply is not an answer to the waiting tool call\. Waiting for approval of a tool call: write_file/,
  );
});

t.test('two new tasks sent at once to one idle context: one runs, the other is refused -32004', async (t: Test) => {
  const core = await makeCore(t);
  const router = routerFor(core);
  const contextId = randomUUID();
  const request = (text: string) =>
    ({ message: { ...v1Message(contextId, [textPart(text)]), taskId: '' } }) as unknown as SendMessageRequest;
  const outcomes = await Promise.allSettled([router.route(request('edit one')), router.route(request('edit two'))]);
  await core.runs.drain();
  t.same(outcomes.map((o) => o.status).sort(), ['fulfilled', 'rejected'], 'one of them is refused');
  const history = (await core.store.loadContext(contextId))!.history;
  t.same(
    history.map((c) => c.role),
    ['user', 'model'],
    'one model turn in the conversation',
  );
});
