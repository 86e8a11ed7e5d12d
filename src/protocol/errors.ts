/**
 * Wire errors. Every client-fault error the server returns is built here, on the SDK's
 * A2AError classes, whose one mapping table gives the JSON-RPC code (v0.3 and v1.0):
 *
 * | builder          | code   | when |
 * |------------------|--------|------|
 * | invalidParams    | -32602 | a field is missing, mistyped, or names something that does not exist |
 * | taskNotFound     | -32001 | no task with that id |
 * | notCancelable    | -32002 | tasks/cancel on a finished task |
 * | pushUnsupported  | -32003 | push notification methods (not offered yet) |
 * | unsupported      | -32004 | the task cannot take this message now (busy, finished) |
 * | forbidden        | -32010 | authenticated, but not allowed: not the task's principal, or lacks the role |
 * | (anything else)  | -32603 | internal; the message is generic, the details go to the log |
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

export const invalidParams = (message: string) => new RequestMalformedError(message);
export const taskNotFound = (taskId: string) => new TaskNotFoundError(`Task ${taskId} not found`);
export const notCancelable = (message: string) => new TaskNotCancelableError(message);
export const pushUnsupported = () => new PushNotificationNotSupportedError('Push notifications are not supported by this server yet');
export const unsupported = (message: string) => new UnsupportedOperationError(message);
export const extendedCardUnsupported = () => new ExtendedAgentCardNotConfiguredError('No extended agent card is configured');

/** JSON-RPC code of {@link forbidden} (server-defined range; A2A has no "forbidden" error). */
export const FORBIDDEN_CODE = -32010;
export const forbidden = (message: string) =>
  new JsonRpcTransportError({ jsonrpc: '2.0', id: null, error: { code: FORBIDDEN_CODE, message: `Forbidden: ${message}` } });
