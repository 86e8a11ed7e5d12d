/**
 * The REST side routes of the legacy dialect (gemini-cli's own a2a-server): `POST /tasks`,
 * `GET /tasks/metadata`, `GET /tasks/:taskId/metadata`, `GET /listCommands`, `POST /executeCommand`.
 * Thin: authentication (the same hook as `POST /`) and the HTTP answer; the agent decides.
 * The app-wide Host/Origin guard applies to them as to every route. Bodies are JSON only: a
 * request that declares any other media type (text/plain, a form: what a cross-site page can
 * send without a preflight) is refused with 415 before it is read.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Caller } from '../../protocol/caller.js';
import { contentTypeUnsupported, httpErrorOf, STORE_RETRY_AFTER_S } from '../../protocol/errors.js';
import { authenticationHook, useRequestContext } from './request-context.js';
import type { Authenticate } from './request-context.js';
import { acceptOnlyJson, nonJsonMediaType, UNPARSABLE } from './json-body.js';
import { checkId, checkRequestFields } from './validate-params.js';

export interface RestAnswer {
  status: number;
  body?: unknown;
}

/** What the routes call; refusals are thrown as wire errors (invalidParams → 400, taskNotFound → 404, forbidden → 403). */
export interface LegacyRoutesHandler {
  createTask(body: unknown, caller: Caller | undefined): Promise<RestAnswer>;
  listCommands(): RestAnswer;
  executeCommand(body: unknown, caller: Caller | undefined): Promise<RestAnswer>;
  taskMetadata(taskId: string, caller: Caller | undefined): Promise<RestAnswer>;
  allTaskMetadata(caller: Caller | undefined): Promise<RestAnswer>;
}

export interface LegacyRoutesOptions {
  handler: LegacyRoutesHandler;
  authenticate?: Authenticate;
}

async function send(request: FastifyRequest, reply: FastifyReply, work: () => Promise<RestAnswer> | RestAnswer): Promise<FastifyReply> {
  try {
    if (request.body === UNPARSABLE) return await reply.code(400).send({ error: 'The request body is not valid JSON' });
    const { status, body } = await work();
    if (body === undefined) return await reply.code(status).send();
    // Always JSON, a bare string included (POST /tasks answers the new task's id as a JSON string).
    return await reply.code(status).type('application/json; charset=utf-8').send(JSON.stringify(body));
  } catch (err) {
    const e = httpErrorOf(err);
    if (e.internal) request.log.error({ err }, `${request.method} ${request.url} failed`);
    if (e.status === 503) void reply.header('retry-after', String(STORE_RETRY_AFTER_S));
    return reply.code(e.status).send({ error: e.message });
  }
}

/**
 * The checks every JSON-RPC method's params get (validate-params.ts), on a route's body and
 * path: ids bounded and free of control characters, text storable and bounded. The message names
 * the field (`body.contextId`, `taskId`).
 */
function badFields(request: FastifyRequest): string | undefined {
  const params = request.params as Record<string, string> | undefined;
  for (const [key, value] of Object.entries(params ?? {})) {
    const bad = checkId(value, key);
    if (bad !== undefined) return bad;
  }
  return request.body === UNPARSABLE ? undefined : checkRequestFields(request.body, 'body');
}

export async function legacyRoutes(app: FastifyInstance, opts: LegacyRoutesOptions): Promise<void> {
  const { handler } = opts;
  acceptOnlyJson(app);
  await useRequestContext(app);
  app.addHook('preHandler', async (request, reply) => {
    const type = nonJsonMediaType(request);
    if (type !== undefined) return reply.code(415).send({ error: contentTypeUnsupported(type).message });
    const bad = badFields(request);
    if (bad !== undefined) return reply.code(400).send({ error: bad });
  });
  const onRequest = authenticationHook(opts.authenticate);
  const caller = (request: FastifyRequest) => request.a2a.caller;
  app.post('/tasks', { onRequest }, (request, reply) => send(request, reply, () => handler.createTask(request.body, caller(request))));
  app.get('/tasks/metadata', { onRequest }, (request, reply) => send(request, reply, () => handler.allTaskMetadata(caller(request))));
  app.get<{ Params: { taskId: string } }>('/tasks/:taskId/metadata', { onRequest }, (request, reply) =>
    send(request, reply, () => {
      request.a2a.aboutTask(request.params.taskId);
      return handler.taskMetadata(request.params.taskId, caller(request));
    }),
  );
  app.get('/listCommands', { onRequest }, (request, reply) => send(request, reply, () => handler.listCommands()));
  app.post('/executeCommand', { onRequest }, (request, reply) =>
    send(request, reply, () => handler.executeCommand(request.body, caller(request))),
  );
}
