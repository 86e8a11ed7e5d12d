/**
 * Shell output has a bounded cost (issue 10, finding 8): a command printing many MB streams a
 * bounded `live_content` window at a bounded rate, its full output comes once (capped, the cap
 * stated), the stored log keeps a call's latest EXECUTING card only (replay sends the latest
 * card, not every frame; Last-Event-ID resume has no gap and no duplicate), and a client that
 * stops reading is dropped (it resumes from the log) instead of growing the server.
 * Sizes are asserted; times never are.
 */
import t from 'tap';
import net from 'node:net';
import type { FastifyInstance } from 'fastify';
import { parseSse, rpc } from '../support/sse.js';
import type { SseEvent } from '../support/sse.js';
import { buildServer, dataOf, devtool, sharedStore, startServer, textOf, URI, userMessage } from '../support/server.js';
import { until } from '../support/core.js';
import type { ModelScript } from '../../src/agent/model/scripted-model-client.js';
import type { TaskStore } from '../../src/agent/task-store.js';

const MB = 1024 * 1024;
/** SHELL_MAX_OUTPUT_BYTES' default: the most output a call keeps. */
const CAP = MB;
/** LIVE_OUTPUT_WINDOW_BYTES' default. */
const WINDOW = 32 * 1024;
const FLOOD = `head -c ${16 * MB} /dev/zero | tr '\\0' a | fold -w 99`;
/** ~3.2 MB over at least 1.5 s: many live updates. */
const DRIP = 'for i in $(seq 1 30); do seq 1 20000; sleep 0.05; done';
/** The model's answer to `chatty`: 160 chunks of 64 KiB (10 MiB), a stream no compaction shortens. */
const CHUNK = 'c'.repeat(64 * 1024 - 1) + '\n';
const CHUNKS = 160;

const call = (command: string) => ({ chunks: [[{ functionCall: { name: 'run_shell_command', args: { command } } }]] });
const SCRIPT: ModelScript = {
  scripts: [
    { when: '^flood', steps: [call(FLOOD), { chunks: [[{ text: 'done' }]] }] },
    { when: '^drip', steps: [call(DRIP), { chunks: [[{ text: 'done' }]] }] },
    { when: '^chatty', steps: [{ chunks: Array.from({ length: CHUNKS }, () => [{ text: CHUNK }]) }] },
  ],
};

const yolo = (text: string) => ({ message: userMessage(text, { metadata: { [URI]: { approval_mode: 'YOLO' } } }) });
const results = (events: SseEvent[]) => events.map((e) => e.data.result);
const cards = (events: SseEvent[]) => events.map((e) => ({ id: e.id, card: dataOf(e.data.result) })).filter((c) => c.card);
const bytes = (s: string) => Buffer.byteLength(s);

async function inProcess(t: Parameters<typeof buildServer>[0]): Promise<{ app: FastifyInstance; store: TaskStore }> {
  const store = (await sharedStore()).connect();
  const { app } = await buildServer(t, { script: SCRIPT, app: { store } });
  return { app, store };
}

/** The stored log of a task: its size as JSON and its EXECUTING cards. */
async function storedLog(store: TaskStore, taskId: string) {
  const events = await store.eventsAfter(taskId, 0);
  const size = events.reduce((n, ev) => n + bytes(JSON.stringify(ev.response)), 0);
  const executing = events.filter((ev) => JSON.stringify(ev.response).includes('"status":"EXECUTING"'));
  return { events, size, executing };
}

t.test('a command printing 16 MB: stream, stored log and replay each stay under 3× the capped output', async (t) => {
  const { app, store } = await inProcess(t);
  const live = await rpc(app, 'message/stream', yolo('flood'));
  const rs = results(live.events!);
  const taskId: string = rs[0].id;
  t.equal(rs.at(-1).status.state, 'completed');
  t.ok(bytes(live.raw) < 3 * CAP, `stream: ${bytes(live.raw)} bytes < ${3 * CAP}`);
  const all = cards(live.events!).map((c) => c.card);
  const executing = all.filter((c) => c.status === 'EXECUTING');
  t.ok(executing.length >= 1, 'EXECUTING went out');
  for (const c of executing) t.ok((c.live_content ?? '').length <= WINDOW, `live_content is a window (${(c.live_content ?? '').length})`);
  const done = all.at(-1);
  t.equal(done.status, 'SUCCEEDED');
  const text: string = done.output.text;
  t.ok(text.length <= CAP + 200, `the full output once, capped (${text.length})`);
  t.match(text, /^\[\.\.\. \d+ bytes truncated: output is capped at its last 1048576 bytes \.\.\.\]\n/, 'the cap is stated');

  const stored = await storedLog(store, taskId);
  t.ok(stored.size < 3 * CAP, `stored log: ${stored.size} bytes < ${3 * CAP}`);
  t.ok(stored.executing.length <= 1, 'the stored log keeps one EXECUTING card');
  const replay = await rpc(app, 'tasks/resubscribe', { id: taskId }, { headers: { 'Last-Event-ID': '0' } });
  t.ok(bytes(replay.raw) < 3 * CAP, `replay: ${bytes(replay.raw)} bytes < ${3 * CAP}`);
});

