/**
 * Inputs the fuzzer (test/fuzz/, `npm run fuzz`) found, replayed as they were sent: each must
 * now keep every invariant (harness.ts checkCase: no 5xx, no -32603, no internal detail, no other
 * principal's data, the server still healthy) and get the refusal named below.
 */
import t from 'tap';
import { checkCase, startHarness } from './harness.js';
import type { FuzzRequest, Harness } from './harness.js';
import { sweepWedged } from './sweep.js';

let shared: Harness | undefined;
async function harness(): Promise<Harness> {
  if (!shared) {
    const h = (shared = await startHarness());
    t.teardown(() => h.close());
  }
  return shared;
}

const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);

/** A v0.3 message/stream to `a`'s paused task whose first part's `kind` is `kindJson` (raw JSON text). */
function answerWithKind(h: Harness, kindJson: string, extra = ''): FuzzRequest {
  const { taskId, contextId } = h.owned.a.rfc;
  const message = `{"kind":"message","role":"user","messageId":"m-deep","taskId":"${taskId}","contextId":"${contextId}","parts":[{"kind":${kindJson}}]${extra}}`;
  const body = `{"jsonrpc":"2.0","id":7,"method":"message/stream","params":{"message":${message}}}`;
  return { method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, body, who: 'a' };
}

t.test('a part kind nested 60 000 arrays deep is refused naming the field, not answered 500 (fuzz seed 3, answers)', async (t) => {
  const h = await harness();
  for (const depth of [5_000, 60_000]) {
    const res = await checkCase(h, answerWithKind(h, deep(depth)));
    const { error } = JSON.parse(res.raw) as { error: { code: number; message: string } };
    t.equal(error.code, -32602, `depth ${depth}: INVALID_PARAMS`);
    t.match(error.message, /params\.message\.parts\[0\]\.kind must be "text", "data" or "file", got an array/);
  }
  t.same(await sweepWedged(h), [], 'the paused task is still answerable, and answering it ends its turn');
});

t.test('a role nested deep, a huge kind, a deep historyLength: bounded refusals', async (t) => {
  const h = await harness();
  const huge = await checkCase(h, answerWithKind(h, JSON.stringify('k'.repeat(300_000))));
  const { error } = JSON.parse(huge.raw) as { error: { code: number; message: string } };
  t.equal(error.code, -32602);
  t.ok(error.message.length < 300, `the refusal does not echo the 300 000-character kind (${error.message.length} chars)`);
  const body = `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":${deep(20_000)},"messageId":"m","parts":[{"kind":"text","text":"hi"}]}}}`;
  const role = await checkCase(h, { method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, body, who: 'b' });
  t.match(JSON.parse(role.raw), { error: { code: -32602, message: /role must be "user", got an array/ } });
  const get = `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"${h.owned.b.done.taskId}","historyLength":${deep(20_000)}}}`;
  const history = await checkCase(h, { method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, body: get, who: 'b' });
  t.match(JSON.parse(history.raw), { error: { code: -32602 } });
});

t.test("Fastify's own refusals on POST / come in a JSON-RPC envelope (a body over the 32 MiB limit)", async (t) => {
  const h = await harness();
  const text = 'x'.repeat(33 * 1024 * 1024);
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { text } } });
  const res = await checkCase(h, { method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, body, who: 'b' });
  t.equal(res.status, 413);
  t.match(JSON.parse(res.raw), { jsonrpc: '2.0', id: null, error: { code: -32600, message: /too large/ } });
});

t.test('a v1.0 REST push config whose url nests 5 000 arrays deep: 400 naming the field, not 500 (fuzz seed 812712681)', async (t) => {
  const h = await harness();
  const url = `/v1/tasks/${h.owned.b.done.taskId}/pushNotificationConfigs`;
  const headers = { 'content-type': 'application/json', 'a2a-version': '1.0' };
  const res = await checkCase(h, { method: 'POST', url, headers, body: `{"url":${deep(5_000)}}`, who: 'b' });
  t.equal(res.status, 400);
  t.match(JSON.parse(res.raw), { error: { status: 'INVALID_ARGUMENT', message: /body\.url.* nests deeper than 64 levels/ } });
});
