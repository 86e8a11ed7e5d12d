/**
 * The view model of one task and the pure fold that builds it from the items of its streams:
 * `view = foldEvent(view, item)` for every item, in order. The fold never mutates its input;
 * an item whose SSE id the view already applied changes nothing, so a stream resumed with
 * `Last-Event-ID` (or one that repeats itself) never shows an event twice.
 */
import { DEVTOOL_EXTENSION_URI } from '../protocol/extension.js';
import { legacyCard, rfcCard, toolCallId } from './cards.js';
import type { ToolCardView } from './cards.js';
import { isObject } from '../lib/is-object.js';
import { FINAL_STATES, normalizeResult } from './wire.js';
import type { JsonObject, TaskState, WireArtifactUpdate, WireMessage, WireStatusUpdate, WireTask } from './wire.js';

export type { CardOption, FileDiffView, ToolCallStatus, ToolCardView } from './cards.js';
export type { TaskState } from './wire.js';

/** One item of an SSE stream: its `id:` (the event's sequence number in its task) and the JSON-RPC result. */
export interface StreamItem {
  id?: string;
  event: unknown;
}

export interface Thought {
  subject: string;
  description: string;
}

/** One step of the conversation, in order: what a client draws to redraw it. */
export type TranscriptEntry =
  | { role: 'user'; kind: 'text'; text: string; messageId?: string }
  | { role: 'user'; kind: 'answer'; toolCallId: string; optionId: string; feedback?: string; messageId?: string }
  | { role: 'agent'; kind: 'text'; text: string }
  | { role: 'agent'; kind: 'thought'; subject: string; description: string }
  | { role: 'agent'; kind: 'card'; cardId: string };

export interface ArtifactView {
  artifactId: string;
  name?: string;
  /** The text parts, appended chunk by chunk. */
  text: string;
  /** The data parts of the last chunk. */
  data: JsonObject[];
}

/** Whether a stream of the session is open: set by TaskSession, not by the fold. */
export type ConnectionState = 'live' | 'reconnecting' | 'closed';

export interface TaskView {
  taskId: string;
  contextId: string;
  /** A2A task state, v0.3 spelling (v1.0's `TASK_STATE_INPUT_REQUIRED` becomes `input-required`). */
  state: TaskState;
  /** The agent's streamed answer: every text delta of the task, concatenated. */
  text: string;
  thoughts: Thought[];
  /** One card per tool call, in order of first appearance. */
  cards: ToolCardView[];
  /** The SSE id of the last item applied: what `Last-Event-ID` resumes after. */
  lastEventId?: string;
  /** True when the task paused (input-required, auth-required) or ended: no stream has more to say. */
  final: boolean;
  /** Why the task failed. */
  error?: string;
  /** The text of the last state change: what a pause waits for, why a task ended. */
  statusMessage?: string;
  /** The JSON Schema of the answer the current pause accepts (RFC dialect). */
  inputSchema?: JsonObject;
  /** The model named by the last development-tool event. */
  model?: string;
  /** Which wire the task speaks: the RFC's DevelopmentToolEvent or gemini-cli's legacy `coderAgent`. */
  dialect: 'rfc' | 'legacy';
  transcript: TranscriptEntry[];
  artifacts: ArtifactView[];
  connection: ConnectionState;
  /**
   * User messages a snapshot showed that the event log does not carry (answers and follow-up
   * prompts): placed in the transcript when a replay reaches the turn each one started.
   */
  pendingUser: TranscriptEntry[][];
}

export function emptyView(): TaskView {
  return {
    taskId: '',
    contextId: '',
    state: 'unknown',
    text: '',
    thoughts: [],
    cards: [],
    final: false,
    dialect: 'rfc',
    transcript: [],
    artifacts: [],
    connection: 'closed',
    pendingUser: [],
  };
}

const PAUSED_OR_DONE: ReadonlySet<TaskState> = new Set(['input-required', 'auth-required', 'completed']);

function seqOf(id: string | undefined): number | undefined {
  if (id === undefined || !/^\d+$/.test(id)) return undefined;
  return Number(id);
}

function taskIdOf(result: NonNullable<ReturnType<typeof normalizeResult>>): string | undefined {
  if (result.kind === 'task') return result.id;
  if (result.kind === 'message') return result.taskId;
  return result.taskId;
}

/** True when `item` was applied already: an id at or below the last one applied, in the same task. */
function alreadyApplied(view: TaskView, item: StreamItem, taskId: string | undefined): boolean {
  const seq = seqOf(item.id);
  const last = seqOf(view.lastEventId);
  if (seq === undefined || last === undefined) return false;
  return (taskId === undefined || taskId === view.taskId) && seq <= last;
}

