/**
 * Small builders over the SDK's A2A v1.0 object model (proto-shaped: `$case` oneofs,
 * enum numbers). Everything the server emits is built here so the shapes stay in one place.
 */
import { randomUUID } from 'node:crypto';
import { Role, TaskState, taskStateFromJSON } from '@a2a-js/sdk';
import type { Message, Part, Task, TaskStatusUpdateEvent } from '@a2a-js/sdk';

export type JsonObject = Record<string, unknown>;

/** The A2A versions this server speaks: a request's (A2A-Version header, or its binding) picks one. */
export type A2aVersion = '0.3' | '1.0';

/**
 * ServerCallContext.state keys shared by the transport and the request handler: the request's
 * Last-Event-ID (a number), and one SseTag per yielded event, in order (CTX_SSE_TAGS).
 */
export const CTX_LAST_EVENT_ID = 'devtool.lastEventId';
export const CTX_SSE_TAGS = 'devtool.sseTags';
/**
 * ServerCallContext.state key set (to true) by a v0.3 transport that puts each status update's
 * metadata back on the converted event itself (SseTag.metadata): the request handler then yields
 * status updates without it, and the SDK's v0.3 conversion does not deep-copy (structuredClone)
 * the same few metadata objects once per frame — a long answer's 10,000 text deltas, 10,000 copies.
 */
export const CTX_SSE_OWN_METADATA = 'devtool.sseOwnMetadata';

/** What the transport needs of one yielded event beside the event (CTX_SSE_TAGS). */
export interface SseTag {
  /** The event's SSE id (its seq); undefined for an event without one (a resubscribe's Task snapshot). */
  id?: number;
  /** Whether the logged event ends a turn; undefined for an event without one. */
  final?: boolean;
  /** The status update's metadata, held back from the SDK (CTX_SSE_OWN_METADATA): the transport puts it back. */
  metadata?: JsonObject;
}
/**
 * ServerCallContext.state key of the transport's callback `(taskId, contextId?) => void`: the
 * request handler names the task a request is about once it knows it, and every later log line
 * of the request (its "request completed" line included) carries the ids.
 */
export const CTX_ABOUT_TASK = 'devtool.aboutTask';

/** Tells the transport which task `ctx`'s request is about (CTX_ABOUT_TASK); nothing without a transport. */
export function aboutTask(ctx: { state: Map<string, unknown> } | undefined, taskId: string, contextId?: string): void {
  if (!taskId) return;
  const tell = ctx?.state.get(CTX_ABOUT_TASK) as ((taskId: string, contextId?: string) => void) | undefined;
  tell?.(taskId, contextId);
}

/** A2A task state names (v0.3 wire spelling). */
export type A2aStateName = 'submitted' | 'working' | 'input-required' | 'auth-required' | 'completed' | 'failed' | 'canceled' | 'rejected';

export const STATE_TO_V1: Readonly<Record<A2aStateName, TaskState>> = {
  submitted: TaskState.TASK_STATE_SUBMITTED,
  working: TaskState.TASK_STATE_WORKING,
  'input-required': TaskState.TASK_STATE_INPUT_REQUIRED,
  'auth-required': TaskState.TASK_STATE_AUTH_REQUIRED,
  completed: TaskState.TASK_STATE_COMPLETED,
  failed: TaskState.TASK_STATE_FAILED,
  canceled: TaskState.TASK_STATE_CANCELED,
  rejected: TaskState.TASK_STATE_REJECTED,
};

const V1_TO_STATE = new Map<TaskState, string>(Object.entries(STATE_TO_V1).map(([k, v]) => [v, k]));

/**
 * The v0.3 spelling of a task state (`input-required`, `completed`, …), from the v1.0 enum
 * value, its JSON name (`TASK_STATE_INPUT_REQUIRED`), or the v0.3 name itself.
 */
export function stateName(state: TaskState | string | undefined): string {
  if (typeof state === 'string') {
    if (state in STATE_TO_V1) return state;
    state = taskStateFromJSON(state);
  }
  return (state !== undefined && V1_TO_STATE.get(state)) || 'unknown';
}

export function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' };
}

export function dataPart(data: JsonObject): Part {
  return { content: { $case: 'data', value: data }, metadata: undefined, filename: '', mediaType: 'application/json' };
}

export function agentMessage(taskId: string, contextId: string, parts: Part[]): Message {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** A user message (e.g. the command line of a slash command, recorded as its task's first message). */
export function userMessage(contextId: string, parts: Part[]): Message {
  return {
    messageId: randomUUID(),
    contextId,
    taskId: '',
    role: Role.ROLE_USER,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** The last timestamp made, and its millisecond (see isoNow). */
let lastIso = { ms: Number.NaN, iso: '' };

/**
 * `new Date().toISOString()`, made once per millisecond: a streamed answer publishes many
 * events within one millisecond, each stamped with it.
 */
export function isoNow(): string {
  const ms = Date.now();
  if (ms !== lastIso.ms) lastIso = { ms, iso: new Date(ms).toISOString() };
  return lastIso.iso;
}

export function statusUpdate(
  taskId: string,
  contextId: string,
  state: TaskState,
  message: Message | undefined,
  metadata: JsonObject | undefined,
): TaskStatusUpdateEvent {
  return { taskId, contextId, status: { state, message, timestamp: isoNow() }, metadata };
}

export function newTask(id: string, contextId: string, userMessage: Message): Task {
  return {
    id,
    contextId,
    status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
    artifacts: [],
    history: [userMessage],
    metadata: undefined,
  };
}

/** The text of a message's text parts, joined. */
export function messageText(message: Message): string {
  return message.parts
    .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
    .filter((s) => s !== '')
    .join('\n');
}
