/**
 * A long SSE stream holds nothing per frame it already sent: each wait for the next event is
 * interruptible by shutdown without a reaction left on a long-lived promise (Promise.race with
 * the shutdown promise kept ~700 bytes a frame until the stream ended: 43 MB here).
 */
import t from 'tap';
import v8 from 'node:v8';
import vm from 'node:vm';
import { EventEmitter } from 'node:events';
import type { FastifyReply } from 'fastify';
import { writeSse } from '../../../src/transport/http/sse.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

/** The raw response writeSse needs: every write accepted at once, nothing kept. */
function fakeReply(): FastifyReply {
  const raw = Object.assign(new EventEmitter(), {
    writableEnded: false,
    writableNeedDrain: false,
    writeHead: () => raw,
    write: () => true,
    end: () => void (raw.writableEnded = true),
    destroy: () => undefined,
  });
  return { hijack: () => undefined, raw } as unknown as FastifyReply;
}

t.test('frames sent are not retained while the stream goes on (with a shutdown signal to watch)', async (t) => {
  const FRAMES = 60_000;
  const heap: number[] = [];
  async function* source() {
    for (let i = 0; i < FRAMES; i++) {
      if (i === 1_000 || i === FRAMES - 1) {
        gc();
        heap.push(process.memoryUsage().heapUsed);
      }
      yield { i };
    }
  }
  const it = source();
  const closing = new AbortController();
  await writeSse(fakeReply(), it, await it.next(), {
    heartbeatMs: 60_000,
    stallTimeoutMs: 60_000,
    frame: (item) => ({ data: item }),
    onError: () => ({}),
    closing: closing.signal,
  });
  const grown = heap[1] - heap[0];
  t.ok(grown < 8_000_000, `heap grew ${(grown / 1e6).toFixed(2)} MB over ${FRAMES - 1_000} frames`);
});
