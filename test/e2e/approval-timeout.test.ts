/**
 * APPROVAL_TIMEOUT: a tool call nobody answers in time becomes CANCELLED with error type
 * `approval_timeout` (audit decision `expired`), the model is told, and the task moves on
 * (with the test script it completes). A late answer is refused; nothing ran.
 */
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { rpc } from '../support/sse.js';
import type { SseEvent } from '../support/sse.js';
import { confirmMessage, dataOf, devtool, sharedStore, startServer, textOf, URI, userMessage } from '../support/server.js';
import { watchSweeps } from '../support/sweeps.js';

const results = (events: SseEvent[] | undefined) => (events ?? []).map((e) => e.data.result);
const idsOf = (events: SseEvent[] | undefined) => (events ?? []).map((e) => (e.id === undefined ? null : Number(e.id)));
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function pollState(url: string, id: string, want: string, timeoutMs = 10_000): Promise<{ task: any; seen: string[] }> {
  const deadline = Date.now() + timeoutMs;
  const seen: string[] = [];
  let task: any;
  while (Date.now() < deadline) {
    task = (await rpc(url, 'tasks/get', { id })).json?.result;
    const state = task?.status?.state;
    if (seen.at(-1) !== state) seen.push(state);
    if (state === want) break;
    await sleep(50);
  }
  return { task, seen };
}

const APPROVAL_TIMEOUT_MS = 1000;

t.test('APPROVAL_TIMEOUT=1s', async (t) => {
  const store = await sharedStore();
  // The server's own connection, wrapped so the test can see when its supervisor sweeps.
  const connection = store.connect();
  t.teardown(() => connection.close()); // teardowns run last-in first-out: after the server closed
  const sweeps = watchSweeps(connection);
  const srv = await startServer(t, { env: { APPROVAL_TIMEOUT: '1s' }, app: { sweepMs: 100, store: sweeps.store } });
  const meta = { metadata: { [URI]: { workspace_path: srv.workspace } } };

  await t.test('an unanswered call is cancelled approval_timeout; the model is told; the task completes', async (t) => {
    const first = await rpc(srv.url, 'message/stream', { message: userMessage('write a greeting', meta) });
    const ev = results(first.events);
    t.same(idsOf(first.events), [1, 2, 3, 4]);
    t.equal(ev.at(-1).status.state, 'input-required', 'paused');
    const task = ev[0];
    const card = dataOf(ev[2]);
    t.match(card, { tool_name: 'write_file', status: 'PENDING' });

    const { task: done, seen } = await pollState(srv.url, task.id, 'completed');
    t.equal(done?.status?.state, 'completed', `completed within the bounded wait (states seen: ${seen.join(' → ')})`);

    const replay = await rpc(srv.url, 'tasks/resubscribe', { id: task.id }, { headers: { 'Last-Event-ID': '4' } });
    t.match(replay.contentType, /^text\/event-stream/, replay.raw);
    const later = results(replay.events).slice(1);
    t.match(results(replay.events)[0], { kind: 'task', status: { state: 'completed' } }, 'the snapshot first');
    t.same(idsOf(replay.events), [null, ...range(5, 4 + later.length)], 'then 5.. with no gap');
    // Shortly before the deadline (APPROVAL_REMINDER defaults to a fifth of APPROVAL_TIMEOUT) the pause is re-published as a reminder.
    const reminder = later[0];
    t.equal(reminder.status.state, 'input-required', 'event 5 is the reminder');
    t.equal(reminder.final, true);
    t.match(textOf(reminder), new RegExp(`^Reminder: write_file \\(${card.tool_call_id}\\) will be cancelled in about \\d+ s`));
    const cancelled = later[1];
    t.equal(devtool(cancelled)?.kind, 'TOOL_CALL_UPDATE', 'event 6 is the call update');
    const call = dataOf(cancelled);
    t.equal(call?.tool_call_id, card.tool_call_id);
    t.equal(call?.status, 'CANCELLED');
    t.equal(call?.error?.type, 'approval_timeout');
    t.match(call?.error?.message, /APPROVAL_TIMEOUT/);
    t.notOk(call && 'confirmation_request' in call, 'no confirmation_request once cancelled');
    t.same(
      later.slice(2).map((r) => [devtool(r)?.kind, r.status.state]),
      [
        ['TEXT_CONTENT', 'working'],
        ['TEXT_CONTENT', 'working'],
        ['STATE_CHANGE', 'completed'],
      ],
      'the model went on (scripted: two deltas), then completed',
    );
    t.equal(later.at(-1).final, true);
    t.equal(later.slice(2, -1).map(textOf).join(''), 'Wrote hello.txt.');
    t.notOk(
      later.some((r) => dataOf(r)?.status === 'EXECUTING'),
      'the call never ran',
    );
    t.notOk(existsSync(path.join(srv.workspace, 'hello.txt')), 'the file was not written');

    // The model was told: its conversation holds the function response with the reason.
    const ctx = await store.loadContext(task.contextId);
    const told = JSON.stringify(ctx?.history ?? []);
    t.match(told, /Nobody answered within APPROVAL_TIMEOUT/, 'the model history carries the timeout');
    const audit = await store.listAudit({ taskId: task.id });
    t.same(
      audit.map((a) => [a.decision, a.toolCallId]),
      [
        ['proposed', card.tool_call_id],
        ['expired', card.tool_call_id],
      ],
      'audit: proposed, expired (never authorized or executed)',
    );

    const late = await rpc(srv.url, 'message/stream', {
      message: confirmMessage(task.id, task.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' }),
    });
    t.match(late.contentType, /^application\/json/, 'a plain JSON answer, no stream');
    t.equal(late.json?.error?.code, -32602);
    t.match(late.json?.error?.message, /already answered/);
    t.notOk(existsSync(path.join(srv.workspace, 'hello.txt')), 'still not written');
    t.equal((await store.listAudit({ taskId: task.id })).length, 2, 'the refused answer changed nothing');
    t.equal((await rpc(srv.url, 'tasks/get', { id: task.id })).json.result.status.state, 'completed');
  });

  await t.test('a call answered in time is not expired later', async (t) => {
    const ws = srv.workspace;
    const first = await rpc(srv.url, 'message/stream', { message: userMessage('write in time', meta) });
    const ev = results(first.events);
    const task = ev[0];
    const card = dataOf(ev[2]);
    const done = await rpc(srv.url, 'message/stream', {
      message: confirmMessage(task.id, task.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' }),
    });
    t.same(
      results(done.events).map((r) => dataOf(r)?.status ?? r.status.state),
      ['EXECUTING', 'SUCCEEDED', 'working', 'working', 'completed'],
    );
    t.equal(readFileSync(path.join(ws, 'hello.txt'), 'utf8'), 'hello world\n');
    // Past the call's expiry: wait until two supervisor passes that began after its deadline
    // (each looks for expired calls and due reminders) have ended.
    const stored = await store.loadCall(card.tool_call_id);
    if (!stored) throw new Error(`call ${card.tool_call_id} is not in the store`);
    const deadline = (stored.expiresAt ?? new Date(stored.proposedAt.getTime() + APPROVAL_TIMEOUT_MS)).getTime();
    await sweeps.passesAfter(deadline, 2);
    const replay = await rpc(srv.url, 'tasks/resubscribe', { id: task.id }, { headers: { 'Last-Event-ID': '9' } });
    t.same(idsOf(replay.events), [null], 'nothing was appended after completed');
    t.same(
      (await store.listAudit({ taskId: task.id })).map((a) => a.decision),
      ['proposed', 'authorized', 'executed', 'succeeded'],
    );
  });
});
