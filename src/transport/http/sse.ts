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

/** Resolves when `signal` aborts (never without one); `off` removes the listener. */
function whenAborted(signal: AbortSignal | undefined): { aborted: Promise<typeof CLOSING>; off: () => void } {
  let off = () => {};
  const aborted = new Promise<typeof CLOSING>((resolve) => {
    if (signal === undefined) return;
    if (signal.aborted) return resolve(CLOSING);
    const onAbort = () => resolve(CLOSING);
    signal.addEventListener('abort', onAbort, { once: true });
    off = () => signal.removeEventListener('abort', onAbort);
  });
  return { aborted, off };
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
  const shutdown = whenAborted(opts.closing);
  // A client that does not read holds no shutdown up: a write waiting for it is dropped.
  void shutdown.aborted.then(() => wake !== undefined && res.destroy());
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
      r = await Promise.race([source.next(), shutdown.aborted]);
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
