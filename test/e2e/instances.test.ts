/**
 * Two server processes (A and B) on one PostgreSQL database: a task paused on A is
 * confirmed on B; a resubscriber on B follows live events produced on A (LISTEN/NOTIFY);
 * the same answer sent to A and B at once runs the tool once, the loser gets -32602.
 * Skipped when TEST_DATABASE_URL is unset (PGlite is single-process).
 */
import t from 'tap';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { until } from '../support/core.js';
import { freshDatabase, openStream, PG_SKIP, pgOnly, spawnServer } from '../support/process.js';
import type { LiveStream, ServerProcess } from '../support/process.js';
import { rpc } from '../support/sse.js';
import type { SseEvent } from '../support/sse.js';
import { confirmMessage, dataOf, devtool, tempDir, textOf, URI, userMessage } from '../support/server.js';

const results = (events: SseEvent[] | undefined) => (events ?? []).map((e) => e.data.result);
const idsOf = (events: SseEvent[] | undefined) => (events ?? []).map((e) => (e.id === undefined ? null : Number(e.id)));
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
/** A subtest's `t`. */
type Tap = Parameters<Parameters<typeof t.test>[0]>[0];
const statuses = (events: SseEvent[] | undefined) => results(events).map((r) => dataOf(r)?.status ?? r.status.state);

