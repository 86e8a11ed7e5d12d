/**
 * One A2A server over JSON-RPC (`POST /`) and SSE: the agent card, streams, resubscription
 * with `Last-Event-ID`, tasks/get, v1.0 ListTasks and tasks/cancel. Uses only `fetch`, so it
 * runs in browsers, in VS Code extensions and on Node 20.
 */
import { A2AClientError, StreamDroppedError } from './errors.js';
import { readSse } from './sse.js';
import type { StreamItem } from './view.js';
import { isObject } from '../lib/is-object.js';
import { normalizeResult, normalizeTask } from './wire.js';
import type { JsonObject, TaskState, WireTask } from './wire.js';

export interface A2AConnectionOptions {
  /** The server's base URL (`http://127.0.0.1:41242/`): JSON-RPC is POSTed to it. */
  baseUrl: string;
  /** An API key, sent as `X-API-Key`. */
  apiKey?: string;
  /** A bearer token (a JWT, or an API key), sent as `Authorization: Bearer`. */
  bearerToken?: string;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
}

/** A message to send: text and DataParts, on a new task or an existing one. */
export interface OutgoingMessage {
  messageId?: string;
  taskId?: string;
  contextId?: string;
  text?: string;
  data?: JsonObject[];
  metadata?: JsonObject;
}

export interface StreamOptions {
  signal?: AbortSignal;
}

/** One task of a ListTasks page. */
export interface TaskSummary {
  id: string;
  contextId: string;
  state: TaskState;
  /** When the task's status last changed (ISO 8601). */
  updatedAt?: string;
  /** The text of the task's first user message. */
  title: string;
  /** The task in v0.3 form. */
  task: WireTask;
}

/** How `command/execute` answered (ExecuteSlashCommandResponse). */
export interface CommandStart {
  /** The task that runs the command (follow it with resubscribe); absent when it failed to start. */
  executionId?: string;
  /** `STARTED`, `AWAITING_ACTION_CONFIRMATION`, `AWAITING_SHELL_CONFIRMATION` or `FAILED_TO_START`. */
  status: string;
  /** Why it failed to start. */
  message?: string;
}

export interface TaskList {
  tasks: TaskSummary[];
  /** Pass as `pageToken` for the next page; absent on the last page. */
  nextPageToken?: string;
}

let counter = 0;
function newId(prefix: string): string {
  const random =
    typeof crypto !== 'undefined' && typeof crypto.randomUUID === 'function' ? crypto.randomUUID() : `${Date.now()}-${Math.random()}`;
  return `${prefix}-${random}-${++counter}`;
}

/** A v0.3 Message of an OutgoingMessage. */
export function buildMessage(message: OutgoingMessage): JsonObject {
  const parts: JsonObject[] = [];
  if (message.text !== undefined) parts.push({ kind: 'text', text: message.text });
  for (const data of message.data ?? []) parts.push({ kind: 'data', data });
  return {
    kind: 'message',
    role: 'user',
    messageId: message.messageId ?? newId('msg'),
    parts,
    ...(message.taskId !== undefined ? { taskId: message.taskId } : {}),
    ...(message.contextId !== undefined ? { contextId: message.contextId } : {}),
    ...(message.metadata !== undefined ? { metadata: message.metadata } : {}),
  };
}

function summary(raw: JsonObject): TaskSummary {
  const task = normalizeTask(raw);
  const first = task.history?.find((m) => m.role === 'user');
  const title = (first?.parts ?? [])
    .filter((p) => p.kind === 'text')
    .map((p) => p.text ?? '')
    .join('');
  return {
    id: task.id,
    contextId: task.contextId,
    state: task.status.state,
    ...(task.status.timestamp !== undefined ? { updatedAt: task.status.timestamp } : {}),
    title,
    task,
  };
}

export class A2AConnection {
  readonly baseUrl: string;
  private readonly fetchImpl: typeof fetch;
  private nextRpcId = 1;

