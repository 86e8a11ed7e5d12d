/**
 * The A2A request handler behind both JSON-RPC dialects (v0.3 and v1.0 method names):
 * the SDK's transport handlers parse and serialise, this class decides.
 *
 * Why not the SDK's DefaultRequestHandler: it refuses to continue a completed task
 * (RFC Appendix A step 10), ties persistence to the stream consumer (a dropped client
 * stalls the store), has no pre-stream hook to refuse a bad confirmation before any SSE
 * is written, and no numbered replay. Here a task's run is detached from every
 * connection: runs commit events to the store, and each stream follows the task's log
 * (EventHub) until the next pause or end.
 */
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
import { aboutTask, CTX_LAST_EVENT_ID, CTX_SSE_OWN_METADATA, CTX_SSE_TAGS, stateName } from '../../protocol/a2a.js';
import type { SseTag } from '../../protocol/a2a.js';
import { callerOf } from '../../protocol/caller.js';
import type { Caller } from '../../protocol/caller.js';
import {
  extendedCardUnsupported,
  forbidden,
  invalidParams,
  notCancelable,
  pushUnsupported,
  taskNotFound,
  unsupported,
} from '../../protocol/errors.js';
import type { PushConfigRecord, PushWireVersion } from '../../push/push-store.js';
import { DEFAULT_CONFIG_ID } from '../../protocol/push-config.js';
import type { PushRegistry } from '../../push/push-registry.js';
import type { EventHub } from '../runtime/event-hub.js';
import type { LiveTask } from '../runtime/live-task.js';
import type { Access } from '../policy/access.js';
import type { MessageRouter } from './message-router.js';
import type { TaskCache } from '../runtime/task-cache.js';
import type { StoredEvent, TaskStore } from '../task-store.js';
import type { Encoders, WireDialect } from '../wire/wire-encoder.js';
import { cancelTask, notWorkedHere } from '../runtime/task-lifecycle.js';
import { PAUSED, TERMINAL } from '../wire/agent-events.js';
import type { TaskStateName } from '../wire/agent-events.js';

export interface DevtoolRequestHandlerOptions {
  card: () => AgentCard;
  /** The card an authenticated caller reads; absent = none (-32007), as when authentication is off. */
  extendedCard?: () => AgentCard;
  /** Decides what a message means and sets its task moving (shared with the slash commands). */
  router: MessageRouter;
  hub: EventHub;
  store: TaskStore;
  cache: TaskCache;
  access: Access;
  /** One encoder per dialect: a task's waiting cards and snapshot are read in its own. */
  encoders: Encoders;
  /** Push notification configs; absent = push is not offered (-32003). */
  push?: PushRegistry;
}

function toWire(c: PushConfigRecord): TaskPushNotificationConfig {
  return { tenant: '', id: c.id, taskId: c.taskId, url: c.url, token: c.token ?? '', authentication: c.authentication };
}

/** One `audit/list` entry (snake_case JSON). */
export interface AuditEntryJson {
  at: string;
  task_id: string;
  context_id: string;
  principal: string | null;
  decision: string;
  tool_call_id: string | null;
  option_id?: string;
  shown_hash: string | null;
  detail?: Record<string, unknown>;
}

const version = (ctx: ServerCallContext | undefined): PushWireVersion => (ctx?.requestedVersion === '1.0' ? '1.0' : '0.3');
/** How often tasks/cancel is tried on a task read afresh when another instance moved it on meanwhile. */
const CANCEL_ATTEMPTS = 5;

function applyHistoryLength(task: Task, historyLength: number | undefined): Task {
  const copy = structuredClone(task);
  if (historyLength !== undefined) copy.history = historyLength === 0 ? [] : copy.history.slice(-historyLength);
  return copy;
}

/** Records what the transport needs of the next yielded event (see CTX_SSE_TAGS). */
function tag(ctx: ServerCallContext, t: SseTag): void {
  let tags = ctx.state.get(CTX_SSE_TAGS) as SseTag[] | undefined;
  if (!tags) ctx.state.set(CTX_SSE_TAGS, (tags = []));
  tags.push(t);
}

/**
 * Tags a logged event and returns what to yield for it: the event itself, or — when the
 * transport puts status updates' metadata back itself (CTX_SSE_OWN_METADATA) — a shallow copy
 * of its status update without the metadata, which rides in the tag instead.
 */
