/**
 * Wire errors: the one table of JSON-RPC error codes this server answers with, and the
 * builders of every client-fault error. The builders use the SDK's A2AError classes, whose
 * own mapping gives the same code under v0.3 and v1.0; the transport (jsonrpc-route.ts)
 * picks the codes for what it refuses before the SDK sees a request from this table too.
 */
import { JsonRpcTransportError, toJsonRpcError } from '@a2a-js/sdk/errors';
import {
  ContentTypeNotSupportedError,
  ExtendedAgentCardNotConfiguredError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
  VersionNotSupportedError,
} from '@a2a-js/sdk/errors';

/**
 * Every JSON-RPC error code the server uses. The JSON-RPC 2.0 and A2A ones have the SDK's
 * names (A2A_ERROR_CODE in `@a2a-js/sdk/errors`; test/unit/protocol/errors.test.ts holds them
 * equal); the last three are the server's own, in the range JSON-RPC leaves to servers.
 */
export const RPC_ERROR_CODE = {
  /** The body is not valid JSON (answered with id null, HTTP 200). */
  PARSE_ERROR: -32700,
  /** Not one JSON-RPC request object (a batch, a non-object), or `jsonrpc` is not "2.0". */
  INVALID_REQUEST: -32600,
  /** No such method under the chosen A2A version (the message hints at the other version's name). */
  METHOD_NOT_FOUND: -32601,
  /** A field is missing, mistyped, or names something that does not exist; a bad Last-Event-ID header. */
  INVALID_PARAMS: -32602,
  /** Anything unexpected; the message is generic, the details go to the log. */
  INTERNAL_ERROR: -32603,
  /** No task with that id (or not one the caller may see). */
  TASK_NOT_FOUND: -32001,
  /** tasks/cancel on a finished task. */
  TASK_NOT_CANCELABLE: -32002,
  /** Push notification methods on a request handler built without a PushRegistry (app.ts always gives it one). */
  PUSH_NOTIFICATION_NOT_SUPPORTED: -32003,
  /** The task cannot take this message now (busy, finished). */
  UNSUPPORTED_OPERATION: -32004,
  /** A request body in a media type other than JSON (HTTP+JSON binding: HTTP 415). */
  CONTENT_TYPE_NOT_SUPPORTED: -32005,
  /** The authenticated extended agent card: this server has none. */
  EXTENDED_CARD_NOT_CONFIGURED: -32007,
  /** An A2A-Version header other than 0.3 or 1.0. */
  VERSION_NOT_SUPPORTED: -32009,
  /** Authenticated, but not allowed: not the task's principal, or lacks the role. */
  FORBIDDEN: -32010,
  /** No or bad credentials; sent with HTTP 401 and WWW-Authenticate (the status is the signal, the body says why). */
  UNAUTHORIZED: -32011,
  /** This instance takes no work now (it is shutting down): HTTP 503 with Retry-After; send the request again (to another instance). */
  UNAVAILABLE: -32013,
  /**
   * The task store cannot be reached now (the database restarts, fails over, or dropped the
   * connection): nothing of the request was done; `data: { retryable: true }`, send it again
   * in a moment (HTTP+JSON: 503 with Retry-After).
   */
  STORE_UNAVAILABLE: -32050,
} as const;

export type RpcErrorCode = (typeof RPC_ERROR_CODE)[keyof typeof RPC_ERROR_CODE];

export const invalidParams = (message: string) => new RequestMalformedError(message);
export const taskNotFound = (taskId: string) => new TaskNotFoundError(`Task ${taskId} not found`);
export const notCancelable = (message: string) => new TaskNotCancelableError(message);
export const pushUnsupported = () => new PushNotificationNotSupportedError('Push notifications are not enabled on this server');
export const unsupported = (message: string) => new UnsupportedOperationError(message);
/** True for an error built by `unsupported` (-32004: the task or its conversation cannot take this now). */
export const isUnsupported = (err: unknown): err is UnsupportedOperationError => err instanceof UnsupportedOperationError;
export const contentTypeUnsupported = (contentType: string) =>
  new ContentTypeNotSupportedError(`Unsupported Content-Type "${contentType}"; send application/json or application/a2a+json`);
export const versionUnsupported = (version: string) =>
  new VersionNotSupportedError(`A2A-Version "${version}" is not supported on this interface (use 1.0)`);
export const extendedCardUnsupported = () => new ExtendedAgentCardNotConfiguredError('No extended agent card is configured');

/** A2A has no "forbidden" error: a transport error carrying {@link RPC_ERROR_CODE.FORBIDDEN}. */
export const forbidden = (message: string) =>
  new JsonRpcTransportError({ jsonrpc: '2.0', id: null, error: { code: RPC_ERROR_CODE.FORBIDDEN, message: `Forbidden: ${message}` } });

/**
 * Driver and server codes that say the database could not be reached or dropped the session,
 * not that it refused the statement: Node's socket errors, postgres.js's own connection
 * errors, SQLSTATE class 08 (connection exception), 57P01–57P03 (admin/crash shutdown,
 * cannot connect now) and 53300 (too many connections).
 */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);

