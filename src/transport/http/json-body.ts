/**
 * Request bodies as the A2A bindings read them. JSON (`application/json`, and A2A's own
 * `application/a2a+json`) is parsed once; a body that is not valid JSON arrives as
 * {@link UNPARSABLE}, so each binding answers it in its own error format. A binding that
 * reads only JSON marks every other media type {@link UNSUPPORTED_MEDIA} and refuses it with
 * ContentTypeNotSupportedError (-32005, HTTP 415) without parsing it.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { contentTypeUnsupported, invalidParams } from '../../protocol/errors.js';

export const UNPARSABLE = Symbol('unparsable-json');
export const UNSUPPORTED_MEDIA = Symbol('unsupported-media-type');

const JSON_TYPES = new Set(['application/json', 'application/a2a+json']);

function parseJson(_req: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void): void {
  try {
    done(null, JSON.parse(body as string));
  } catch {
    done(null, UNPARSABLE);
  }
}

/** App-wide: `application/json` bodies are parsed (unparsable ones marked). */
export function parseJsonBodies(app: FastifyInstance): void {
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parseJson);
}

/** Inside a binding's plugin: `application/a2a+json` reads as JSON; any other type is marked, not parsed. */
export function acceptOnlyJson(app: FastifyInstance): void {
  app.addContentTypeParser('application/a2a+json', { parseAs: 'string' }, parseJson);
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, _body, done) => done(null, UNSUPPORTED_MEDIA));
}

/** The declared media type when it is not JSON; undefined for JSON or a request without one. */
export function nonJsonMediaType(request: FastifyRequest): string | undefined {
  const type = request.headers['content-type'];
  if (type === undefined || JSON_TYPES.has(type.split(';', 1)[0]?.trim().toLowerCase() ?? '')) return undefined;
  return type;
}

/** The JSON object a request must carry (a send, a push config), or the refusal a client can act on. */
export function objectBody(request: FastifyRequest): Record<string, unknown> {
  const body: unknown = request.body;
  if (body === UNSUPPORTED_MEDIA) throw contentTypeUnsupported(String(request.headers['content-type']));
  if (body === UNPARSABLE) throw invalidParams('The request body is not valid JSON');
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidParams('The request body must be a JSON object');
  return body as Record<string, unknown>;
}
