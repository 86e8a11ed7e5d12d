/**
 * DNS-rebinding and cross-site guard. This server runs shell commands, so when it listens
 * on loopback it answers only requests whose Host (and, from browsers, Origin) is local
 * or the configured public URL's host. `Origin: null` (a sandboxed frame, a `data:` or
 * `file:` page, a redirect across sites) names no site at all, so it is refused too.
 */
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';

export interface HostGuardOptions {
  /** Extra host names (without port) to accept, e.g. the PUBLIC_URL host. */
  allowedHosts: string[];
}

const LOCAL = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

function hostName(hostHeader: string): string {
  if (hostHeader.startsWith('[')) return hostHeader.slice(0, hostHeader.indexOf(']') + 1);
  const colon = hostHeader.indexOf(':');
  return colon < 0 ? hostHeader : hostHeader.slice(0, colon);
}

/** An `onRequest` hook for the root instance (so it covers every route). */
export function createHostGuard(opts: HostGuardOptions): onRequestAsyncHookHandler {
  const allowed = new Set([...LOCAL, ...opts.allowedHosts.map((h) => h.toLowerCase())]);
  return async function hostGuard(request: FastifyRequest, reply: FastifyReply) {
    const host = hostName(String(request.headers.host ?? '').toLowerCase());
    if (!allowed.has(host)) {
      return reply
        .code(403)
        .send({ error: `Host "${host}" is not allowed; this server accepts only ${[...allowed].join(', ')} (set PUBLIC_URL to add one)` });
    }
    const origin = request.headers.origin;
    if (origin === 'null') {
      return reply.code(403).send({
        error: 'Origin "null" (a sandboxed frame, a file: or data: page, or a cross-site redirect) is not allowed to call this server',
      });
    }
    if (origin !== undefined) {
      let originHost = '';
      try {
        originHost = hostName(new URL(origin).host.toLowerCase());
      } catch {
        /* fall through: refused below */
      }
      if (!allowed.has(originHost)) {
        return reply.code(403).send({ error: `Origin "${origin}" is not allowed to call this server` });
      }
    }
  };
}
