/**
 * The A2A result objects a client reads, in one shape: A2A v0.3 (`kind` fields, kebab-case
 * states) and v1.0 (`{task}` / `{statusUpdate}` wrappers, `TASK_STATE_*`, `ROLE_*`, parts
 * without `kind`) both become the v0.3 form, which is what the fold reads.
 */
import { isObject } from '../lib/is-object.js';

/** A2A task states in their v0.3 spelling. */
export type TaskState =
  'submitted' | 'working' | 'input-required' | 'auth-required' | 'completed' | 'failed' | 'canceled' | 'rejected' | 'unknown';

export type JsonObject = Record<string, unknown>;

export interface WirePart {
  kind: 'text' | 'data' | 'file';
  text?: string;
  data?: JsonObject;
  file?: JsonObject;
  metadata?: JsonObject;
}

export interface WireMessage {
  kind: 'message';
  messageId: string;
  role: 'user' | 'agent';
  parts: WirePart[];
  taskId?: string;
  contextId?: string;
  metadata?: JsonObject;
}

export interface WireStatus {
  state: TaskState;
  message?: WireMessage;
  timestamp?: string;
}

export interface WireArtifact {
  artifactId: string;
  name?: string;
  parts: WirePart[];
  metadata?: JsonObject;
}

export interface WireTask {
  kind: 'task';
  id: string;
  contextId: string;
  status: WireStatus;
  history?: WireMessage[];
  artifacts?: WireArtifact[];
  metadata?: JsonObject;
}

export interface WireStatusUpdate {
  kind: 'status-update';
  taskId: string;
  contextId: string;
  status: WireStatus;
  final: boolean;
  metadata?: JsonObject;
}

export interface WireArtifactUpdate {
  kind: 'artifact-update';
  taskId: string;
  contextId: string;
  artifact: WireArtifact;
  append?: boolean;
  lastChunk?: boolean;
  metadata?: JsonObject;
}

/** One result of a stream, or of `tasks/get` / `message/send`, in v0.3 form. */
export type WireResult = WireTask | WireStatusUpdate | WireArtifactUpdate | WireMessage;

/** States after which a stream ends: the task is done, or waits for a person. */
export const FINAL_STATES: ReadonlySet<TaskState> = new Set([
  'input-required',
  'auth-required',
  'completed',
  'failed',
  'canceled',
  'rejected',
]);
/** States a task never leaves. */
export const TERMINAL_STATES: ReadonlySet<TaskState> = new Set(['completed', 'failed', 'canceled', 'rejected']);

const KNOWN_STATES: ReadonlySet<string> = new Set([...FINAL_STATES, 'submitted', 'working', 'unknown']);

const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** `TASK_STATE_INPUT_REQUIRED` → `input-required`; v0.3 names pass through. */
export function normalizeState(state: unknown): TaskState {
  const raw = str(state) ?? 'unknown';
  const name = raw.startsWith('TASK_STATE_') ? raw.slice('TASK_STATE_'.length).toLowerCase().replace(/_/g, '-') : raw;
  const v03 = name === 'cancelled' ? 'canceled' : name;
  return KNOWN_STATES.has(v03) ? (v03 as TaskState) : 'unknown';
}

function normalizePart(part: unknown): WirePart | undefined {
  if (!isObject(part)) return undefined;
  const metadata = isObject(part.metadata) ? { metadata: part.metadata } : {};
  if (typeof part.text === 'string') return { kind: 'text', text: part.text, ...metadata };
  if (isObject(part.data)) return { kind: 'data', data: part.data, ...metadata };
  if (isObject(part.file)) return { kind: 'file', file: part.file, ...metadata };
  if (typeof part.url === 'string' || typeof part.raw === 'string') return { kind: 'file', file: { ...part }, ...metadata };
  return undefined;
}

function normalizeParts(parts: unknown): WirePart[] {
  return Array.isArray(parts) ? parts.map(normalizePart).filter((p): p is WirePart => p !== undefined) : [];
}