function emitLogged(ctx: ServerCallContext, ev: StoredEvent): StreamResponse {
  const payload = ev.response.payload;
  if (payload?.$case === 'statusUpdate' && payload.value.metadata !== undefined && ctx.state.get(CTX_SSE_OWN_METADATA) === true) {
    tag(ctx, { id: ev.seq, final: ev.final, metadata: payload.value.metadata });
    return { payload: { $case: 'statusUpdate', value: { ...payload.value, metadata: undefined } } };
  }
  tag(ctx, { id: ev.seq, final: ev.final });
  return ev.response;
}

/** Whether a logged event ends a subscription: any final one, or under v1.0 only a terminal state. */
function endsSubscription(ev: StoredEvent, untilTerminal: boolean): boolean {
  if (!ev.final) return false;
  if (!untilTerminal || ev.response.payload?.$case !== 'statusUpdate') return true;
  return TERMINAL.has(stateName(ev.response.payload.value.status?.state) as TaskStateName);
}

/** The status message of a final event the model marked as a direct reply (ModelOutcome.reply). */
function directReply(last: StreamResponse | undefined): Message | undefined {
  if (last?.payload?.$case !== 'statusUpdate') return undefined;
  const update = last.payload.value;
  return update.metadata?.reply === 'message' ? update.status?.message : undefined;
}

export class DevtoolRequestHandler implements A2ARequestHandler {
  private readonly router: MessageRouter;

  constructor(private readonly opts: DevtoolRequestHandlerOptions) {
    this.router = opts.router;
  }

  async getAgentCard(): Promise<AgentCard> {
    return this.opts.card();
  }

  async getAuthenticatedExtendedAgentCard(_params: unknown, ctx?: ServerCallContext): Promise<AgentCard> {
    const extended = this.opts.extendedCard;
    if (extended === undefined) throw extendedCardUnsupported();
    // The authentication hook already refused a request without credentials; a second lock.
    if (callerOf(ctx) === undefined) throw forbidden('the extended agent card needs an authenticated caller');
    return extended();
  }

  async *sendMessageStream(params: SendMessageRequest, ctx: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    const { task, afterSeq } = await this.routeWithPush(params, ctx);
    for await (const ev of this.opts.hub.follow(task.id, afterSeq)) yield emitLogged(ctx, ev);
  }

  async sendMessage(params: SendMessageRequest, ctx?: ServerCallContext): Promise<Task | Message> {
    const { task, afterSeq } = await this.routeWithPush(params, ctx);
    const historyLength = params.configuration?.historyLength;
    // returnImmediately: the task as it was accepted (it goes on; poll or resubscribe).
    const view = (t: Task) => this.opts.encoders[task.dialect].taskView(t);
    if (params.configuration?.returnImmediately) return view(applyHistoryLength(task.task, historyLength));
    let last: StreamResponse | undefined;
    for await (const ev of this.opts.hub.follow(task.id, afterSeq)) last = ev.response; // until the pause or the end
    return directReply(last) ?? view(applyHistoryLength(await this.snapshot(task.id), historyLength));
  }

  /**
   * Routes a message; a push config in its configuration is checked first (a refused URL
   * changes nothing) and registered for the task before the first event can go out.
   */
  private async routeWithPush(params: SendMessageRequest, ctx: ServerCallContext | undefined) {
    const caller = callerOf(ctx);
    const wanted = params.configuration?.taskPushNotificationConfig;
    const push = wanted && wanted.url ? this.opts.push : undefined;
    if (wanted?.url && push === undefined) throw pushUnsupported();
    if (push && wanted) await push.check(wanted, 'configuration.pushNotificationConfig');
    const routed = await this.router.route(params, caller, version(ctx));
    aboutTask(ctx, routed.task.id, routed.task.task.contextId);
    if (push && wanted) {
      await push.save({ ...wanted, taskId: routed.task.id }, version(ctx), this.opts.access.ownerFor(caller), routed.afterSeq);
    }
    return routed;
  }

  async getTask(params: GetTaskRequest, ctx?: ServerCallContext): Promise<Task> {
    if (params.historyLength !== undefined && params.historyLength < 0) throw invalidParams('historyLength must be >= 0');
    await this.checkTask(params.id, callerOf(ctx), ctx);
    const { task, dialect } = await this.current(params.id);
    return this.opts.encoders[dialect].taskView(applyHistoryLength(task, params.historyLength));
  }

