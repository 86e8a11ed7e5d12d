/**
 * The legacy dialect (gemini-cli's own a2a-server wire), driven as such a client does: raw v0.3
 * `message/stream` SSE, `metadata.coderAgent` settings, `{callId, outcome}` answers. Shapes are
 * checked field by field against transcripts recorded from @google/gemini-cli-a2a-server 0.25.2
 * (test/fixtures/legacy/, see record.ts there), and the original's defects are checked gone.
 */
import t from 'tap';
import type { Test } from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { rpc } from '../support/sse.js';
import { buildServer, URI } from '../support/server.js';
import type { ModelScript } from '../../src/agent/model/scripted-model-client.js';
import { coderAgent, fixture, legacyCard, legacyMessage, missingKeys, results, stream } from '../support/legacy-client.js';
import { TEST_SCRIPT } from '../fixtures/test-script.js';
import { WebhookReceiver } from '../support/webhook.js';
import { MemoryTaskStore } from '../../src/store/memory-store.js';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

const recorded = {
  write: fixture('write-file'),
  shell: fixture('shell'),
  cancel: fixture('cancel'),
  thought: fixture('thought'),
};

async function server(t: Test, env: Record<string, string> = {}, script: ModelScript = TEST_SCRIPT) {
  return buildServer(t, { script, env });
}

/** Starts a legacy task with `prompt` and returns its first stream's results and ids. */
async function begin(app: FastifyInstance, workspace: string, prompt: string) {
  const first = await stream(app, legacyMessage(prompt, { metadata: coderAgent(workspace) }));
  const task = first[0];
  return { first, taskId: task.id as string, contextId: task.contextId as string };
}

const answer = (taskId: string, ...answers: Array<Record<string, unknown>>) =>
  legacyMessage(undefined, { taskId, parts: answers.map((data) => ({ kind: 'data', data })) });

t.test('prompt → confirmation card → proceed_once → result: the recorded shapes, a turn ends input-required', async (t) => {
  const { app, workspace } = await server(t);
  const { first, taskId } = await begin(app, workspace, 'write hello');
  t.equal(first[0].kind, 'task', 'the stream opens with the Task');
  const updates = first.slice(1);
  t.same(
    updates.map((r) => r.metadata?.coderAgent?.kind),
    ['state-change', 'state-change', 'tool-call-update', 'tool-call-confirmation', 'state-change'],
    'working, working (the calls), validating, the card (kind tool-call-confirmation), the pause (legacy-sequences.test.ts has every flow)',
  );
  for (const r of updates) t.equal(r.metadata.model, 'scripted-test', 'every update names the model');
  const card = legacyCard(first, 'awaiting_approval');
  const theirs = legacyCard(recorded.write.prompt, 'awaiting_approval');
  t.same(
    missingKeys(card, theirs, ['checkpoint', 'args', 'parameterSchema', 'parametersJsonSchema']),
    [],
    'the awaiting_approval ToolCall has the recorded shape',
  );
  t.same(Object.keys(card.confirmationDetails), Object.keys(theirs.confirmationDetails), 'confirmationDetails keys as recorded');
  t.match(card.confirmationDetails, { type: 'edit', title: 'Confirm Write: hello.txt', fileName: 'hello.txt', originalContent: '' });
  t.equal(card.request.name, 'write_file');
  t.match(card.tool, { name: 'write_file', displayName: 'WriteFile', kind: 'edit' });
  const pause = first.at(-1);
  t.match(pause, { kind: 'status-update', final: true, status: { state: 'input-required' } }, 'the pause is final');

  const second = await stream(app, answer(taskId, { callId: card.request.callId, outcome: 'proceed_once' }));
  const statuses = second.map((r) => r.status?.message?.parts?.[0]?.data?.status).filter(Boolean);
  t.same(statuses, ['scheduled', 'executing', 'success'], 'scheduled, executing, then success');
  const done = legacyCard(second, 'success');
  const theirsDone = legacyCard(recorded.write.confirm, 'success');
  t.same(Object.keys(done.response).sort(), Object.keys(theirsDone.response).sort(), 'the response has the recorded keys');
  t.same(
    missingKeys(done, theirsDone, ['checkpoint', 'args', 'parameterSchema', 'parametersJsonSchema', 'resultDisplay']),
    [],
    'the success ToolCall has the recorded shape',
  );
  t.equal(readFileSync(path.join(workspace, 'hello.txt'), 'utf8'), 'hello world\n', 'the file is written');
  const texts = second.filter((r) => r.metadata?.coderAgent?.kind === 'text-content').map((r) => r.status.message.parts[0].text);
  t.same(texts, ['Wrote ', 'hello.txt.'], 'text arrives as deltas, one status-update each');
  const end = second.at(-1);
  t.match(end, { final: true, status: { state: 'input-required' }, metadata: { coderAgent: { kind: 'state-change' } } });
  t.notOk(
    second.some((r) => r.status?.state === 'completed'),
    'never completed: the conversation goes on in the task',
  );

  const got = await rpc(app, 'tasks/get', { id: taskId });
  t.equal(got.json.result.status.state, 'input-required', 'tasks/get shows the pause as the client saw it');

  const third = await stream(app, legacyMessage('hello again', { taskId }));
  t.match(third.at(-1), { final: true, status: { state: 'input-required' } }, 'a follow-up text message runs in the same task');
  t.ok(
    third.some((r) => r.metadata?.coderAgent?.kind === 'text-content'),
    'and is answered',
  );
});

