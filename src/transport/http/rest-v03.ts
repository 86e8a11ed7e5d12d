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
import { CTX_SSE_IDS } from '../../protocol/a2a.js';
import type { JsonObject } from '../../protocol/a2a.js';
import { httpStatusOf, invalidParams, RPC_ERROR_CODE } from '../../protocol/errors.js';
import {
  agentCardToProtoJson,
  pushConfigParamsFromProtoJson,
  pushConfigToProtoJson,
  sendParamsFromProtoJson,
  sendResultToProtoJson,
  streamEventToProtoJson,
  taskToProtoJson,
} from '../../protocol/proto-json-v03.js';
import { fixLegacyFinal, requestCaller, startA2a } from './jsonrpc-route.js';
import type { A2aHandlers, Envelope } from './jsonrpc-route.js';
import { UNPARSABLE } from './json-body.js';
import { writeSse } from './sse.js';

export interface RestV03Options {
  handlers: A2aHandlers;
  heartbeatMs: number;
  stallTimeoutMs: number;
}

/** A v0.3 REST error body: the JSON-RPC code and message (what the v0.3 SDKs read). */
export type RestV03Error = { code: number; message: string; data?: unknown };

function refuse(reply: FastifyReply, code: number, message: string): FastifyReply {
  return reply
    .code(httpStatusOf(code))
    .type('application/json')
    .send({ code, message } satisfies RestV03Error);
}

/** One v0.3 call: its JSON-RPC method and params, how its result becomes proto JSON, and its status. */
interface Call {
  method: string;
  params: JsonObject;
  encode?: (result: JsonObject) => JsonObject | undefined;
  status?: number;
}

function bodyOf(request: FastifyRequest): JsonObject {
  const body: unknown = request.body;
  if (body === UNPARSABLE) throw invalidParams('The request body is not valid JSON');
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidParams('The request body must be a JSON object');
  return body as JsonObject;
}

function historyLength(query: Record<string, unknown>): number | undefined {
  const raw = query.historyLength ?? query.history_length;
  if (raw === undefined || raw === '') return undefined;
  if (typeof raw !== 'string' || !/^\d{1,9}$/.test(raw))
    throw invalidParams(`historyLength must be a non-negative integer, got ${JSON.stringify(raw)}`);
  return Number(raw);
}

/** `tasks/{id}[:action]` and `tasks/{id}/pushNotificationConfigs[/{configId}]` by method. */
function taskCall(method: string, segments: string[], request: FastifyRequest): Call | undefined {
  const [head = '', sub, configId, ...rest] = segments;
  if (rest.length > 0) return undefined;
  const colon = head.lastIndexOf(':');
  const id = colon < 0 ? head : head.slice(0, colon);
  const action = colon < 0 ? '' : head.slice(colon + 1);
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
      const params = pushConfigParamsFromProtoJson(bodyOf(request), id);
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
    return { method: 'message/send', params: sendParamsFromProtoJson(bodyOf(request)), encode: sendResultToProtoJson };
  }
  if (first === 'message:stream' && rest.length === 0 && method === 'POST') {
    return { method: 'message/stream', params: sendParamsFromProtoJson(bodyOf(request)) };
  }
  if (first === 'card' && rest.length === 0 && method === 'GET') {
    return { method: 'agent/getAuthenticatedExtendedCard', params: {}, encode: agentCardToProtoJson };
  }
  if (first === 'tasks' && rest.length > 0) return taskCall(method, rest, request);
  return undefined;
}

/** Answers a v0.3 request on the binding; `path` is below `/v1`. */
export async function answerV03(request: FastifyRequest, reply: FastifyReply, path: string, opts: RestV03Options): Promise<FastifyReply> {
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
  const req = { id: 1, version: '0.3' as const, body, method: call.method, caller: requestCaller(request), notification: false };
  const outcome = await startA2a(request, opts.handlers, req);
  if (outcome.kind !== 'stream') {
    const { error, result } = outcome.envelope;
    if (error !== undefined) return refuse(reply, error.code, error.message);
    const body = call.encode?.(result as JsonObject);
    if (call.status === 204 || body === undefined) return reply.code(204).send();
    return reply
      .code(call.status ?? 200)
      .type('application/json')
      .send(body);
  }
  const { ctx } = outcome;
  await writeSse(reply, outcome.stream, outcome.first, {
    heartbeatMs: opts.heartbeatMs,
    stallTimeoutMs: opts.stallTimeoutMs,
    frame: (item) => {
      const e = fixLegacyFinal(item as Envelope);
      const id = (ctx.state.get(CTX_SSE_IDS) as Array<number | undefined> | undefined)?.shift();
      if (e.error !== undefined) return { data: { code: e.error.code, message: e.error.message }, id, event: 'error' };
      return { data: streamEventToProtoJson(e.result as JsonObject), id };
    },
    onError: (err) => {
      request.log.error({ err }, 'stream failed after it started');
      return { code: RPC_ERROR_CODE.INTERNAL_ERROR, message: 'Internal error: the event stream failed' } satisfies RestV03Error;
    },
  });
  return reply;
}
