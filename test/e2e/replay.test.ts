/**
 * Numbered events and replay: every SSE event of a task carries `id:` = its per-task
 * sequence number (1, 2, 3… across streams); `tasks/resubscribe` with `Last-Event-ID` sends
 * the snapshot (no id) and then exactly what the log holds after that id (the log keeps a
 * call's latest EXECUTING card only); a client that dropped mid-stream recovers everything
 * it missed, once.
 */
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { openStream } from '../support/process.js';
import { rpc } from '../support/sse.js';
import type { SseEvent } from '../support/sse.js';
import type { Test } from '../support/tool-call-watch.js';
import { confirmMessage, dataOf, devtool, startServer, textOf, URI, userMessage } from '../support/server.js';

const results = (events: SseEvent[] | undefined) => (events ?? []).map((e) => e.data.result);
const idsOf = (events: SseEvent[] | undefined) => (events ?? []).map((e) => (e.id === undefined ? null : Number(e.id)));
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const shape = (r: any) => [r.kind, devtool(r)?.kind ?? null, dataOf(r)?.status ?? r.status?.state, r.final ?? null];
const lastEventId = (id: number | string) => ({ headers: { 'Last-Event-ID': String(id) } });

t.test('replay', async (t) => {
  const srv = await startServer(t);
  const meta = { metadata: { [URI]: { workspace_path: srv.workspace } } };

  /** Starts `prompt` and reads to the pause. */
  async function pauseOn(prompt: string) {
    const res = await rpc(srv.url, 'message/stream', { message: userMessage(prompt, meta) });
    const ev = results(res.events);
    return { res, task: ev[0], cards: ev.filter((r) => dataOf(r)?.status === 'PENDING').map(dataOf) };
  }
  const answer = (task: any, card: any, option = 'proceed_once') =>
    confirmMessage(task.id, task.contextId, { tool_call_id: card.tool_call_id, selected_option_id: option });

  /**
   * `got` (events after `after` of a finished task) has no gap in meaningful state and no
   * duplicate: its ids increase, it holds every event the log keeps after `after`, and what the
   * log no longer holds was an EXECUTING card a newer one superseded (compaction).
   */
  async function matchesLog(t: Test, taskId: string, after: number, got: SseEvent[], what: string): Promise<void> {
    const ids = idsOf(got) as number[];
    t.ok(
      ids.every((id, i) => id > after && (i === 0 || id > ids[i - 1])),
      `${what}: after ${after}, increasing (${ids.join(',')})`,
    );
    const logged = ((await rpc(srv.url, 'tasks/resubscribe', { id: taskId }, lastEventId(after))).events ?? []).slice(1);
    t.same(
      logged.filter((e) => !got.some((g) => g.id === e.id)).map((e) => e.id),
      [],
      `${what}: every logged event after ${after}`,
    );
    for (const e of logged) {
      const same = got.find((g) => g.id === e.id);
      if (same) t.same(same.data.result, e.data.result, `${what}: event ${e.id} as logged`);
    }
    t.ok(
      got.filter((e) => !logged.some((l) => l.id === e.id)).every((e) => dataOf(e.data.result)?.status === 'EXECUTING'),
      `${what}: what the log dropped was a superseded EXECUTING card`,
    );
  }

  await t.test('ids are 1..n on a new task, n+1.. on the resume stream; Last-Event-ID k replays exactly k+1..last', async (t) => {
    const { res, task, cards } = await pauseOn('write a greeting');
    t.same(idsOf(res.events), [1, 2, 3, 4], 'Task, working, PENDING, input-required: ids 1..4');
    t.same(results(res.events).map(shape), [
      ['task', null, 'submitted', null],
      ['status-update', 'STATE_CHANGE', 'working', false],
      ['status-update', 'TOOL_CALL_UPDATE', 'PENDING', false],
      ['status-update', 'STATE_CHANGE', 'input-required', true],
    ]);
    const resume = await rpc(srv.url, 'message/stream', { message: answer(task, cards[0]) });
    t.same(idsOf(resume.events), [5, 6, 7, 8, 9], 'the resume stream continues: 5..9');
    t.same(results(resume.events).map(shape), [
      ['status-update', 'TOOL_CALL_UPDATE', 'EXECUTING', false],
      ['status-update', 'TOOL_CALL_UPDATE', 'SUCCEEDED', false],
      ['status-update', 'TEXT_CONTENT', 'working', false],
      ['status-update', 'TEXT_CONTENT', 'working', false],
      ['status-update', 'STATE_CHANGE', 'completed', true],
    ]);
    const all = [...(res.events ?? []), ...(resume.events ?? [])];
    const byId = new Map(all.map((e) => [Number(e.id), e.data.result]));

    for (const k of [0, 1, 4, 6, 8, 9]) {
      const replay = await rpc(srv.url, 'tasks/resubscribe', { id: task.id }, lastEventId(k));
      t.match(replay.contentType, /^text\/event-stream/);
      t.same(idsOf(replay.events), [null, ...range(k + 1, 9)], `Last-Event-ID ${k}: the snapshot (no id), then exactly ${k + 1}..9`);
      const [snapshot, ...rest] = results(replay.events);
      t.match(snapshot, { kind: 'task', id: task.id, status: { state: 'completed' } }, 'the snapshot comes first');
      t.same(
        rest,
        range(k + 1, 9).map((id) => byId.get(id)),
        `Last-Event-ID ${k}: the same events as were streamed live`,
      );
    }
    const none = await rpc(srv.url, 'tasks/resubscribe', { id: task.id });
    t.same(idsOf(none.events), [null], 'without Last-Event-ID a finished task gives only its snapshot');
    const beyond = await rpc(srv.url, 'tasks/resubscribe', { id: task.id }, lastEventId(50));
    t.equal(beyond.events?.length, 1, 'an id past the end is refused: a v0.3 resubscription carries the error as its one event');
    t.equal(beyond.events?.[0]?.data.error?.code, -32602);
    t.match(beyond.events?.[0]?.data.error?.message, /Last-Event-ID 50 is beyond the last event/);
    const v1 = await rpc(srv.url, 'SubscribeToTask', { id: task.id }, { version: '1.0', ...lastEventId(50) });
    t.equal(v1.events, undefined, 'v1.0 refuses it before any stream');
    t.equal(v1.json?.error?.code, -32602);
  });

  await t.test('a client that drops after the first EXECUTING resubscribes from its last id: no gap, no duplicate', async (t) => {
    const { task, cards } = await pauseOn('shell slow please');
    const stream = await openStream(srv.url, 'message/stream', { message: answer(task, cards[0]) });
    t.match(stream.contentType, /^text\/event-stream/);
    const executing = await stream.until((ev) => dataOf(ev.data.result)?.status === 'EXECUTING');
    await stream.close();
    t.ok(executing, 'saw EXECUTING');
    const seen = stream.events.slice(0, stream.events.indexOf(executing as SseEvent) + 1);
    const lastSeen = Number(executing?.id);
    t.equal(seen.length, 1, 'the client saw one event before it dropped');
    t.ok(lastSeen >= 5, `an EXECUTING card: event 5, or a newer one that superseded it (${lastSeen})`);

    const replay = await openStream(srv.url, 'tasks/resubscribe', { id: task.id }, lastEventId(lastSeen));
    t.match(replay.contentType, /^text\/event-stream/, JSON.stringify(replay.json));
    const got = await replay.rest(15_000);
    t.equal(replay.ended, true, 'the resubscribe stream ends');
    const [snapshot, ...later] = got;
    t.equal(snapshot.id, undefined, 'the snapshot carries no id');
    t.equal(snapshot.data.result.kind, 'task');
    t.comment(`task state when resubscribed: ${snapshot.data.result.status.state}`);
    await matchesLog(t, task.id, lastSeen, later, 'the replay');
    const ev = results(later);
    t.equal(ev.at(-1)?.status?.state, 'completed', 'ends completed');
    t.equal(ev.at(-1)?.final, true);
    t.equal(dataOf(ev.find((r) => ['SUCCEEDED', 'FAILED'].includes(dataOf(r)?.status)))?.status, 'SUCCEEDED');

    const whole = results([...seen, ...later]);
    const text = whole
      .filter((r) => devtool(r)?.kind === 'TEXT_CONTENT')
      .map(textOf)
      .join('');
    t.equal(text, 'Slow command finished.', 'the text deltas of both streams make the whole answer');
    const final = dataOf(whole.find((r) => dataOf(r)?.status === 'SUCCEEDED'));
    t.match(final?.output?.text, /^line1\nline2\nline3\nline4\nline5\n/, 'the whole output, on the SUCCEEDED card');
    // Nothing lost and nothing made up: the two streams are the log from 5 on (less superseded cards).
    await matchesLog(t, task.id, 4, [...seen, ...later], 'first stream + replay');
  });

  await t.test('a client that drops between two text deltas gets the rest of the answer', async (t) => {
    const { task, cards } = await pauseOn('write again');
    const stream = await openStream(srv.url, 'message/stream', { message: answer(task, cards[0]) });
    const firstText = await stream.until((ev) => devtool(ev.data.result)?.kind === 'TEXT_CONTENT');
    await stream.close();
    t.ok(firstText, 'saw a first delta');
    const seen = stream.events.slice(0, stream.events.indexOf(firstText as SseEvent) + 1);
    t.same(idsOf(seen), [5, 6, 7]);
    const replay = await rpc(srv.url, 'tasks/resubscribe', { id: task.id }, lastEventId(7));
    t.same(idsOf(replay.events), [null, 8, 9]);
    const text = results([...seen, ...(replay.events ?? []).slice(1)])
      .filter((r) => devtool(r)?.kind === 'TEXT_CONTENT')
      .map(textOf)
      .join('');
    t.equal(text, 'Wrote hello.txt.');
    t.equal(results(replay.events).at(-1).status.state, 'completed');
  });

  await t.test('resubscribe to a paused task re-sends the PENDING card and the pause; still answerable', async (t) => {
    const { res, task, cards } = await pauseOn('write a paused greeting');
    const pending = results(res.events)[2];
    const pause = results(res.events)[3];
    const expected = [
      ['task', null, 'input-required', null],
      ['status-update', 'TOOL_CALL_UPDATE', 'PENDING', false],
      ['status-update', 'STATE_CHANGE', 'input-required', true],
    ];
    for (const header of [undefined, '0', '2', '4']) {
      const again = await rpc(srv.url, 'tasks/resubscribe', { id: task.id }, header === undefined ? {} : lastEventId(header));
      const label = header === undefined ? 'without Last-Event-ID' : `Last-Event-ID ${header}`;
      const want = header === '0' ? [null, 1, 2, 3, 4] : [null, 3, 4];
      t.same(idsOf(again.events), want, `${label}: ids ${want.join(',')}`);
      const ev = results(again.events);
      t.same(ev.map(shape).slice(-2), expected.slice(1), `${label}: ends with the PENDING card, then input-required`);
      t.match(ev[0], { kind: 'task', id: task.id, status: { state: 'input-required' } }, `${label}: the snapshot first`);
      t.same(ev.at(-2), pending, `${label}: the same card as the original stream`);
      t.same(ev.at(-1), pause, `${label}: the same pause event`);
    }
    // A client that saw the card (3) but not the pause (4): the waiting card is re-sent as
    // for every other Last-Event-ID (a paused task always re-sends its waiting cards).
    const between = await rpc(srv.url, 'tasks/resubscribe', { id: task.id }, lastEventId(3));
    t.same(idsOf(between.events), [null, 3, 4], 'Last-Event-ID 3 (between the card and the pause): the PENDING card, then the pause');
    t.same(results(between.events).slice(1), [pending, pause], 'Last-Event-ID 3: the same card and pause');
    t.equal((await rpc(srv.url, 'tasks/get', { id: task.id })).json.result.status.state, 'input-required', 'nothing was consumed');
    const done = await rpc(srv.url, 'message/stream', { message: answer(task, cards[0]) });
    t.same(idsOf(done.events), [5, 6, 7, 8, 9], 'the confirmation after the resubscribes: ids 5..9');
    t.same(
      results(done.events).map((r) => dataOf(r)?.status ?? r.status.state),
      ['EXECUTING', 'SUCCEEDED', 'working', 'working', 'completed'],
    );
    t.equal(readFileSync(path.join(srv.workspace, 'hello.txt'), 'utf8'), 'hello world\n');
  });

  await t.test('two waiting calls: resubscribe re-sends both, and after one is answered only the other', async (t) => {
    const { res, task, cards } = await pauseOn('two writes please');
    t.same(idsOf(res.events), [1, 2, 3, 4, 5]);
    t.equal(cards.length, 2);
    const first = await rpc(srv.url, 'tasks/resubscribe', { id: task.id });
    t.same(idsOf(first.events), [null, 3, 4, 5], 'both PENDING cards, then the pause');
    t.same(results(first.events).slice(1, 3).map(dataOf), cards);

    const half = await rpc(srv.url, 'message/stream', { message: answer(task, cards[0]) });
    t.same(idsOf(half.events), [6, 7, 8], 'EXECUTING, SUCCEEDED, input-required (b still waits)');
    t.same(
      results(half.events).map((r) => dataOf(r)?.status ?? r.status.state),
      ['EXECUTING', 'SUCCEEDED', 'input-required'],
    );

    const second = await rpc(srv.url, 'tasks/resubscribe', { id: task.id });
    t.same(idsOf(second.events), [null, 4, 8], "only b's card, then the latest pause");
    t.equal(dataOf(results(second.events)[1])?.tool_call_id, cards[1].tool_call_id);
    const replay = await rpc(srv.url, 'tasks/resubscribe', { id: task.id }, lastEventId(5));
    // What came after 5, plus b's waiting card (a paused task always re-sends its cards), in log order.
    t.same(idsOf(replay.events), [null, 4, 6, 7, 8], 'Last-Event-ID 5: the waiting card, what came after, the pause');

    const rest = await rpc(srv.url, 'message/stream', { message: answer(task, cards[1], 'cancel') });
    t.same(idsOf(rest.events), range(9, 9 + (rest.events?.length ?? 0) - 1));
    t.same(
      results(rest.events).map((r) => dataOf(r)?.status ?? r.status.state),
      ['CANCELLED', 'working', 'completed'],
    );
    t.ok(existsSync(path.join(srv.workspace, 'a.txt')));
    t.notOk(existsSync(path.join(srv.workspace, 'b.txt')), 'the declined write did not happen');
  });

  await t.test('a working task: Last-Event-ID from before its last pause replays through that pause and follows to the end', async (t) => {
    // The client saw 1..2 of the first stream, then lost it; someone else answered the card.
    const { task, cards } = await pauseOn('shell slow, resumed elsewhere');
    const runner = await openStream(srv.url, 'message/stream', { message: answer(task, cards[0]) });
    t.ok(await runner.until((ev) => dataOf(ev.data.result)?.status === 'EXECUTING'), 'the task works again');
    const replay = await openStream(srv.url, 'tasks/resubscribe', { id: task.id }, lastEventId(2));
    const got = await replay.rest(15_000);
    await runner.rest(15_000);
    t.equal(got[0]?.data.result.status.state, 'working', 'the snapshot says working');
    await matchesLog(t, task.id, 2, got.slice(1), '3..');
    t.equal(
      results(got).at(-1)?.status?.state,
      'completed',
      'the stream does not stop at the old input-required (event 4): it ends completed',
    );
  });

  await t.test('a working task: a Last-Event-ID past the end of its log does not leave the stream open forever', async (t) => {
    const { task, cards } = await pauseOn('shell slow, id from the future');
    const runner = await openStream(srv.url, 'message/stream', { message: answer(task, cards[0]) });
    t.ok(await runner.until((ev) => dataOf(ev.data.result)?.status === 'EXECUTING'));
    const replay = await openStream(srv.url, 'tasks/resubscribe', { id: task.id }, lastEventId(1000));
    t.teardown(() => replay.close());
    await runner.rest(15_000); // the task completes (at id 13 or so, far below 1000)
    if (replay.json !== undefined) {
      t.equal(replay.json?.error?.code, -32602, 'refused as an invalid Last-Event-ID');
    } else {
      await replay.rest(3000).catch(() => undefined);
      t.ok(replay.ended, 'the stream ends at the latest when the task ends (it was left open)');
    }
  });

  await t.test('an invalid Last-Event-ID is refused with -32602 before any stream', async (t) => {
    const { task } = await pauseOn('hello, invalid header');
    for (const bad of ['abc', '-1', '1.5', '']) {
      const res = await rpc(srv.url, 'tasks/resubscribe', { id: task.id }, lastEventId(bad));
      t.equal(res.status, 200);
      t.match(res.contentType, /^application\/json/, `"${bad}": a plain JSON answer`);
      t.equal(res.json?.error?.code, -32602, `"${bad}": -32602`);
      t.match(res.json?.error?.message, /Last-Event-ID/);
    }
  });
});