t.test('what was approved is what was shown: the audit hash is of the card bytes this client received', async (t) => {
  const store = new MemoryTaskStore();
  t.teardown(() => store.close());
  const { app, workspace } = await buildServer(t, { script: TEST_SCRIPT, app: { store } });
  const res = await rpc(app, 'message/stream', { message: legacyMessage('write hello', { metadata: coderAgent(workspace) }) });
  const taskId = results(res)[0].id as string;
  const card = legacyCard(results(res), 'awaiting_approval');
  const shown = JSON.stringify(card);
  t.ok(res.raw.includes(shown), 'the ToolCall as its SSE frame carried it, byte for byte');
  await stream(app, answer(taskId, { callId: card.request.callId, outcome: 'proceed_once' }));
  const audit = await store.listAudit({ taskId });
  t.strictSame(
    audit.map((a) => [a.decision, a.shownHash]),
    [
      ['proposed', sha256(shown)],
      ['authorized', sha256(shown)],
      ['executed', sha256(shown)],
      ['succeeded', undefined],
    ],
    'proposed, authorized and executed name the hash of the bytes shown',
  );
});

t.test('shell: live output as artifact-update events with the recorded artifact id and flags', async (t) => {
  const { app, workspace } = await server(t);
  const { first, taskId } = await begin(app, workspace, 'shell slow');
  const card = legacyCard(first, 'awaiting_approval');
  const theirs = legacyCard(recorded.shell.prompt, 'awaiting_approval');
  t.same(Object.keys(card.confirmationDetails), Object.keys(theirs.confirmationDetails), 'exec confirmationDetails keys as recorded');
  t.match(card.confirmationDetails, { type: 'exec', title: 'Confirm Shell Command', rootCommand: 'for' });
  t.match(card.tool, { name: 'run_shell_command', displayName: 'Shell', kind: 'execute', canUpdateOutput: true });
  const second = await stream(app, answer(taskId, { callId: card.request.callId, outcome: 'proceed_once' }));
  const artifacts = second.filter((r) => r.kind === 'artifact-update');
  const theirArtifact = recorded.shell.confirm.map((e: any) => e.result).find((r: any) => r.kind === 'artifact-update');
  t.ok(artifacts.length >= 2, `live output streamed (${artifacts.length} artifact updates)`);
  t.same(missingKeys(artifacts[0], theirArtifact), [], 'artifact-update has the recorded shape');
  t.equal(artifacts[0].artifact.artifactId, `tool-${card.request.callId}-output`);
  t.match(artifacts[0], { append: true, lastChunk: false });
  t.match(artifacts.at(-1).artifact.parts[0].text, /line1\nline2/, 'the whole output so far, as the original sends it');
  t.match(legacyCard(second, 'success').response.resultDisplay, /line1\nline2\nline3\nline4\nline5/, 'the result shows every line');
});