/**
 * A version-checked write (WriteBatch.expect) refused: a task's stored log moved past what the
 * writer's copy knew — another process appended to it meanwhile. Nothing of the batch was
 * written. `code` is SQLSTATE serialization_failure, so the write queue counts it as a refusal
 * whose outcome is certain (rejectedByDatabase).
 */
type TaskMark = { lastSeq?: number; state?: string };
const describeMark = (m: TaskMark) => [m.state, m.lastSeq === undefined ? undefined : `seq ${m.lastSeq}`].filter(Boolean).join(' at ');

/** One task a refused batch named: what the writer expected, what is stored; `turn`: the turn it would close was not open (WriteBatch.closeTurns). */
type StaleTask = { taskId: string; expected: TaskMark; stored: Required<TaskMark>; turn?: number };
const describeStale = (s: StaleTask) =>
  s.turn !== undefined
    ? `task ${s.taskId}'s turn ${s.turn} is closed already or has a call not done`
    : `task ${s.taskId} is ${describeMark(s.stored)}, the writer expected ${describeMark(s.expected) || 'it open'}`;

export class StaleWriteError extends Error {
  readonly code = '40001';
  constructor(readonly stale: ReadonlyArray<StaleTask>) {
    super(`commit refused: ${stale.map(describeStale).join('; ')} (the writer's copy is behind the store)`);
    this.name = 'StaleWriteError';
  }
}

/** The SQLSTATE of a database error, found on it or on its causes (drizzle wraps the driver's error); undefined for any other error. */
export function sqlStateOf(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}

/** True when `err` is a StaleWriteError (a copy behind the store tried to write). */
export const isStaleWrite = (err: unknown): err is StaleWriteError => err instanceof StaleWriteError;

/** The message of {@link RPC_ERROR_CODE.STORE_UNAVAILABLE} (no address, no driver detail). */
export const STORE_UNAVAILABLE_MESSAGE =
  'The task store is unavailable (the database cannot be reached); nothing was changed, retry in a moment';

/** Seconds a client is told to wait before retrying (Retry-After). */
export const STORE_RETRY_AFTER_S = 2;

/** The store's "cannot be reached now" error: a transport error with the retryable code, the driver's error as its cause. */
export class StoreUnavailableError extends JsonRpcTransportError {
  constructor(override readonly cause?: unknown) {
    super({
      jsonrpc: '2.0',
      id: null,
      error: { code: RPC_ERROR_CODE.STORE_UNAVAILABLE, message: STORE_UNAVAILABLE_MESSAGE, data: { retryable: true } },
    });
  }
}

/**
 * True when `err` (or an error it wraps, through `cause`) says the database could not be
 * reached: the request may be sent again once it is back. A statement the database refused
 * (a constraint, a syntax error) is not this.
 */
export function isStoreUnavailable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof StoreUnavailableError) return true;
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || code.startsWith('08'))) return true;
  }
  return false;
}

/** The JSON-RPC error of {@link RPC_ERROR_CODE.STORE_UNAVAILABLE}, `data` included (the SDK's mapping drops a transport error's data). */
export const storeUnavailableError = () => ({
  code: RPC_ERROR_CODE.STORE_UNAVAILABLE,
  message: STORE_UNAVAILABLE_MESSAGE,
  data: { retryable: true as const },
});