  /** Throws taskNotFound, or forbidden when the caller may not use the task. */
  private async checkTask(id: string, caller: Caller | undefined, ctx?: ServerCallContext): Promise<void> {
    if (!this.opts.access.enabled) return aboutTask(ctx, id);
    if (!id) throw invalidParams('id is required');
    const stored = this.opts.cache.peek(id) ?? (await this.opts.store.loadTask(id));
    aboutTask(ctx, id, stored?.task.contextId);
    if (!stored) throw taskNotFound(id);
    this.opts.access.checkOwner(caller, stored.principal, `task ${id}`);
  }

  async listTasks(params: ListTasksRequest, ctx?: ServerCallContext): Promise<ListTasksResponse> {
    const pageSize = Math.min(Math.max(params.pageSize ?? 50, 1), 100);
    if (params.pageToken && !/^\d{1,9}$/.test(params.pageToken)) {
      throw invalidParams(`pageToken "${params.pageToken}" is not a page token from a previous ListTasks answer`);
    }
    const offset = params.pageToken ? Number(params.pageToken) : 0;
    const state = params.status ? stateName(params.status) : undefined;
    const caller = callerOf(ctx);
    if (this.opts.access.enabled && caller === undefined) throw forbidden('tasks/list needs an authenticated caller');
    const principal = this.opts.access.enabled ? caller?.id : undefined;
    const { tasks, total } = await this.opts.store.listTasks({
      contextId: params.contextId || undefined,
      state,
      principal,
      limit: pageSize,
      offset,
    });
    const next = offset + pageSize < total ? String(offset + pageSize) : '';
    return { tasks: tasks.map((t) => applyHistoryLength(t, params.historyLength)), nextPageToken: next, pageSize, totalSize: total };
  }

  /**
   * tasks/cancel. The copy cancelled may be behind the store (the task runs on another instance,
   * which paused or ended it meanwhile): then the store refuses the cancel, and it is tried again
   * on the task read afresh — which may now refuse it as already ended.
   */
  async cancelTask(params: CancelTaskRequest, ctx?: ServerCallContext): Promise<Task> {
    await this.checkTask(params.id, callerOf(ctx), ctx);
    for (let attempt = 1; ; attempt++) {
      const task = await this.load(params.id);
      // A legacy task's finished turn is a pause to its client, which ends the task with tasks/cancel.
      const idleLegacy = task.dialect === 'legacy' && task.state === 'completed';
      if (TERMINAL.has(task.state) && !idleLegacy) {
        notWorkedHere(task);
        throw notCancelable(`Task ${task.id} is already ${task.state}; only working or input-required tasks can be canceled`);
      }
      cancelTask(task, this.opts.access.ownerFor(callerOf(ctx)));
      await task.flush();
      if (!task.overtaken) return this.opts.encoders[task.dialect].taskView(structuredClone(task.task));
      if (attempt === CANCEL_ATTEMPTS) throw unsupported(`Task ${task.id} kept changing on another instance; send tasks/cancel again`);
    }
  }

