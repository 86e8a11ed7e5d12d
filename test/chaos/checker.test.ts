/**
 * The consistency checker can fail: real flows recorded against an in-process server (the
 * in-memory store), then their logs corrupted the ways a crash could corrupt them — a missing
 * event, a changed event, a call executed twice, a side effect without its audit row, a task
 * left working — and each is caught. The uncorrupted records pass.
 */
import t from 'tap';
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { startServer } from '../support/server.js';
import { rpc } from '../support/sse.js';
import { dataOf } from '../support/server.js';
import { checkConsistency, executionProblems, replayProblems, viewProblems } from './checker.js';
import type { AuditEntry } from './checker.js';
import { CHAOS_SCRIPT, newFlow, playFlow, readStream } from './flows.js';
import type { FlowRecord, SeenEvent } from './flows.js';

const replayOf = async (url: string, flow: FlowRecord): Promise<SeenEvent[]> =>
  (await readStream(newFlow(-1, 'read'), url, 'tasks/resubscribe', { id: flow.taskId }, { 'Last-Event-ID': '0' })).seen;

const clone = <T>(v: T): T => structuredClone(v);

/** True when every pattern matches one of the problems (the checker caught each). */
const caught = (problems: string[], ...patterns: RegExp[]) => patterns.every((re) => problems.some((p) => re.test(p)));

t.test('the checker catches a gap, a changed event, a double execution and a wedged task', async (t) => {
  const srv = await startServer(t, { script: CHAOS_SCRIPT });
  const flow = newFlow(1, 'shell');
  await playFlow(flow, () => srv.url);
  t.equal(flow.outcome, 'done', 'the shell flow completed');
  const replay = await replayOf(srv.url, flow);
  const audit: AuditEntry[] = (await rpc(srv.url, 'audit/list', { task_id: flow.taskId })).json.result.entries;

  t.same(replayProblems(replay), [], 'the real replay is consistent');
  t.same(viewProblems(replay, flow.streams).problems, [], "the client's streams agree with it");
  t.same(executionProblems(replay, audit, 1).problems, [], 'one start line, one executed row');

  // A gap: drop the PENDING card (nothing supersedes it).
  const pending = replay.findIndex((e) => dataOf(e.result)?.status === 'PENDING');
  const gap = replay.filter((_, i) => i !== pending);
  t.ok(caught(replayProblems(gap), /id \d+ missing and no later EXECUTING card supersedes it/), 'a missing event is a gap');
  t.ok(caught(viewProblems(gap, flow.streams).problems, /seen live but the replay has no such event/), 'the client saw it');
  // A live stream that skipped an event the replay has.
  const skipped = flow.streams.map((s) => s.filter((e) => dataOf(e.result)?.status !== 'PENDING'));
  t.ok(caught(viewProblems(replay, skipped).problems, /skipping \d+ of the replay/), 'a live stream that skipped an event');

  // A superseded EXECUTING card may be missing: drop every EXECUTING card but the last one of the call.
  const executing = replay.map((e, i) => (dataOf(e.result)?.status === 'EXECUTING' ? i : -1)).filter((i) => i >= 0);
  if (executing.length > 1) {
    const compacted = replay.filter((_, i) => !executing.slice(0, -1).includes(i));
    t.same(replayProblems(compacted), [], 'superseded EXECUTING cards may be missing');
    t.same(viewProblems(compacted, flow.streams).problems, [], '…even when a client saw them');
  }
  // The last EXECUTING card may not: nothing supersedes it.
  const lastExecuting = replay.filter((_, i) => i !== executing.at(-1));
  t.ok(caught(replayProblems(lastExecuting), /missing and no later EXECUTING card/), 'the last EXECUTING card is required');

  // A changed event: the replay says something other than what the client saw under the same id.
  const changed = clone(replay);
  changed[pending].result.status.message.parts[0].data.input_parameters.command = 'rm -rf /';
  t.ok(caught(viewProblems(changed, flow.streams).problems, /differs from the replay .*command/), 'a changed event is caught');

  // A replay that stops before the end, and one that goes back.
  t.ok(caught(replayProblems(replay.slice(0, -1)), /not terminal/, /not final/, /snapshot says completed/), 'a log cut short');
  const backwards = [...replay.slice(0, 3), replay[2], ...replay.slice(3)];
  t.ok(caught(replayProblems(backwards), /not increasing/), 'a repeated id');

  // A double execution: a second executed row, or a second start of the command.
  const call = audit.find((a) => a.decision === 'executed');
  t.ok(
    caught(executionProblems(replay, [...audit, { ...call!, decision: 'executed' }], 1).problems, /2 executed rows/),
    'two executed rows',
  );
  t.ok(caught(executionProblems(replay, audit, 2).problems, /2 start lines for 1 executed rows/, /started 2 times/), 'two side effects');
  const unauthorized = audit.filter((a) => a.decision !== 'authorized');
  t.ok(caught(executionProblems(replay, unauthorized, 1).problems, /executed without an authorized row/), 'an execution nobody authorized');

  // Through checkConsistency: the clean store passes; a second run of the command (the line
  // appended by hand) and a task left working (a command that runs 30 s) fail.
  const checks: string[] = [];
  const recorder = {
    ok: (v: unknown, m: string, _extra?: unknown) => checks.push(`${v ? 'ok' : 'not ok'} ${m ?? ''}`),
    comment: () => undefined,
  };
  const clean = await checkConsistency(recorder, { url: srv.url, flows: [flow], settleMs: 2_000 });
  t.same(clean.problems, [], 'the real store is consistent');
  appendFileSync(path.join(flow.workspace, 'ran.log'), 'start 99999\n');
  const hang = newFlow(2, 'write');
  const { seen } = await readStream(hang, srv.url, 'message/stream', {
    message: { kind: 'message', role: 'user', messageId: 'hang-1', parts: [{ kind: 'text', text: 'shell hang' }] },
  });
  const card = dataOf(seen.find((e) => dataOf(e.result)?.status === 'PENDING')?.result);
  const task = seen[0].result;
  const answer = { kind: 'message', role: 'user', messageId: 'hang-2', taskId: task.id, contextId: task.contextId };
  const parts = [{ kind: 'data', data: { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' } }];
  const running = readStream(hang, srv.url, 'message/stream', { message: { ...answer, parts } });
  await t.resolves(async () => {
    for (let i = 0; i < 100 && !hang.streams.at(-1)?.some((e) => dataOf(e.result)?.status === 'EXECUTING'); i++)
      await new Promise((r) => setTimeout(r, 50));
  });
  const dirty = await checkConsistency(recorder, { url: srv.url, flows: [flow, hang], settleMs: 500 });
  t.ok(caught(dirty.problems, /ran.log has 2 start lines for 1 executed rows/, /started 2 times/, /wedged working/), 'both are caught');
  t.equal(checks[0], 'ok consistent: 1 tasks', 'the clean check passes');
  t.match(checks[1], /^not ok consistent: 2 tasks; 3 problems/, 'the dirty one fails its assertion');
  await rpc(srv.url, 'tasks/cancel', { id: task.id });
  await running;
});
