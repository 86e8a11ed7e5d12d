/**
 * Reads a `text/event-stream` response body (eventsource-parser does the SSE framing) into
 * StreamItems: the frame's `id:` and the JSON-RPC result of its `data:`. A JSON-RPC error
 * inside the stream is thrown as A2AClientError; a body that ends or fails is the caller's
 * to judge (TaskSession resubscribes unless the task paused or ended).
 */
import { createParser } from 'eventsource-parser';
import type { EventSourceMessage } from 'eventsource-parser';
import { A2AClientError, StreamDroppedError } from './errors.js';
import type { StreamItem } from './view.js';
import { isObject } from '../lib/is-object.js';

/** The item of one SSE frame; throws the JSON-RPC error it carries. */
export function itemOf(message: EventSourceMessage): StreamItem {
  let envelope: unknown;
  try {
    envelope = JSON.parse(message.data);
  } catch {
    throw new A2AClientError(-32700, `the stream sent a frame that is not JSON: ${message.data.slice(0, 200)}`);
  }
  if (isObject(envelope) && isObject(envelope.error)) {
    const { code, message: text, data } = envelope.error;
    throw new A2AClientError(typeof code === 'number' ? code : -32603, typeof text === 'string' ? text : 'error in stream', data);
  }
  const event = isObject(envelope) && 'result' in envelope ? envelope.result : envelope;
  return message.id !== undefined && message.id !== '' ? { id: message.id, event } : { event };
}

/**
 * The items of an SSE body, as they arrive. Stops reading (and cancels the body) when the
 * consumer stops iterating. A network failure while reading is thrown as StreamDroppedError.
 */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<StreamItem, void, undefined> {
  const queue: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (message) => queue.push(message) });
  const reader = body.getReader();
  const decoder = new TextDecoder();
  try {
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (err) {
        throw new StreamDroppedError(`the stream failed: ${(err as Error).message}`, { cause: err });
      }
      parser.feed(chunk.done ? decoder.decode() : decoder.decode(chunk.value, { stream: true }));
      while (queue.length > 0) yield itemOf(queue.shift() as EventSourceMessage);
      if (chunk.done) return;
    }
  } finally {
    reader.cancel().catch(() => undefined); // releases the socket; a body already closed has nothing to cancel
  }
}