/** google.rpc.RetryInfo (AIP-193), the HTTP+JSON error's detail for the retryable store error. */
export const RETRY_INFO = { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${STORE_RETRY_AFTER_S}s` };

/**
 * The error event that ends a stream which failed after it started: the store's retryable
 * error when the database could not be reached (the client resubscribes or asks tasks/get in a
 * moment), else a generic internal error (the details go to the log).
 */
export function streamFailure(err: unknown): { code: number; message: string; data?: { retryable: true } } {
  if (isStoreUnavailable(err)) return storeUnavailableError();
  return { code: RPC_ERROR_CODE.INTERNAL_ERROR, message: 'Internal error: the event stream failed' };
}

/**
 * The HTTP answer for an error on a REST side route (the legacy dialect's `/tasks`, `/executeCommand`…):
 * client faults keep their message; anything else is 500 with a generic one (the details go to the log).
 */
export function httpErrorOf(err: unknown): { status: number; message: string; internal: boolean } {
  if (err instanceof RequestMalformedError) return { status: 400, message: err.message, internal: false };
  if (err instanceof TaskNotFoundError) return { status: 404, message: err.message, internal: false };
  if (err instanceof UnsupportedOperationError) return { status: 409, message: err.message, internal: false };
  if (isStoreUnavailable(err)) return { status: 503, message: STORE_UNAVAILABLE_MESSAGE, internal: false };
  if (err instanceof JsonRpcTransportError) {
    if (err.envelopeCode === RPC_ERROR_CODE.FORBIDDEN) return { status: 403, message: err.errorResponse.error.message, internal: false };
  }
  return { status: 500, message: 'Internal error (details are in the server log)', internal: true };
}

/**
 * The HTTP+JSON binding's status for each code of {@link RPC_ERROR_CODE} (A2A v1.0 §5.4 "Error
 * Code Mappings", HTTP column), with the google.rpc code name its body carries (§11.6, AIP-193;
 * §5.4's gRPC column). Derived from the JSON-RPC code, so both bindings answer one error alike.
 */
export const HTTP_OF_RPC_CODE: Readonly<Record<RpcErrorCode, { status: number; name: string }>> = {
  [RPC_ERROR_CODE.PARSE_ERROR]: { status: 400, name: 'INVALID_ARGUMENT' },
  [RPC_ERROR_CODE.INVALID_REQUEST]: { status: 400, name: 'INVALID_ARGUMENT' },
  [RPC_ERROR_CODE.METHOD_NOT_FOUND]: { status: 404, name: 'NOT_FOUND' },
  [RPC_ERROR_CODE.INVALID_PARAMS]: { status: 400, name: 'INVALID_ARGUMENT' },
  [RPC_ERROR_CODE.INTERNAL_ERROR]: { status: 500, name: 'INTERNAL' },
  [RPC_ERROR_CODE.TASK_NOT_FOUND]: { status: 404, name: 'NOT_FOUND' },
  [RPC_ERROR_CODE.TASK_NOT_CANCELABLE]: { status: 409, name: 'FAILED_PRECONDITION' },
  [RPC_ERROR_CODE.PUSH_NOTIFICATION_NOT_SUPPORTED]: { status: 400, name: 'UNIMPLEMENTED' },
  [RPC_ERROR_CODE.UNSUPPORTED_OPERATION]: { status: 400, name: 'UNIMPLEMENTED' },
  [RPC_ERROR_CODE.CONTENT_TYPE_NOT_SUPPORTED]: { status: 415, name: 'INVALID_ARGUMENT' },
  [RPC_ERROR_CODE.EXTENDED_CARD_NOT_CONFIGURED]: { status: 400, name: 'FAILED_PRECONDITION' },
  [RPC_ERROR_CODE.VERSION_NOT_SUPPORTED]: { status: 400, name: 'UNIMPLEMENTED' },
  [RPC_ERROR_CODE.FORBIDDEN]: { status: 403, name: 'PERMISSION_DENIED' },
  [RPC_ERROR_CODE.UNAUTHORIZED]: { status: 401, name: 'UNAUTHENTICATED' },
  [RPC_ERROR_CODE.UNAVAILABLE]: { status: 503, name: 'UNAVAILABLE' },
  [RPC_ERROR_CODE.STORE_UNAVAILABLE]: { status: 503, name: 'UNAVAILABLE' },
};

/** An HTTP+JSON error body (A2A v1.0 §11.6: google.rpc.Status as AIP-193 writes it in JSON). */
export interface RestErrorBody {
  error: { code: number; status: string; message: string; details: unknown[] };
}

/** The HTTP status of a JSON-RPC error code (500 for one outside the table). */
export function httpStatusOf(code: number): number {
  return Object.hasOwn(HTTP_OF_RPC_CODE, code) ? HTTP_OF_RPC_CODE[code as RpcErrorCode].status : 500;
}

/** A REST error body for a code of the table, with `details` (the A2A errors' ErrorInfo). */
export function restErrorBody(code: RpcErrorCode, message: string, details: unknown[] = []): { status: number; body: RestErrorBody } {
  const { status, name } = HTTP_OF_RPC_CODE[code];
  return { status, body: { error: { code: status, status: name, message, details } } };
}

/**
 * The HTTP+JSON answer for any error: its JSON-RPC code (the SDK's mapping, the same as the
 * JSON-RPC route's), then the table's status. An A2A error carries its ErrorInfo in `details`
 * (§11.6 MUST); anything unmapped is 500 with a generic message (the details go to the log).
 */
export function restErrorOf(err: unknown): { status: number; body: RestErrorBody; internal: boolean; code: RpcErrorCode } {
  if (isStoreUnavailable(err)) {
    const code = RPC_ERROR_CODE.STORE_UNAVAILABLE;
    return { ...restErrorBody(code, STORE_UNAVAILABLE_MESSAGE, [RETRY_INFO]), internal: false, code };
  }
  const rpc = toJsonRpcError(err) as { code: number; message: string; data?: unknown };
  const code = (Object.hasOwn(HTTP_OF_RPC_CODE, rpc.code) ? rpc.code : RPC_ERROR_CODE.INTERNAL_ERROR) as RpcErrorCode;
  if (code === RPC_ERROR_CODE.INTERNAL_ERROR) {
    return { ...restErrorBody(code, 'Internal error (details are in the server log)'), internal: true, code };
  }
  return { ...restErrorBody(code, rpc.message, Array.isArray(rpc.data) ? rpc.data : []), internal: false, code };
}
