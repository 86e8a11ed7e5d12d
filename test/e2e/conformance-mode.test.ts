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
