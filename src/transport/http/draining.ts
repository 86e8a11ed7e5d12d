/**
 * While the server shuts down, it takes no new work: every request but the probes and the
 * agent card is answered 503 with `Retry-After` and `Connection: close`, in the binding's
 * error shape (a JSON-RPC envelope at `/`, a google.rpc.Status elsewhere) with code
 * UNAVAILABLE — so a client (or the load balancer) sends it again, to another instance. That
 * includes answers to paused tasks: another instance sharing the database takes them at once.
 * Decided before the body is read (a JSON-RPC request's id is then unknown: `id: null`).
 */
import type { FastifyInstance } from 'fastify';
import { restErrorBody, RPC_ERROR_CODE } from '../../protocol/errors.js';
import { rpcError } from './jsonrpc-route.js';

/** Paths still answered while draining: the orchestrator's probes and the (static) agent card. */
const STILL_ANSWERED = /^\/(healthz|readyz|\.well-known\/)/;

const DRAINING_MESSAGE = 'The server is shutting down and takes no new work; send the request again (another instance takes it)';

export function refuseWhileDraining(app: FastifyInstance, draining: () => boolean): void {
  app.addHook('onRequest', async (request, reply) => {
    if (!draining()) return;
    const path = request.url.split('?')[0] ?? '/';
    if (STILL_ANSWERED.test(path)) return;
    const body =
      path === '/' && request.method === 'POST'
        ? rpcError(null, RPC_ERROR_CODE.UNAVAILABLE, DRAINING_MESSAGE)
        : restErrorBody(RPC_ERROR_CODE.UNAVAILABLE, DRAINING_MESSAGE).body;
    return reply.code(503).header('retry-after', '1').header('connection', 'close').send(body);
  });
}
