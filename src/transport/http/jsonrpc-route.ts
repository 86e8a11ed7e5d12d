/**
 * POST / — one JSON-RPC endpoint for both A2A versions: v0.3 method names by default,
 * v1.0 names under `A2A-Version: 1.0`. The SDK's transport handlers parse and serialise;
 * this plugin adds what they lack: strict params checks (INVALID_PARAMS naming the field),
 * v0.3 `message/send` blocking by default, `final: true` on a v0.3 pause, and SSE.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { JsonRpcTransportHandler } from '@a2a-js/sdk/server';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { isLegacyJsonRpcMethod, isV1JsonRpcMethod, legacyJsonRpcToV1Method, v1MethodToLegacyJsonRpc } from '@a2a-js/sdk/compat/v0_3';
import { contentTypeUnsupported, RPC_ERROR_CODE, storeUnavailableError, streamFailure } from '../../protocol/errors.js';
import { phaseEnd, phaseSpent, phaseStart, probing } from '../../protocol/probe.js';
import { isPaused } from '../../protocol/task-states.js';
import { CTX_SSE_OWN_METADATA } from '../../protocol/a2a.js';
import type { JsonObject, SseTag } from '../../protocol/a2a.js';
import type { Caller } from '../../protocol/caller.js';
import { checkRequestFields, validateParams } from './validate-params.js';
import type { WireVersion } from './validate-params.js';
import { writeSse } from './sse.js';
import type { SseOptions } from './sse.js';
import { acceptOnlyJson, nonJsonMediaType, UNPARSABLE } from './json-body.js';
import { requestedVersion } from './a2a-version.js';
import { authenticationHook, useRequestContext } from './request-context.js';
import type { Authenticate } from './request-context.js';

export type { Authenticate } from './request-context.js';

/** A JSON-RPC method outside A2A (extension methods such as `commands/get`), the same under both versions. */
export type ExtensionMethod = (params: unknown, caller: Caller | undefined) => Promise<unknown>;

export interface JsonRpcRoutesOptions {
  handler: A2ARequestHandler;
  heartbeatMs: number;
  /** A stream whose client has not read for this long while the server waits to write is closed (default 30 s). */
  stallTimeoutMs?: number;
  /** Extension methods by name; they answer plain JSON results (no SSE). */
  extensionMethods?: Readonly<Record<string, ExtensionMethod>>;
  authenticate?: Authenticate;
  /** Counts the SSE streams (absent: not counted). */
  metrics?: SseOptions['metrics'];
  /** Aborted when the server shuts down: open streams end cleanly (see SseOptions.closing). */
  closing?: AbortSignal;
}

export type Envelope = {
  jsonrpc: '2.0';
  id: string | number | null;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
};

export function rpcError(id: Envelope['id'], code: number, message: string): Envelope {
  return { jsonrpc: '2.0', id, error: { code, message } };
}

