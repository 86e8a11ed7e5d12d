import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AgentCard } from '@a2a-js/sdk';
import { cardToV03Json, cardToV1Json } from '../../protocol/agent-card.js';
import type { CardSecurityV03 } from '../../protocol/agent-card.js';

export interface AgentCardRoutesOptions {
  card: () => AgentCard;
  /** The v0.3 card's security fields when authentication is on. */
  securityV03?: CardSecurityV03;
  /** The public keys that sign push deliveries (GET /.well-known/jwks.json). */
  jwks?: () => unknown;
  /** How long clients may cache the card, in seconds (default 300). */
  maxAgeSeconds?: number;
}

/** One form of the card, serialised once, with the validators a cache needs. */
interface CardBody {
  json: string;
  etag: string;
}

function cardBody(card: unknown): CardBody {
  const json = JSON.stringify(card);
  return { json, etag: `"${createHash('sha256').update(json).digest('base64url').slice(0, 27)}"` };
}

/** True when the request's validators say the client's copy is current (RFC 9110 §13.1.2, §13.2.2: If-None-Match wins). */
function notModified(request: FastifyRequest, etag: string, lastModified: Date): boolean {
  const inm = request.headers['if-none-match'];
  if (inm !== undefined) {
    return inm
      .split(',')
      .map((t) => t.trim().replace(/^W\//, ''))
      .some((t) => t === '*' || t === etag);
  }
  const ims = Date.parse(request.headers['if-modified-since'] ?? '');
  return !Number.isNaN(ims) && Math.floor(lastModified.getTime() / 1000) <= Math.floor(ims / 1000);
}

/**
 * GET /.well-known/agent-card.json: the v0.3 form (with v1.0's `supportedInterfaces`) by
 * default, the v1.0 form under `A2A-Version: 1.0`. Cacheable: Cache-Control max-age, a strong
 * ETag per form, Last-Modified (when the card was built), 304 for a current copy, and
 * `Vary: A2A-Version` since the header picks the form.
 */
export async function agentCardRoutes(app: FastifyInstance, opts: AgentCardRoutesOptions): Promise<void> {
  const maxAge = opts.maxAgeSeconds ?? 300;
  let built: { card: AgentCard; v03: CardBody; v1: CardBody; at: Date } | undefined;
  const current = () => {
    const card = opts.card();
    if (built?.card !== card) {
      const v03 = cardBody(cardToV03Json(card, opts.securityV03));
      const v1 = cardBody(cardToV1Json(card));
      // A card rebuilt with the same content (PORT=0 before listen builds one per call) keeps its date.
      const same = built !== undefined && built.v03.etag === v03.etag && built.v1.etag === v1.etag;
      built = { card, v03, v1, at: same && built ? built.at : new Date() };
    }
    return built;
  };
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const v = String(request.headers['a2a-version'] ?? '').trim();
    const b = current();
    const body = v.startsWith('1') ? b.v1 : b.v03;
    void reply
      .header('cache-control', `public, max-age=${maxAge}`)
      .header('etag', body.etag)
      .header('last-modified', b.at.toUTCString())
      .header('vary', 'A2A-Version');
    if (notModified(request, body.etag, b.at)) return reply.code(304).send();
    return reply.type('application/json; charset=utf-8').send(body.json);
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
