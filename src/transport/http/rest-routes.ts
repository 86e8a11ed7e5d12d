/**
 * The A2A v1.0 HTTP+JSON binding (specification §11), mounted under a prefix (`/v1`) that the
 * card's `HTTP+JSON` interface URL names: `POST /message:send`, `POST /message:stream` (SSE),
 * `GET /tasks`, `GET /tasks/{id}`, `POST /tasks/{id}:cancel`, `GET|POST /tasks/{id}:subscribe`
 * (SSE; the proto says GET, the SDK client POSTs), the push-config routes and
 * `GET /extendedAgentCard`. Thin, like the JSON-RPC route: the same request handler, the same
 * authentication hook, Last-Event-ID and SSE writer; errors are google.rpc.Status bodies with
 * the HTTP status of protocol/errors.ts's one table (§11.6, §5.4).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServerCallContext } from '@a2a-js/sdk/server';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import {
  AgentCard,
  ListTaskPushNotificationConfigsResponse,
  ListTasksResponse,
  SendMessageRequest,
  SendMessageResponse,
  StreamResponse,
  Task,
  TaskPushNotificationConfig,
  TaskState,
  taskStateFromJSON,
} from '@a2a-js/sdk';
import {
  contentTypeUnsupported,
  invalidParams,
  restErrorBody,
  restErrorOf,
  RETRY_INFO,
  STORE_RETRY_AFTER_S,
  streamFailure,
  type RpcErrorCode,
  RPC_ERROR_CODE,
  versionUnsupported,
} from '../../protocol/errors.js';
import { requestedVersion } from './a2a-version.js';
import { answerV03, speaksV03, v03ErrorBody } from './rest-v03.js';
import { intQuery, taskTarget } from './rest-common.js';
import { authenticationHook, useRequestContext } from './request-context.js';
import type { Authenticate } from './request-context.js';
import { acceptOnlyJson, nonJsonMediaType, objectBody } from './json-body.js';
import { checkId, checkRequestFields, validateParams } from './validate-params.js';
import { writeSse } from './sse.js';
import type { SseOptions } from './sse.js';

export interface RestRoutesOptions {
  handler: A2ARequestHandler;
  heartbeatMs: number;
  /** A stream whose client has not read for this long while the server waits to write is closed (default 30 s). */
  stallTimeoutMs?: number;
  authenticate?: Authenticate;
  /** Counts the SSE streams (absent: not counted). */
  metrics?: SseOptions['metrics'];
  /** Aborted when the server shuts down: open streams end cleanly (see SseOptions.closing). */
  closing?: AbortSignal;
}

/** What every stream of the binding is written with. */
type SseSettings = Required<Pick<RestRoutesOptions, 'heartbeatMs' | 'stallTimeoutMs'>> & Pick<RestRoutesOptions, 'metrics' | 'closing'>;

/** The prefix the binding is mounted under; the card's HTTP+JSON interface URL ends with it. */
export const REST_PREFIX = '/v1';

type Req = FastifyRequest<{ Params: Record<string, string>; Querystring: Record<string, string | undefined> }>;

/**
 * The request's v1.0 call context (request-context.ts). Refuses an A2A-Version it does not
 * know (0.3 requests, named or not, went to rest-v03.ts before).
 */
function contextOf(request: FastifyRequest): ServerCallContext {
  const requested = requestedVersion(request);
  if (!('version' in requested && requested.version === '1.0'))
    throw versionUnsupported('unsupported' in requested ? requested.unsupported : requested.version);
  return request.a2a.callContext('1.0');
}

function sendRequest(request: FastifyRequest, method: 'SendMessage' | 'SendStreamingMessage'): SendMessageRequest {
  const body = objectBody(request);
  const bad = validateParams(method, body, '1.0');
  if (bad !== undefined) throw invalidParams(bad.replace(/^params\b/, 'body'));
  return SendMessageRequest.fromJSON(body);
}

function sendError(request: FastifyRequest, reply: FastifyReply, err: unknown): FastifyReply {
  const e = restErrorOf(err);
  if (e.internal) request.log.error({ err }, `${request.method} ${request.url} failed`);
  else request.log.debug({ err }, 'refused');
  if (e.code === RPC_ERROR_CODE.STORE_UNAVAILABLE) void reply.header('retry-after', String(STORE_RETRY_AFTER_S));
  // The v0.3 binding's error body carries the JSON-RPC code (what a v0.3 client reads), under the same status.
  if (speaksV03(request)) return reply.code(e.status).type('application/json').send(v03ErrorBody(e.code, e.body.error.message));
  return reply.code(e.status).type('application/json').send(e.body);
}

/** Runs `work`; its result is the JSON body (`undefined`: 204), a refusal the REST error body. */
async function answer(request: FastifyRequest, reply: FastifyReply, work: () => Promise<unknown>, status = 200): Promise<FastifyReply> {
  try {
    const body = await work();
    if (body === undefined) return await reply.code(204).send();
    return await reply.code(status).type('application/json').send(body);
  } catch (err) {
    return sendError(request, reply, err);
  }
}

