/**
 * Durability across process deaths: the real server as a child process, killed with SIGKILL
 * and started again on the same store — embedded PGlite (DATA_DIR) and PostgreSQL
 * (DATABASE_URL, a fresh database; skipped when TEST_DATABASE_URL is unset).
 * - A task paused at input-required survives and is confirmed on the new process; so does a task
 *   of the legacy dialect (gemini-cli's a2a-server wire), answered with `{callId, outcome}`.
 * - A call EXECUTING when its process died is marked FAILED `interrupted` once its lease
 *   lapsed, and its task ends `failed` (never stays `working`).
 * - PostgreSQL: a second process booting while the first runs a call (lease live) leaves
 *   that call alone.
 */
import t from 'tap';
import { existsSync, rmSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ModelScript } from '../../src/agent/model/scripted-model-client.js';
import { TEST_SCRIPT } from '../fixtures/test-script.js';
import { freshDatabase, openStream, PG_SKIP, pgOnly, spawnServer } from '../support/process.js';
import type { FreshDatabase, ServerProcess } from '../support/process.js';
import { rpc } from '../support/sse.js';
import type { SseEvent } from '../support/sse.js';
import { until } from '../support/core.js';
import { confirmMessage, dataOf, devtool, tempDir, textOf, URI, userMessage } from '../support/server.js';
import { coderAgent, legacyCard, legacyMessage } from '../support/legacy-client.js';

/** A subtest's `t`. */
type Test = Parameters<Parameters<typeof t.test>[0]>[0];

/**
 * TEST_SCRIPT plus a call that runs until the test creates `release.flag` in the workspace
 * (bounded: 60 s), silently — only the supervisor's lease renewals keep its lease alive.
 */
const SCRIPT: ModelScript = {
  ...TEST_SCRIPT,
  scripts: [
    {
      when: '^shell long',
      steps: [
        {
          chunks: [
            [
              {
                functionCall: {
                  name: 'run_shell_command',
                  args: { command: 'for i in $(seq 600); do [ -e release.flag ] && break; sleep 0.1; done; echo long done' },
                },
              },
            ],
          ],
        },
        { chunks: [[{ text: 'Long command finished.' }]] },
      ],
    },
    ...TEST_SCRIPT.scripts,
  ],
};

const LEASE = { LEASE_MS: '1500' };
const LEASE_MS = Number(LEASE.LEASE_MS);
/** How often the processes sweep: the supervisor's default, a third of the lease (at least 250 ms); main.ts sets no other. */
const SWEEP_MS = Math.max(250, Math.floor(LEASE_MS / 3));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const results = (events: SseEvent[] | undefined) => (events ?? []).map((e) => e.data.result);
const idsOf = (events: SseEvent[] | undefined) => (events ?? []).map((e) => (e.id === undefined ? null : Number(e.id)));
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

async function getTask(url: string, id: string): Promise<any> {
  return (await rpc(url, 'tasks/get', { id })).json?.result;
}

/** Polls tasks/get until the task is `want` (bounded); returns the last snapshot and every state seen. */
async function pollState(url: string, id: string, want: string, timeoutMs = 15_000): Promise<{ task: any; seen: string[] }> {
  const deadline = Date.now() + timeoutMs;
  const seen: string[] = [];
  let task: any;
  while (Date.now() < deadline) {
    task = await getTask(url, id);
    const state = task?.status?.state;
    if (seen.at(-1) !== state) seen.push(state);
    if (state === want) break;
    await sleep(100);
  }
  return { task, seen };
}

/** Starts `prompt` and reads its stream to the pause: the Task, the (first) PENDING card, every event. */
async function pauseOn(srv: ServerProcess, workspace: string, prompt: string) {
  const res = await rpc(srv.url, 'message/stream', {
    message: userMessage(prompt, { metadata: { [URI]: { workspace_path: workspace } } }),
  });
  const ev = results(res.events);
  return { res, task: ev[0], card: dataOf(ev.find((r) => dataOf(r)?.status === 'PENDING')) };
}