/**
 * Folds one stream item into the view and returns the new view. Handles Task snapshots,
 * status updates (with the development-tool extension's events in either dialect),
 * artifact updates and Messages, in A2A v0.3 or v1.0 form. Items it does not understand
 * leave the view as it was (their id still counts as applied).
 */
export function foldEvent(view: TaskView, item: StreamItem): TaskView {
  const result = normalizeResult(item.event);
  const taskId = result !== undefined ? taskIdOf(result) : undefined;
  if (alreadyApplied(view, item, taskId)) return view;
  // Another task's events start its own view.
  const base =
    taskId !== undefined && taskId !== '' && view.taskId !== '' && taskId !== view.taskId
      ? { ...emptyView(), connection: view.connection }
      : view;
  let next: TaskView = base;
  if (result?.kind === 'task') next = foldTask(base, result, item.id !== undefined);
  else if (result?.kind === 'status-update') next = foldStatus(base, result);
  else if (result?.kind === 'artifact-update') next = foldArtifact(base, result);
  else if (result?.kind === 'message') next = foldMessage(base, result);
  return item.id !== undefined && seqOf(item.id) !== undefined ? { ...next, lastEventId: item.id } : next;
}

/** The transcript entries of a user message: its text, and one entry per answer DataPart. */
export function userEntries(message: WireMessage): TranscriptEntry[] {
  const messageId = message.messageId !== '' ? { messageId: message.messageId } : {};
  const entries: TranscriptEntry[] = [];
  const text = message.parts
    .filter((p) => p.kind === 'text')
    .map((p) => p.text ?? '')
    .join('');
  const answers = message.parts.filter((p) => p.kind === 'data' && p.data !== undefined).map((p) => p.data as JsonObject);
  for (const data of answers) {
    const toolCallId = data.tool_call_id ?? data.toolCallId ?? data.callId;
    const optionId = data.selected_option_id ?? data.selectedOptionId ?? data.outcome ?? data.confirmation;
    if (typeof toolCallId !== 'string' && typeof optionId !== 'string') continue;
    const feedback = typeof data.feedback === 'string' ? data.feedback : undefined;
    entries.push({
      role: 'user',
      kind: 'answer',
      toolCallId: typeof toolCallId === 'string' ? toolCallId : '',
      optionId: typeof optionId === 'string' ? optionId : '',
      ...(feedback !== undefined ? { feedback } : answers.length === 1 && text !== '' ? { feedback: text } : {}),
      ...messageId,
    });
  }
  if (text !== '' && entries.length === 0) entries.unshift({ role: 'user', kind: 'text', text, ...messageId });
  return entries;
}

function hasMessage(view: TaskView, messageId: string): boolean {
  return messageId !== '' && view.transcript.some((e) => e.role === 'user' && e.messageId === messageId);
}

function appendAgentText(view: TaskView, text: string): TaskView {
  if (text === '') return view;
  const last = view.transcript.at(-1);
  const transcript: TranscriptEntry[] =
    last?.role === 'agent' && last.kind === 'text'
      ? [...view.transcript.slice(0, -1), { role: 'agent', kind: 'text', text: last.text + text }]
      : [...view.transcript, { role: 'agent', kind: 'text', text }];
  return { ...view, text: view.text + text, transcript };
}

function upsertCard(view: TaskView, card: ToolCardView): TaskView {
  const index = view.cards.findIndex((c) => c.id === card.id);
  if (index >= 0) return { ...view, cards: view.cards.map((c, i) => (i === index ? card : c)) };
  return { ...view, cards: [...view.cards, card], transcript: [...view.transcript, { role: 'agent', kind: 'card', cardId: card.id }] };
}

function foldToolCall(
  view: TaskView,
  data: JsonObject,
  at: string | undefined,
  reason: string | undefined,
  partMetadata?: JsonObject,
): TaskView {
  const id = toolCallId(data);
  if (id === undefined) return view;
  const prev = view.cards.find((c) => c.id === id);
  const card = typeof data.tool_call_id === 'string' ? rfcCard(prev, data, at, reason, partMetadata) : legacyCard(prev, data, at);
  return upsertCard(view, card);
}

function addThought(view: TaskView, data: JsonObject): TaskView {
  const thought = {
    subject: typeof data.subject === 'string' ? data.subject : '',
    description: typeof data.description === 'string' ? data.description : '',
  };
  return {
    ...view,
    thoughts: [...view.thoughts, thought],
    transcript: [...view.transcript, { role: 'agent', kind: 'thought', ...thought }],
  };
}

