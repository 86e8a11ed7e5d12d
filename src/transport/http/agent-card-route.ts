import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AgentCard } from '@a2a-js/sdk';
import { cardToV03Json, cardToV1Json } from '../../protocol/agent-card.js';

export interface AgentCardRoutesOptions {
  card: () => AgentCard;
}

/** GET /.well-known/agent-card.json: v0.3 form by default, v1.0 form under `A2A-Version: 1.0`. */
export async function agentCardRoutes(app: FastifyInstance, opts: AgentCardRoutesOptions): Promise<void> {
  const handler = async (request: FastifyRequest) => {
    const v = String(request.headers['a2a-version'] ?? '').trim();
    return v.startsWith('1') ? cardToV1Json(opts.card()) : cardToV03Json(opts.card());
  };
  app.get('/.well-known/agent-card.json', handler);
  app.get('/.well-known/agent.json', handler); // the pre-0.3 location, still probed by older clients
}
