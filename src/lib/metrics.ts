/**
 * The metrics port: what the components tell the process's metrics, each at the one place that
 * owns the state it counts (a call's phases in call-lifecycle.ts, commits in the write queue,
 * deliveries in the push dispatcher, ...). Components receive it through their options and default
 * to NO_METRICS, so a component built without it (a test, a benchmark) counts nothing.
 *
 * Every argument that becomes a label is one of the closed unions below or a tool name, which
 * the implementation (src/metrics/) maps to a bounded set: free-form text (paths, arguments,
 * MCP server names a client chose) never reaches a label.
 */

/** The states a task ends in (A2A terminal states). */
export type TaskEndState = 'completed' | 'failed' | 'canceled' | 'rejected';

/** The final status of a tool call. */
export type CallEndStatus = 'SUCCEEDED' | 'FAILED' | 'CANCELLED';

/** How a confirmation flow (one card waiting for a person) ended. */
export type ConfirmationOutcome = 'approved' | 'declined' | 'expired' | 'cancelled';

/** What became of one event for one push config. */
export type PushOutcome = 'delivered' | 'dropped';

/** What the supervisor did with a task whose lease lapsed. */
export type TakeoverOutcome = 'interrupted' | 'paused';

export interface Metrics {
  /** A terminal state of a task was committed (by this process). */
  taskEnded(state: TaskEndState): void;
  /**
   * A tool call reached its final status. `tool`: the name of the tool it resolved to, or
   * undefined when there was none (the model named a tool that does not exist).
   */
  callEnded(tool: string | undefined, status: CallEndStatus): void;
  /** A tool ran for `seconds` (its run, without the wait for approval). */
  toolRan(tool: string | undefined, seconds: number): void;
  /** A card now waits for a person's answer (shown by this process). */
  cardShown(callId: string): void;
  /**
   * A waiting card was closed. `proposedAt`: when its call was proposed, the wait's start when
   * this process did not show the card itself (it was loaded from the store).
   */
  cardClosed(callId: string, outcome: ConfirmationOutcome, proposedAt: Date): void;
  /** The write queue committed `writes` writes in one transaction that took `seconds`. */
  committed(seconds: number, writes: number): void;
  /** An SSE stream opened / closed. */
  sseOpened(): void;
  sseClosed(): void;
  /** An event for one push config was delivered, or given up on. */
  pushDelivered(outcome: PushOutcome): void;
  /** A push delivery attempt failed and a retry was scheduled. */
  pushRetried(): void;
  /** The supervisor took over a task whose owner's lease lapsed. */
  leaseTakenOver(outcome: TakeoverOutcome): void;
  /**
   * A message was decided once more, on a fresh read of its task: the copy this process kept in
   * memory was behind the store (another instance had moved the task on) and nothing was applied.
   */
  staleCopyRetried(): void;
}

const nothing = (): void => undefined;

/** Counts nothing: the default of every component that takes a Metrics. */
export const NO_METRICS: Metrics = Object.freeze({
  taskEnded: nothing,
  callEnded: nothing,
  toolRan: nothing,
  cardShown: nothing,
  cardClosed: nothing,
  committed: nothing,
  sseOpened: nothing,
  sseClosed: nothing,
  pushDelivered: nothing,
  pushRetried: nothing,
  leaseTakenOver: nothing,
  staleCopyRetried: nothing,
});
