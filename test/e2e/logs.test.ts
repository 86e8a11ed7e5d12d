/**
 * Structured logs of the real server process (issue 21 item 5): with an API key, GEMINI_API_KEY
 * (the fake Gemini), a push config with a token and credentials, and — with TEST_DATABASE_URL —
 * a DATABASE_URL with a password, a flow runs (a model error retried, a pause, an answer,
 * failing push deliveries) next to failing requests, then SIGTERM. Every stdout line is one
 * JSON object with level and time; every line that names the task carries it as `taskId`; no
 * secret appears anywhere in stdout or stderr.
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { freshDatabase, spawnServer } from '../support/process.js';
import { fnCallChunk, startFakeGemini, textChunk } from '../support/fake-gemini.js';
import { rpc } from '../support/sse.js';
import { confirmMessage, dataOf, tempDir, userMessage } from '../support/server.js';
import { WebhookReceiver } from '../support/webhook.js';

const API_KEY = 'alice-api-key-0123456789abcdef';
const GEMINI_KEY = 'gemini-secret-key-4242';
const DB_PASSWORD = 's3cr3t-pw-db';
const PUSH_TOKEN = 'push-token-secret-777';
const PUSH_CREDENTIALS = 'push-bearer-credentials-888';

t.test('JSON lines with level, time and task ids; no secret in the output', async (t) => {
  const gemini = await startFakeGemini();
  t.teardown(() => gemini.close());
  const hook = await WebhookReceiver.start(t);
  hook.answer(500); // every delivery fails: the dispatcher logs its retries
  const dir = tempDir('logs-');
  const auth = path.join(dir, 'auth.json');
  writeFileSync(auth, JSON.stringify({ api_keys: [{ key: API_KEY, principal: 'alice', roles: ['approver'] }] }));
  const db = await freshDatabase(t);
  const store: Record<string, string> = db ? { DATABASE_URL: withPassword(db.url, DB_PASSWORD) } : { DATA_DIR: path.join(dir, 'data') };
  const srv = await spawnServer(t, {
    env: {
      ...store,
      LOG_LEVEL: 'info',
      AUTH_CONFIG: auth,
      AGENT_MODEL_SCRIPT: '', // no script: the model is Gemini (the fake)
      GEMINI_API_KEY: GEMINI_KEY,
      GOOGLE_GEMINI_BASE_URL: gemini.url,
      PUSH_ALLOW_PRIVATE: '1',
      PUSH_RETRY_BASE_MS: '100',
    },
    readyTimeoutMs: 120_000,
  });
  const headers = { 'x-api-key': API_KEY };

  gemini.enqueue({ status: 503, error: { code: 503, message: 'overloaded', status: 'UNAVAILABLE' } });
  gemini.enqueue({ chunks: [fnCallChunk('write_file', { file_path: 'hello.txt', content: 'hi\n' })] });
  const paused = await rpc(srv.url, 'message/stream', { message: userMessage('write hello') }, { headers });
  const results = (paused.events ?? []).map((e) => e.data.result);
  const task = results[0];
  const card = dataOf(results.find((r) => dataOf(r)?.status === 'PENDING'));
  t.equal(results.at(-1)?.status?.state, 'input-required', `paused: ${paused.raw.slice(0, 300)}`);

  const set = await rpc(
    srv.url,
    'CreateTaskPushNotificationConfig',
    {
      taskId: task.id,
      id: 'cfg',
      url: hook.url('/hook'),
      token: PUSH_TOKEN,
      authentication: { scheme: 'Bearer', credentials: PUSH_CREDENTIALS },
    },
    { version: '1.0', headers },
  );
  t.equal(set.json?.result?.id, 'cfg', `push config set: ${set.raw}`);

  gemini.enqueue({ chunks: [textChunk('Done.')] });
  const done = await rpc(
    srv.url,
    'message/stream',
    { message: confirmMessage(task.id, task.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' }) },
    { headers },
  );
  t.equal((done.events ?? []).at(-1)?.data.result?.status?.state, 'completed', 'the flow completed');
  // Failing requests: bad credentials, an unknown task, a body that is not JSON.
  t.equal((await rpc(srv.url, 'tasks/get', { id: task.id }, { headers: { authorization: `Bearer ${API_KEY}x` } })).status, 401);
  t.equal((await rpc(srv.url, 'tasks/get', { id: 'no-such-task' }, { headers })).json?.error?.code, -32001);
  t.equal((await rpc(srv.url, 'tasks/get', {}, { headers, body: '{not json' })).json?.error?.code, -32700);
  await waitFor(() => hook.to('/hook').length >= 2, 'two failed push deliveries');

  process.kill(srv.pid, 'SIGTERM');
  t.same(await srv.exited, { code: 0, signal: null }, 'exit 0');

  const out = srv.output();
  const lines = out.split('\n').filter((l) => l !== '');
  const parsed = lines.map((line) => {
    try {
      return JSON.parse(line) as Record<string, unknown>;
    } catch {
      return undefined;
    }
  });
  t.same(
    lines.filter((_, i) => parsed[i] === undefined),
    [],
    'every line is JSON',
  );
  const records = parsed.filter((p): p is Record<string, unknown> => p !== undefined);
  t.same(
    records.filter((r) => typeof r.level !== 'number' || typeof r.time !== 'number'),
    [],
    'every line has a level and a time',
  );
  const aboutTask = records.filter((r) => JSON.stringify(r).includes(task.id));
  t.ok(aboutTask.length >= 2, `lines about the task were written (${aboutTask.map((r) => r.msg).join(' | ')})`);
  t.same(
    aboutTask.filter((r) => r.taskId !== task.id),
    [],
    'every line that names the task carries it as taskId',
  );
  t.ok(
    records.some((r) => r.taskId === task.id && /model call failed/.test(String(r.msg))),
    'the retried model error is logged with the task id',
  );
  t.ok(records.filter((r) => r.reqId !== undefined).length > 0, 'request lines carry the request id');
  const completed = records.filter((r) => r.msg === 'request completed' && r.taskId === task.id);
  // The first stream (it created the task), the push config, the answer's stream.
  t.equal(completed.length, 3, 'the requests about the task end with a line naming it');
  t.ok(
    completed.every((r) => r.contextId === task.contextId),
    'and its context',
  );
  for (const [name, secret] of [
    ['the API key', API_KEY],
    ['GEMINI_API_KEY', GEMINI_KEY],
    ['the DATABASE_URL password', DB_PASSWORD],
    ['the push token', PUSH_TOKEN],
    ['the push credentials', PUSH_CREDENTIALS],
  ]) {
    t.notOk(out.includes(secret), `${name} appears nowhere in stdout or stderr`);
  }
  t.ok(
    hook.to('/hook').some((d) => JSON.stringify(d.headers).includes(PUSH_CREDENTIALS)),
    'the push credentials were used',
  );
  if (!db) t.comment('TEST_DATABASE_URL unset: the DATABASE_URL password case did not run');
});

function withPassword(url: string, password: string): string {
  const u = new URL(url);
  u.password = password; // PostgreSQL's trust authentication ignores it
  return u.toString();
}

async function waitFor(check: () => boolean, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
