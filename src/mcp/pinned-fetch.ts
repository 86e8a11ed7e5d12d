/**
 * A fetch for the MCP SDK's HTTP transport that connects to one address, checked beforehand,
 * whatever DNS says later (DNS-rebinding guard for client-given MCP server URLs): node:http(s)
 * with a `lookup` that always answers that address. The URL's host still names the server
 * (Host header, TLS SNI and certificate check).
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { LookupFunction } from 'node:net';
import { Readable } from 'node:stream';

type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

/** Checks a URL and resolves its host once: the address to connect to, or why not. */
export type HttpResolver = (url: string) => Promise<{ ok: true; address: string } | { ok: false; message: string }>;

function headersOf(init: RequestInit | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  new Headers(init?.headers).forEach((value, key) => (out[key] = value));
  return out;
}

function responseHeaders(raw: http.IncomingHttpHeaders): Headers {
  const headers = new Headers();
  for (const [key, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(key, v);
  }
  return headers;
}

/** A fetch whose every connection goes to `address`. Bodies: strings (what the MCP SDK sends) or none. */
export function pinnedFetch(address: string): FetchLike {
  const family = net.isIP(address) === 6 ? 6 : 4;
  const lookup: LookupFunction = (_host, options, cb) => {
    if ((options as { all?: boolean }).all)
      (cb as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address, family }]);
    else cb(null, address, family);
  };
  return (input, init) =>
    new Promise<Response>((resolve, reject) => {
      const url = new URL(String(input));
      const client = url.protocol === 'https:' ? https : http;
      const body = init?.body;
      if (body !== undefined && body !== null && typeof body !== 'string') {
        reject(new TypeError('pinnedFetch: only string bodies are supported'));
        return;
      }
      const req = client.request(
        url,
        { method: init?.method ?? 'GET', headers: headersOf(init), lookup, signal: init?.signal ?? undefined },
        (res) => {
          const status = res.statusCode ?? 0;
          const empty = status === 204 || status === 304 || init?.method === 'HEAD';
          if (empty) res.resume();
          const stream = empty ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>);
          resolve(new Response(stream, { status, statusText: res.statusMessage ?? '', headers: responseHeaders(res.headers) }));
        },
      );
      req.on('error', (err) => reject(new TypeError('fetch failed', { cause: err })));
      req.end(body ?? undefined);
    });
}
