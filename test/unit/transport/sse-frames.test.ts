/**
 * The per-frame path of a long stream: frames made in one tick leave the SSE writer in one write
 * (each still its own frame with its own id), a full socket is waited for before more frames are
 * taken, and a v0.3 stream's status updates reach the SDK's conversion without their metadata
 * (put back by the route), so it is not deep-copied once per frame — with the same bytes on the wire.
 */
import t from 'tap';
import { EventEmitter } from 'node:events';
import type { FastifyReply } from 'fastify';
import { sseFrame, writeSse } from '../../../src/transport/http/sse.js';
import { buildServer, devtool, userMessage } from '../../support/server.js';
import { rpc } from '../../support/sse.js';

/** The raw response writeSse needs, keeping what is written; `full` makes the socket ask for `drain` after each write. */
function recordingReply(full = false) {
  const writes: string[] = [];
  const raw = Object.assign(new EventEmitter(), {
    writableEnded: false,
    writableNeedDrain: false,
    writeHead: () => raw,
    write: (text: string) => {
      writes.push(text);
      if (full) raw.writableNeedDrain = true;
      return !full;
    },
    end: () => void (raw.writableEnded = true),
    destroy: () => undefined,
  });
  /** The socket took everything: `drain`. */
  const drain = () => {
    raw.writableNeedDrain = false;
    raw.emit('drain');
  };
  return { reply: { hijack: () => undefined, raw } as unknown as FastifyReply, writes, drain };
}

const options = {
  heartbeatMs: 60_000,
  stallTimeoutMs: 60_000,
  frame: (item: unknown) => ({ data: item, id: (item as { i: number }).i }),
  onError: () => ({}),
};

t.test('frames that are ready together leave in one write, each its own frame with its own id', async (t) => {
  const FRAMES = 200;
  async function* source() {
    for (let i = 1; i <= FRAMES; i++) yield { i, text: `delta ${i}` };
  }
  const { reply, writes } = recordingReply();
  const it = source();
  await writeSse(reply, it, await it.next(), options);
  const expected = Array.from({ length: FRAMES }, (_, k) => sseFrame({ i: k + 1, text: `delta ${k + 1}` }, k + 1)).join('');
  t.equal(writes.join(''), expected, 'the same bytes, frame by frame, in order');
  t.ok(writes.length <= 2, `${FRAMES} frames in ${writes.length} write(s)`);
});

t.test('a full socket is waited for: no frame is taken until it drains', async (t) => {
  const big = 'x'.repeat(6_000); // three frames pass the 16 KB a write holds
  let taken = 0;
  async function* source() {
    for (let i = 1; i <= 9; i++) {
      taken = i;
      yield { i, big };
    }
  }
  const { reply, writes, drain } = recordingReply(true);
  const it = source();
  const done = writeSse(reply, it, await it.next(), options);
  for (let round = 0; round < 20 && taken < 9; round++) {
    await new Promise((resolve) => setImmediate(resolve));
    const before = taken;
    await new Promise((resolve) => setImmediate(resolve));
    t.equal(taken, before, `nothing taken while the socket is full (after frame ${taken})`);
    drain();
  }
  drain();
  await done;
  t.ok(writes.length >= 3, `9 frames of 6 KB in ${writes.length} writes, each at most 3 frames`);
  for (const w of writes) t.ok(w.length <= 3 * (big.length + 100), `a write of ${w.length} bytes`);
  t.equal(writes.join('').split('\n\n').length - 1, 9, 'every frame written');
});

t.test('a v0.3 stream: metadata on every frame as the SDK writes it, without a deep copy per frame', async (t) => {
  const CHUNKS = 300;
  const script = {
    model: 'frames-model',
    scripts: [{ steps: [{ chunks: Array.from({ length: CHUNKS }, (_, i) => [{ text: `c${i} ` }]) }] }],
  };
  const { app } = await buildServer(t, { script });
  // Counts the deep copies the SDK's v0.3 server conversion makes (the scripted model copies each chunk too).
  const clone = globalThis.structuredClone;
  let clones = 0;
  globalThis.structuredClone = ((value: unknown, opts?: Parameters<typeof structuredClone>[1]) => {
    if (/compat\/v0_3\/server/.test(new Error().stack ?? '')) clones++;
    return clone(value, opts);
  }) as typeof structuredClone;
  let res;
  try {
    res = await rpc(app, 'message/stream', { message: userMessage('go') });
  } finally {
    globalThis.structuredClone = clone;
  }
  const results = (res.events ?? []).map((e) => e.data.result);
  const texts = results.filter((r) => r.kind === 'status-update' && devtool(r)?.kind === 'TEXT_CONTENT');
  t.equal(texts.length, CHUNKS, 'one frame per chunk');
  t.same(devtool(texts[0]), { kind: 'TEXT_CONTENT', model: 'frames-model' }, 'each carries its metadata');
  t.same(Object.keys(texts[0]), ['kind', 'taskId', 'contextId', 'status', 'final', 'metadata'], 'in the SDK’s place: the last key');
  t.equal(results.at(-1)?.status?.state, 'completed');
  t.ok(clones < CHUNKS / 10, `${clones} deep copies by the SDK's conversion for ${CHUNKS} text frames`);
});
