/**
 * A long streamed answer (thousands of text deltas, committed as text runs: the store keeps a
 * commit's deltas as one row) replays identically: `tasks/resubscribe` with any Last-Event-ID —
 * inside a run too — sends exactly the frames the live stream sent after it, same ids, same
 * results; a client that drops mid-answer and resubscribes from its last id gets the rest once.
 * On the in-memory store, and on PostgreSQL when TEST_DATABASE_URL is set.
 */
import t from 'tap';
import type { ModelScript } from '../../src/agent/model/scripted-model-client.js';
import { openDatabase } from '../../src/store/db.js';
import { PgTaskStore } from '../../src/store/pg-task-store.js';
import { freshDatabase, openStream, pgOnly } from '../support/process.js';
import { rpc } from '../support/sse.js';
import type { SseEvent } from '../support/sse.js';
import { devtool, startServer, textOf, userMessage } from '../support/server.js';
import type { Test } from '../support/tool-call-watch.js';

const CHUNKS = 1000;
const chunk = (i: number) => `<${i}> `;
const SCRIPT: ModelScript = {
  model: 'scripted-long',
  scripts: [{ when: '^long', steps: [{ chunks: Array.from({ length: CHUNKS }, (_, i) => [{ text: chunk(i) }]) }] }],
};
const ANSWER = Array.from({ length: CHUNKS }, (_, i) => chunk(i)).join('');

const idsOf = (events: SseEvent[]) => events.map((e) => (e.id === undefined ? null : Number(e.id)));
const textEvents = (events: SseEvent[]) => events.filter((e) => devtool(e.data.result)?.kind === 'TEXT_CONTENT');
const resubscribe = (url: string, id: string, after: number) =>
  rpc(url, 'tasks/resubscribe', { id }, { headers: { 'Last-Event-ID': String(after) } });

/** Runs the cases; `rowsOf(taskId)`, when given, counts the rows the store keeps the task's log in. */
async function longAnswerCases(t: Test, store?: PgTaskStore, rowsOf?: (taskId: string) => Promise<number>): Promise<void> {
  const srv = await startServer(t, { script: SCRIPT, ...(store ? { app: { store } } : {}) });
  const live = (await rpc(srv.url, 'message/stream', { message: userMessage('long answer') })).events ?? [];
  const task = live[0]?.data.result;
  const last = live.length;
  t.same(
    idsOf(live),
    Array.from({ length: last }, (_, i) => i + 1),
    'the live stream: ids 1..n',
  );
  t.equal(textEvents(live).length, CHUNKS, 'one frame per delta');
  t.equal(
    textEvents(live)
      .map((e) => textOf(e.data.result))
      .join(''),
    ANSWER,
  );
  t.equal(live.at(-1)?.data.result.status.state, 'completed');
  if (rowsOf) t.ok((await rowsOf(task.id)) < last / 2, 'the log holds text runs (fewer rows than events)');

  for (const after of [1, 2, 3, 500, 501, 999, last - 1]) {
    const replay = (await resubscribe(srv.url, task.id, after)).events ?? [];
    t.equal(replay[0]?.id, undefined, `after ${after}: the snapshot first, without an id`);
    const rest = replay.slice(1);
    t.same(idsOf(rest), idsOf(live.slice(after)), `after ${after}: exactly the ids after it`);
    // As JSON: a deep compare of a thousand frames costs seconds.
    t.equal(
      JSON.stringify(rest.map((e) => e.data.result)),
      JSON.stringify(live.slice(after).map((e) => e.data.result)),
      `after ${after}: the frames the live stream sent`,
    );
  }

  // A client that drops in the middle of the answer resumes from its last id.
  const second = await openStream(srv.url, 'message/stream', { message: userMessage('long again') });
  let texts = 0;
  const cut = await second.until((ev) => devtool(ev.data.result)?.kind === 'TEXT_CONTENT' && ++texts === 567);
  await second.close();
  t.ok(cut, 'dropped after 567 deltas');
  const seen = second.events.slice(0, second.events.indexOf(cut as SseEvent) + 1);
  const rest = ((await resubscribe(srv.url, second.events[0].data.result.id, Number(cut!.id))).events ?? []).slice(1);
  const both = [...seen, ...rest];
  t.same(
    idsOf(both),
    Array.from({ length: both.length }, (_, i) => i + 1),
    'no gap, no duplicate',
  );
  t.equal(
    textEvents(both)
      .map((e) => textOf(e.data.result))
      .join(''),
    ANSWER,
    'the whole answer, once',
  );
  t.equal(both.at(-1)?.data.result.status.state, 'completed');
}

t.test('a long answer replays identically (in-memory store)', (t) => longAnswerCases(t));

t.test('a long answer replays identically (PostgreSQL)', pgOnly(), async (t) => {
  const db = await freshDatabase(t);
  const store = new PgTaskStore(await openDatabase({ databaseUrl: db!.url }));
  t.teardown(() => store.close());
  const rows = async (taskId: string) => Number((await db!.sql`select count(*) as n from events where task_id = ${taskId}`)[0]?.n);
  await longAnswerCases(t, store, rows);
});
