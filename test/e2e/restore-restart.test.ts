/**
 * Checkpoints outlive their process and serve every instance: the real server as child processes
 * with CHECKPOINTING=true, on embedded PGlite (DATA_DIR) and on PostgreSQL (DATABASE_URL, a fresh
 * database; skipped when TEST_DATABASE_URL is unset). A write approved on one process, which is
 * then killed with SIGKILL, is listed and restored (through its card) on the next; on PostgreSQL,
 * the restore's own checkpoint is undone on a second instance running beside it.
 */
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { freshDatabase, PG_SKIP, pgOnly, spawnServer } from '../support/process.js';
import type { ServerProcess } from '../support/process.js';
import { rpc } from '../support/sse.js';
import { confirmMessage, dataOf, tempDir, userMessage } from '../support/server.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const stream = async (url: string, message: Record<string, unknown>) =>
  ((await rpc(url, 'message/stream', { message })).events ?? []).map((e) => e.data.result);

/** Approves every PENDING card of `events` (one task) on `url`; the events of the answer. */
async function approveAll(url: string, events: any[]): Promise<any[]> {
  const task = events.find((r) => r?.kind === 'task') ?? (await rpc(url, 'tasks/get', { id: events[0]?.taskId })).json.result;
  // The snapshot and the pause repeat a waiting card: each is answered once.
  const pending = new Set<string>(events.map(dataOf).flatMap((d) => (d?.status === 'PENDING' ? [d.tool_call_id] : [])));
  const confirmations = [...pending].map((id) => ({ tool_call_id: id, selected_option_id: 'proceed_once' }));
  const r = await rpc(url, 'message/stream', { message: confirmMessage(task.id, task.contextId, ...confirmations) });
  if (r.events === undefined) throw new Error(`the answer was refused: ${r.raw.slice(0, 500)}`);
  return (r.events ?? []).map((e) => e.data.result);
}

/** command/execute `restore <key>` on `url`, its card approved there; the restore's call id. */
async function restoreOn(t: Test, url: string, key: string, contextId: string): Promise<string> {
  const res = (await rpc(url, 'command/execute', { command_path: ['restore'], args: key, context_id: contextId })).json.result;
  t.equal(res?.status, 'AWAITING_ACTION_CONFIRMATION', `restore ${key}: its card waits`);
  const replay = await rpc(url, 'tasks/resubscribe', { id: res.execution_id }, { headers: { 'Last-Event-ID': '0' } });
  const events = (replay.events ?? []).map((e) => e.data.result);
  const card = events.map(dataOf).find((d) => d?.status === 'PENDING');
  t.equal(card?.tool_name, 'restore_file');
  const done = await approveAll(url, events);
  t.equal(done.map(dataOf).find((d) => d?.tool_call_id === card.tool_call_id && d.status !== 'EXECUTING')?.status, 'SUCCEEDED');
  return card.tool_call_id;
}

async function leg(t: Test, storeEnv: Record<string, string>, twoInstances: boolean): Promise<void> {
  const workspace = tempDir();
  const file = path.join(workspace, 'hello.txt');
  writeFileSync(file, 'original\n');
  const spawn = (readyTimeoutMs?: number): Promise<ServerProcess> =>
    spawnServer(t, { env: { ...storeEnv, CHECKPOINTING: 'true' }, workspace, readyTimeoutMs });
  const first = await spawn(90_000);
  const asked = await stream(first.url, userMessage('write hello'));
  const card = asked.map(dataOf).find((d) => d?.status === 'PENDING');
  t.equal(card?.tool_name, 'write_file');
  await approveAll(first.url, asked);
  t.equal(readFileSync(file, 'utf8'), 'hello world\n', 'written on the first process');
  const contextId = asked[0].contextId;
  t.match(await first.kill('SIGKILL'), { signal: 'SIGKILL' });

  const second = await spawn();
  const list = (await rpc(second.url, 'command/execute', { command_path: ['restore', 'list'], context_id: contextId })).json.result;
  const listing = await rpc(second.url, 'tasks/resubscribe', { id: list.execution_id }, { headers: { 'Last-Event-ID': '0' } });
  const text = (listing.events ?? []).map((e) => e.data.result?.status?.message?.parts?.[0]?.text ?? '').join('');
  t.match(text, `(tool_call_id ${card.tool_call_id}): hello.txt`, 'listed after the SIGKILL, on the new process');
  const undo = await restoreOn(t, second.url, card.tool_call_id, contextId);
  t.equal(readFileSync(file, 'utf8'), 'original\n', 'restored on the new process');
  if (!twoInstances) return;
  const third = await spawn();
  await restoreOn(t, third.url, undo, contextId);
  t.equal(readFileSync(file, 'utf8'), 'hello world\n', 'the restore undone on another instance of the same database');
}

t.jobs = 2;

t.test('PGlite (DATA_DIR): a checkpoint survives SIGKILL', { buffered: true }, async (t) => {
  await leg(t, { DATA_DIR: tempDir('devtool-data-') }, false);
});

t.test('PostgreSQL (DATABASE_URL): survives SIGKILL, and works from every instance', { buffered: true, ...pgOnly() }, async (t) => {
  const db = await freshDatabase(t);
  if (!db) throw new Error(PG_SKIP);
  await leg(t, { DATABASE_URL: db.url }, true);
});