t.test('cancel outcome: a cancelled card with the recorded response; the turn goes on', async (t) => {
  const { app, workspace } = await server(t);
  const { first, taskId } = await begin(app, workspace, 'write declined');
  const card = legacyCard(first, 'awaiting_approval');
  const second = await stream(app, answer(taskId, { callId: card.request.callId, outcome: 'cancel' }));
  const cancelled = legacyCard(second, 'cancelled');
  const theirs = legacyCard(recorded.cancel.confirm, 'cancelled');
  t.same(
    missingKeys(cancelled, theirs, ['checkpoint', 'args', 'parameterSchema', 'parametersJsonSchema']),
    [],
    'the cancelled ToolCall has the recorded shape',
  );
  t.match(cancelled.response.responseParts[0].functionResponse.response.error, /^\[Operation Cancelled\] Reason: /);
  t.match(second.at(-1), { final: true, status: { state: 'input-required' } });
});

t.test('thoughts are a {subject, description} DataPart of kind thought; read-only tools run without asking', async (t) => {
  const { app, workspace } = await server(t);
  writeFileSync(path.join(workspace, 'seed.txt'), 'hi\n');
  const { first, taskId } = await begin(app, workspace, 'mixed');
  const thought = first.find((r) => r.metadata?.coderAgent?.kind === 'thought');
  const theirs = recorded.thought.prompt.map((e: any) => e.result).find((r: any) => r.metadata?.coderAgent?.kind === 'thought');
  t.same(missingKeys(thought, theirs), [], 'the thought update has the recorded shape');
  t.same(thought.status.message.parts[0].data, { subject: 'Looking', description: 'at the files first' });
  const read = first.map((r) => r.status?.message?.parts?.[0]?.data).filter((d) => d?.request?.name === 'read_file');
  t.notOk(
    read.some((d) => d.status === 'awaiting_approval'),
    'read_file never asks',
  );
  t.ok(
    read.some((d) => d.status === 'success'),
    'and succeeds in the first stream',
  );
  const waiting = first.map((r) => r.status?.message?.parts?.[0]?.data).filter((d) => d?.status === 'awaiting_approval');
  t.equal(waiting.length, 2, 'write and shell wait');
  // Several answers in one message (the original takes one per round trip).
  const second = await stream(app, answer(taskId, ...waiting.map((d) => ({ callId: d.request.callId, outcome: 'proceed_once' }))));
  t.equal(second.filter((r) => r.status?.message?.parts?.[0]?.data?.status === 'success').length, 2, 'both ran');
  t.match(second.at(-1), { final: true, status: { state: 'input-required' } });
});

t.test('newContent: with proceed_once (inline edit) and with modify_with_editor, the edited content is written', async (t) => {
  const { app, workspace } = await server(t);
  for (const outcome of ['proceed_once', 'modify_with_editor']) {
    const { first, taskId } = await begin(app, workspace, 'write hello');
    const card = legacyCard(first, 'awaiting_approval');
    const second = await stream(app, answer(taskId, { callId: card.request.callId, outcome, newContent: `edited ${outcome}\n` }));
    t.ok(legacyCard(second, 'success'), `${outcome}: the call succeeded`);
    t.equal(readFileSync(path.join(workspace, 'hello.txt'), 'utf8'), `edited ${outcome}\n`, `${outcome}: the edited content was written`);
    t.match(second.at(-1), { final: true, status: { state: 'input-required' } }, `${outcome}: the turn went on to its end`);
  }
});

