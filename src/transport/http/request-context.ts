/**
 * One request context for every route: a Fastify plugin that gives each request `request.a2a`,
 * what the transport knows of it — the caller the authentication hook accepted, the SDK call
 * context the request handler runs under (with the Last-Event-ID a stream resumes after), and
 * the SSE ids of the events the handler yields. The JSON-RPC route and both HTTP+JSON bindings
 * read these from here, so a header is parsed, and an id handed over, in one way only.
 *
 * The route plugins register it themselves (`useRequestContext`); it runs in their context (no
 * encapsulation of its own), so its hook comes before their authentication hook.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ServerCallContext, UnauthenticatedUser } from '@a2a-js/sdk/server';
import { CTX_ABOUT_TASK, CTX_LAST_EVENT_ID, CTX_SSE_TAGS } from '../../protocol/a2a.js';
import type { A2aVersion, SseTag } from '../../protocol/a2a.js';
import { CallerUser } from '../../protocol/caller.js';
import type { Caller } from '../../protocol/caller.js';
import { invalidParams, RPC_ERROR_CODE } from '../../protocol/errors.js';
import { phaseEnd, phaseStart } from '../../protocol/probe.js';

/** Checks a request's credentials (AUTH_CONFIG); absent = no authentication. */
export type Authenticate = (
  headers: Record<string, string | string[] | undefined>,
) => Promise<{ ok: true; caller: Caller } | { ok: false; message: string; wwwAuthenticate: string }>;

/** What the transport knows of one request. */
class RequestContext {
  /** The caller the authentication hook accepted; undefined without authentication (or before the hook). */
  caller: Caller | undefined;
  private call: ServerCallContext | undefined;

  /** The task the request is about, once known (aboutTask): its ids are on the request's log lines. */
  private task: string | undefined;

  constructor(
    private readonly request: FastifyRequest,
    private readonly reply: FastifyReply,
  ) {}

  /**
   * The request is about task `taskId`: this request's logger (and the reply's, which writes the
   * "request completed" line) carry `taskId` and `contextId` from here on. The first task named wins.
   */
  aboutTask(taskId: string, contextId?: string): void {
    if (this.task !== undefined) return;
    this.task = taskId;
    const log = this.request.log.child({ taskId, ...(contextId ? { contextId } : {}) });
    this.request.log = log;
    this.reply.log = log;
  }

  /**
   * The `Last-Event-ID` header as an event id; undefined when absent. Throws invalidParams
   * (-32602 / HTTP 400) when it is not a non-negative integer.
   */
  lastEventId(): number | undefined {
    const header = this.request.headers['last-event-id'];
    if (header === undefined) return undefined;
    const raw = String(header).trim();
    if (!/^\d{1,15}$/.test(raw))
      throw invalidParams(`Invalid Last-Event-ID header "${raw}": expected an event id (a non-negative integer)`);
    return Number(raw);
  }

  /**
   * The SDK call context the request handler runs under, built once: the caller (or an
   * unauthenticated user), the A2A version the request speaks, and its Last-Event-ID. Throws
   * invalidParams for a bad Last-Event-ID.
   */
  callContext(version: A2aVersion): ServerCallContext {
    if (this.call !== undefined) return this.call;
    const lastEventId = this.lastEventId();
    const user = this.caller ? new CallerUser(this.caller) : new UnauthenticatedUser();
    const ctx = new ServerCallContext({ user, requestedVersion: version });
    if (lastEventId !== undefined) ctx.state.set(CTX_LAST_EVENT_ID, lastEventId);
    ctx.state.set(CTX_ABOUT_TASK, (taskId: string, contextId?: string) => this.aboutTask(taskId, contextId));
    this.call = ctx;
    return ctx;
  }

  /**
   * The SSE id of the next event written: the request handler tags each yielded event in order
   * (CTX_SSE_TAGS), one per event; undefined for an event without one (a resubscription's Task
   * snapshot) or before any call context exists.
   */
  nextSseId(): number | undefined {
    return this.nextSse().id;
  }

  /** The next event's tag: its SSE id (nextSseId), whether its logged event ends a turn, its held-back metadata. */
  nextSse(): SseTag {
    return (this.call?.state.get(CTX_SSE_TAGS) as SseTag[] | undefined)?.shift() ?? NO_TAG;
  }
}

const NO_TAG: SseTag = Object.freeze({});

declare module 'fastify' {
  interface FastifyRequest {
    /** Set for every request of a route plugin that uses the request context (request-context.ts). */
    a2a: RequestContext;
  }
}

/** Decorates each request with its RequestContext. */
async function requestContext(app: FastifyInstance): Promise<void> {
  app.decorateRequest('a2a', null as unknown as RequestContext);
  app.addHook('onRequest', async (request, reply) => {
    request.a2a = new RequestContext(request, reply);
  });
}
// Runs in the context that registers it (what fastify-plugin does): the routes there see the
// decoration and its hook runs before theirs.
Object.assign(requestContext, { [Symbol.for('skip-override')]: true, [Symbol.for('fastify.display-name')]: 'a2a-request-context' });

/** Registers the request context in a route plugin (once per plugin context). */
export async function useRequestContext(app: FastifyInstance): Promise<void> {
  if (!app.hasRequestDecorator('a2a')) await app.register(requestContext);
}

/**
 * A route-level hook (it runs for whatever request line reached the route, absolute-form URLs
 * included) and before the body is read: an unauthenticated request costs no parsing. Records
 * the accepted caller on the request context. `refusal` builds the 401 body in the route's
 * binding (a JSON-RPC envelope by default).
 */
export function authenticationHook(
  authenticate: Authenticate | undefined,
  refusal: (message: string, request: FastifyRequest) => unknown = (message) => ({
    jsonrpc: '2.0',
    id: null,
    error: { code: RPC_ERROR_CODE.UNAUTHORIZED, message },
  }),
) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (authenticate === undefined) return;
    const started = phaseStart();
    const result = await authenticate(request.headers);
    phaseEnd('authorize', started);
    if (result.ok) {
      request.a2a.caller = result.caller;
      return;
    }
    void reply.code(401).header('www-authenticate', result.wwwAuthenticate);
    return reply.send(refusal(`Unauthorized: ${result.message}`, request));
  };
}