export function normalizeMessage(message: unknown): WireMessage | undefined {
  if (!isObject(message)) return undefined;
  const role =
    str(message.role)
      ?.toLowerCase()
      .replace(/^role_/, '') === 'user'
      ? 'user'
      : 'agent';
  return {
    kind: 'message',
    messageId: str(message.messageId) ?? '',
    role,
    parts: normalizeParts(message.parts),
    ...(str(message.taskId) !== undefined ? { taskId: str(message.taskId) } : {}),
    ...(str(message.contextId) !== undefined ? { contextId: str(message.contextId) } : {}),
    ...(isObject(message.metadata) ? { metadata: message.metadata } : {}),
  };
}

function normalizeStatus(status: unknown): WireStatus {
  const s = isObject(status) ? status : {};
  const message = normalizeMessage(s.message);
  return {
    state: normalizeState(s.state),
    ...(message !== undefined ? { message } : {}),
    ...(str(s.timestamp) !== undefined ? { timestamp: str(s.timestamp) } : {}),
  };
}

function normalizeArtifact(artifact: unknown): WireArtifact {
  const a = isObject(artifact) ? artifact : {};
  return {
    artifactId: str(a.artifactId) ?? '',
    ...(str(a.name) !== undefined ? { name: str(a.name) } : {}),
    parts: normalizeParts(a.parts),
    ...(isObject(a.metadata) ? { metadata: a.metadata } : {}),
  };
}

export function normalizeTask(task: JsonObject): WireTask {
  return {
    kind: 'task',
    id: str(task.id) ?? '',
    contextId: str(task.contextId) ?? '',
    status: normalizeStatus(task.status),
    history: Array.isArray(task.history) ? task.history.map(normalizeMessage).filter((m): m is WireMessage => m !== undefined) : [],
    artifacts: Array.isArray(task.artifacts) ? task.artifacts.map(normalizeArtifact) : [],
    ...(isObject(task.metadata) ? { metadata: task.metadata } : {}),
  };
}

function normalizeStatusUpdate(u: JsonObject): WireStatusUpdate {
  const status = normalizeStatus(u.status);
  return {
    kind: 'status-update',
    taskId: str(u.taskId) ?? '',
    contextId: str(u.contextId) ?? '',
    status,
    // v1.0 dropped `final`: a stream ends at a pause or a terminal state.
    final: u.final === true || FINAL_STATES.has(status.state),
    ...(isObject(u.metadata) ? { metadata: u.metadata } : {}),
  };
}

function normalizeArtifactUpdate(u: JsonObject): WireArtifactUpdate {
  return {
    kind: 'artifact-update',
    taskId: str(u.taskId) ?? '',
    contextId: str(u.contextId) ?? '',
    artifact: normalizeArtifact(u.artifact),
    ...(typeof u.append === 'boolean' ? { append: u.append } : {}),
    ...(typeof u.lastChunk === 'boolean' ? { lastChunk: u.lastChunk } : {}),
    ...(isObject(u.metadata) ? { metadata: u.metadata } : {}),
  };
}

/**
 * A JSON-RPC `result` of either version in v0.3 form; undefined for anything that is none of
 * Task, Message, TaskStatusUpdateEvent or TaskArtifactUpdateEvent.
 */
export function normalizeResult(result: unknown): WireResult | undefined {
  if (!isObject(result)) return undefined;
  switch (result.kind) {
    case 'task':
      return normalizeTask(result);
    case 'status-update':
      return normalizeStatusUpdate(result);
    case 'artifact-update':
      return normalizeArtifactUpdate(result);
    case 'message':
      return normalizeMessage(result);
  }
  if (isObject(result.task)) return normalizeTask(result.task);
  if (isObject(result.statusUpdate)) return normalizeStatusUpdate(result.statusUpdate);
  if (isObject(result.artifactUpdate)) return normalizeArtifactUpdate(result.artifactUpdate);
  if (isObject(result.message)) return normalizeMessage(result.message);
  if (typeof result.messageId === 'string' && Array.isArray(result.parts)) return normalizeMessage(result);
  if (typeof result.id === 'string' && isObject(result.status)) return normalizeTask(result);
  return undefined;
}
