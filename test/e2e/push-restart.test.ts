/**
 * The push outbox survives a process death: the real server as a child process (embedded
 * PGlite in DATA_DIR, or PostgreSQL when TEST_DATABASE_URL is set) delivers a task's first
 * events; then the receiver fails and goes down while the task produces more; the server is
 * killed with SIGKILL and started again on the same store; once the receiver is back, every
 * event has arrived exactly once per X-A2A-Event-Id, in order, signed with the same key.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { backoffDelay } from '../../src/push/retry-policy.js';
import { until } from '../support/core.js';
import { freshDatabase, PG_SKIP, pgOnly, spawnServer } from '../support/process.js';
import type { FreshDatabase, ServerProcess } from '../support/process.js';
import { rpc } from '../support/sse.js';
import type { PostResult } from '../support/sse.js';
import { confirmMessage, dataOf, tempDir, userMessage } from '../support/server.js';
import type { Test } from '../support/tool-call-watch.js';
import { WebhookReceiver } from '../support/webhook.js';

/**
 * Retries no sooner than 200 ms after a failure (PUSH_RETRY_BASE_MS=400: the first retry waits
 * 200–400 ms), so the kill below lands while the dispatcher waits, not while it holds a lease
 * (a lease held by a dead process is only taken over after PUSH_TIMEOUT_MS·3 + 30 s).
 */
const PUSH_ENV = {
  PUSH_ALLOW_PRIVATE: '1',
  PUSH_RETRY_BASE_MS: '400',
  PUSH_RETRY_MAX_MS: '800',
  PUSH_MAX_ATTEMPTS: '1000',
  PUSH_TIMEOUT_MS: '2000',
};

const results = (res: PostResult) => (res.events ?? []).map((e) => e.data.result);
const sseIds = (res: PostResult) => (res.events ?? []).map((e) => e.id);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => String(from + i));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const kidsOf = async (url: string) =>
  ((await (await fetch(new URL('/.well-known/jwks.json', url))).json()) as { keys: Array<{ kid: string }> }).keys.map((k) => k.kid);

