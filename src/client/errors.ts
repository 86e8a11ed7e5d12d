/**
 * What a client call can fail with. A2AClientError is the server's answer (a JSON-RPC error,
 * in a plain response or inside a stream); StreamDroppedError is the connection's fault, the
 * one TaskSession recovers from by resubscribing.
 */

/** A JSON-RPC error answered by the server: `code` is the JSON-RPC code (-32001 task not found, …). */
export class A2AClientError extends Error {
  override readonly name = 'A2AClientError';
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
    /** The HTTP status of the response that carried it (401 for missing credentials). */
    readonly httpStatus?: number,
  ) {
    super(message);
  }
}

/** The stream ended, or the connection failed, before the task paused or ended. */
export class StreamDroppedError extends Error {
  override readonly name = 'StreamDroppedError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** JSON-RPC codes the client acts on. */
export const RpcCode = {
  invalidParams: -32602,
  taskNotFound: -32001,
  taskNotCancelable: -32002,
  cannotTakeMessage: -32004,
  forbidden: -32010,
  unauthorized: -32011,
} as const;