function textOf(message: WireMessage | undefined): string {
  return (message?.parts ?? [])
    .filter((p) => p.kind === 'text')
    .map((p) => p.text ?? '')
    .join('');
}

/** The DataParts of a message with their part metadata (a ToolCall's names its checkpoint). */
function dataParts(message: WireMessage | undefined): Array<{ data: JsonObject; metadata?: JsonObject }> {
  return (message?.parts ?? []).flatMap((p) =>
    p.kind === 'data' && p.data !== undefined ? [{ data: p.data, ...(p.metadata ? { metadata: p.metadata } : {}) }] : [],
  );
}

function dataOf(message: WireMessage | undefined): JsonObject[] {
  return (message?.parts ?? []).filter((p) => p.kind === 'data' && p.data !== undefined).map((p) => p.data as JsonObject);
}

/** The event kind and model of a status update: the RFC's DevelopmentToolEvent, or the legacy `coderAgent` metadata. */
function eventKind(update: WireStatusUpdate): { kind?: string; model?: string; error?: string; legacy: boolean } {
  const rfc = update.metadata?.[DEVTOOL_EXTENSION_URI];
  if (isObject(rfc)) {
    return {
      legacy: false,
      ...(typeof rfc.kind === 'string' ? { kind: rfc.kind } : {}),
      ...(typeof rfc.model === 'string' ? { model: rfc.model } : {}),
      ...(typeof rfc.error === 'string' ? { error: rfc.error } : {}),
    };
  }
  const legacy = update.metadata?.coderAgent;
  if (isObject(legacy) && typeof legacy.kind === 'string') {
    const model = update.metadata?.model;
    return { legacy: true, kind: legacy.kind, ...(typeof model === 'string' ? { model } : {}) };
  }
  return { legacy: false };
}

/** A new turn starts (a paused or finished task works again): the user message that started it goes first. */
function placePendingUser(view: TaskView, state: TaskState): TaskView {
  if (state !== 'working' || !PAUSED_OR_DONE.has(view.state) || view.pendingUser.length === 0) return view;
  const [first = [], ...rest] = view.pendingUser;
  return { ...view, transcript: [...view.transcript, ...first], pendingUser: rest };
}

function foldStatus(view: TaskView, update: WireStatusUpdate): TaskView {
  const { kind, model, error, legacy } = eventKind(update);
  const state = update.status.state;
  let next: TaskView = placePendingUser(view, state);
  next = {
    ...next,
    taskId: update.taskId || next.taskId,
    contextId: update.contextId || next.contextId,
    state,
    final: update.final || FINAL_STATES.has(state),
    ...(legacy ? { dialect: 'legacy' as const } : {}),
    ...(model !== undefined ? { model } : {}),
  };
  const message = update.status.message;
  switch (kind) {
    case 'TEXT_CONTENT':
    case 'text-content':
      return appendAgentText(next, textOf(message));
    case 'THOUGHT':
    case 'thought':
      return dataOf(message).reduce(addThought, next);
    case 'TOOL_CALL_UPDATE':
    case 'tool-call-update':
    case 'tool-call-confirmation': {
      const reason = textOf(message) || undefined;
      return dataParts(message).reduce((v, p) => foldToolCall(v, p.data, update.status.timestamp, reason, p.metadata), next);
    }
    default:
      return foldStateChange(next, update, error);
  }
}

function foldStateChange(view: TaskView, update: WireStatusUpdate, error: string | undefined): TaskView {
  const state = update.status.state;
  const text = textOf(update.status.message);
  const schema = update.metadata?.inputSchema;
  const { inputSchema: _schema, error: _error, statusMessage: _message, ...rest } = view;
  return {
    ...rest,
    ...(text !== '' ? { statusMessage: text } : {}),
    ...(state === 'failed' ? { error: error ?? (text || 'the task failed') } : error !== undefined ? { error } : {}),
    ...(isObject(schema) && FINAL_STATES.has(state) ? { inputSchema: schema } : {}),
  };
}