const proceed = (task: any, card: any) =>
  confirmMessage(task.id, task.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' });

type Paused = Awaited<ReturnType<typeof pauseOn>>;

/**
 * PostgreSQL: the supervisor passes of `srv`, made visible. A call of its own runs there
 * until released (`shell long`, in a workspace of its own); every pass begins by renewing
 * the leases of its running calls to (pass start + LEASE_MS), so each new lease_until of that
 * call marks the start of a pass, and the start of the next pass proves the previous one has
 * ended (passes never overlap).
 */
async function sweepProbe(srv: ServerProcess, pg: FreshDatabase) {
  const workspace = tempDir();
  const { task, card } = await pauseOn(srv, workspace, 'shell long (sweep probe)');
  if (card?.tool_name !== 'run_shell_command') throw new Error(`sweep probe: no shell call to approve (${JSON.stringify(card)})`);
  const stream = await openStream(srv.url, 'message/stream', { message: proceed(task, card) });
  if (!(await stream.until((ev) => dataOf(ev.data.result)?.status === 'EXECUTING'))) throw new Error('sweep probe: its call did not start');
  const leaseUntil = async (): Promise<number | undefined> => {
    const [row] = await pg.sql`select lease_until from tool_calls where id = ${card.tool_call_id}`;
    return row?.lease_until ? new Date(row.lease_until).getTime() : undefined;
  };
  // The lease it has now may be the claim's, not a pass's: only later renewals count.
  const initial = await leaseUntil();
  const starts = new Set<number>();
  return {
    /** Waits until `n` passes of the process that began after `after` (ms since the epoch) have ended. Bounded. */
    async passesAfter(after: number, n = 1): Promise<void> {
      const bound = Math.max(0, after - Date.now()) + (n + 2) * SWEEP_MS + 5_000;
      await until(
        `${n} supervisor pass(es) of ${srv.url} begun after ${new Date(after).toISOString()} to end`,
        async () => {
          const at = await leaseUntil();
          if (at !== undefined && at !== initial) starts.add(at - LEASE_MS);
          return [...starts].filter((s) => s > after).length > n;
        },
        bound,
      );
    },
    /** Lets the probe's command finish; resolves once its task completed. */
    async release(): Promise<void> {
      writeFileSync(path.join(workspace, 'release.flag'), '');
      const state = results(await stream.rest(20_000)).at(-1)?.status?.state;
      if (state !== 'completed') throw new Error(`sweep probe: its task ended ${state}, not completed`);
    },
  };
}

/** One store's processes: the one running now, how to start another, and the workspace they share. */
interface Run {
  current: ServerProcess;
  spawn: (readyTimeoutMs?: number) => Promise<ServerProcess>;
  workspace: string;
  pg?: FreshDatabase;
  /** Set before the crash: a task paused at input-required, and one whose call was EXECUTING. */
  paused?: Paused;
  hang?: Paused;
  /** A legacy-dialect task paused for its write_file call. */
  legacy?: { taskId: string; callId: string };
}

/** Before the crash: one task pauses at input-required, another's call is EXECUTING; then SIGKILL and a new process. */
async function crashWithWork(t: Test, run: Run): Promise<void> {
  const { workspace, pg } = run;
  const paused = (run.paused = await pauseOn(run.current, workspace, 'write a greeting'));
  t.same(idsOf(paused.res.events), [1, 2, 3, 4], 'the first stream: ids 1..4');
  t.equal(results(paused.res.events).at(-1).status.state, 'input-required');
  t.equal(paused.card?.tool_name, 'write_file');

  const hang = (run.hang = await pauseOn(run.current, workspace, 'shell hang please'));
  t.match(hang.card, { tool_name: 'run_shell_command', status: 'PENDING', input_parameters: { command: 'sleep 30' } });
  const stream = await openStream(run.current.url, 'message/stream', { message: proceed(hang.task, hang.card) });
  t.match(stream.contentType, /^text\/event-stream/, JSON.stringify(stream.json));
  const executing = await stream.until((ev) => dataOf(ev.data.result)?.status === 'EXECUTING');
  t.equal(executing?.id, '5', 'the call is EXECUTING (event 5)');
  await stream.close();

  const legacyEvents = results(
    (await rpc(run.current.url, 'message/stream', { message: legacyMessage('write (legacy)', { metadata: coderAgent(workspace) }) }))
      .events,
  );
  const legacyCall = legacyCard(legacyEvents, 'awaiting_approval');
  t.match(legacyEvents.at(-1), { final: true, status: { state: 'input-required' }, metadata: { coderAgent: { kind: 'state-change' } } });
  run.legacy = { taskId: legacyEvents[0].id, callId: legacyCall?.request?.callId };

  const old = run.current;
  t.match(await old.kill('SIGKILL'), { signal: 'SIGKILL' }, 'the process died by SIGKILL');
  if (pg) {
    const [row] = await pg.sql`select phase from tool_calls where id = ${hang.card.tool_call_id}`;
    t.equal(row?.phase, 'executing', 'the store still says executing after the kill');
  }
  run.current = await run.spawn();
  t.not(run.current.pid, old.pid, 'a new process on the same store');
}

/** The task paused at input-required before the crash: the same card on the new process, and confirming it completes the task. */
async function confirmAfterRestart(t: Test, { current, workspace }: Run, { task, card }: Paused): Promise<void> {
  const got = await getTask(current.url, task.id);
  t.equal(got?.status?.state, 'input-required', 'tasks/get on the new process: still input-required');
  t.equal(got?.id, task.id);

  const again = await rpc(current.url, 'tasks/resubscribe', { id: task.id });
  t.same(idsOf(again.events), [null, 3, 4], 'resubscribe on the new process: snapshot, the PENDING card (3), the pause (4)');
  t.same(dataOf(results(again.events)[1]), card, 'the same card as before the kill');

  const done = await rpc(current.url, 'message/stream', { message: proceed(task, card) });
  t.match(done.contentType, /^text\/event-stream/, done.raw);
  const ev = results(done.events);
  t.same(idsOf(done.events), [5, 6, 7, 8, 9], 'the resume stream continues the ids: 5..9');
  t.same(
    ev.map((r) => [devtool(r)?.kind, dataOf(r)?.status ?? r.status.state]),
    [
      ['TOOL_CALL_UPDATE', 'EXECUTING'],
      ['TOOL_CALL_UPDATE', 'SUCCEEDED'],
      ['TEXT_CONTENT', 'working'],
      ['TEXT_CONTENT', 'working'],
      ['STATE_CHANGE', 'completed'],
    ],
  );
  t.equal(dataOf(ev[1])?.tool_call_id, card.tool_call_id);
  t.equal(ev.at(-1).final, true);
  t.equal(readFileSync(path.join(workspace, 'hello.txt'), 'utf8'), 'hello world\n', 'the file was written');
  t.equal((await getTask(current.url, task.id))?.status?.state, 'completed');
}

/** The legacy task paused before the crash: its card again on the new process, and `{callId, outcome}` runs it. */
async function confirmLegacyAfterRestart(t: Test, { current, workspace }: Run, legacy: { taskId: string; callId: string }): Promise<void> {
  const again = results((await rpc(current.url, 'tasks/resubscribe', { id: legacy.taskId })).events);
  t.equal(legacyCard(again, 'awaiting_approval')?.request?.callId, legacy.callId, 'the same legacy card on the new process');
  // Its card showed hello.txt created; the RFC task's answer has written it since, and an approved
  // edit is written only over what its card showed (else it asks again): put the disk back first.
  rmSync(path.join(workspace, 'hello.txt'), { force: true });
  const answer = legacyMessage(undefined, {
    taskId: legacy.taskId,
    parts: [{ kind: 'data', data: { callId: legacy.callId, outcome: 'proceed_once' } }],
  });
  const ev = results((await rpc(current.url, 'message/stream', { message: answer })).events);
  // As the original sends it (test/fixtures/legacy/): scheduled, executing, success, working, the text, the end.
  t.same(
    ev.map((r) => r.metadata?.coderAgent?.kind),
    ['tool-call-update', 'tool-call-update', 'tool-call-update', 'state-change', 'text-content', 'text-content', 'state-change'],
  );
  t.same(
    ev.filter((r) => r.metadata?.coderAgent?.kind === 'tool-call-update').map((r) => r.status?.message?.parts?.[0]?.data?.status),
    ['scheduled', 'executing', 'success'],
  );
  t.equal(legacyCard(ev, 'success')?.request?.callId, legacy.callId, 'the call ran');
  t.match(ev.at(-1), { final: true, status: { state: 'input-required' } }, 'the turn ends input-required, as its client expects');
  t.equal(readFileSync(path.join(workspace, 'hello.txt'), 'utf8'), 'hello world\n');
}

/** The call EXECUTING at the kill: once its lease lapsed it is FAILED `interrupted`, once, and its task failed. */
async function interruptedAfterRestart(t: Test, { current, pg }: Run, { task, card }: Paused): Promise<void> {
  const { task: failed, seen } = await pollState(current.url, task.id, 'failed');
  const seenFailedAt = Date.now();
  t.equal(failed?.status?.state, 'failed', `the task ends failed within the bounded wait (states seen: ${seen.join(' → ')})`);
  t.ok(
    seen.every((s) => s === 'working' || s === 'failed'),
    `only working, then failed (seen: ${seen.join(' → ')})`,
  );

  const replay = await rpc(current.url, 'tasks/resubscribe', { id: task.id }, { headers: { 'Last-Event-ID': '5' } });
  t.match(replay.contentType, /^text\/event-stream/, replay.raw);
  const ev = results(replay.events);
  t.same(idsOf(replay.events), [null, 6, 7], 'snapshot, then exactly events 6 and 7');
  t.same(
    ev.map((r) => [r.kind, devtool(r)?.kind ?? null, dataOf(r)?.status ?? r.status.state, r.final ?? null]),
    [
      ['task', null, 'failed', null],
      ['status-update', 'TOOL_CALL_UPDATE', 'FAILED', false],
      ['status-update', 'STATE_CHANGE', 'failed', true],
    ],
  );
  const call = dataOf(ev[1]);
  t.equal(call?.tool_call_id, card.tool_call_id, 'the same call');
  t.equal(call?.error?.type, 'interrupted', 'error.type interrupted');
  t.match(call?.error?.message, /server stopped while run_shell_command was running/);
  t.notOk(call && 'live_content' in call, 'no live_content on the final card');
  t.match(
    textOf(ev[1]),
    /^run_shell_command failed: The server stopped while run_shell_command was running/,
    'a text part says it was interrupted',
  );
  t.match(textOf(ev[2]), /^Interrupted: /, 'the failed event says why');
  t.match(devtool(ev[2])?.error, /Interrupted/);

  // A few more sweeps. PostgreSQL: two passes of this process that began after the task was
  // seen failed have ended (observed through a probe). PGlite: the store belongs to the child
  // process, so no pass can be observed from here: two sweep intervals of wall-clock time, in
  // which at least one whole pass begins and ends (timers permitting).
  if (pg) {
    const probe = await sweepProbe(current, pg);
    await probe.passesAfter(seenFailedAt, 2);
    await probe.release();
  } else await sleep(2 * SWEEP_MS);
  t.equal((await getTask(current.url, task.id))?.status?.state, 'failed', 'still failed after later sweeps');
  const again = await rpc(current.url, 'tasks/resubscribe', { id: task.id }, { headers: { 'Last-Event-ID': '7' } });
  t.same(idsOf(again.events), [null], 'nothing after 7: the call was marked once');
  if (pg) {
    const audit = await pg.sql`select decision from audit_log where task_id = ${task.id} order by id`;
    t.same(
      audit.map((r) => r.decision),
      ['proposed', 'authorized', 'executed', 'interrupted'],
    );
  }
}

/** PostgreSQL: a second process booting while the first runs a call (lease live) leaves that call alone. */
async function liveLeaseSurvivesBoot(t: Test, { current, spawn, workspace }: Run, pg: FreshDatabase): Promise<void> {
  const { task, card } = await pauseOn(current, workspace, 'shell long please');
  t.match(card, { tool_name: 'run_shell_command', status: 'PENDING' });
  const stream = await openStream(current.url, 'message/stream', { message: proceed(task, card) });
  t.ok(await stream.until((ev) => dataOf(ev.data.result)?.status === 'EXECUTING'), 'EXECUTING on the first process');

  const second = await spawn();
  // The call's lease as the second process came up: had the first process stopped renewing it,
  // it would have lapsed then. Wait until a pass of the second process that began after that
  // has ended: that pass looked for interrupted calls (lease lapsed) and must have left this one alone.
  const [booted] = await pg.sql`select lease_until from tool_calls where id = ${card.tool_call_id}`;
  if (!booted?.lease_until) throw new Error('the running call has no lease');
  const probe = await sweepProbe(second, pg);
  await probe.passesAfter(new Date(booted.lease_until).getTime(), 1);
  const [row] = await pg.sql`select phase, lease_owner, lease_until > now() as live from tool_calls where id = ${card.tool_call_id}`;
  t.same({ phase: row?.phase, live: row?.live }, { phase: 'executing', live: true }, 'still executing under a live (renewed) lease');
  t.equal((await getTask(second.url, task.id))?.status?.state, 'working', 'the second process sees it working');
  await probe.release();
  writeFileSync(path.join(workspace, 'release.flag'), '');

  const events = await stream.rest(20_000);
  const ev = results(events);
  t.equal(ev.at(-1)?.status?.state, 'completed', 'the task completed');
  const final = dataOf(ev.find((r) => ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(dataOf(r)?.status)));
  t.equal(final?.status, 'SUCCEEDED', 'the call succeeded');
  t.match(final?.output?.text, /long done/);
  t.notOk(
    ev.some((r) => dataOf(r)?.error?.type === 'interrupted'),
    'never marked interrupted',
  );
  const ids = idsOf(events);
  t.same(ids, range(5, 5 + ids.length - 1), 'ids 5.. with no gap');
  t.equal((await getTask(second.url, task.id))?.status?.state, 'completed', 'completed, seen from the second process');
  const audit = await pg.sql`select decision from audit_log where task_id = ${task.id} order by id`;
  t.same(
    audit.map((r) => r.decision),
    ['proposed', 'authorized', 'executed', 'succeeded'],
  );
  await second.kill();
}

/**
 * The restart cases on one store (`storeEnv` names it); `pg` enables the PostgreSQL-only case.
 * One crash serves both restart cases (process boots are the slow part).
 */
async function restartCases(t: Test, storeEnv: Record<string, string>, pg?: FreshDatabase): Promise<void> {
  const workspace = tempDir();
  const spawn = (readyTimeoutMs?: number) => spawnServer(t, { env: { ...storeEnv, ...LEASE }, workspace, script: SCRIPT, readyTimeoutMs });
  const run: Run = { current: await spawn(90_000), spawn, workspace, pg }; // the first boot creates the store (PGlite: initdb, slow)

  await t.test('before the crash: one task paused, one call executing', (t) => crashWithWork(t, run));
  const { paused, hang } = run;
  if (!paused?.task || !hang?.task) return; // the setup failed (reported above)
  await t.test('the task paused at input-required survived and is confirmed on the new process', (t) =>
    confirmAfterRestart(t, run, paused),
  );
  const { legacy } = run;
  if (legacy)
    await t.test('the legacy task paused before the kill is confirmed on the new process', (t) =>
      confirmLegacyAfterRestart(t, run, legacy),
    );
  await t.test('the call EXECUTING at the kill ends FAILED interrupted, its task failed', (t) => interruptedAfterRestart(t, run, hang));
  if (!pg) return;
  await t.test('a process booting while another runs a call (lease live) does not interrupt it', (t) => liveLeaseSurvivesBoot(t, run, pg));
}

// The two stores run side by side (each leg is sequential inside).
t.jobs = 2;

t.test('PGlite (DATA_DIR)', { buffered: true }, async (t) => {
  const dataDir = tempDir('devtool-data-');
  await restartCases(t, { DATA_DIR: dataDir });
  t.ok(existsSync(dataDir));
});

t.test('PostgreSQL (DATABASE_URL)', { buffered: true, ...pgOnly() }, async (t) => {
  const db = await freshDatabase(t);
  if (!db) throw new Error(PG_SKIP);
  await restartCases(t, { DATABASE_URL: db.url }, db);
});
