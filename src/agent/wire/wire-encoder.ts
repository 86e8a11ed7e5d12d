import type { Part, TaskStatusUpdateEvent } from '@a2a-js/sdk';
import type { AgentEvent } from './agent-events.js';

export interface EncodeContext {
  taskId: string;
  contextId: string;
  model: string;
}

/**
 * Turns dialect-free AgentEvents into A2A v1.0 status updates for one wire dialect.
 * The transport's version adapters (v0.3 / v1.0 JSON-RPC) then serialise those.
 */
export interface WireEncoder {
  readonly dialect: 'rfc' | 'legacy';
  encode(event: AgentEvent, ctx: EncodeContext): TaskStatusUpdateEvent;
  /** The tool_call_id of the ToolCall card an encoded update carries, if it is one. */
  toolCallIdOf(update: TaskStatusUpdateEvent): string | undefined;
  /**
   * The parts of the calls still waiting for an answer after `updates` (a task's log, in order):
   * each call's latest card, when that card asks for confirmation.
   */
  waitingCallParts(updates: Iterable<TaskStatusUpdateEvent>): Part[];
}