/** An SSE answer: each StreamResponse as one `data:` JSON, with the event-log id; refusals before the first event are plain errors. */
async function stream(
  request: FastifyRequest,
  reply: FastifyReply,
  opts: SseSettings,
  open: (ctx: ServerCallContext) => AsyncGenerator<StreamResponse, void, undefined>,
): Promise<FastifyReply> {
  let events: AsyncGenerator<StreamResponse, void, undefined>;
  let first: IteratorResult<StreamResponse>;
  try {
    events = open(contextOf(request));
    first = await events.next(); // refusals happen here, before any SSE byte
  } catch (err) {
    return sendError(request, reply, err);
  }
  await writeSse(reply, events, first, {
    heartbeatMs: opts.heartbeatMs,
    stallTimeoutMs: opts.stallTimeoutMs,
    metrics: opts.metrics,
    closing: opts.closing,
    frame: (item) => ({
      data: StreamResponse.toJSON(item as StreamResponse),
      id: request.a2a.nextSseId(),
    }),
    onError: (err) => {
      request.log.error({ err }, 'stream failed after it started');
      const failure = streamFailure(err);
      return restErrorBody(failure.code as RpcErrorCode, failure.message, failure.data ? [RETRY_INFO] : []).body;
    },
  });
  return reply;
}

/** The request's path below the binding's prefix (`/v1`), for the v0.3 binding's own routing. */
function pathBelowPrefix(request: FastifyRequest): string {
  const { pathname } = new URL(request.url, 'http://localhost');
  return pathname.startsWith(REST_PREFIX) ? pathname.slice(REST_PREFIX.length) : pathname;
}

const notFound = (request: FastifyRequest) =>
  restErrorBody(RPC_ERROR_CODE.METHOD_NOT_FOUND, `No HTTP+JSON route for ${request.method} ${request.url.split('?')[0]}`).body;

function taskRoutes(app: FastifyInstance, handler: A2ARequestHandler, sse: SseSettings) {
  app.get('/tasks', (request: Req, reply) =>
    answer(request, reply, async () => {
      const q = request.query;
      const status = q.status ? taskStateFromJSON(q.status) : 0;
      if (status === TaskState.UNRECOGNIZED) throw invalidParams(`status "${q.status}" is not a task state`);
      const res = await handler.listTasks(
        {
          tenant: '',
          contextId: q.contextId ?? '',
          status,
          pageSize: intQuery(q, 'pageSize', 1, 100),
          pageToken: q.pageToken ?? '',
          historyLength: intQuery(q, 'historyLength'),
          statusTimestampAfter: q.statusTimestampAfter || undefined,
          includeArtifacts: q.includeArtifacts === 'true',
        },
        contextOf(request),
      );
      return ListTasksResponse.toJSON(res);
    }),
  );
  const byTask = async (request: Req, reply: FastifyReply) => {
    const { id, action } = taskTarget(request.params.target ?? '');
    if (id === '') return reply.code(404).send(notFound(request));
    if (action === 'subscribe') return stream(request, reply, sse, (ctx) => handler.resubscribe({ id, tenant: '' }, ctx));
    if (action === '' && request.method === 'GET') {
      return answer(request, reply, async () => {
        const historyLength = intQuery(request.query, 'historyLength');
        return Task.toJSON(await handler.getTask({ id, tenant: '', historyLength }, contextOf(request)));
      });
    }
    if (action === 'cancel' && request.method === 'POST') {
      return answer(request, reply, async () =>
        Task.toJSON(await handler.cancelTask({ id, tenant: '', metadata: {} }, contextOf(request))),
      );
    }
    return reply.code(404).send(notFound(request));
  };
  app.get('/tasks/:target', byTask);
  app.post('/tasks/:target', byTask);
}

function pushRoutes(app: FastifyInstance, handler: A2ARequestHandler) {
  const base = '/tasks/:taskId/pushNotificationConfigs';
  app.post(base, (request: Req, reply) =>
    answer(
      request,
      reply,
      async () => {
        const body = objectBody(request);
        // The checks JSON-RPC's CreateTaskPushNotificationConfig params get, before the SDK's converter walks the body.
        const bad = checkRequestFields(body, 'body');
        if (bad !== undefined) throw invalidParams(bad);
        const config = TaskPushNotificationConfig.fromJSON({ ...body, taskId: request.params.taskId });
        return TaskPushNotificationConfig.toJSON(await handler.createTaskPushNotificationConfig(config, contextOf(request)));
      },
      201,
    ),
  );
  app.get(base, (request: Req, reply) =>
    answer(request, reply, async () => {
      const res = await handler.listTaskPushNotificationConfigs(
        { taskId: request.params.taskId ?? '', pageSize: 0, pageToken: '', tenant: '' },
        contextOf(request),
      );
      return ListTaskPushNotificationConfigsResponse.toJSON(res);
    }),
  );
  app.get(`${base}/:configId`, (request: Req, reply) =>
    answer(request, reply, async () => {
      const params = { taskId: request.params.taskId ?? '', id: request.params.configId ?? '', tenant: '' };
      return TaskPushNotificationConfig.toJSON(await handler.getTaskPushNotificationConfig(params, contextOf(request)));
    }),
  );
  app.delete(`${base}/:configId`, (request: Req, reply) =>
    answer(request, reply, async () => {
      const params = { taskId: request.params.taskId ?? '', id: request.params.configId ?? '', tenant: '' };
      await handler.deleteTaskPushNotificationConfig(params, contextOf(request));
      return undefined;
    }),
  );
}