t.test('proceed_always_tool on a built-in tool acts as proceed_always', async (t) => {
  const { app, workspace } = await server(t);
  const { first, taskId } = await begin(app, workspace, 'write hello');
  const card = legacyCard(first, 'awaiting_approval');
  const second = await stream(app, answer(taskId, { callId: card.request.callId, outcome: 'proceed_always_tool' }));
  t.ok(legacyCard(second, 'success'), 'it ran');
  const next = await stream(app, legacyMessage('write hello', { taskId }));
  t.notOk(legacyCard(next, 'awaiting_approval'), 'and write_file is trusted from then on');
  t.ok(legacyCard(next, 'success'));
});

t.test('refusals: a JSON-RPC error at once, and the task stays waiting', async (t) => {
  const { app, workspace } = await server(t);
  const { first, taskId } = await begin(app, workspace, 'write hello');
  const callId = legacyCard(first, 'awaiting_approval').request.callId;
  const bad: Array<[string, Record<string, unknown>, RegExp]> = [
    ['an unknown callId', { callId: 'nope', outcome: 'proceed_once' }, /no tool call "nope"/],
    ['an unknown outcome', { callId, outcome: 'sure' }, /outcome must be one of/],
    ['a malformed answer', { callId: 5, outcome: 'proceed_once' }, /callId must be/],
    ['modify_with_editor without newContent', { callId, outcome: 'modify_with_editor' }, /needs the edited content/],
    ['newContent with cancel', { callId, outcome: 'cancel', newContent: 'x' }, /newContent is only accepted/],
  ];
  for (const [what, data, message] of bad) {
    const res = await rpc(app, 'message/stream', { message: answer(taskId, data) });
    t.equal(res.json?.error?.code, -32602, `${what}: INVALID_PARAMS`);
    t.match(res.json?.error?.message, message, `${what}: says why`);
  }
  const noTask = await rpc(app, 'message/stream', {
    message: legacyMessage(undefined, { parts: [{ kind: 'data', data: { callId, outcome: 'cancel' } }], metadata: coderAgent(workspace) }),
  });
  t.match(noTask.json?.error, { code: -32602, message: /taskId is required/ }, 'an answer without a task');
  const got = await rpc(app, 'tasks/get', { id: taskId });
  t.equal(got.json.result.status.state, 'input-required', 'still waiting');
  const ok = await stream(app, answer(taskId, { callId, outcome: 'proceed_once' }));
  t.ok(legacyCard(ok, 'success'), 'and a good answer still runs it');
});

t.test('tasks/cancel ends a legacy task whose turn is over (input-required to its client)', async (t) => {
  const { app, workspace } = await server(t);
  const { taskId } = await begin(app, workspace, 'hello there');
  const res = await rpc(app, 'tasks/cancel', { id: taskId });
  t.equal(res.json.result.status.state, 'canceled');
  const again = await rpc(app, 'message/stream', { message: legacyMessage('more', { taskId }) });
  t.equal(again.json?.error?.code, -32004, 'a canceled task takes no more messages');
});

