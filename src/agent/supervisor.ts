/**
 * Keeps durable work honest across process deaths and time:
 * - renews the leases of the calls this process runs;
 * - marks calls whose process died (lease lapsed) FAILED `interrupted` and ends their
 *   task `failed` — never left `working` forever (at boot, then on every sweep, so a
 *   surviving instance cleans up after a dead peer; a live peer's calls are never touched);
 * - cancels calls nobody answered within APPROVAL_TIMEOUT (`approval_timeout`) and lets
 *   the turn go on; shortly before, re-publishes the pause as a reminder (once per call), so
 *   push receivers and resubscribers are told the calls are about to expire.
 */
import { ConfirmationOptionId } from '../protocol/extension.js';
import type { LiveTask } from './live-task.js';
import type { TaskCache } from './task-cache.js';
import type { StoredCall, TaskStore } from './task-store.js';
import { declineCall } from './tool-runner.js';
import type { AgentLogger, TurnLoop } from './turn-loop.js';
import { abandonTurn, pausePrompt } from './turn-loop.js';

export interface SupervisorOptions {
  store: TaskStore;
  cache: TaskCache;
  loop: TurnLoop;
  logger: AgentLogger;
  instanceId: string;
  leaseMs: number;
  /** How often to sweep, ms (default: a third of the lease). */
  sweepMs?: number;
  /** With APPROVAL_TIMEOUT: how long before a waiting call expires its task publishes a reminder, ms. */
  reminderMs?: number;
}

function byTask(calls: StoredCall[]): Map<string, StoredCall[]> {
  const map = new Map<string, StoredCall[]>();
  for (const c of calls) map.set(c.taskId, [...(map.get(c.taskId) ?? []), c]);
  return map;
}

export class Supervisor {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;

  constructor(private readonly opts: SupervisorOptions) {}

  /** Recovers once (boot), then sweeps periodically. */
  async start(): Promise<void> {
    await this.sweep();
    this.timer = setInterval(() => void this.sweep(), this.opts.sweepMs ?? Math.max(250, Math.floor(this.opts.leaseMs / 3)));
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One pass; passes never overlap. */
  sweep(): Promise<void> {
    this.running ??= this.pass()
      .catch((err) => this.opts.logger.error({ err }, 'supervisor sweep failed'))
      .finally(() => (this.running = undefined));
    return this.running;
  }

  private async pass(): Promise<void> {
    const { store, instanceId, leaseMs } = this.opts;
    const until = new Date(Date.now() + leaseMs);
    await store.renewLeases(instanceId, until);
    const busy = this.opts.cache.busyIds();
    if (busy.length > 0) await store.leaseTasks(busy, instanceId, until);
    for (const [taskId, calls] of byTask(await store.findInterrupted(new Date()))) await this.interrupt(taskId, calls);
    for (const taskId of await store.findStaleTasks(new Date())) await this.interrupt(taskId, []);
    for (const [taskId, calls] of byTask(await store.findExpired(new Date()))) await this.expire(taskId, calls);
    if (this.opts.reminderMs !== undefined) {
      const now = new Date();
      const due = await store.claimReminders(new Date(now.getTime() + this.opts.reminderMs), now);
      for (const [taskId, calls] of byTask(due)) await this.remind(taskId, calls);
    }
  }

  private async interrupt(taskId: string, calls: StoredCall[]): Promise<void> {
    const task = await this.opts.cache.get(taskId);
    // A claimed call may die before its EXECUTING event lands, so a paused task can hold one too.
    if (!task || !['working', 'submitted', 'input-required'].includes(task.state)) return;
    if (calls.length === 0 && !task.idle) return; // this process works on it (lease not renewed yet)
    for (const stored of calls) {
      const call = task.turn.find((c) => c.snapshot.id === stored.id) ?? this.opts.cache.fromStored(stored, task.context);
      const message = `The server stopped while ${stored.toolName} was running (lease of ${stored.leaseOwner ?? 'unknown instance'} lapsed); it may not have finished.`;
      call.snapshot.status = 'FAILED';
      delete call.snapshot.liveContent;
      call.snapshot.error = { message, type: 'interrupted' };
      call.response = { functionResponse: { id: call.modelCallId, name: stored.toolName, response: { error: message } } };
      call.phase = 'done';
      task.publishCall(call);
      task.audit({ toolCallId: stored.id, decision: 'interrupted', detail: { leaseOwner: stored.leaseOwner } });
    }
    for (const call of task.turn)
      if (call.phase === 'awaiting') declineCall(task, call, 'The task failed before this call was answered.', 'cancelled');
    const what = calls.length > 0 ? calls.map((c) => c.toolName).join(', ') : 'the model was answering';
    const reason = `Interrupted: the server stopped while ${calls.length > 0 ? `${what} ran` : what}; the task cannot go on.`;
    abandonTurn(task, reason);
    task.publish({ type: 'state', state: 'failed', text: reason, error: reason });
    this.opts.logger.warn({ taskId, calls: calls.map((c) => c.id) }, 'marked interrupted tool calls failed');
    await task.flush();
  }

  private async remind(taskId: string, calls: StoredCall[]): Promise<void> {
    const task = await this.opts.cache.get(taskId);
    if (!task || task.state !== 'input-required') return;
    const first = Math.min(...calls.map((c) => c.expiresAt?.getTime() ?? Infinity));
    const seconds = Math.max(0, Math.round((first - Date.now()) / 1000));
    const waiting = task.awaiting();
    const text = `Reminder: ${calls.map((c) => `${c.toolName} (${c.id})`).join(', ')} will be cancelled in about ${seconds} s (at ${new Date(first).toISOString()}) unless answered. ${pausePrompt(waiting)}`;
    task.publish({ type: 'state', state: 'input-required', text });
    await task.flush();
  }

  private async expire(taskId: string, calls: StoredCall[]): Promise<void> {
    const claim = calls.map((c) => ({ id: c.id, answer: ConfirmationOptionId.cancel }));
    const until = new Date(Date.now() + this.opts.leaseMs);
    if (!(await this.opts.store.claimCalls(taskId, claim, this.opts.instanceId, until)).ok) return; // answered meanwhile
    const task: LiveTask | undefined = await this.opts.cache.get(taskId);
    if (!task) return;
    this.opts.cache.hold(task);
    for (const stored of calls) {
      const call = task.turn.find((c) => c.snapshot.id === stored.id);
      if (!call) continue;
      call.answer = ConfirmationOptionId.cancel;
      declineCall(task, call, 'Nobody answered within APPROVAL_TIMEOUT; the call was cancelled.', 'approval_timeout');
    }
    await this.opts.loop.settle(task);
  }
}