  constructor(private readonly options: A2AConnectionOptions) {
    this.baseUrl = options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`;
    // Called unbound, a browser's fetch throws "Illegal invocation".
    this.fetchImpl = options.fetch ?? ((input, init) => fetch(input, init));
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    const headers: Record<string, string> = { ...extra };
    if (this.options.bearerToken !== undefined) headers.authorization = `Bearer ${this.options.bearerToken}`;
    if (this.options.apiKey !== undefined) headers['x-api-key'] = this.options.apiKey;
    return headers;
  }

  /** The agent card (`/.well-known/agent-card.json`), v0.3 form. */
  async getAgentCard(): Promise<JsonObject> {
    const res = await this.fetchImpl(new URL('.well-known/agent-card.json', this.baseUrl), { headers: this.headers() });
    if (!res.ok) throw new A2AClientError(-32603, `GET agent card: HTTP ${res.status}`, undefined, res.status);
    return (await res.json()) as JsonObject;
  }

  private async post(method: string, params: unknown, headers: Record<string, string>, signal?: AbortSignal): Promise<Response> {
    const body = JSON.stringify({ jsonrpc: '2.0', id: this.nextRpcId++, method, params });
    const init: RequestInit = { method: 'POST', headers: this.headers({ 'content-type': 'application/json', ...headers }), body };
    if (signal !== undefined) init.signal = signal;
    try {
      return await this.fetchImpl(this.baseUrl, init);
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw err;
      throw new StreamDroppedError(`cannot reach ${this.baseUrl}: ${(err as Error).message}`, { cause: err });
    }
  }

  /** A JSON-RPC call with a plain JSON answer: its result, or its error thrown as A2AClientError. */
  async call(method: string, params: unknown, headers: Record<string, string> = {}): Promise<unknown> {
    const res = await this.post(method, params, headers);
    return resultOf(res, await res.text());
  }

  /** A streaming JSON-RPC call: the SSE items, or the error answered before the stream started. */
  async *callStream(
    method: string,
    params: unknown,
    headers: Record<string, string>,
    opts: StreamOptions = {},
  ): AsyncGenerator<StreamItem> {
    const res = await this.post(method, params, { accept: 'text/event-stream', ...headers }, opts.signal);
    if (!(res.headers.get('content-type') ?? '').includes('text/event-stream') || res.body === null) {
      // A refusal before the stream started is a plain JSON-RPC answer.
      yield { event: resultOf(res, await res.text()) };
      return;
    }
    yield* readSse(res.body);
  }

  /** `message/stream`: sends the message and yields its stream, up to the next pause or the end of the task. */
  stream(message: OutgoingMessage, opts: StreamOptions = {}): AsyncIterable<StreamItem> {
    return this.callStream('message/stream', { message: buildMessage(message) }, {}, opts);
  }

  /**
   * `tasks/resubscribe`: the task's events after `lastEventId` (all of them, from its first,
   * with "0"), then live ones, up to the next pause or the end. Without `lastEventId`: a snapshot
   * of the task, then live events.
   */
  resubscribe(taskId: string, lastEventId?: string, opts: StreamOptions = {}): AsyncIterable<StreamItem> {
    const headers: Record<string, string> = lastEventId !== undefined ? { 'last-event-id': lastEventId } : {};
    return this.callStream('tasks/resubscribe', { id: taskId }, headers, opts);
  }

  /** `tasks/get`: the task in v0.3 form. */
  async getTask(id: string, historyLength?: number): Promise<WireTask> {
    const result = await this.call('tasks/get', { id, ...(historyLength !== undefined ? { historyLength } : {}) });
    if (!isObject(result)) throw new A2AClientError(-32603, 'tasks/get answered no task');
    return normalizeTask(result);
  }

  /** v1.0 `ListTasks`: the caller's tasks, most recently updated first. */
  async listTasks(query: { contextId?: string; pageSize?: number; pageToken?: string } = {}): Promise<TaskList> {
    const result = await this.call('ListTasks', query, { 'a2a-version': '1.0' });
    const tasks = isObject(result) && Array.isArray(result.tasks) ? result.tasks.filter(isObject) : [];
    const token =
      isObject(result) && typeof result.nextPageToken === 'string' && result.nextPageToken !== '' ? result.nextPageToken : undefined;
    return { tasks: tasks.map(summary), ...(token !== undefined ? { nextPageToken: token } : {}) };
  }

  /**
   * `command/execute`: starts a slash command (`['restore']` with args `<checkpoint>`, `['restore', 'list']`,
   * `['memory', 'show']`, …) in `contextId`'s conversation (default: the command picks one).
   */
  async executeCommand(commandPath: string[], opts: { args?: string; contextId?: string } = {}): Promise<CommandStart> {
    const params = {
      command_path: commandPath,
      ...(opts.args !== undefined ? { args: opts.args } : {}),
      ...(opts.contextId !== undefined ? { context_id: opts.contextId } : {}),
    };
    const result = await this.call('command/execute', params);
    if (!isObject(result)) throw new A2AClientError(-32603, 'command/execute answered no ExecuteSlashCommandResponse');
    return {
      status: typeof result.status === 'string' ? result.status : 'FAILED_TO_START',
      ...(typeof result.execution_id === 'string' ? { executionId: result.execution_id } : {}),
      ...(typeof result.message === 'string' ? { message: result.message } : {}),
    };
  }

  /** `tasks/cancel`: the task after cancelling, v0.3 form. */
  async cancel(taskId: string): Promise<WireTask> {
    const result = await this.call('tasks/cancel', { id: taskId });
    const task = normalizeResult(result);
    if (task?.kind !== 'task') throw new A2AClientError(-32603, 'tasks/cancel answered no task');
    return task;
  }
}

/** The result of a plain JSON-RPC answer; its error as A2AClientError. */
function resultOf(res: Response, text: string): unknown {
  let envelope: unknown;
  try {
    envelope = JSON.parse(text);
  } catch {
    throw new A2AClientError(-32603, `HTTP ${res.status}: the answer is not JSON: ${text.slice(0, 200)}`, undefined, res.status);
  }
  if (isObject(envelope) && isObject(envelope.error)) {
    const { code, message, data } = envelope.error;
    throw new A2AClientError(
      typeof code === 'number' ? code : -32603,
      typeof message === 'string' ? message : `HTTP ${res.status}`,
      data,
      res.status,
    );
  }
  if (!isObject(envelope) || !('result' in envelope)) {
    throw new A2AClientError(-32603, `HTTP ${res.status}: not a JSON-RPC answer`, undefined, res.status);
  }
  return envelope.result;
}