t.test('choosing the dialect: coderAgent settings, the RFC marker, WIRE_DIALECT, POST /tasks', async (t) => {
  const { app, workspace } = await server(t, { WIRE_DIALECT: 'legacy' });
  const plain = await stream(app, legacyMessage('hello plain'));
  t.equal(plain[1].metadata.coderAgent.kind, 'state-change', 'no marker: WIRE_DIALECT=legacy');
  const rfc = await stream(app, legacyMessage('hello rfc', { metadata: { [URI]: { workspace_path: workspace } } }));
  t.equal(rfc[1].metadata[URI].kind, 'STATE_CHANGE', 'the RFC marker: the RFC dialect');
  t.notOk(rfc[1].metadata.coderAgent);
  const created = await app.inject({
    method: 'POST',
    url: '/tasks',
    headers: { host: '127.0.0.1' },
    payload: { agentSettings: { kind: 'agent-settings', workspacePath: workspace } },
  });
  t.equal(created.statusCode, 201);
  const taskId = created.json<string>();
  t.type(taskId, 'string', 'the body is the task id, a JSON string');
  const first = await stream(app, legacyMessage('write hello', { taskId }));
  t.equal(
    legacyCard(first, 'awaiting_approval').request.name,
    'write_file',
    'the created task runs its first message in the legacy dialect',
  );
  const bad = await app.inject({
    method: 'POST',
    url: '/tasks',
    headers: { host: '127.0.0.1' },
    payload: { agentSettings: { workspacePath: 'relative/dir' } },
  });
  t.equal(bad.statusCode, 400);
  t.match(bad.json(), { error: /agentSettings.workspacePath must be an absolute path/ });
});

t.test('the RFC default: a message without a marker speaks the RFC dialect', async (t) => {
  const { app } = await server(t);
  const res = await stream(app, legacyMessage('hello default'));
  t.equal(res[1].metadata[URI].kind, 'STATE_CHANGE');
});

t.test('resubscribe to a paused legacy task re-sends its card and pause in the legacy shape', async (t) => {
  const { app, workspace } = await server(t);
  const { first, taskId } = await begin(app, workspace, 'write hello');
  const res = await rpc(app, 'tasks/resubscribe', { id: taskId }, { headers: { 'last-event-id': '1' } });
  const events = results(res);
  t.equal(events[0].kind, 'task');
  t.same(legacyCard(events, 'awaiting_approval'), legacyCard(first, 'awaiting_approval'), 'the same card');
  t.match(events.at(-1), { final: true, status: { state: 'input-required' }, metadata: { coderAgent: { kind: 'state-change' } } });
});

t.test('push: a legacy task pushes its Task (v0.3) with the legacy ToolCall; the pause carries the waiting card', async (t) => {
  const hook = await WebhookReceiver.start(t);
  const { app, workspace } = await server(t, { PUSH_ALLOW_PRIVATE: '1', PUSH_RETRY_BASE_MS: '50', PUSH_RETRY_MAX_MS: '200' });
  const res = await rpc(app, 'message/stream', {
    message: legacyMessage('write hello', { metadata: coderAgent(workspace) }),
    configuration: { pushNotificationConfig: { url: hook.url('/legacy'), token: 'tok' } },
  });
  const first = results(res);
  const callId = legacyCard(first, 'awaiting_approval').request.callId;
  const pause = await hook.waitForDelivery((d) => d.json?.status?.state === 'input-required', { path: '/legacy' });
  t.equal(pause.json.id, first[0].id, 'the Task of the legacy task');
  const waiting = pause.json.status.message.parts.find((p: any) => p.data?.status === 'awaiting_approval')?.data;
  t.equal(waiting?.request?.callId, callId, 'the pause carries the waiting card');
  t.equal(waiting?.confirmationDetails?.type, 'edit', 'in the legacy shape');
  const second = await stream(app, answer(first[0].id, { callId, outcome: 'proceed_once' }));
  t.match(second.at(-1), { status: { state: 'input-required' } });
  const ran = await hook.waitForDelivery((d) => d.json?.status?.message?.parts?.[0]?.data?.status === 'success', { path: '/legacy' });
  t.equal(ran.json.status.message.parts[0].data.request.callId, callId, 'the result is pushed too');
  const end = await hook.waitForDelivery((d) => d.json?.status?.state === 'input-required' && Number(d.eventId) > Number(pause.eventId), {
    path: '/legacy',
  });
  t.equal(end.json.status.state, 'input-required', 'the end of the turn is pushed as input-required, as its client expects');
});