t.test('two instances on one PostgreSQL database', pgOnly(), async (t) => {
  const db = await freshDatabase(t);
  if (!db) throw new Error(PG_SKIP);
  const shared = tempDir();
  const env = { DATABASE_URL: db.url, LEASE_MS: '1500' };
  // Sequential boots: the first migrates the new database.
  const a = await spawnServer(t, { env, workspace: shared });
  const b = await spawnServer(t, { env, workspace: shared });

  /** Starts `prompt` on `srv` in a workspace of its own and reads to the pause. */
  async function pauseOn(t: Tap, srv: ServerProcess, prompt: string) {
    const workspace = tempDir();
    const res = await rpc(srv.url, 'message/stream', {
      message: userMessage(prompt, { metadata: { [URI]: { workspace_path: workspace } } }),
    });
    const ev = results(res.events);
    const last = ev.at(-1);
    t.equal(
      last?.status?.state,
      'input-required',
      `"${prompt}" paused${last?.status?.state === 'input-required' ? '' : `: ${textOf(last)}`}`,
    );
    return { workspace, task: ev[0], card: dataOf(ev.find((r) => dataOf(r)?.status === 'PENDING')) };
  }
  const proceed = (task: any, card: any) =>
    confirmMessage(task.id, task.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' });
  const audit = async (taskId: string) =>
    (await db.sql`select decision from audit_log where task_id = ${taskId} order by id`).map((r) => r.decision);

  await t.test('paused on A, confirmed on B: B streams EXECUTING, SUCCEEDED, completed', async (t) => {
    const { workspace, task, card } = await pauseOn(t, a, 'write a greeting');
    t.equal((await rpc(b.url, 'tasks/get', { id: task.id })).json?.result?.status?.state, 'input-required', 'B sees the pause');
    const done = await rpc(b.url, 'message/stream', { message: proceed(task, card) });
    t.match(done.contentType, /^text\/event-stream/, done.raw);
    t.same(idsOf(done.events), [5, 6, 7, 8, 9], 'B continues the ids of A');
    t.same(
      results(done.events).map((r) => [devtool(r)?.kind, dataOf(r)?.status ?? r.status.state]),
      [
        ['TOOL_CALL_UPDATE', 'EXECUTING'],
        ['TOOL_CALL_UPDATE', 'SUCCEEDED'],
        ['TEXT_CONTENT', 'working'],
        ['TEXT_CONTENT', 'working'],
        ['STATE_CHANGE', 'completed'],
      ],
    );
    t.equal(dataOf(results(done.events)[1])?.tool_call_id, card.tool_call_id);
    t.equal(readFileSync(path.join(workspace, 'hello.txt'), 'utf8'), 'hello world\n', 'B wrote the file in the context workspace');
    t.equal((await rpc(a.url, 'tasks/get', { id: task.id })).json?.result?.status?.state, 'completed', 'A sees it completed');
    const onA = await rpc(a.url, 'tasks/resubscribe', { id: task.id }, { headers: { 'Last-Event-ID': '4' } });
    t.same(results(onA.events).slice(1), results(done.events), "A's replay of B's events equals what B streamed");
    t.same(await audit(task.id), ['proposed', 'authorized', 'executed', 'succeeded']);
  });

  await t.test('a resubscriber on B sees live events of a call running on A, to completed', async (t) => {
    const { task, card } = await pauseOn(t, a, 'shell slow please');
    const onA = await openStream(a.url, 'message/stream', { message: proceed(task, card) });
    const executing = await onA.until((ev) => dataOf(ev.data.result)?.status === 'EXECUTING');
    t.ok(executing, 'EXECUTING on A');
    const k = Number(executing?.id);
    // Event 5 is the first EXECUTING card; a stream may skip to a newer one that superseded it.
    t.ok(k >= 5, `an EXECUTING card (id ${k})`);

    const onB = await openStream(b.url, 'tasks/resubscribe', { id: task.id }, { headers: { 'Last-Event-ID': String(k) } });
    t.match(onB.contentType, /^text\/event-stream/, JSON.stringify(onB.json));
    const [snapshot] = [await onB.until(() => true)];
    t.equal(snapshot?.id, undefined, 'the snapshot has no id');
    t.equal(snapshot?.data.result.status.state, 'working', 'B subscribed while A was still working (live, not a replay)');
    const fromB = (await onB.rest(15_000)).slice(1);
    const fromA = await onA.rest(15_000);
    t.equal(onB.ended, true, "B's stream ends");
    t.equal(results(fromB).at(-1)?.status?.state, 'completed', 'B saw completed');
    t.equal(results(fromB).at(-1)?.final, true);
    t.ok(
      results(fromB).some((r) => dataOf(r)?.status === 'SUCCEEDED'),
      'B saw SUCCEEDED',
    );
    const ids = fromB.map((e) => Number(e.id));
    t.ok(
      ids.every((id, i) => id > k && (i === 0 || id > ids[i - 1])),
      `B: events after ${k}, once, in order (${ids.join(',')})`,
    );
    // Superseded EXECUTING cards may be skipped by either stream (compaction, a reader behind);
    // everything else — the result, the text, the end — each saw alike.
    const lasting = (evs: typeof fromB) =>
      evs.filter((e) => Number(e.id) > k && dataOf(e.data.result)?.status !== 'EXECUTING').map((e) => [e.id, e.data.result]);
    t.same(lasting(fromB), lasting(fromA), 'B saw what A streamed after EXECUTING');
    const onlyB = fromB.filter((e) => !fromA.some((a) => a.id === e.id));
    t.ok(
      onlyB.every((e) => dataOf(e.data.result)?.status === 'EXECUTING'),
      'whatever B saw that A did not is an EXECUTING card A skipped for a newer one',
    );
    t.equal(
      results(fromB)
        .filter((r) => devtool(r)?.kind === 'TEXT_CONTENT')
        .map(textOf)
        .join(''),
      'Slow command finished.',
    );
  });

  await t.test('the same answer sent to A and B at once runs the tool once', async (t) => {
    for (let round = 1; round <= 4; round++) {
      const { workspace, task, card } = await pauseOn(t, round % 2 ? a : b, `write race ${round}`);
      const [first, second] = round % 2 ? [a, b] : [b, a]; // who is asked first alternates
      const sent = [first, second].map((srv) => openStream(srv.url, 'message/stream', { message: proceed(task, card) }));
      const streams: LiveStream[] = round % 2 ? await Promise.all(sent) : (await Promise.all(sent)).reverse(); // [A's, B's]
      const winners = streams.filter((s) => s.contentType.startsWith('text/event-stream'));
      const losers = streams.filter((s) => !s.contentType.startsWith('text/event-stream'));
      t.equal(winners.length, 1, `round ${round}: exactly one stream`);
      t.equal(losers.length, 1, `round ${round}: exactly one refusal`);
      const loser = losers[0];
      t.match(loser?.contentType, /^application\/json/, `round ${round}: the refusal is plain JSON`);
      t.equal(loser?.json?.error?.code, -32602, `round ${round}: -32602`);
      t.match(loser?.json?.error?.message, /already answered/, `round ${round}: "already answered"`);
      t.comment(`round ${round}: ${winners[0] === streams[0] ? 'A' : 'B'} won; the loser was told: ${loser?.json?.error?.message}`);
      const won = await winners[0]?.rest(15_000);
      t.same(
        statuses(won),
        ['EXECUTING', 'SUCCEEDED', 'working', 'working', 'completed'],
        `round ${round}: the winner runs it to completed`,
      );
      t.same(idsOf(won), [5, 6, 7, 8, 9]);
      t.equal(readFileSync(path.join(workspace, 'hello.txt'), 'utf8'), 'hello world\n');
      t.same(await audit(task.id), ['proposed', 'authorized', 'executed', 'succeeded'], `round ${round}: authorized and executed once`);
      const log = await rpc(a.url, 'tasks/resubscribe', { id: task.id }, { headers: { 'Last-Event-ID': '0' } });
      t.equal(results(log.events).filter((r) => dataOf(r)?.status === 'EXECUTING').length, 1, `round ${round}: one EXECUTING in the log`);
      t.same(idsOf(log.events), [null, ...range(1, 9)], `round ${round}: the log is 1..9`);
    }
  });

  await t.test('tasks/cancel on B stops a command running on A', async (t) => {
    const { workspace, task, card } = await pauseOn(t, a, 'shell hang please');
    const onA = await openStream(a.url, 'message/stream', { message: proceed(task, card) });
    t.ok(await onA.until((ev) => dataOf(ev.data.result)?.status === 'EXECUTING'), 'the command runs on A');
    const sleeping = () => sleepPids(workspace);
    // EXECUTING is published as the command is spawned; the sandbox takes a moment to start it.
    await until('sleep 30 to run in the task workspace', () => sleeping().length > 0);
    t.equal(sleeping().length, 1, 'sleep 30 is running in the task workspace');
    const canceled = await rpc(b.url, 'tasks/cancel', { id: task.id });
    t.equal(canceled.json?.result?.status?.state, 'canceled', 'B answers canceled');
    const rest = results(await onA.rest(15_000));
    t.equal(onA.ended, true, "A's stream ends");
    t.equal(rest.at(-1)?.status?.state, 'canceled', "A's stream ends with B's canceled event");
    t.equal(rest.at(-1)?.final, true);
    for (let i = 0; i < 100 && sleeping().length > 0; i++) await new Promise((r) => setTimeout(r, 100));
    t.same(sleeping(), [], 'A killed the command (its process group is gone)');
    // A late result of the killed command would be published once A's shell tool returns, i.e.
    // once A has reaped its child (no zombie left): wait for that.
    await until(`A (pid ${a.pid}) to reap the killed command`, () => unreapedChildren(a.pid, workspace).length === 0);
    // Nothing of A's aborted run can be observed after that (it writes nothing when all is
    // well), so the rest of the negative check needs wall-clock time: one sweep interval of A
    // (the supervisor's default, a third of LEASE_MS), ample for a late result to be committed.
    await new Promise((r) => setTimeout(r, Math.max(250, Math.floor(Number(env.LEASE_MS) / 3))));
    const log = await rpc(a.url, 'tasks/resubscribe', { id: task.id }, { headers: { 'Last-Event-ID': '0' } });
    const events = results(log.events).slice(1);
    t.equal(events.at(-1)?.status?.state, 'canceled', 'nothing was logged after canceled');
    t.notOk(
      events.some((r) => dataOf(r)?.status === 'FAILED' || dataOf(r)?.status === 'SUCCEEDED'),
      'no late result of the killed command',
    );
  });
});

/** Pids of `sleep 30` processes whose working directory is `workspace`. */
function sleepPids(workspace: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim();
      if (cmd === 'sleep 30' && readlinkSync(`/proc/${entry}/cwd`) === workspace) pids.push(Number(entry));
    } catch {
      /* the process ended meanwhile */
    }
  }
  return pids;
}

/**
 * Children of `parent` it has not reaped yet: zombies, and live ones working in `workspace`
 * (a zombie has no working directory left to match).
 */
function unreapedChildren(parent: number, workspace: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(ppid) !== parent) continue;
      if (state === 'Z' || readlinkSync(`/proc/${entry}/cwd`) === workspace) pids.push(Number(entry));
    } catch {
      /* the process ended meanwhile */
    }
  }
  return pids;
}
