/**
 * The A2A request handler behind both JSON-RPC dialects (v0.3 and v1.0 method names):
 * the SDK's transport handlers parse and serialise, this class decides.
 *
 * Why not the SDK's DefaultRequestHandler: it refuses to continue a completed task
 * (RFC Appendix A step 10), ties persistence to the stream consumer (a dropped client
 * stalls the store), and has no pre-stream hook to refuse a bad confirmation before any
 * SSE is written. Here a task's run is detached from every connection: runs append to
 * the task's event log and each stream follows that log until the next pause or end.
 */
import { randomUUID } from 'node:crypto';
import type {
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksRequest,
  ListTasksResponse,
  Message,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import { messageData, messageText, newTask } from '../protocol/a2a.js';
import type { DevtoolSchema } from '../protocol/devtool-schema.js';
import { extendedCardUnsupported, invalidParams, notCancelable, pushUnsupported, taskNotFound, unsupported } from '../protocol/errors.js';
import type { ContextRegistry } from './context-registry.js';
import type { LoggedEvent } from './event-log.js';
import { LiveTask } from './live-task.js';
import type { ModelPart } from './model/model-client.js';
import { applyResume, carriesConfirmation, planResume } from './resume-handler.js';
import { checkSameWorkspace, resolveWorkspace } from './settings.js';
import type { TaskRegistry } from './task-registry.js';
import { declineCall } from './tool-runner.js';
import type { TurnLoop } from './turn-loop.js';
import { TERMINAL } from './wire/agent-events.js';
import type { WireEncoder } from './wire/wire-encoder.js';

export interface DevtoolRequestHandlerOptions {
  card: () => AgentCard;
  schema: DevtoolSchema;
  loop: TurnLoop;
  encoder: WireEncoder;
  tasks: TaskRegistry;
  contexts: ContextRegistry;
  /** Workspace of a context whose first message names none. */
  defaultWorkspace: string;
}

/** Where a stream of a message starts reading the task's log, and the task. */
interface Started {
  task: LiveTask;
  afterSeq: number;
}

function applyHistoryLength(task: Task, historyLength: number | undefined): Task {
  const copy = structuredClone(task);
  if (historyLength !== undefined) copy.history = historyLength === 0 ? [] : copy.history.slice(-historyLength);
  return copy;
}

export class DevtoolRequestHandler implements A2ARequestHandler {
  constructor(private readonly opts: DevtoolRequestHandlerOptions) {}

  async getAgentCard(): Promise<AgentCard> {
    return this.opts.card();
  }

  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw extendedCardUnsupported();
  }

  async *sendMessageStream(params: SendMessageRequest, _ctx: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    const { task, afterSeq } = this.start(params);
    for await (const ev of task.log.follow(afterSeq)) yield ev.response;
  }

  async sendMessage(params: SendMessageRequest, _ctx: ServerCallContext): Promise<Task> {
    const { task, afterSeq } = this.start(params);
    if (!params.configuration?.returnImmediately) {
      for await (const ev of task.log.follow(afterSeq)) void ev; // until the pause or the end
    }
    return applyHistoryLength(task.task, params.configuration?.historyLength);
  }

  async getTask(params: GetTaskRequest): Promise<Task> {
    if (params.historyLength !== undefined && params.historyLength < 0) throw invalidParams('historyLength must be >= 0');
    return applyHistoryLength(this.load(params.id).task, params.historyLength);
  }

  async listTasks(params: ListTasksRequest): Promise<ListTasksResponse> {
    const all = [...this.opts.tasks.all()]
      .filter((t) => !params.contextId || t.task.contextId === params.contextId)
      .filter((t) => !params.status || t.task.status?.state === params.status)
      .map((t) => applyHistoryLength(t.task, params.historyLength));
    const pageSize = Math.min(Math.max(params.pageSize ?? 50, 1), 100);
    const start = params.pageToken ? Number.parseInt(params.pageToken, 10) || 0 : 0;
    const page = all.slice(start, start + pageSize);
    const next = start + pageSize < all.length ? String(start + pageSize) : '';
    return { tasks: page, nextPageToken: next, pageSize, totalSize: all.length };
  }

  async cancelTask(params: CancelTaskRequest): Promise<Task> {
    const task = this.load(params.id);
    if (TERMINAL.has(task.state)) {
      throw notCancelable(`Task ${task.id} is already ${task.state}; only working or input-required tasks can be canceled`);
    }
    for (const call of task.turn) {
      if (call.phase === 'awaiting' || call.phase === 'ready' || call.phase === 'executing') {
        declineCall(task, call, 'The task was canceled.', 'cancelled');
      }
    }
    task.publish({ type: 'state', state: 'canceled', text: 'The task was canceled by the client.' });
    task.abort.abort();
    return structuredClone(task.task);
  }

  async *resubscribe(params: SubscribeToTaskRequest): AsyncGenerator<StreamResponse, void, undefined> {
    const task = this.load(params.id);
    yield { payload: { $case: 'task', value: structuredClone(task.task) } };
    if (TERMINAL.has(task.state)) return;
    if (task.state === 'input-required') {
      for (const ev of this.lastPause(task)) yield ev.response;
      return;
    }
    for await (const ev of task.log.follow(task.log.lastSeq)) yield ev.response;
  }

  async createTaskPushNotificationConfig(_p: TaskPushNotificationConfig): Promise<TaskPushNotificationConfig> {
    throw pushUnsupported();
  }

  async getTaskPushNotificationConfig(_p: GetTaskPushNotificationConfigRequest): Promise<TaskPushNotificationConfig> {
    throw pushUnsupported();
  }

  async listTaskPushNotificationConfigs(_p: ListTaskPushNotificationConfigsRequest): Promise<ListTaskPushNotificationConfigsResponse> {
    throw pushUnsupported();
  }

  async deleteTaskPushNotificationConfig(_p: DeleteTaskPushNotificationConfigRequest): Promise<void> {
    throw pushUnsupported();
  }

  private load(id: string): LiveTask {
    if (!id) throw invalidParams('id is required');
    const task = this.opts.tasks.get(id);
    if (task === undefined) throw taskNotFound(id);
    return task;
  }

  /** The cards of the calls still waiting, then the input-required event that paused the task. */
  private lastPause(task: LiveTask): LoggedEvent[] {
    const cards = task.awaiting().map((c) => c.lastEvent).filter((ev): ev is LoggedEvent => ev !== undefined);
    const pause = task.log.after(task.log.lastSeq - 1);
    return [...cards, ...pause];
  }

  /**
   * Validates the message and sets the task moving. Everything that can be refused is
   * refused here, before the first event, so a refusal is a plain JSON-RPC error.
   */
  private start(params: SendMessageRequest): Started {
    const message = params.message;
    if (message === undefined) throw invalidParams('message is required');
    if (message.parts.length === 0) throw invalidParams('message.parts must not be empty');
    if (!message.taskId) return this.startTask(message);
    const task = this.load(message.taskId);
    if (message.contextId && message.contextId !== task.task.contextId) {
      throw invalidParams(`message.contextId "${message.contextId}" does not match task ${task.id} (context ${task.task.contextId})`);
    }
    checkSameWorkspace(message, this.opts.schema, task.context.workspace);
    const afterSeq = task.log.lastSeq;
    const stamped = { ...message, contextId: task.task.contextId };
    if (task.awaiting().length > 0) {
      const plan = planResume(task, stamped, this.opts.schema);
      task.addUserMessage(stamped);
      applyResume(task, plan, this.opts.loop);
      return { task, afterSeq };
    }
    if (carriesConfirmation(stamped, this.opts.schema)) {
      planResume(task, stamped, this.opts.schema); // throws the precise reason: unknown id, already answered…
      throw invalidParams(`Task ${task.id} is not waiting for a confirmation (state: ${task.state})`);
    }
    if (task.state !== 'completed') {
      throw unsupported(
        task.state === 'working'
          ? `Task ${task.id} is still working; send the next message after it pauses or completes, or cancel it`
          : `Task ${task.id} is ${task.state} and cannot be continued; start a new task in context ${task.task.contextId}`,
      );
    }
    task.addUserMessage(stamped);
    task.publish({ type: 'state', state: 'working' });
    this.opts.loop.startTurn(task, userParts(stamped));
    return { task, afterSeq };
  }

  private startTask(message: Message): Started {
    if (carriesConfirmation(message, this.opts.schema)) {
      throw invalidParams('message.taskId is required to answer a tool call (the ToolCallConfirmation names no task)');
    }
    const contextId = message.contextId || randomUUID();
    let context = this.opts.contexts.get(contextId);
    if (context) checkSameWorkspace(message, this.opts.schema, context.workspace);
    else context = this.opts.contexts.create(contextId, resolveWorkspace(message, this.opts.schema, this.opts.defaultWorkspace));
    const taskId = randomUUID();
    const stamped: Message = { ...message, taskId, contextId };
    const task = new LiveTask(newTask(taskId, contextId, stamped), context, this.opts.encoder, this.opts.loop.modelName);
    this.opts.tasks.add(task);
    task.publishSnapshot();
    task.publish({ type: 'state', state: 'working' });
    this.opts.loop.startTurn(task, userParts(stamped));
    return { task, afterSeq: 0 };
  }
}

/** The model's view of a user message: its text, and any data parts as JSON. */
function userParts(message: Message): ModelPart[] {
  const parts: ModelPart[] = [];
  const text = messageText(message);
  if (text) parts.push({ text });
  for (const { data } of messageData(message)) parts.push({ text: JSON.stringify(data) });
  return parts.length > 0 ? parts : [{ text: '(empty message)' }];
}

