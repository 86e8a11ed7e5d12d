/** A plain SSE reader over fetch, independent of the SDK: what a raw client sees. */
import type { FastifyInstance } from 'fastify';

export interface SseEvent {
  id?: string;
  event?: string;
  data: any;
}

export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    const ev: Partial<SseEvent> & { lines: string[] } = { lines: [] };
    for (const line of block.split(/\r?\n/)) {
      if (line === '' || line.startsWith(':')) continue;
      const i = line.indexOf(':');
      const field = i < 0 ? line : line.slice(0, i);
      const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
      if (field === 'data') ev.lines.push(value);
      else if (field === 'id') ev.id = value;
      else if (field === 'event') ev.event = value;
    }
    if (ev.lines.length > 0) events.push({ id: ev.id, event: ev.event, data: JSON.parse(ev.lines.join('\n')) });
  }
  return events;
}

export interface PostResult {
  status: number;
  contentType: string;
  /** The JSON body, for a non-stream answer. */
  json?: any;
  /** The SSE events, for a stream answer. */
  events?: SseEvent[];
  raw: string;
}

let nextId = 1;

/** Something that answers HTTP: a base URL (real sockets) or a Fastify app (app.inject, no socket). */
export type Target = string | { inject: FastifyInstance['inject'] };

/**
 * Posts one JSON-RPC request and reads the whole answer (JSON or SSE), over a socket when
 * `target` is a URL, in process through app.inject when it is an app.
 */
export async function rpc(
  target: Target,
  method: string,
  params: unknown,
  opts: { version?: '0.3' | '1.0'; headers?: Record<string, string>; body?: string } = {},
): Promise<PostResult> {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...opts.headers };
  if (opts.version === '1.0') headers['A2A-Version'] = '1.0';
  const body = opts.body ?? JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params });
  let status: number, raw: string, contentType: string;
  if (typeof target === 'string') {
    const res = await fetch(target, { method: 'POST', headers, body });
    [status, raw, contentType] = [res.status, await res.text(), res.headers.get('content-type') ?? ''];
  } else {
    const res = await target.inject({ method: 'POST', url: '/', headers: { host: '127.0.0.1', ...headers }, payload: body });
    [status, raw, contentType] = [res.statusCode, res.body, String(res.headers['content-type'] ?? '')];
  }
  if (contentType.startsWith('text/event-stream')) return { status, contentType, events: parseSse(raw), raw };
  return { status, contentType, json: raw ? JSON.parse(raw) : undefined, raw };
}
