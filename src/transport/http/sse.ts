/**
 * A small Server-Sent Events writer for hijacked Fastify replies: heartbeat comments,
 * backpressure (waits for `drain`, or `close`, never hangs), and disconnect detection.
 * Stopping early only stops reading: the source is an event-log follower, so the task
 * itself goes on (a client disconnect never cancels a task).
 *
 * Frames made in the same tick leave in one write (each still its own frame with its own id).
 * A client that stops reading costs at most one write of frames (≤ 16 KB) beyond the socket's
 * buffers: no frame is taken while the socket waits for `drain`, and a client that has not read
 * for `stallTimeoutMs` while a write waits is disconnected (it resumes with Last-Event-ID,
 * replayed from the compacted log). Heartbeats are not queued behind a waiting write.
 */
import type { ServerResponse } from 'node:http';
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

/** Pending frames are written at once from this size (a socket's default high-water mark). */
const FLUSH_BYTES = 16 * 1024;

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

/**
 * The socket side of one stream: frames queued to leave together, backpressure, and whether the
 * client is gone. Frames made in the same tick leave in one write: a commit hands a stream many
 * events at once (a long answer's text deltas), and each res.write is a chunk of its own (length
 * line, data, CRLF: four socket writes) with its length counted and its share of the writev.
 * Each frame keeps its own id; only the HTTP chunking differs.
 */
function socketWriter(res: ServerResponse, stallTimeoutMs: number) {
  const state = { closed: false, wake: undefined as (() => void) | undefined };
  res.on('close', () => {
    state.closed = true;
    state.wake?.();
  });
  res.on('drain', () => state.wake?.());
  /** Whole frames made since the last write to the socket (see flush). */
  let pending = '';
  let flushQueued = false;
  /** Hands the pending frames to the socket as ONE write; false when the socket asks for `drain`. */
  const flush = (): boolean => {
    flushQueued = false;
    if (pending === '' || state.closed) {
      pending = '';
      return !res.writableNeedDrain;
    }
    const text = pending;
    pending = '';
    const writing = phaseStart();
    const ok = res.write(text);
    phaseEnd('write', writing);
    return ok;
  };
  /** Waits for the client to read what was written (at once when the stream is closed). */
  const waitDrain = async (): Promise<void> => {
    if (state.closed) return;
    const stalled = setTimeout(() => {
      // The client stopped reading: drop it rather than hold the stream (it resumes by Last-Event-ID).
      res.destroy();
    }, stallTimeoutMs);
    await new Promise<void>((resolve) => (state.wake = resolve));
    clearTimeout(stalled);
    state.wake = undefined;
  };
  return {
    state,
    flush,
    waitDrain,
    /**
     * Adds a frame to the next write: at once when the pending frames reach a socket buffer's
     * worth or the socket is already full (then false: wait for `drain`), else once the frames
     * of this turn are made — process.nextTick queued from a microtask runs after the microtask
     * queue drains, so the events a follower holds go out in one write, none later than this tick.
     */
    queue(text: string): boolean {
      pending += text;
      if (pending.length >= FLUSH_BYTES || res.writableNeedDrain) return flush();
      if (!flushQueued) {
        flushQueued = true;
        process.nextTick(flush);
      }
      return true;
    },
    /** Writes `text` after the pending frames, now, and waits if the socket is full. */
    async send(text: string): Promise<void> {
      if (state.closed) return;
      pending += text;
      if (!flush()) await waitDrain();
    },
  };
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
  const out = socketWriter(res, opts.stallTimeoutMs);
  const { state } = out;
  const heartbeat = setInterval(() => {
    if (!state.closed && out.flush()) res.write(': keep-alive\n\n');
  }, opts.heartbeatMs);
  heartbeat.unref();
  opts.metrics?.sseOpened();
  // A client that does not read holds no shutdown up: a write waiting for it is dropped.
  const shutdown = closer(opts.closing, () => state.wake !== undefined && res.destroy());
  let ending = false;
  try {
    let r: IteratorResult<unknown> | typeof CLOSING = first;
    while (r !== CLOSING && !r.done && !state.closed) {
      const encoding = phaseStart();
      const { data, id } = opts.frame(r.value);
      const text = sseFrame(data, id);
      phaseEnd('encode', encoding);
      // A frame the socket takes needs no wait (no promise, no turn of the microtask queue per
      // frame); only a full socket is waited for.
      if (!out.queue(text)) await out.waitDrain();
      if (state.closed) break;
      r = await shutdown.next(source.next());
    }
    ending = r === CLOSING;
    if (ending && !state.closed) out.queue(SHUTDOWN_COMMENT);
  } catch (err) {
    await out.send(sseFrame(opts.onError(err), undefined, 'error'));
  } finally {
    opts.metrics?.sseClosed();
    shutdown.off();
    clearInterval(heartbeat);
    // Stopped early (the client left, or the server shuts down): stop following the log.
    if (state.closed || ending) void source.return?.(undefined);
    out.flush();
    if (!res.writableEnded) res.end();
  }
}