/** Receiver up: the first stream's events (1..4, up to the pause) are delivered. Then it fails: the task goes on (5..9), event 5 is retried. */
async function runWhileReceiverFails(t: Test, hook: WebhookReceiver, path: string, url: string): Promise<{ task: any; done: PostResult }> {
  const paused = await rpc(url, 'message/stream', {
    message: userMessage('write a greeting'),
    configuration: { pushNotificationConfig: { url: hook.url(path), token: 'tok' } },
  });
  const task = results(paused)[0];
  t.same(sseIds(paused), range(1, 4), 'the first stream: 1..4');
  const early = await hook.waitForDeliveries(4, { path });
  t.same(
    early.map((d) => d.eventId),
    range(1, 4),
    'receiver up: 1..4 delivered',
  );

  hook.answer(500);
  const card = dataOf(results(paused).find((r) => dataOf(r)?.status === 'PENDING'));
  const done = await rpc(url, 'message/stream', {
    message: confirmMessage(task.id, task.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' }),
  });
  t.same(sseIds(done), range(5, 9), 'the answer stream: 5..9');
  t.equal(results(done).at(-1)?.status?.state, 'completed');
  const failing = await hook.waitForRequests(6, { path, timeoutMs: 20_000 });
  t.same(
    failing.slice(4).map((d) => [d.eventId, d.status]),
    [
      ['5', 500],
      ['5', 500],
    ],
    'event 5 failed twice (and nothing after it was tried)',
  );
  return { task, done };
}

/** Receiver down, then the server dies (SIGKILL) while it waits to retry; the store holds the cursor at 4, no lease. */
async function killWhileRetryWaits(
  t: Test,
  hook: WebhookReceiver,
  path: string,
  server: ServerProcess,
  taskId: string,
  pg?: FreshDatabase,
): Promise<void> {
  await hook.stop();
  const failures = hook.to(path).filter((d) => d.eventId === '5');
  if (pg) {
    // The last failure is recorded and the lease released (the next retry is hundreds of ms away).
    await until('the failed attempts recorded and the push lease released', async () => {
      const [row] = await pg.sql`select attempts, lease_owner from push_configs where task_id = ${taskId}`;
      return row !== undefined && Number(row.attempts) >= failures.length && row.lease_owner === null;
    });
  } else {
    // PGlite: the store belongs to the child process and the test cannot read it, so the
    // moment is derived from the retry policy: the dispatcher records the failure (one row
    // write) as soon as it reads the answer, and cannot retry sooner than the shortest backoff
    // after it. Kill halfway through that window, counted from the last answer.
    const shortest = backoffDelay(failures.length, {
      baseMs: Number(PUSH_ENV.PUSH_RETRY_BASE_MS),
      maxMs: Number(PUSH_ENV.PUSH_RETRY_MAX_MS),
      random: () => 0,
    });
    const answeredAt = failures.at(-1)?.answeredAt ?? Date.now();
    await sleep(Math.max(0, answeredAt + shortest / 2 - Date.now()));
  }
  t.match(await server.kill('SIGKILL'), { signal: 'SIGKILL' }, 'the server died by SIGKILL');
  if (pg) {
    const [row] = await pg.sql`select delivered_seq, lease_owner from push_configs where task_id = ${taskId}`;
    t.same(
      { delivered: Number(row?.delivered_seq), lease: row?.lease_owner ?? null },
      { delivered: 4, lease: null },
      'the store: 1..4 delivered, no lease held',
    );
  }
}

/** Receiver back: 5..9 arrive once each, in order, signed with the key published before the kill; 1..4 are not sent again. */
async function checkRedelivery(
  t: Test,
  hook: WebhookReceiver,
  path: string,
  url: string,
  task: any,
  done: PostResult,
  kids: string[],
): Promise<void> {
  const all = await hook.waitForDeliveries(9, { path, timeoutMs: 20_000 });
  t.same(
    all.map((d) => d.eventId),
    range(1, 9),
    'every event accepted exactly once, in order',
  );
  const seen = hook.to(path).map((d) => Number(d.eventId));
  t.ok(
    seen.every((n, i) => i === 0 || n >= seen[i - 1]),
    `never out of order: ${seen.join(' ')}`,
  );
  t.same(
    all.slice(4).map((d) => d.json?.status?.state),
    results(done).map((r) => r.status.state),
    'each body carries its event’s state',
  );
  t.ok(all.every((d) => d.json?.id === task.id && d.headers['x-a2a-notification-token'] === 'tok'));

  const jwks = createRemoteJWKSet(new URL('/.well-known/jwks.json', url));
  for (const d of all.slice(4)) {
    const { payload, protectedHeader } = await jwtVerify(String(d.headers.authorization).replace(/^Bearer /, ''), jwks);
    t.ok(kids.includes(protectedHeader.kid as string), `${d.eventId}: signed with the key published before the kill`);
    t.same(
      { task: payload.task_id, event: payload.event_id, hash: payload.body_sha256 },
      { task: task.id, event: d.eventId, hash: createHash('sha256').update(d.raw).digest('hex') },
      `${d.eventId}: the JWT binds task, event and body`,
    );
  }
}

async function pushAcrossRestart(t: Test, storeEnv: Record<string, string>, pg?: FreshDatabase): Promise<void> {
  const hook = await WebhookReceiver.start(t);
  const path = '/restart';
  const workspace = tempDir();
  const spawn = (readyTimeoutMs?: number) => spawnServer(t, { env: { ...storeEnv, ...PUSH_ENV }, workspace, readyTimeoutMs });
  const first = await spawn(90_000); // the first boot creates the store (PGlite: initdb, slow)
  const kids = await kidsOf(first.url);

  const { task, done } = await runWhileReceiverFails(t, hook, path, first.url);
  await killWhileRetryWaits(t, hook, path, first, task.id, pg);
  const second = await spawn();
  t.not(second.pid, first.pid, 'a new process on the same store');
  t.same(await kidsOf(second.url), kids, 'the same signing key is published after the restart');

  hook.ok();
  await hook.start();
  await checkRedelivery(t, hook, path, second.url, task, done, kids);
  if (pg) {
    // The cursor moves after the receiver answered: the last delivery can be seen before its write.
    const cursor = async () => {
      const [row] = await pg.sql`select delivered_seq, dropped from push_configs where task_id = ${task.id}`;
      return { delivered: Number(row?.delivered_seq), dropped: Number(row?.dropped) };
    };
    const settled = await until('the cursor to reach 9', async () => {
      const c = await cursor();
      return c.delivered >= 9 ? c : undefined;
    }).catch(cursor);
    t.same(settled, { delivered: 9, dropped: 0 }, 'the cursor is at 9, nothing dropped');
  }
}

t.jobs = 2;

t.test('PGlite (DATA_DIR)', { buffered: true }, async (t) => {
  await pushAcrossRestart(t, { DATA_DIR: tempDir('devtool-data-') });
});

t.test('PostgreSQL (DATABASE_URL)', { buffered: true, ...pgOnly() }, async (t) => {
  const db = await freshDatabase(t);
  if (!db) throw new Error(PG_SKIP);
  await pushAcrossRestart(t, { DATABASE_URL: db.url }, db);
});
