/**
 * `GET /metrics`: the server's metrics in the Prometheus text format, for a scraper.
 *
 * With authentication (AUTH_CONFIG) only an admin may read them, as `audit/list`: no or bad
 * credentials → 401 with a WWW-Authenticate challenge, an authenticated caller without an admin
 * role → 403. Without authentication the route is open, like every other route (the server binds
 * loopback by default, behind the Host/Origin guard). A scrape only reads counters kept in memory.
 */
import type { FastifyInstance } from 'fastify';
import type { Caller } from '../../protocol/caller.js';
import { authenticationHook, useRequestContext } from './request-context.js';
import type { Authenticate } from './request-context.js';

export interface MetricsRoutesOptions {
  /** The text and its content type (text/plain; version=0.0.4). */
  render: () => Promise<{ contentType: string; body: string }>;
  /** Checks a request's credentials (AUTH_CONFIG); absent = no authentication. */
  authenticate?: Authenticate;
  /** Whether the caller may read the metrics (an admin; always true without authentication). */
  mayRead: (caller: Caller | undefined) => boolean;
}

export async function metricsRoutes(app: FastifyInstance, opts: MetricsRoutesOptions): Promise<void> {
  await useRequestContext(app);
  const onRequest = authenticationHook(opts.authenticate, (message) => ({ error: message }));
  app.get('/metrics', { onRequest }, async (request, reply) => {
    const caller = request.a2a.caller;
    if (opts.authenticate !== undefined && caller === undefined) {
      return reply.code(401).send({ error: 'Unauthorized: the request was not authenticated' }); // a second lock behind the hook
    }
    if (!opts.mayRead(caller)) return reply.code(403).send({ error: 'Forbidden: /metrics needs an admin role' });
    const { contentType, body } = await opts.render();
    return reply.header('cache-control', 'no-store').type(contentType).send(body);
  });
}