  /**
   * tasks/resubscribe (v1.0 SubscribeToTask): the Task snapshot first (no SSE id), then — with
   * Last-Event-ID — every logged event after it, then live events. A paused task re-sends its
   * waiting cards and the pause event, with its inputSchema (nothing is consumed). Under v0.3
   * the stream ends at the next pause or end, like message/stream's; under v1.0 a subscription
   * lasts until the task is in a terminal state (its pauses pass through), and a task already in
   * one cannot be subscribed to (-32004) unless Last-Event-ID asks for what was missed, which is
   * replayed before the stream ends.
   */
  async *resubscribe(params: SubscribeToTaskRequest, ctx: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    await this.opts.cache.peek(params.id)?.flush();
    const stored = params.id ? await this.opts.store.loadTask(params.id) : undefined;
    if (!stored) throw params.id ? taskNotFound(params.id) : invalidParams('id is required');
    aboutTask(ctx, params.id, stored.task.contextId);
    this.opts.access.checkOwner(callerOf(ctx), stored.principal, `task ${params.id}`);
    const lastEventId = ctx.state.get(CTX_LAST_EVENT_ID) as number | undefined;
    if (lastEventId !== undefined && lastEventId > stored.lastSeq) {
      throw invalidParams(`Last-Event-ID ${lastEventId} is beyond the last event of task ${params.id} (${stored.lastSeq})`);
    }
    const state = stateName(stored.task.status?.state) as TaskStateName;
    const untilTerminal = version(ctx) === '1.0';
    if (untilTerminal && TERMINAL.has(state) && lastEventId === undefined) {
      throw unsupported(`Task ${params.id} is ${state}: a task in a terminal state has no updates to subscribe to; read it with GetTask`);
    }
    tag(ctx, {});
    yield { payload: { $case: 'task', value: this.opts.encoders[stored.dialect].taskView(stored.task) } };
    const emit = (ev: StoredEvent) => emitLogged(ctx, ev);
    let cursor = lastEventId ?? stored.lastSeq;
    if (PAUSED.has(state)) {
      // What was missed, plus the waiting cards and the pause (always re-sent), in log order.
      const pause = await this.pauseEvents(params.id, stored.dialect);
      const missed = lastEventId === undefined ? [] : await this.opts.store.eventsAfter(params.id, lastEventId);
      const bySeq = new Map([...missed.filter((ev) => !ev.final), ...pause].map((ev) => [ev.seq, ev]));
      for (const ev of [...bySeq.values()].sort((a, b) => a.seq - b.seq)) yield emit(ev);
      if (!untilTerminal) return;
      cursor = Math.max(cursor, ...bySeq.keys());
    } else {
      // Replay what is logged now (older pauses included).
      let last: StoredEvent | undefined;
      if (lastEventId !== undefined) {
        for await (const ev of this.opts.hub.follow(params.id, lastEventId, { untilFinal: false })) {
          cursor = ev.seq;
          last = ev;
          yield emit(ev);
        }
      }
      if (TERMINAL.has(state) || (last !== undefined && endsSubscription(last, untilTerminal))) return;
    }
    // Live, until a pause (v0.3) or a terminal state.
    for (;;) {
      let last: StoredEvent | undefined;
      for await (const ev of this.opts.hub.follow(params.id, cursor)) yield emit((last = ev));
      if (last === undefined || endsSubscription(last, untilTerminal)) return;
      cursor = last.seq;
    }
  }

  async createTaskPushNotificationConfig(p: TaskPushNotificationConfig, ctx?: ServerCallContext): Promise<TaskPushNotificationConfig> {
    const push = this.pushOrThrow();
    const caller = callerOf(ctx);
    const stored = await this.opts.store.loadTask(p.taskId);
    aboutTask(ctx, p.taskId, stored?.task.contextId);
    if (!stored) throw taskNotFound(p.taskId);
    this.opts.access.checkOwner(caller, stored.principal, `task ${p.taskId}`);
    await push.check(p, 'pushNotificationConfig');
    // A config set on a running task gets the events from now on.
    return toWire(await push.save(p, version(ctx), this.opts.access.ownerFor(caller), stored.lastSeq));
  }

  async getTaskPushNotificationConfig(
    p: GetTaskPushNotificationConfigRequest,
    ctx?: ServerCallContext,
  ): Promise<TaskPushNotificationConfig> {
    const push = this.pushOrThrow();
    await this.checkTask(p.taskId, callerOf(ctx), ctx);
    const found = await push.get(p.taskId, p.id);
    if (!found) {
      if (!(await this.opts.store.loadTask(p.taskId))) throw taskNotFound(p.taskId);
      throw invalidParams(`task ${p.taskId} has no push notification config "${p.id || DEFAULT_CONFIG_ID}"`);
    }
    return toWire(found);
  }

  async listTaskPushNotificationConfigs(
    p: ListTaskPushNotificationConfigsRequest,
    ctx?: ServerCallContext,
  ): Promise<ListTaskPushNotificationConfigsResponse> {
    const push = this.pushOrThrow();
    await this.checkTask(p.taskId, callerOf(ctx), ctx);
    if (!(await this.opts.store.loadTask(p.taskId))) throw taskNotFound(p.taskId);
    return { configs: (await push.list(p.taskId)).map(toWire), nextPageToken: '' };
  }

