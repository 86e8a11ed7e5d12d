/**
 * The tasks this process is working on, loaded from the store on demand. A task that ends
 * leaves memory (finished tasks cost no RAM). A task that pauses here is kept, parked as it
 * is: the next message to it on this process goes on with the kept copy without reading the
 * store, and the write that message makes checks the copy (see park). Any process sharing the
 * database may take the next message instead.
 */
import type { Task } from '@a2a-js/sdk';
import { stateName } from '../../protocol/a2a.js';
import { LiveTask } from './live-task.js';
import type { ContextState, LiveTaskDeps, TurnCall } from './live-task.js';
import type { StoredCall, StoredContext } from '../task-store.js';
import type { TaskRuns } from './task-runs.js';
import { callTool, type Toolbox } from './toolbox.js';
import { PAUSED, PAUSE_OR_TERMINAL } from '../wire/agent-events.js';
import { FINISHED } from '../../protocol/task-states.js';
import type { WireDialect } from '../wire/wire-encoder.js';

export interface TaskCacheOptions extends Omit<LiveTaskDeps, 'onFinal' | 'onWriteFailed' | 'onAbandoned' | 'onOvertaken'> {
  toolbox: Toolbox;
  /** Shell-like calls may run without a card (ContextState.confined). */
  shellConfined?: boolean;
  /** Fails a task whose writes the store refused. */
  runs: TaskRuns;
}

/** Paused tasks kept in memory at most (the least recently parked leaves first). */
export const PARKED_MAX = 256;

export class TaskCache {
  private readonly active = new Map<string, LiveTask>();
  /** Paused tasks kept as they were parked (see park). */
  private readonly parked = new Map<string, LiveTask>();
  private readonly loading = new Map<string, Promise<LiveTask | undefined>>();
  private readonly deps: LiveTaskDeps;

  constructor(private readonly opts: TaskCacheOptions) {
    this.deps = {
      ...opts,
      onFinal: (task) => this.release(task),
      onWriteFailed: (task, err) => opts.runs.fail(task, 'saving its events', err),
      onAbandoned: (task) => this.forget(task),
      onOvertaken: (task) => this.forget(task),
      residency: {
        hold: (task) => this.hold(task),
        release: (task, park) => this.release(task, park),
        discard: (task) => this.discard(task),
        forget: (task) => this.forget(task),
      },
    };
    opts.hub.addListener({
      event: (taskId, seq) => this.movedElsewhere(taskId, seq),
      final: (taskId, seq) => this.finalElsewhere(taskId, seq),
    });
  }

  /** A pause or end of a task was committed by some process: if this one works on it, check whether it ended there. */
  private finalElsewhere(taskId: string, seq: number): void {
    const live = this.active.get(taskId);
    if (live && !live.halted && seq > live.lastSeq) void this.checkEndedElsewhere(live);
  }

  /**
   * Another process ended a task this one is working on for good (tasks/cancel answered there,
   * its supervisor failed it): stop here too — abort the running tool and the model, publish
   * nothing more (the store would refuse it: nothing follows a FINISHED state).
   */
  private async checkEndedElsewhere(live: LiveTask): Promise<void> {
    const stored = await this.opts.store.loadTask(live.id).catch(() => undefined);
    const state = stored?.task.status ? stateName(stored.task.status.state) : undefined;
    if (stored?.task.status && (FINISHED as ReadonlySet<string | undefined>).has(state) && !live.halted) {
      live.task.status = stored.task.status;
      live.abort.abort();
      this.active.delete(live.id);
    }
  }

  get size(): number {
    return this.active.size;
  }

  /** The live task, from memory or loaded from the store; undefined when no such task. */
  async get(id: string): Promise<LiveTask | undefined> {
    const live = this.active.get(id);
    if (live) return live;
    let pending = this.loading.get(id);
    if (!pending) {
      pending = this.unpark(id).finally(() => this.loading.delete(id));
      this.loading.set(id, pending);
    }
    return pending;
  }

  /** Ids of the tasks this process is running something for (their leases are renewed). */
  busyIds(): string[] {
    return [...this.active.values()].filter((t) => !t.idle).map((t) => t.id);
  }

  /** Only the cached one (no load). */
  peek(id: string): LiveTask | undefined {
    return this.active.get(id);
  }

  /** The cached or parked copy, for what never changes in a task (its dialect, principal, context); no load. */
  known(id: string): LiveTask | undefined {
    return this.active.get(id) ?? this.parked.get(id);
  }

  /**
   * The context with its tools (its own MCP servers are started here on first use). `check`
   * sees the stored context first and may refuse it before anything starts.
   */
  async loadContext(id: string, check?: (stored: StoredContext) => void): Promise<ContextState | undefined> {
    const ctx = await this.opts.store.loadContext(id);
    if (ctx === undefined) return undefined;
    check?.(ctx); // may throw: nothing is started for a refused caller
    return this.contextOf(ctx);
  }