t.test('a chatty command: many live updates, one stored EXECUTING card; resuming after any id has no gap and no duplicate', async (t) => {
  const { app, store } = await inProcess(t);
  const live = await rpc(app, 'message/stream', yolo('drip'));
  const rs = results(live.events!);
  const taskId: string = rs[0].id;
  t.equal(rs.at(-1).status.state, 'completed');
  const liveCards = cards(live.events!);
  const executing = liveCards.filter((c) => c.card.status === 'EXECUTING');
  t.ok(executing.length >= 3, `the output was streamed live (${executing.length} EXECUTING updates)`);
  const stored = await storedLog(store, taskId);
  t.equal(stored.executing.length, 1, 'superseded EXECUTING cards were compacted out of the log');
  t.equal(String(stored.executing[0].seq), executing.at(-1)!.id, 'the one kept is the latest');

  const liveIds = live.events!.map((e) => Number(e.id));
  for (const k of [0, ...executing.map((c) => Number(c.id))]) {
    const replay = await rpc(app, 'tasks/resubscribe', { id: taskId }, { headers: { 'Last-Event-ID': String(k) } });
    const ids = replay.events!.slice(1).map((e) => Number(e.id));
    t.ok(
      ids.every((id, i) => id > k && (i === 0 || id > ids[i - 1])),
      `Last-Event-ID ${k}: only later events, in order, once`,
    );
    t.same(
      ids,
      liveIds.filter((id) => id > k && stored.events.some((ev) => ev.seq === id)),
      `Last-Event-ID ${k}: exactly the stored events after it`,
    );
    const last = results(replay.events!).at(-1);
    t.equal(last.status.state, 'completed', `Last-Event-ID ${k}: ends completed`);
    t.ok(
      replay.events!.some((e) => dataOf(e.data.result)?.status === 'SUCCEEDED'),
      `Last-Event-ID ${k}: the final card is there`,
    );
  }
});

/** Complete SSE frames in `raw` (a cut-off last frame is left out). */
function completeFrames(raw: string): SseEvent[] {
  const end = raw.lastIndexOf('\n\n');
  return end < 0 ? [] : parseSse(raw.slice(raw.indexOf('\r\n\r\n') + 4, end + 2));
}

t.test('a client that stops reading is dropped, and resumes from the log without a gap', async (t) => {
  const srv = await startServer(t, { script: SCRIPT, env: { SSE_STALL_TIMEOUT_MS: '300', STREAM_BUFFER_BYTES: '65536' } });
  const serverSide: net.Socket[] = [];
  srv.app.server.on('connection', (s: net.Socket) => serverSide.push(s));
  const { port } = new URL(srv.url);
  const client = net.connect(Number(port), '127.0.0.1');
  t.teardown(() => client.destroy());
  await new Promise<void>((resolve) => client.once('connect', () => resolve()));
  client.pause(); // never reads: the server's writes back up
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/stream', params: yolo('chatty') });
  client.write(
    `POST / HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\ncontent-length: ${bytes(body)}\r\n\r\n${body}`,
  );
  const stalled = await until('the stalled connection', () => serverSide[0], 5_000);
  await until('the server to drop the client that stopped reading', () => stalled.destroyed, 20_000);
  t.pass('the server dropped the client that stopped reading');

  // What the client had received before it was dropped, then a resume from its last event id.
  const chunks: Buffer[] = [];
  client.on('data', (c: Buffer) => chunks.push(c));
  client.resume();
  await new Promise<void>((resolve) => (client.readableEnded || client.destroyed ? resolve() : client.once('close', () => resolve())));
  const before = completeFrames(Buffer.concat(chunks).toString('utf8'));
  const taskId: string = before[0].data.result.id;
  const lastId = before.at(-1)!.id ?? '0';
  t.ok(before.length < CHUNKS, `the client got part of the answer before it was dropped (${before.length} frames)`);
  const after = await rpc(srv.url, 'tasks/resubscribe', { id: taskId }, { headers: { 'Last-Event-ID': lastId } });
  const resumed = after.events!.slice(1); // the first is the task snapshot
  const ids = [...before.slice(1), ...resumed].map((e) => Number(e.id));
  t.ok(
    ids.every((id, i) => i === 0 || id > ids[i - 1]),
    'ids increase across the drop: no duplicate',
  );
  const text = [...before, ...resumed]
    .map((e) => e.data.result)
    .filter((r) => devtool(r)?.kind === 'TEXT_CONTENT')
    .map(textOf)
    .join('');
  t.equal(text.length, CHUNK.length * CHUNKS, 'the whole answer arrived: no gap');
  t.equal(results(after.events!).at(-1).status.state, 'completed');
});