function requestId(body: unknown): Envelope['id'] {
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/**
 * An internal error (INTERNAL_ERROR) keeps its details in the log: its message may carry SQL,
 * paths or values a client must not see.
 */
function hideInternal(envelope: Envelope, request: FastifyRequest): Envelope {
  // The store's retryable error carries `data` (the SDK's mapping of a transport error drops it).
  if (envelope.error?.code === RPC_ERROR_CODE.STORE_UNAVAILABLE) return { ...envelope, error: storeUnavailableError() };
  if (envelope.error?.code !== RPC_ERROR_CODE.INTERNAL_ERROR) return envelope;
  request.log.error({ detail: envelope.error.message }, `internal error answered as ${RPC_ERROR_CODE.INTERNAL_ERROR}`);
  return { ...envelope, error: { code: RPC_ERROR_CODE.INTERNAL_ERROR, message: 'Internal error (details are in the server log)' } };
}

/**
 * The v0.3 envelope of a logged event as it goes out, from the SDK's conversion and the event's
 * tag (RequestContext.nextSse):
 * - v0.3 marks `final` only on terminal states; a pause also ends the stream (RFC Appendix A
 *   step 4). The tag's `final` is the logged event's own flag, when known — an update that only
 *   repeats a paused state (the gemini-cli dialect's tool updates after an answer) ends nothing.
 * - A status update's metadata, held back from the SDK's conversion (CTX_SSE_OWN_METADATA), is put
 *   back where the SDK puts it (its last key), so the frame's JSON is the SDK's to the byte.
 */
export function legacyFrame(envelope: Envelope, tag: SseTag): Envelope {
  const r = envelope.result as { kind?: string; status?: { state?: string }; final?: boolean; metadata?: JsonObject } | undefined;
  if (r?.kind !== 'status-update') return envelope;
  if (isPaused(r.status?.state) && tag.final !== false) r.final = true;
  if (tag.metadata !== undefined) r.metadata = tag.metadata;
  return envelope;
}

/** The SDK's name of a method in the other version; undefined when it has none (v1.0 ListTasks has no v0.3 name). */
function otherName(map: () => string): string | undefined {
  try {
    return map();
  } catch {
    return undefined;
  }
}

/** METHOD_NOT_FOUND's message for a method the chosen version does not have, with a hint when the other one does. */
function unknownMethod(method: string, version: WireVersion): string | undefined {
  if (method === '') return undefined; // the SDK answers INVALID_REQUEST for a missing method
  if (version === '0.3' ? isLegacyJsonRpcMethod(method) : isV1JsonRpcMethod(method)) return undefined;
  if (version === '0.3' && isV1JsonRpcMethod(method)) {
    const legacy = otherName(() => v1MethodToLegacyJsonRpc(method));
    return `Method not found: ${method} is an A2A v1.0 method; send the header A2A-Version: 1.0${legacy ? ` (or use ${legacy})` : ''}`;
  }
  if (version === '1.0' && isLegacyJsonRpcMethod(method)) {
    const v1 = otherName(() => legacyJsonRpcToV1Method(method));
    return `Method not found: ${method} is an A2A v0.3 method${v1 ? `; under A2A-Version: 1.0 use ${v1}` : ''}`;
  }
  return `Method not found: ${method}`;
}

/** What the POST handler works with, built once when the plugin is registered. */
interface Rpc {
  v1: JsonRpcTransportHandler;
  legacy: LegacyJsonRpcTransportHandler;
  extensionMethods: Readonly<Record<string, ExtensionMethod>>;
  authenticate: Authenticate | undefined;
  heartbeatMs: number;
  stallTimeoutMs: number;
  metrics: SseOptions['metrics'];
  closing: AbortSignal | undefined;
}

/** A request that passed the transport's own checks, ready for an extension method or the SDK. */
export interface Checked {
  id: Envelope['id'];
  version: WireVersion;
  body: Record<string, unknown>;
  method: string;
  caller: Caller | undefined;
  /** A notification (JSON-RPC 2.0 §4.1: no `id` member; `"id": null` is a request): nothing is answered. */
  notification: boolean;
}

function mapError(version: WireVersion, err: unknown) {
  return version === '1.0' ? JsonRpcTransportHandler.mapToJSONRPCError(err) : LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(err);
}

/** The envelope-level refusals, in order: unparsable body, unknown A2A-Version, not one request object, jsonrpc not "2.0", an id of the wrong type. */
function checkEnvelope(request: FastifyRequest, caller: Caller | undefined): Checked | Envelope {
  const body = request.body as Record<string, unknown> | typeof UNPARSABLE | undefined;
  if (body === UNPARSABLE) return rpcError(null, RPC_ERROR_CODE.PARSE_ERROR, 'Parse error: the request body is not valid JSON');
  const id = requestId(body);
  const requested = requestedVersion(request);
  if ('unsupported' in requested) {
    const message = `A2A-Version "${requested.unsupported}" is not supported (use 0.3 or 1.0)`;
    return rpcError(id, RPC_ERROR_CODE.VERSION_NOT_SUPPORTED, message);
  }
  const { version } = requested;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return rpcError(
      id,
      RPC_ERROR_CODE.INVALID_REQUEST,
      'Invalid Request: the body must be one JSON-RPC request object (batches are not supported)',
    );
  }
  if (body.jsonrpc !== '2.0') return rpcError(id, RPC_ERROR_CODE.INVALID_REQUEST, 'Invalid Request: jsonrpc must be "2.0"');
  if (Object.hasOwn(body, 'id') && body.id !== null && typeof body.id !== 'string' && typeof body.id !== 'number') {
    return rpcError(null, RPC_ERROR_CODE.INVALID_REQUEST, 'Invalid Request: id must be a string, a number or null');
  }
  const method = typeof body.method === 'string' ? body.method : '';
  const notification = !Object.hasOwn(body, 'id') && typeof body.method === 'string';
  return { id, version, body, method, caller, notification };
}