  /** The context state of a stored context, with its tools (its own MCP servers are started here on first use). */
  async contextOf(ctx: StoredContext): Promise<ContextState> {
    const tools = await this.opts.toolbox.forContext(ctx);
    return {
      id: ctx.id,
      workspace: ctx.workspace,
      history: ctx.history,
      trustedTools: new Set(ctx.trustedTools),
      settings: ctx.settings,
      tools,
      confined: this.opts.shellConfined === true,
      ...(ctx.principal !== undefined ? { principal: ctx.principal } : {}),
    };
  }

  create(task: Task, context: ContextState, principal?: string, dialect?: WireDialect): LiveTask {
    const live = new LiveTask(task, context, this.deps, { principal, dialect });
    this.active.set(task.id, live);
    return live;
  }

  /** Keeps `task` in memory while it works. */
  hold(task: LiveTask): void {
    this.active.set(task.id, task);
  }

  /**
   * Shutdown: every task in memory stops here (its tool and model aborted, nothing more written)
   * and leaves memory. What was committed stays; leases lapse and a supervisor ends the tasks.
   */
  detachAll(): void {
    for (const task of this.active.values()) task.detach();
    for (const task of this.parked.values()) task.detach();
    this.active.clear();
    this.parked.clear();
  }

  /** Drops the task from memory whatever its state: the next use reloads it from the store. */
  forget(task: LiveTask): void {
    if (this.active.get(task.id) === task) this.active.delete(task.id);
    if (this.parked.get(task.id) === task) this.parked.delete(task.id);
  }

  /**
   * Forgets a copy a refused request loaded, whatever its state, unless something runs in it
   * here meanwhile, or an answer to it waits or is decided (another request took it up).
   */
  discard(task: LiveTask): void {
    if (!task.answerPending && task.idle && this.active.get(task.id) === task) this.active.delete(task.id);
  }

  /**
   * Drops the task from memory if it is paused or over, nothing of it runs here and no answer to
   * it waits or is decided (LiveTask.answerPending). A paused one is parked (kept as it is) unless
   * `park` is false: a copy a refused message may have touched is dropped, and the next message
   * reloads the task.
   */
  release(task: LiveTask, park = true): void {
    if (task.answerPending || !task.idle || !PAUSE_OR_TERMINAL.has(task.state) || this.active.get(task.id) !== task) return;
    this.active.delete(task.id);
    if (park && PAUSED.has(task.state) && !task.halted) this.park(task);
  }

  /**
   * Keeps a paused copy as it is, without reading the store back: the next message to the task
   * on this process goes on with it. Whatever uses it checks it against the store in the write
   * it makes anyway — a claim names the last seq the copy knows (refused when another process
   * moved the task on: the message is applied again to a fresh copy), the copy's events carry it
   * (WriteBatch.expect). An event another process commits for the task drops the copy at once.
   */
  private park(task: LiveTask): void {
    if (task.halted || this.active.has(task.id) || this.loading.has(task.id)) return;
    this.parked.delete(task.id);
    this.parked.set(task.id, task);
    if (this.parked.size > PARKED_MAX) this.parked.delete(this.parked.keys().next().value as string);
  }

  /** Another process committed events of `taskId`: a copy parked here is behind them. */
  private movedElsewhere(taskId: string, seq: number): void {
    const kept = this.parked.get(taskId);
    if (kept !== undefined && seq > kept.lastSeq) this.parked.delete(taskId);
  }

  /** The parked copy (unchecked: see park), else the task loaded from the store. */
  private async unpark(id: string): Promise<LiveTask | undefined> {
    const kept = this.parked.get(id);
    if (kept === undefined) return this.hydrate(id);
    this.parked.delete(id);
    const raced = this.active.get(id);
    if (raced) return raced;
    this.active.set(id, kept);
    return kept;
  }

  fromStored(c: StoredCall, context: ContextState): TurnCall {
    return {
      snapshot: c.snapshot,
      phase: c.phase,
      turn: c.turn,
      position: c.position,
      modelCallId: c.modelCallId,
      tool: callTool(context.tools, c.toolName),
      args: c.args,
      answer: c.answer,
      response: c.response,
      shownHash: c.shownHash,
      proposedAt: c.proposedAt,
      expiresAt: c.expiresAt,
      processGroup: c.processGroup,
    };
  }

  private async hydrate(id: string): Promise<LiveTask | undefined> {
    const stored = await this.opts.store.loadTask(id);
    if (!stored) return undefined;
    const [context, turn] = await Promise.all([this.loadContext(stored.task.contextId), this.opts.store.loadTurn(id)]);
    if (!context) throw new Error(`task ${id} names context ${stored.task.contextId}, which is not stored`);
    const live = new LiveTask(stored.task, context, this.deps, {
      lastSeq: stored.lastSeq,
      principal: stored.principal,
      dialect: stored.dialect,
    });
    // A call stored as claimed or running is another process's (or a dead one's): this copy never runs it.
    live.turn = turn.map((c) => ({
      ...this.fromStored(c, context),
      ...(c.phase === 'ready' || c.phase === 'executing' ? { elsewhere: true } : {}),
    }));
    live.turnNo = turn[0]?.turn ?? -1;
    const raced = this.active.get(id);
    if (raced) return raced;
    this.active.set(id, live);
    return live;
  }
}
