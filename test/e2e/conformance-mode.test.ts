/**
 * AGENT_MODEL_SCRIPT=conformance: the bundled script honours the A2A TCK's SUT contract by
 * messageId prefix, through the normal agent path (artifacts, rejected, input-required).
 */
import t from 'tap';
import { loadModelScript, CONFORMANCE_SCRIPT_FILE } from '../../src/agent/model/scripted-model-client.js';
import { loadConfig } from '../../src/config/load-config.js';
import { buildServer } from '../support/server.js';
import { rpc } from '../support/sse.js';

const script = loadModelScript(CONFORMANCE_SCRIPT_FILE);

const message = (messageId: string) => ({ kind: 'message', role: 'user', messageId, parts: [{ kind: 'text', text: 'Hello' }] });

t.test('AGENT_MODEL_SCRIPT=conformance selects the bundled script, never the default', async (t) => {
  t.equal(loadConfig({ AGENT_MODEL_SCRIPT: 'conformance', WORKSPACE_DIR: '/tmp' }).model.bundled, 'conformance');
  t.equal(loadConfig({ WORKSPACE_DIR: '/tmp' }).model.bundled, undefined);
});

t.test('message/send by prefix', async (t) => {
  const { app } = await buildServer(t, { script });
  const send = async (id: string) => {
    const res = await rpc(app, 'message/send', { message: message(`${id}-${Math.random()}`) });
    return res.json.result;
  };
  const done = await send('tck-complete-task');
  t.equal(done.status.state, 'completed');
  t.equal(done.status.message.parts[0].text, 'Hello from TCK');

  const text = await send('tck-artifact-text');
  t.equal(text.status.state, 'completed');
  t.same(text.artifacts[0].parts, [{ kind: 'text', text: 'Generated text content' }]);

  const data = await send('tck-artifact-data');
  t.same(data.artifacts[0].parts[0].data, { key: 'value', count: 42 });

  const url = await send('tck-artifact-file-url');
  t.match(url.artifacts[0].parts[0].file, { uri: 'https://example.com/output.txt', name: 'output.txt', mimeType: 'text/plain' });

  const file = await send('tck-artifact-file');
  t.match(file.artifacts[0].parts[0].file, { name: 'output.txt', mimeType: 'text/plain', bytes: String });

  const rejected = await send('tck-reject-task');
  t.equal(rejected.status.state, 'rejected');

  const input = await send('tck-input-required');
  t.equal(input.status.state, 'input-required');
  const canceled = await rpc(app, 'tasks/cancel', { id: input.id });
  t.equal(canceled.json.result.status.state, 'canceled');

  const got = await rpc(app, 'tasks/get', { id: text.id });
  t.same(got.json.result.artifacts, text.artifacts, 'artifacts are stored with the task');
});

t.test('message/stream: status, artifact chunks, completion in order', async (t) => {
  const { app } = await buildServer(t, { script });
  const res = await rpc(
    app,
    'SendStreamingMessage',
    { message: { role: 'ROLE_USER', messageId: 'tck-stream-artifact-chunked-1', parts: [{ text: 'Hello' }] } },
    { version: '1.0' },
  );
  const results = (res.events ?? []).map((e) => (e.data as { result: Record<string, any> }).result);
  const kinds = results.map((r) => Object.keys(r)[0]);
  t.same(kinds, ['task', 'statusUpdate', 'artifactUpdate', 'artifactUpdate', 'statusUpdate']);
  t.match(results[2]?.artifactUpdate, { artifact: { parts: [{ text: 'chunk-1 ' }] } });
  t.match(results[3]?.artifactUpdate, { append: true, lastChunk: true, artifact: { parts: [{ text: 'chunk-2' }] } });
  t.strictSame(
    [results[2]?.artifactUpdate.artifact.parts.length, results[3]?.artifactUpdate.artifact.parts.length],
    [1, 1],
    'one part per chunk',
  );
  t.equal(results[4]?.statusUpdate.status.state, 'TASK_STATE_COMPLETED');
  const id = results[0]?.task.id as string;
  const got = await rpc(app, 'GetTask', { id }, { version: '1.0' });
  t.same(
    got.json.result.artifacts[0].parts.map((p: { text: string }) => p.text),
    ['chunk-1 ', 'chunk-2'],
    'chunks appended',
  );
});

