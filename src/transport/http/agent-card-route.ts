import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AgentCard } from '@a2a-js/sdk';
import { cardToV03Json, cardToV1Json } from '../../protocol/agent-card.js';
import type { CardSecurityV03 } from '../../protocol/agent-card.js';

export interface AgentCardRoutesOptions {
  card: () => AgentCard;
  /** The v0.3 card's security fields when authentication is on. */
  securityV03?: CardSecurityV03;
  /** The public keys that sign push deliveries (GET /.well-known/jwks.json). */
  jwks?: () => unknown;
}

/** GET /.well-known/agent-card.json: v0.3 form by default, v1.0 form under `A2A-Version: 1.0`. */
export async function agentCardRoutes(app: FastifyInstance, opts: AgentCardRoutesOptions): Promise<void> {
  const handler = async (request: FastifyRequest) => {
    const v = String(request.headers['a2a-version'] ?? '').trim();
    return v.startsWith('1') ? cardToV1Json(opts.card()) : cardToV03Json(opts.card(), opts.securityV03);
  };
  app.get('/.well-known/agent-card.json', handler);
  app.get('/.well-known/agent.json', handler); // the pre-0.3 location, still probed by older clients
  const jwks = opts.jwks;
  if (jwks !== undefined) {
    app.get('/.well-known/jwks.json', async (_request, reply) => {
      void reply.header('cache-control', 'public, max-age=300');
      return jwks();
    });
  }
}