/**
 * Ids in the path (a task's, a push config's) and query parameters get the checks every
 * JSON-RPC method's params get (validate-params.ts): bounded, no control characters, valid
 * Unicode. Bodies are checked where they are read (validateParams).
 */
function badPathOrQuery(request: FastifyRequest): string | undefined {
  const params = (request.params ?? {}) as Record<string, string>;
  for (const [key, value] of Object.entries(params)) {
    if (key === '*') continue; // the not-found route's rest of the path: the v0.3 binding checks its ids
    const bad = key === 'target' ? checkId(taskTarget(value).id, 'id') : checkId(value, key);
    if (bad !== undefined) return bad;
  }
  return checkRequestFields({ ...(request.query as Record<string, unknown>) }, 'query');
}

export async function restRoutes(app: FastifyInstance, opts: RestRoutesOptions): Promise<void> {
  const { handler } = opts;
  const sse: SseSettings = {
    heartbeatMs: opts.heartbeatMs,
    stallTimeoutMs: opts.stallTimeoutMs ?? 30_000,
    metrics: opts.metrics,
    closing: opts.closing,
  };
  // application/json is parsed app-wide (a bad body arrives as UNPARSABLE); A2A's own type reads the same.
  acceptOnlyJson(app);
  await useRequestContext(app);
  const v03 = { legacy: new LegacyJsonRpcTransportHandler(handler), authenticated: opts.authenticate !== undefined, ...sse };
  app.addHook('preHandler', async (request, reply) => {
    // §11.1: JSON only. Any request that declares another media type is refused, as the SDK's server does.
    const type = nonJsonMediaType(request);
    if (type !== undefined) return sendError(request, reply, contentTypeUnsupported(type));
    const bad = badPathOrQuery(request);
    if (bad !== undefined) return sendError(request, reply, invalidParams(bad));
    // A request that names no A2A-Version speaks 0.3 (§3.6.2): the v0.3 binding on the same paths answers it.
    if (speaksV03(request)) return answerV03(request, reply, pathBelowPrefix(request), v03);
  });
  app.addHook(
    'onRequest',
    authenticationHook(opts.authenticate, (message, request) =>
      // Each version's error body: v0.3's carries the JSON-RPC code.
      speaksV03(request) ? v03ErrorBody(RPC_ERROR_CODE.UNAUTHORIZED, message) : restErrorBody(RPC_ERROR_CODE.UNAUTHORIZED, message).body,
    ),
  );
  app.setErrorHandler((err: { statusCode?: number; message: string }, request, reply) => {
    // Fastify's own refusals (body too large, …) keep their status, in this binding's body.
    const status = err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    if (status === 500) return sendError(request, reply, err);
    if (speaksV03(request)) return reply.code(status).send(v03ErrorBody(RPC_ERROR_CODE.INVALID_REQUEST, err.message));
    return reply.code(status).send({ error: { code: status, status: 'INVALID_ARGUMENT', message: err.message, details: [] } });
  });
  app.setNotFoundHandler((request, reply) =>
    speaksV03(request) ? answerV03(request, reply, pathBelowPrefix(request), v03) : reply.code(404).send(notFound(request)),
  );

  app.post('/message::send', (request, reply) =>
    answer(request, reply, async () => {
      const result = await handler.sendMessage(sendRequest(request, 'SendMessage'), contextOf(request));
      const payload = 'messageId' in result ? { $case: 'message' as const, value: result } : { $case: 'task' as const, value: result };
      return SendMessageResponse.toJSON({ payload });
    }),
  );
  app.post('/message::stream', (request, reply) =>
    stream(request, reply, sse, (ctx) => handler.sendMessageStream(sendRequest(request, 'SendStreamingMessage'), ctx)),
  );
  taskRoutes(app, handler, sse);
  pushRoutes(app, handler);
  app.get('/extendedAgentCard', (request, reply) =>
    answer(request, reply, async () =>
      AgentCard.toJSON(await handler.getAuthenticatedExtendedAgentCard({ tenant: '' }, contextOf(request))),
    ),
  );
}
