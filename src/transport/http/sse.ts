/**
 * A small Server-Sent Events writer for hijacked Fastify replies: heartbeat comments,
 * backpressure (waits for `drain`, or `close`, never hangs), and disconnect detection.
 * Stopping early only stops reading: the source is an event-log follower, so the task
 * itself goes on (a client disconnect never cancels a task).
 *
 * A client that stops reading costs at most one frame beyond the socket's buffers: the next
 * frame is only taken once the last one drained, and a client that has not read for
 * `stallTimeoutMs` while a write waits is disconnected (it resumes with Last-Event-ID,
 * replayed from the compacted log). Heartbeats are not queued behind a waiting write.
 */
import type { FastifyReply } from 'fastify';
import { phaseEnd, phaseStart } from '../../protocol/probe.js';
import type { Metrics } from '../../lib/metrics.js';

export interface SseOptions {
  heartbeatMs: number;
  /** How long a write may wait for the client to read before the stream is closed. */
  stallTimeoutMs: number;
  /** Turns a source item into the frame's `data:` JSON; may also return an `id:`. */
  frame: (item: unknown) => { data: unknown; id?: number };
  /** The JSON of an `event: error` frame for a fault after the stream started. */
  onError: (err: unknown) => unknown;
  /** Told when the stream opens and closes (the open-streams gauge). */
  metrics?: Pick<Metrics, 'sseOpened' | 'sseClosed'>;
  /**
   * Aborted when the server shuts down: the stream ends cleanly at once (a last comment, then
   * the end of the response), and the client resumes elsewhere with Last-Event-ID.
   */
  closing?: AbortSignal;
}

/** The last frame of a stream the server ends because it shuts down (a comment: every client skips it). */
const SHUTDOWN_COMMENT = ': server shutting down; reconnect with Last-Event-ID to resume\n\n';

const CLOSING = Symbol('closing');

/**
 * Waits that end when `signal` aborts: `next(p)` settles as `p` does, or with CLOSING once the
 * signal aborts (at once if it did already); `onAbort` runs then. Not Promise.race with one
 * long-lived promise: that keeps a reaction per call, and with it the value the call settled
 * with (every frame's event), until the promise settles — for as long as the stream lasts. Here
 * each wait replaces the last.
 */
function closer(signal: AbortSignal | undefined, onAbort: () => void) {
  let aborted = signal?.aborted === true;
  let interrupt: ((v: typeof CLOSING) => void) | undefined;
  const abort = () => {
    aborted = true;
    interrupt?.(CLOSING);
    onAbort();
  };
  signal?.addEventListener('abort', abort, { once: true });
  return {
    next<T>(p: Promise<T>): Promise<T | typeof CLOSING> {
      return new Promise<T | typeof CLOSING>((resolve, reject) => {
        interrupt = resolve;
        if (aborted) resolve(CLOSING);
        p.then(resolve, reject);
      });
    },
    off: () => signal?.removeEventListener('abort', abort),
  };
}

export function sseFrame(data: unknown, id?: number, event?: string): string {
  const head = (event ? `event: ${event}\n` : '') + (id !== undefined ? `id: ${id}\n` : '');
  return `${head}data: ${JSON.stringify(data)}\n\n`;
}

export async function writeSse(
  reply: FastifyReply,
  source: AsyncIterator<unknown>,
  first: IteratorResult<unknown>,
  opts: SseOptions,
): Promise<void> {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  let closed = false;
  let wake: (() => void) | undefined;
  res.on('close', () => {
    closed = true;
    wake?.();
  });
  res.on('drain', () => wake?.());
  const heartbeat = setInterval(() => {
    if (!closed && !res.writableNeedDrain) res.write(': keep-alive\n\n');
  }, opts.heartbeatMs);
  heartbeat.unref();

  const send = async (text: string): Promise<void> => {
    if (closed) return;
    if (res.write(text)) return;
    const stalled = setTimeout(() => {
      // The client stopped reading: drop it rather than hold the stream (it resumes by Last-Event-ID).
      res.destroy();
    }, opts.stallTimeoutMs);
    await new Promise<void>((resolve) => (wake = resolve));
    clearTimeout(stalled);
    wake = undefined;
  };
  opts.metrics?.sseOpened();
  // A client that does not read holds no shutdown up: a write waiting for it is dropped.
  const shutdown = closer(opts.closing, () => wake !== undefined && res.destroy());
  let ending = false;
  try {
    let r: IteratorResult<unknown> | typeof CLOSING = first;
    while (r !== CLOSING && !r.done && !closed) {
      const encoding = phaseStart();
      const { data, id } = opts.frame(r.value);
      const text = sseFrame(data, id);
      phaseEnd('encode', encoding);
      const writing = phaseStart();
      await send(text);
      phaseEnd('write', writing);
      if (closed) break;
      r = await shutdown.next(source.next());
    }
    ending = r === CLOSING;
    if (ending && !closed) res.write(SHUTDOWN_COMMENT);
  } catch (err) {
    await send(sseFrame(opts.onError(err), undefined, 'error'));
  } finally {
    opts.metrics?.sseClosed();
    shutdown.off();
    clearInterval(heartbeat);
    // Stopped early (the client left, or the server shuts down): stop following the log.
    if (closed || ending) void source.return?.(undefined);
    if (!res.writableEnded) res.end();
  }
}