function foldArtifact(view: TaskView, update: WireArtifactUpdate): TaskView {
  const { artifact } = update;
  const text = artifact.parts
    .filter((p) => p.kind === 'text')
    .map((p) => p.text ?? '')
    .join('');
  const data = artifact.parts.filter((p) => p.kind === 'data' && p.data !== undefined).map((p) => p.data as JsonObject);
  const legacyOutput = /^tool-(.+)-output$/.exec(artifact.artifactId);
  const card = legacyOutput ? view.cards.find((c) => c.id === legacyOutput[1]) : undefined;
  let next: TaskView = { ...view, taskId: update.taskId || view.taskId, contextId: update.contextId || view.contextId };
  // The legacy dialect sends a shell call's whole output so far as an artifact of the call.
  if (card !== undefined) next = upsertCard(next, { ...card, liveOutput: text });
  const index = next.artifacts.findIndex((a) => a.artifactId === artifact.artifactId);
  const prev = index >= 0 ? next.artifacts[index] : undefined;
  const merged: ArtifactView = {
    artifactId: artifact.artifactId,
    ...(artifact.name !== undefined ? { name: artifact.name } : prev?.name !== undefined ? { name: prev.name } : {}),
    text: update.append === true && prev !== undefined && card === undefined ? prev.text + text : text,
    data,
  };
  const artifacts = index >= 0 ? next.artifacts.map((a, i) => (i === index ? merged : a)) : [...next.artifacts, merged];
  return { ...next, artifacts };
}

function foldMessage(view: TaskView, message: WireMessage): TaskView {
  const ids = { taskId: message.taskId ?? view.taskId, contextId: message.contextId ?? view.contextId };
  if (message.role === 'user') {
    if (hasMessage(view, message.messageId)) return view;
    return { ...view, ...ids, transcript: [...view.transcript, ...userEntries(message)] };
  }
  // An agent Message answers the request on its own: nothing follows it.
  return { ...appendAgentText({ ...view, ...ids }, textOf(message)), final: true };
}

/** A Task snapshot: logged (it has an SSE id: the task's first event) or current (tasks/get, the head of a resubscribe). */
function foldTask(view: TaskView, task: WireTask, logged: boolean): TaskView {
  const sameTask = view.taskId === task.id;
  const fresh = view.transcript.length === 0 && view.cards.length === 0;
  const ids = { taskId: task.id, contextId: task.contextId || view.contextId };
  const base = { ...view, ...ids, state: task.status.state, final: FINAL_STATES.has(task.status.state) };
  if (!logged && !fresh) return base;
  // The log replays the task from its first event: rebuild from it, keeping the user messages
  // an earlier snapshot showed that the log does not carry.
  const history = task.history ?? [];
  const inHistory = new Set(history.map((m) => m.messageId));
  const carried = sameTask ? userGroups(view.transcript).filter((g) => !inHistory.has(messageIdOf(g))) : [];
  let next: TaskView = { ...emptyView(), ...ids, connection: view.connection, state: base.state, final: base.final, dialect: view.dialect };
  for (const message of history) next = foldHistoryMessage(next, message, task.status.timestamp);
  next = { ...next, pendingUser: logged ? [...carried, ...view.pendingUser] : [] };
  if (view.lastEventId !== undefined && !logged) next.lastEventId = view.lastEventId;
  return foldTaskArtifacts(next, task);
}

function foldTaskArtifacts(view: TaskView, task: WireTask): TaskView {
  return (task.artifacts ?? []).reduce(
    (v, artifact) => foldArtifact(v, { kind: 'artifact-update', taskId: task.id, contextId: task.contextId, artifact }),
    view,
  );
}

function messageIdOf(group: TranscriptEntry[]): string {
  const first = group[0];
  return first?.role === 'user' ? (first.messageId ?? '') : '';
}

/** The user entries of a transcript, grouped by the message they came from. */
function userGroups(transcript: TranscriptEntry[]): TranscriptEntry[][] {
  const groups: TranscriptEntry[][] = [];
  for (const entry of transcript) {
    if (entry.role !== 'user' || entry.messageId === undefined) continue;
    const last = groups.at(-1);
    if (last !== undefined && messageIdOf(last) === entry.messageId) last.push(entry);
    else groups.push([entry]);
  }
  return groups;
}

/** One message of a snapshot's history: user messages as entries, agent text as text, ToolCall DataParts as cards. */
function foldHistoryMessage(view: TaskView, message: WireMessage, at: string | undefined): TaskView {
  if (message.role === 'user') return foldMessage(view, message);
  let next = appendAgentText(view, textOf(message));
  for (const { data, metadata } of dataParts(message)) {
    if (toolCallId(data) !== undefined) next = foldToolCall(next, data, at, undefined, metadata);
    else if (typeof data.subject === 'string' && typeof data.description === 'string') next = addThought(next, data);
  }
  return next;
}