/** An extension method (`commands/get`, …): a plain JSON result, never SSE. */
async function callExtension(request: FastifyRequest, extension: ExtensionMethod, req: Checked): Promise<Envelope> {
  const { id, version, body, caller } = req;
  if (body.jsonrpc !== '2.0') return rpcError(id, RPC_ERROR_CODE.INVALID_REQUEST, 'Invalid Request: jsonrpc must be "2.0"');
  // The same checks as every A2A method's params get, before the method sees them.
  const bad = checkRequestFields(body.params, 'params');
  if (bad !== undefined) return rpcError(id, RPC_ERROR_CODE.INVALID_PARAMS, `Invalid params: ${bad}`);
  try {
    return { jsonrpc: '2.0', id, result: await extension(body.params ?? {}, caller) };
  } catch (err) {
    return hideInternal({ jsonrpc: '2.0', id, error: mapError(version, err) }, request);
  }
}

/**
 * The request the SDK will handle and its call context, or the refusal: a method the version
 * lacks, bad params, a bad Last-Event-ID header.
 */
function prepareA2a(request: FastifyRequest, req: Checked): { rpc: Record<string, unknown>; ctx: ServerCallContext } | Envelope {
  const { id, version, body, method } = req;
  const unknown = unknownMethod(method, version);
  if (unknown !== undefined) return rpcError(id, RPC_ERROR_CODE.METHOD_NOT_FOUND, unknown);
  const bad = validateParams(method, body.params, version);
  if (bad !== undefined) return rpcError(id, RPC_ERROR_CODE.INVALID_PARAMS, `Invalid params: ${bad}`);
  let rpc = body;
  if (version === '0.3' && method === 'message/send' && !req.notification) {
    // v0.3 clients expect message/send to wait unless they say blocking: false.
    const params = body.params as { configuration?: Record<string, unknown> };
    rpc = { ...body, params: { ...params, configuration: { blocking: true, ...params.configuration } } };
  }
  try {
    return { rpc, ctx: request.a2a.callContext(version) };
  } catch (err) {
    // A bad Last-Event-ID header: INVALID_PARAMS with the header's own message.
    if (!(err instanceof RequestMalformedError)) throw err;
    return rpcError(id, RPC_ERROR_CODE.INVALID_PARAMS, err.message);
  }
}

/**
 * What an A2A method run through the SDK gives: a JSON answer (a result or a refusal), a stream
 * refused before its first event, or a stream with its first event in hand.
 */
export type A2aOutcome =
  | { kind: 'answer'; envelope: Envelope }
  | { kind: 'refused'; envelope: Envelope }
  | { kind: 'stream'; stream: AsyncGenerator<Envelope, void, undefined>; first: IteratorResult<Envelope> };

