import type { Part, StreamResponse, Task, TaskStatusUpdateEvent } from '@a2a-js/sdk';
import type { AgentEvent, TaskStateName } from './agent-events.js';

/** The wire dialects: the development-tool RFC, and the `coderAgent` wire of gemini-cli's own a2a-server. */
export type WireDialect = 'rfc' | 'legacy';

export interface EncodeContext {
  taskId: string;
  contextId: string;
  model: string;
  /**
   * The task state the task's last status update showed on this dialect's wire (the task's
   * stored state for a task loaded from the store): a dialect whose updates repeat the state
   * the client last saw, rather than the task's own, reads it here.
   */
  shownState?: TaskStateName;
}

/** One encoded event: a status update, or (legacy shell output) an artifact update. */
export type EncodedEvent = Extract<NonNullable<StreamResponse['payload']>, { $case: 'statusUpdate' | 'artifactUpdate' }>;

/**
 * Turns dialect-free AgentEvents into A2A v1.0 stream events for one wire dialect.
 * The transport's version adapters (v0.3 / v1.0 JSON-RPC) then serialise those.
 * A task speaks one dialect for its whole life: its log is written in it, so replay,
 * resubscribe and push send what a live stream sent.
 */
export interface WireEncoder {
  readonly dialect: WireDialect;
  /**
   * The event on this dialect's wire; undefined when the dialect shows nothing for it (a
   * `turn-step` or `call-step` it has no event for): nothing is logged then, so a replay and a
   * live stream send the same. MUST return a status update for every `state` event (the task's
   * status moves with it). One event at most: each logged event is one SSE id.
   */
  encode(event: AgentEvent, ctx: EncodeContext): EncodedEvent | undefined;
  /** The tool_call_id of the ToolCall card an encoded update carries, if it is one. */
  toolCallIdOf(update: TaskStatusUpdateEvent): string | undefined;
  /**
   * The parts of the calls still waiting for an answer after `updates` (a task's log, in order):
   * each call's latest card, when that card asks for confirmation.
   */
  waitingCallParts(updates: Iterable<TaskStatusUpdateEvent>): Part[];
  /** The Task snapshot as a client of this dialect sees it (tasks/get, resubscribe, cancel answers). */
  taskView(task: Task): Task;
}

/** One encoder per dialect. */
export type Encoders = Readonly<Record<WireDialect, WireEncoder>>;

/**
 * The latest card of each tool call among `updates` (by the encoder's reading of the call id),
 * kept where `waiting` says the card asks for an answer: what an encoder's waitingCallParts returns.
 */
export function latestWaitingParts(
  updates: Iterable<TaskStatusUpdateEvent>,
  idOf: (update: TaskStatusUpdateEvent) => string | undefined,
  waiting: (card: Record<string, unknown>) => boolean,
): Part[] {
  const latest = new Map<string, Part>();
  for (const update of updates) {
    const id = idOf(update);
    const part = update.status?.message?.parts[0];
    if (id !== undefined && part !== undefined) latest.set(id, part);
  }
  return [...latest.values()].filter((p) => p.content?.$case === 'data' && waiting(p.content.value as Record<string, unknown>));
}
