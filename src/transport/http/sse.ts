/**
 * A small Server-Sent Events writer for hijacked Fastify replies: heartbeat comments,
 * backpressure (waits for `drain`, or `close`, never hangs), and disconnect detection.
 * Stopping early only stops reading: the source is an event-log follower, so the task
 * itself goes on (a client disconnect never cancels a task).
 */
import type { FastifyReply } from 'fastify';

export interface SseOptions {
  heartbeatMs: number;
  /** Turns a source item into the frame's `data:` JSON; may also return an `id:`. */
  frame: (item: unknown) => { data: unknown; id?: number };
  /** The JSON of an `event: error` frame for a fault after the stream started. */
  onError: (err: unknown) => unknown;
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
    if (!closed) res.write(': keep-alive\n\n');
  }, opts.heartbeatMs);
  heartbeat.unref();

  const send = async (text: string): Promise<void> => {
    if (closed) return;
    if (res.write(text)) return;
    await new Promise<void>((resolve) => (wake = resolve));
    wake = undefined;
  };
  try {
    let r = first;
    while (!r.done && !closed) {
      const { data, id } = opts.frame(r.value);
      await send(sseFrame(data, id));
      if (closed) break;
      r = await source.next();
    }
  } catch (err) {
    await send(sseFrame(opts.onError(err), undefined, 'error'));
  } finally {
    clearInterval(heartbeat);
    if (closed) void source.return?.(undefined);
    if (!res.writableEnded) res.end();
  }
}
