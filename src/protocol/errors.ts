/**
 * Wire errors: the one table of JSON-RPC error codes this server answers with, and the
 * builders of every client-fault error. The builders use the SDK's A2AError classes, whose
 * own mapping gives the same code under v0.3 and v1.0; the transport (jsonrpc-route.ts)
 * picks the codes for what it refuses before the SDK sees a request from this table too.
 */
import { JsonRpcTransportError } from '@a2a-js/sdk/errors';
import {
  ExtendedAgentCardNotConfiguredError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';

/**
 * Every JSON-RPC error code the server uses. The JSON-RPC 2.0 and A2A ones have the SDK's
 * names (A2A_ERROR_CODE in `@a2a-js/sdk/errors`; test/unit/protocol/errors.test.ts holds them
 * equal); the last two are the server's own, in the range JSON-RPC leaves to servers.
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
  /** The authenticated extended agent card: this server has none. */
  EXTENDED_CARD_NOT_CONFIGURED: -32007,
  /** An A2A-Version header other than 0.3 or 1.0. */
  VERSION_NOT_SUPPORTED: -32009,
  /** Authenticated, but not allowed: not the task's principal, or lacks the role. */
  FORBIDDEN: -32010,
  /** No or bad credentials; sent with HTTP 401 and WWW-Authenticate (the status is the signal, the body says why). */
  UNAUTHORIZED: -32011,
} as const;

export type RpcErrorCode = (typeof RPC_ERROR_CODE)[keyof typeof RPC_ERROR_CODE];

export const invalidParams = (message: string) => new RequestMalformedError(message);
export const taskNotFound = (taskId: string) => new TaskNotFoundError(`Task ${taskId} not found`);
export const notCancelable = (message: string) => new TaskNotCancelableError(message);
export const pushUnsupported = () => new PushNotificationNotSupportedError('Push notifications are not enabled on this server');
export const unsupported = (message: string) => new UnsupportedOperationError(message);
/** True for an error built by `unsupported` (-32004: the task or its conversation cannot take this now). */
export const isUnsupported = (err: unknown): err is UnsupportedOperationError => err instanceof UnsupportedOperationError;
export const extendedCardUnsupported = () => new ExtendedAgentCardNotConfiguredError('No extended agent card is configured');

/** A2A has no "forbidden" error: a transport error carrying {@link RPC_ERROR_CODE.FORBIDDEN}. */
export const forbidden = (message: string) =>
  new JsonRpcTransportError({ jsonrpc: '2.0', id: null, error: { code: RPC_ERROR_CODE.FORBIDDEN, message: `Forbidden: ${message}` } });

/**
 * The HTTP answer for an error on a REST side route (the legacy dialect's `/tasks`, `/executeCommand`…):
 * client faults keep their message; anything else is 500 with a generic one (the details go to the log).
 */
export function httpErrorOf(err: unknown): { status: number; message: string; internal: boolean } {
  if (err instanceof RequestMalformedError) return { status: 400, message: err.message, internal: false };
  if (err instanceof TaskNotFoundError) return { status: 404, message: err.message, internal: false };
  if (err instanceof UnsupportedOperationError) return { status: 409, message: err.message, internal: false };
  if (err instanceof JsonRpcTransportError) {
    if (err.envelopeCode === RPC_ERROR_CODE.FORBIDDEN) return { status: 403, message: err.errorResponse.error.message, internal: false };
  }
  return { status: 500, message: 'Internal error (details are in the server log)', internal: true };
}