/** Runs a checked A2A request through the SDK's handler of its version (the JSON-RPC route, and the v0.3 HTTP+JSON binding). */
export async function startA2a(
  request: FastifyRequest,
  sdk: JsonRpcTransportHandler | LegacyJsonRpcTransportHandler,
  req: Checked,
): Promise<A2aOutcome> {
  const started = phaseStart();
  const prepared = prepareA2a(request, req);
  phaseEnd('parse', started);
  if ('jsonrpc' in prepared) return { kind: 'answer', envelope: prepared };
  const { id, version } = req;
  // Both v0.3 routes that stream through here put status updates' metadata back (legacyFrame).
  if (version === '0.3') prepared.ctx.state.set(CTX_SSE_OWN_METADATA, true);
  const out = await sdk.handle(prepared.rpc, prepared.ctx);
  if (!(Symbol.asyncIterator in (out as object))) return { kind: 'answer', envelope: hideInternal(out as Envelope, request) };
  const stream = out as AsyncGenerator<Envelope, void, undefined>;
  try {
    return { kind: 'stream', stream, first: await stream.next() }; // refusals happen here, before any SSE byte
  } catch (err) {
    request.log.debug({ err }, 'stream refused');
    return { kind: 'refused', envelope: hideInternal({ jsonrpc: '2.0', id, error: mapError(version, err) }, request) };
  }
}

/** Runs an A2A method through the SDK: a JSON answer, or an SSE stream once its first event exists. */
async function runA2a(request: FastifyRequest, reply: FastifyReply, rpc: Rpc, req: Checked): Promise<Envelope | FastifyReply> {
  const { id, version } = req;
  const outcome = await startA2a(request, version === '1.0' ? rpc.v1 : rpc.legacy, req);
  if (outcome.kind === 'answer') return outcome.envelope;
  // v0.3 clients read a resubscription only as a stream (the v0.3 SDKs answer it so): one
  // event carrying the error, then the end. v1.0 and message/stream refuse before any SSE.
  if (outcome.kind === 'refused' && !(version === '0.3' && req.method === 'tasks/resubscribe')) return outcome.envelope;
  const stream = outcome.kind === 'stream' ? outcome.stream : (async function* () {})();
  const first: IteratorResult<Envelope> = outcome.kind === 'stream' ? outcome.first : { done: false, value: outcome.envelope };
  await writeSse(reply, stream, first, {
    heartbeatMs: rpc.heartbeatMs,
    stallTimeoutMs: rpc.stallTimeoutMs,
    metrics: rpc.metrics,
    closing: rpc.closing,
    // The handler records each event's sequence number in order; one envelope per event.
    frame: (item) => {
      const next = outcome.kind === 'stream' ? request.a2a.nextSse() : {};
      return { data: version === '0.3' ? legacyFrame(item as Envelope, next) : item, id: next.id };
    },
    onError: (err) => {
      request.log.error({ err }, 'stream failed after it started');
      return { jsonrpc: '2.0', id, error: streamFailure(err) };
    },
  });
  return reply;
}

/** Errors that mean a notification could not be carried out at all: these are answered. */
const UNRUNNABLE: ReadonlySet<number> = new Set([
  RPC_ERROR_CODE.INVALID_REQUEST,
  RPC_ERROR_CODE.METHOD_NOT_FOUND,
  RPC_ERROR_CODE.INVALID_PARAMS,
]);

/**
 * A notification (a request without `id`) is carried out like the request it would be, with the
 * same checks, and its outcome is dropped (JSON-RPC 2.0 §4.1: the server MUST NOT reply): HTTP 204
 * with no body once it took effect. Reads (tasks/get, …) so do nothing visible; tasks/cancel cancels; message/send starts or answers without waiting for the
 * pause; a streaming method's stream is opened (so its message is routed, and its task runs)
 * and closed at once, which never stops the task. One that cannot be carried out at all (unknown
 * method, invalid params) is answered with its error and id null, as A2A's conformance suite requires.
 */