t.test('test-resubscribe-message-id keeps the task working until canceled', async (t) => {
  const { app } = await buildServer(t, { script });
  const res = await rpc(app, 'message/send', { message: message('test-resubscribe-message-id-1'), configuration: { blocking: false } });
  const task = res.json.result;
  t.equal(task.status.state, 'working');
  const canceled = await rpc(app, 'tasks/cancel', { id: task.id });
  t.equal(canceled.json.result.status.state, 'canceled');
});

t.test('a direct reply: SendMessage answers with a Message; the task behind it is stored', async (t) => {
  const { app } = await buildServer(t, { script });
  const v03 = await rpc(app, 'message/send', { message: message('tck-message-response-1') });
  t.match(v03.json.result, { kind: 'message', role: 'agent', parts: [{ kind: 'text', text: 'Direct message response' }] });
  const v1 = await rpc(
    app,
    'SendMessage',
    { message: { role: 'ROLE_USER', messageId: 'tck-message-response-2', parts: [{ text: 'Hello' }] } },
    { version: '1.0' },
  );
  t.match(v1.json.result, { message: { role: 'ROLE_AGENT', parts: [{ text: 'Direct message response' }] } });
  t.strictSame([v03.json.result.parts.length, v1.json.result.message.parts.length], [1, 1], 'the reply is one text part');
  t.notOk(v1.json.result.task, 'not a Task');
  const stored = await rpc(app, 'tasks/get', { id: v03.json.result.taskId });
  t.equal(stored.json.result.status.state, 'completed', 'the exchange is kept as a completed task');

  // A stream's first event is already the Task: the reply ends it as the task's final status.
  const stream = await rpc(app, 'message/stream', { message: message('tck-message-response-3') });
  const last = stream.events?.at(-1)?.data.result;
  t.match(last, { kind: 'status-update', status: { state: 'completed', message: { parts: [{ text: 'Direct message response' }] } } });
  // Only the first step of a task's first message may reply directly: a follow-up is the task's.
  const followUp = await rpc(app, 'message/send', {
    message: { ...message('tck-message-response-4'), taskId: v03.json.result.taskId },
  });
  t.equal(followUp.json.result.kind, 'task', 'a follow-up to a task answers with the task');
});

t.test('follow-ups: a question is answered in its task; a completed task continues under v0.3 only', async (t) => {
  const { app } = await buildServer(t, { script });
  const asked = (await rpc(app, 'message/send', { message: message('tck-input-required-1') })).json.result;
  t.equal(asked.status.state, 'input-required');
  const answered = await rpc(app, 'message/send', { message: { ...message('tck-complete-task-1'), taskId: asked.id } });
  t.equal(answered.json.result.status.state, 'completed', 'the text answered the model’s question (no contextId needed)');
  t.equal(answered.json.result.history.filter((m: any) => m.role === 'user').length, 2);

  const v03 = await rpc(app, 'message/send', { message: { ...message('tck-complete-task-2'), taskId: asked.id } });
  t.equal(v03.json.result.status.state, 'completed', 'v0.3: a completed task continues');
  const v1 = await rpc(
    app,
    'SendMessage',
    { message: { role: 'ROLE_USER', messageId: 'tck-complete-task-3', taskId: asked.id, parts: [{ text: 'again' }] } },
    { version: '1.0' },
  );
  t.equal(v1.json.error.code, -32004, 'v1.0: a terminal task takes no further message');
  t.match(v1.json.error.message, `send it with contextId ${asked.contextId} and no taskId to start a new task`);
});
