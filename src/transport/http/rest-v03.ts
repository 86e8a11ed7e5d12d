/**
 * A2A v0.3's HTTP+JSON binding, on the same `/v1/...` paths as v1.0's: a request that names no
 * A2A-Version (or 0.3) speaks 0.3 (v1.0 §3.6.2), so the v1.0 binding hands it here. The routes
 * are the v0.3 `a2a.proto`'s (`POST /v1/message:send`, `:stream`, `GET /v1/tasks/{id}`,
 * `:cancel`, `:subscribe`, the push-config routes, `GET /v1/card`), the bodies its proto JSON
 * (protocol/proto-json-v03.ts). Each request becomes the v0.3 JSON-RPC call it means and runs
 * through the JSON-RPC route's own path (startA2a): the same params checks, blocking default,
 * Last-Event-ID resume, SSE ids and `final` on a pause. Errors are v0.3's REST bodies,
 * `{code, message}` with the JSON-RPC code, under the HTTP status of protocol/errors.ts's table.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import type { JsonObject } from '../../protocol/a2a.js';
import { httpStatusOf, RPC_ERROR_CODE, STORE_RETRY_AFTER_S, streamFailure } from '../../protocol/errors.js';
import {
  agentCardToProtoJson,
  pushConfigParamsFromProtoJson,
  pushConfigToProtoJson,
  sendParamsFromProtoJson,
  sendResultToProtoJson,
  streamEventToProtoJson,
  taskToProtoJson,
} from '../../protocol/proto-json-v03.js';
import { requestedVersion } from './a2a-version.js';
import { legacyFrame, startA2a } from './jsonrpc-route.js';
import type { Envelope } from './jsonrpc-route.js';
import { objectBody } from './json-body.js';
import { intQuery, taskTarget } from './rest-common.js';
import { writeSse } from './sse.js';
import type { SseOptions } from './sse.js';

export interface RestV03Options {
  /** The SDK's v0.3 JSON-RPC handler over the request handler: each REST call runs through it. */
  legacy: LegacyJsonRpcTransportHandler;
  /** Authentication is on: a request without an authenticated caller is refused (the hook's second lock). */
  authenticated: boolean;
  heartbeatMs: number;
  stallTimeoutMs: number;
  metrics?: SseOptions['metrics'];
  /** Aborted when the server shuts down: open streams end cleanly (see SseOptions.closing). */
  closing?: AbortSignal;
}

/** True when a request speaks v0.3 (it names no A2A-Version, or 0.3): this binding answers it. */
export function speaksV03(request: FastifyRequest): boolean {
  const requested = requestedVersion(request);
  return 'version' in requested && requested.version === '0.3';
}

/** A v0.3 REST error body: the JSON-RPC code and message (what the v0.3 SDKs read), and its data if any. */
export function v03ErrorBody(code: number, message: string, data?: unknown): { code: number; message: string; data?: unknown } {
  return data === undefined ? { code, message } : { code, message, data };
}

function refuse(reply: FastifyReply, code: number, message: string, data?: unknown): FastifyReply {
  if (code === RPC_ERROR_CODE.STORE_UNAVAILABLE) void reply.header('retry-after', String(STORE_RETRY_AFTER_S));
  return reply
    .code(httpStatusOf(code))
    .type('application/json')
    .send(v03ErrorBody(code, message, data));
}

/** One v0.3 call: its JSON-RPC method and params, how its result becomes proto JSON, and its status. */
interface Call {
  method: string;
  params: JsonObject;
  encode?: (result: JsonObject) => JsonObject | undefined;
  status?: number;
}

/** `historyLength`, or its proto name `history_length`. */
function historyLength(query: Record<string, unknown>): number | undefined {
  return intQuery(query, query.historyLength !== undefined ? 'historyLength' : 'history_length');
}