async function notify(request: FastifyRequest, reply: FastifyReply, rpc: Rpc, req: Checked): Promise<FastifyReply> {
  const extension = Object.hasOwn(rpc.extensionMethods, req.method) ? rpc.extensionMethods[req.method] : undefined;
  let outcome: unknown;
  if (extension !== undefined) outcome = await callExtension(request, extension, req);
  else {
    const prepared = prepareA2a(request, req);
    outcome = 'jsonrpc' in prepared ? prepared : await (req.version === '1.0' ? rpc.v1 : rpc.legacy).handle(prepared.rpc, prepared.ctx);
    if (typeof outcome === 'object' && outcome !== null && Symbol.asyncIterator in outcome) {
      const stream = outcome as AsyncGenerator<Envelope, void, undefined>;
      outcome = await stream.next().then(
        (first) => first.value,
        (err: unknown) => ({ error: mapError(req.version, err) }),
      );
      await stream.return(undefined);
    }
  }
  const error = (outcome as Partial<Envelope> | undefined)?.error;
  // One that could not be carried out at all — no such method, params that do not parse — is
  // answered with its error and id null, as A2A's conformance suite requires (a MUST there).
  if (error !== undefined && UNRUNNABLE.has(error.code)) return reply.send(rpcError(null, error.code, error.message));
  if (error) request.log.debug({ method: req.method, error }, 'notification refused (not answered)');
  return reply.code(204).send();
}

async function answer(request: FastifyRequest, reply: FastifyReply, rpc: Rpc): Promise<Envelope | FastifyReply> {
  const { caller } = request.a2a;
  if (rpc.authenticate !== undefined && caller === undefined) {
    // Never reached through the hook; a second lock in case a refactoring loses it.
    return reply.code(401).send(rpcError(null, RPC_ERROR_CODE.UNAUTHORIZED, 'Unauthorized: the request was not authenticated'));
  }
  // Receiving and parsing the body (and routing) happened before this handler: Fastify's clock.
  if (probing()) phaseSpent('parse', reply.elapsedTime);
  const req = checkEnvelope(request, caller);
  if ('jsonrpc' in req) return req;
  if (req.notification) return notify(request, reply, rpc, req);
  const extension = Object.hasOwn(rpc.extensionMethods, req.method) ? rpc.extensionMethods[req.method] : undefined;
  return extension !== undefined ? callExtension(request, extension, req) : runA2a(request, reply, rpc, req);
}

export async function jsonRpcRoutes(app: FastifyInstance, opts: JsonRpcRoutesOptions): Promise<void> {
  const rpc: Rpc = {
    v1: new JsonRpcTransportHandler(opts.handler),
    legacy: new LegacyJsonRpcTransportHandler(opts.handler),
    extensionMethods: opts.extensionMethods ?? {},
    authenticate: opts.authenticate,
    heartbeatMs: opts.heartbeatMs,
    stallTimeoutMs: opts.stallTimeoutMs ?? 30_000,
    metrics: opts.metrics,
    closing: opts.closing,
  };
  acceptOnlyJson(app);
  await useRequestContext(app);

  app.setErrorHandler((err: { statusCode?: number; message: string }, request, reply) => {
    // Fastify's own refusals (body too large, a bad Content-Length…) keep their 4xx status, in a JSON-RPC envelope.
    if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) {
      return reply.code(err.statusCode).send(rpcError(null, RPC_ERROR_CODE.INVALID_REQUEST, `Invalid Request: ${err.message}`));
    }
    // Anything else thrown is a defect: its message (a stack overflow, a path) stays in the log.
    return reply.code(500).send(hideInternal(rpcError(requestId(request.body), RPC_ERROR_CODE.INTERNAL_ERROR, err.message), request));
  });
  app.post('/', { onRequest: authenticationHook(rpc.authenticate) }, async (request, reply) => {
    const type = nonJsonMediaType(request);
    if (type === undefined) return answer(request, reply, rpc);
    // Not read at all: its id is unknown, so the answer carries id null.
    return reply.code(415).send(rpcError(null, RPC_ERROR_CODE.CONTENT_TYPE_NOT_SUPPORTED, contentTypeUnsupported(type).message));
  });
}