  /** Idempotent: deleting a config the task does not have (any more) succeeds; an unknown task does not. */
  async deleteTaskPushNotificationConfig(p: DeleteTaskPushNotificationConfigRequest, ctx?: ServerCallContext): Promise<void> {
    const push = this.pushOrThrow();
    await this.checkTask(p.taskId, callerOf(ctx), ctx);
    if (!(await push.delete(p.taskId, p.id)) && !(await this.opts.store.loadTask(p.taskId))) throw taskNotFound(p.taskId);
  }

  /** `audit/list` (extension method, admins only): the decisions about a task's or a context's tool calls. */
  async listAudit(params: unknown, caller: Caller | undefined): Promise<{ entries: AuditEntryJson[] }> {
    this.opts.access.checkAdmin(caller, 'audit/list');
    const p = (typeof params === 'object' && params !== null && !Array.isArray(params) ? params : {}) as Record<string, unknown>;
    const unknown = Object.keys(p).filter((k) => !['task_id', 'taskId', 'context_id', 'contextId'].includes(k));
    if (unknown.length > 0) throw invalidParams(`params.${unknown[0]} is not a field of audit/list (expected task_id or context_id)`);
    const taskId = p.task_id ?? p.taskId;
    const contextId = p.context_id ?? p.contextId;
    if (taskId !== undefined && (typeof taskId !== 'string' || taskId === ''))
      throw invalidParams('params.task_id must be a non-empty string');
    if (contextId !== undefined && (typeof contextId !== 'string' || contextId === ''))
      throw invalidParams('params.context_id must be a non-empty string');
    if (taskId === undefined && contextId === undefined) throw invalidParams('audit/list needs params.task_id or params.context_id');
    const records = await this.opts.store.listAudit({ taskId: taskId, contextId: contextId });
    return {
      entries: records.map((r) => ({
        at: r.at.toISOString(),
        task_id: r.taskId,
        context_id: r.contextId,
        principal: r.principal ?? null,
        decision: r.decision,
        tool_call_id: r.toolCallId ?? null,
        ...(r.optionId !== undefined ? { option_id: r.optionId } : {}),
        shown_hash: r.shownHash ?? null,
        ...(r.detail !== undefined ? { detail: r.detail } : {}),
      })),
    };
  }

  private pushOrThrow(): PushRegistry {
    if (this.opts.push === undefined) throw pushUnsupported();
    return this.opts.push;
  }

  private async load(id: string): Promise<LiveTask> {
    if (!id) throw invalidParams('id is required');
    const task = await this.opts.cache.get(id);
    if (task === undefined) throw taskNotFound(id);
    return task;
  }

  /** The current Task: from memory when this process works on it, else from the store. */
  private async snapshot(id: string): Promise<Task> {
    return (await this.current(id)).task;
  }

  /** The current Task and its dialect. */
  private async current(id: string): Promise<{ task: Task; dialect: WireDialect }> {
    if (!id) throw invalidParams('id is required');
    const live = this.opts.cache.peek(id);
    if (live) {
      await live.flush();
      // A copy overtaken meanwhile (its answer's claim lost, say) holds what the store refused.
      if (!live.overtaken) return { task: structuredClone(live.task), dialect: live.dialect };
    }
    const stored = await this.opts.store.loadTask(id);
    if (!stored) throw taskNotFound(id);
    return { task: stored.task, dialect: stored.dialect };
  }

  /** The latest logged card of each waiting call, then the pause (input-required or auth-required). */
  private async pauseEvents(taskId: string, dialect: WireDialect): Promise<StoredEvent[]> {
    const encoder = this.opts.encoders[dialect];
    const [events, turn] = await Promise.all([this.opts.store.eventsAfter(taskId, 0), this.opts.store.loadTurn(taskId)]);
    const waiting = new Set(turn.filter((c) => c.phase === 'awaiting').map((c) => c.id));
    const latest = new Map<string, StoredEvent>();
    for (const ev of events) {
      const id = ev.response.payload?.$case === 'statusUpdate' ? encoder.toolCallIdOf(ev.response.payload.value) : undefined;
      if (id !== undefined && waiting.has(id)) latest.set(id, ev);
    }
    const pause = events.filter((ev) => ev.final).at(-1);
    const isPause =
      pause?.response.payload?.$case === 'statusUpdate' &&
      PAUSED.has(stateName(pause.response.payload.value.status?.state) as TaskStateName);
    return [...[...latest.values()].sort((a, b) => a.seq - b.seq), ...(isPause && pause ? [pause] : [])];
  }
}