/** `tasks/{id}[:action]` and `tasks/{id}/pushNotificationConfigs[/{configId}]` by method. */
function taskCall(method: string, segments: string[], request: FastifyRequest): Call | undefined {
  const [head = '', sub, configId, ...rest] = segments;
  if (rest.length > 0) return undefined;
  const { id, action } = taskTarget(head);
  if (id === '') return undefined;
  if (sub === undefined) {
    if (action === '' && method === 'GET') {
      const n = historyLength(request.query as Record<string, unknown>);
      return { method: 'tasks/get', params: n === undefined ? { id } : { id, historyLength: n }, encode: taskToProtoJson };
    }
    if (action === 'cancel' && method === 'POST') return { method: 'tasks/cancel', params: { id }, encode: taskToProtoJson };
    if (action === 'subscribe' && (method === 'GET' || method === 'POST')) return { method: 'tasks/resubscribe', params: { id } };
    return undefined;
  }
  if (sub !== 'pushNotificationConfigs' || action !== '') return undefined;
  if (configId === undefined) {
    if (method === 'POST') {
      const params = pushConfigParamsFromProtoJson(objectBody(request), id);
      return { method: 'tasks/pushNotificationConfig/set', params, encode: pushConfigToProtoJson, status: 201 };
    }
    if (method !== 'GET') return undefined;
    const encode = (list: JsonObject) => ({ configs: (list as unknown as JsonObject[]).map(pushConfigToProtoJson) });
    return { method: 'tasks/pushNotificationConfig/list', params: { id }, encode };
  }
  const params = { id, pushNotificationConfigId: configId };
  if (method === 'GET') return { method: 'tasks/pushNotificationConfig/get', params, encode: pushConfigToProtoJson };
  if (method === 'DELETE') return { method: 'tasks/pushNotificationConfig/delete', params, encode: () => undefined, status: 204 };
  return undefined;
}

/** The v0.3 call a request means, by method and path (below the binding's `/v1`); undefined: no such route. */
function v03Call(request: FastifyRequest, path: string): Call | undefined {
  const segments = path
    .split('/')
    .filter((s) => s !== '')
    .map(decodeURIComponent);
  const [first, ...rest] = segments;
  const method = request.method;
  if (first === 'message:send' && rest.length === 0 && method === 'POST') {
    return { method: 'message/send', params: sendParamsFromProtoJson(objectBody(request)), encode: sendResultToProtoJson };
  }
  if (first === 'message:stream' && rest.length === 0 && method === 'POST') {
    return { method: 'message/stream', params: sendParamsFromProtoJson(objectBody(request)) };
  }
  if (first === 'card' && rest.length === 0 && method === 'GET') {
    return { method: 'agent/getAuthenticatedExtendedCard', params: {}, encode: agentCardToProtoJson };
  }
  if (first === 'tasks' && rest.length > 0) return taskCall(method, rest, request);
  return undefined;
}

/** Answers a v0.3 request on the binding; `path` is below `/v1`. */
export async function answerV03(request: FastifyRequest, reply: FastifyReply, path: string, opts: RestV03Options): Promise<FastifyReply> {
  const { caller } = request.a2a;
  // Never reached through the authentication hook; a second lock in case a refactoring loses it.
  if (opts.authenticated && caller === undefined)
    return refuse(reply, RPC_ERROR_CODE.UNAUTHORIZED, 'Unauthorized: the request was not authenticated');
  let call: Call | undefined;
  try {
    call = v03Call(request, path);
  } catch (err) {
    return refuse(reply, RPC_ERROR_CODE.INVALID_PARAMS, err instanceof Error ? err.message : String(err));
  }
  if (call === undefined) {
    const message =
      `No A2A v0.3 HTTP+JSON route for ${request.method} /v1${path}; a request without A2A-Version speaks 0.3. ` +
      'For the v1.0 binding (GET /v1/tasks, /v1/extendedAgentCard, …) send the header A2A-Version: 1.0';
    return refuse(reply, RPC_ERROR_CODE.METHOD_NOT_FOUND, message);
  }
  const body = { jsonrpc: '2.0', id: 1, method: call.method, params: call.params };
  const req = { id: 1, version: '0.3' as const, body, method: call.method, caller, notification: false };
  const outcome = await startA2a(request, opts.legacy, req);
  if (outcome.kind !== 'stream') {
    const { error, result } = outcome.envelope;
    if (error !== undefined) return refuse(reply, error.code, error.message, error.data);
    const body = call.encode?.(result as JsonObject);
    if (call.status === 204 || body === undefined) return reply.code(204).send();
    return reply
      .code(call.status ?? 200)
      .type('application/json')
      .send(body);
  }
  await writeSse(reply, outcome.stream, outcome.first, {
    heartbeatMs: opts.heartbeatMs,
    stallTimeoutMs: opts.stallTimeoutMs,
    metrics: opts.metrics,
    closing: opts.closing,
    frame: (item) => {
      const next = request.a2a.nextSse();
      return { data: streamEventToProtoJson(legacyFrame(item as Envelope, next).result as JsonObject), id: next.id };
    },
    onError: (err) => {
      request.log.error({ err }, 'stream failed after it started');
      const failure = streamFailure(err);
      return v03ErrorBody(failure.code, failure.message, failure.data);
    },
  });
  return reply;
}
