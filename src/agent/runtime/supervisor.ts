/**
 * Keeps durable work honest across process deaths and time:
 * - renews the leases of the calls this process runs;
 * - marks calls whose process died (lease lapsed) FAILED `interrupted` and ends their
 *   task `failed` — never left `working` forever (at boot, then on every sweep, so a
 *   surviving instance cleans up after a dead peer; a live peer's calls are never touched);
 *   a process group such a call left running (a shell command that outlived its server) is
 *   killed first. On a store only this process can open (embedded PGlite), every running
 *   call and working task found at boot is a dead process's: they end at once, without
 *   waiting for their leases. A working task whose process died after storing its turn's
 *   cards but before its pause (two commits) is not failed: every card is there, so it
 *   pauses on the waiting ones, as that process was about to;
 * - cancels calls nobody answered within APPROVAL_TIMEOUT (`approval_timeout`) and lets
 *   the turn go on; shortly before, re-publishes the pause as a reminder (once per call), so
 *   push receivers and resubscribers are told the calls are about to expire.
 */
import { Background } from '../../lib/background.js';
import { ConfirmationOptionId } from '../../protocol/extension.js';
import { BUSY_STATES } from '../../protocol/task-states.js';
import { declineCall, interruptCall, interruptedWork } from './call-lifecycle.js';
import { failTask, notWorkedHere, remindTask, resumeWorking, staleCopy, workHere } from './task-lifecycle.js';
import { PAUSED } from '../wire/agent-events.js';
import type { LiveTask } from './live-task.js';
import type { AgentLogger } from '../logger.js';
import type { TaskCache } from './task-cache.js';
import type { StoredCall, TaskStore } from '../task-store.js';
import type { TurnLoop } from './turn-loop.js';
import { killRecordedGroup } from '../../tools/index.js';
import { NO_METRICS, type Metrics } from '../../lib/metrics.js';

/** A date after every lease: at boot on an exclusive store, every lease counts as lapsed. */
const EVERY_LEASE_LAPSED = new Date('9999-12-31T00:00:00Z');

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
  /**
   * True when no other process can use the store (embedded PGlite): the boot pass ends every
   * running call and working task at once instead of waiting for their leases to lapse.
   */
  exclusiveStore?: boolean;
  /** Kills a process group an interrupted call left running, if it is still the recorded one; true when it did (default: killRecordedGroup). */
  killProcessGroup?: (group: { pgid: number; stamp: string }) => boolean;
  /** Counts the tasks taken over from a lapsed lease (default: not counted). */
  metrics?: Metrics;
}

function byTask(calls: StoredCall[]): Map<string, StoredCall[]> {
  const map = new Map<string, StoredCall[]>();
  for (const c of calls) map.set(c.taskId, [...(map.get(c.taskId) ?? []), c]);
  return map;
}

export class Supervisor {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private readonly background: Background;

  constructor(private readonly opts: SupervisorOptions) {
    this.background = new Background((err, what) => this.opts.logger.error({ err }, `${what} failed`));
  }

  /** Recovers once (boot), then sweeps periodically. */
  async start(): Promise<void> {
    await this.sweep(this.opts.exclusiveStore === true);
    const every = this.opts.sweepMs ?? Math.max(250, Math.floor(this.opts.leaseMs / 3));
    this.timer = setInterval(() => this.background.run('supervisor sweep', () => this.sweep()), every);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.background.drain();
    await this.running;
  }

  /** One pass; passes never overlap. A failed pass is logged, and the next one tries again. */
  sweep(bootRecovery = false): Promise<void> {
    this.running ??= this.background.settle('supervisor sweep', () => this.pass(bootRecovery)).finally(() => (this.running = undefined));
    return this.running;
  }

  /** One pass; `bootRecovery`: nothing runs here yet and nobody else uses the store, so every lease counts as lapsed. */
  private async pass(bootRecovery: boolean): Promise<void> {
    const { store, instanceId, leaseMs } = this.opts;
    const until = new Date(Date.now() + leaseMs);
    // Only what runs here: a claim stored while its reply was lost is run by nobody, so it lapses.
    const busy = this.opts.cache.busyIds();
    await store.renewLeases(instanceId, until, busy);
    if (busy.length > 0) await store.leaseTasks(busy, instanceId, until);
    const lapsedBefore = () => (bootRecovery ? EVERY_LEASE_LAPSED : new Date());
    for (const [taskId, calls] of byTask(await store.findInterrupted(lapsedBefore()))) {
      await this.onTask(taskId, 'marking interrupted calls', (task) => this.interrupt(task, calls));
    }
    for (const taskId of await store.findStaleTasks(lapsedBefore())) {
      await this.onTask(taskId, 'ending a stale task', (task) => this.interrupt(task, []));
    }
    for (const [taskId, calls] of byTask(await store.findExpired(new Date()))) await this.expire(taskId, calls);
    if (this.opts.reminderMs !== undefined) {
      const now = new Date();
      const due = await store.claimReminders(new Date(now.getTime() + this.opts.reminderMs), now);
      for (const [taskId, calls] of byTask(due)) {
        let given = false;
        await this.onTask(taskId, 'reminding', async (task) => void (given = await this.remind(task, calls)));
        // Not given (the task busy here, its copy behind, or not loaded): a later sweep claims them again.
        if (!given)
          await store.unclaimReminders(
            calls.map((c) => c.id),
            now,
          );
      }
    }
  }

  /** Loads a task and runs `action` on it; an error in the action fails that task, and the sweep goes on. */
  private async onTask(taskId: string, what: string, action: (task: LiveTask) => Promise<void>): Promise<void> {
    const task = await this.load(taskId, what);
    if (task) await this.opts.loop.guard(task, what, () => action(task));
  }

  /** The task, or undefined when it does not exist or cannot be loaded now (logged; the next sweep tries again). */
  private async load(taskId: string, what: string): Promise<LiveTask | undefined> {
    try {
      return await this.opts.cache.get(taskId);
    } catch (err) {
      this.opts.logger.error({ err, taskId }, `${what}: the task could not be loaded; the next sweep tries again`);
      return undefined;
    }
  }

  private async interrupt(task: LiveTask, calls: StoredCall[]): Promise<void> {
    // A claimed call may die before its EXECUTING event lands, so a paused task can hold one too.
    if (!BUSY_STATES.includes(task.state)) return;
    if (calls.length === 0 && !task.idle) return; // this process works on it (lease not renewed yet)
    if (calls.length === 0) {
      if (await this.behindStore(task)) return;
      const stranded = await this.pauseStranded(task);
      if (stranded !== 'no') return; // paused on its cards, or a call of its turn is live: not interrupted
    }
    const live = calls
      .map((stored) => {
        const call = task.turn.find((c) => c.snapshot.id === stored.id) ?? this.opts.cache.fromStored(stored, task.context);
        // Started when either copy says so: the stored one, or this process's (its EXECUTING commit may be in flight).
        return { stored, call, started: stored.phase === 'executing' || call.phase === 'executing' };
      })
      .filter(({ call }) => call.phase !== 'done');
    const what = interruptedWork(
      live.map(({ call, started }) => ({ name: call.snapshot.toolName, started })),
      'stopped',
    );
    for (const { stored, call, started } of live) {
      interruptCall(task, call, stored.leaseOwner, this.killOrphans(task, stored), undefined, started);
    }
    failTask(task, `Interrupted: ${what}; the task cannot go on.`);
    (this.opts.metrics ?? NO_METRICS).leaseTakenOver('interrupted');
    this.opts.logger.warn({ taskId: task.id, calls: calls.map((c) => c.id) }, 'marked interrupted tool calls failed');
    await task.flush();
  }

  /**
   * True when this process's copy of `task` is behind the store: another instance moved the task
   * on (answered it, ran its turn, completed it) after the copy was loaded, and its lease only
   * looked lapsed. Failing that copy would append `Interrupted` after the task's real end (seen by
   * the chaos and exactly-once tests under load). The copy is dropped; the next sweep reads the
   * task afresh. An unreadable version counts as behind (the next sweep tries again).
   */
  private async behindStore(task: LiveTask): Promise<boolean> {
    await task.flush();
    const version = await this.opts.store.loadVersion(task.id).catch(() => undefined);
    if (version !== undefined && version.lastSeq === task.lastSeq) return false;
    staleCopy(task);
    return true;
  }

  /**
   * A stale working task whose stored turn has cards waiting for a person and none running: its
   * process died between storing the cards and storing the pause. `paused`: that pause is
   * published now (the loop's own settle step). `live`: a call of the turn was claimed or runs
   * (an answer reached another instance), or the turn cannot be read now: left to its runner and
   * the next sweep. `no`: anything else, and also when the server cannot tell which pause it was
   * (a principal's right to approve is known only from the request that started the turn, so a
   * task of an authenticated principal is not recovered), or when every waiting call's approval
   * time has passed meanwhile (nobody is there to answer).
   */
  private async pauseStranded(task: LiveTask): Promise<'paused' | 'live' | 'no'> {
    if (task.state !== 'working' || task.principal !== undefined) return 'no';
    let stored: StoredCall[];
    try {
      stored = await this.opts.store.loadTurn(task.id);
    } catch (err) {
      this.opts.logger.error({ err, taskId: task.id }, "reading a stale task's turn failed; the next sweep tries again");
      return 'live';
    }
    if (stored.some((c) => c.phase === 'ready' || c.phase === 'executing')) return 'live';
    const waiting = stored.filter((c) => c.phase === 'awaiting');
    const now = Date.now();
    if (waiting.length === 0 || waiting.every((c) => c.expiresAt !== undefined && c.expiresAt.getTime() <= now)) return 'no';
    await this.opts.loop.settle(task);
    await task.flush();
    if (!PAUSED.has(task.state)) return 'no';
    this.opts.logger.warn(
      { taskId: task.id, calls: stored.map((c) => c.id) },
      'paused a task whose process died before its pause was stored',
    );
    (this.opts.metrics ?? NO_METRICS).leaseTakenOver('paused');
    return 'paused';
  }

  /** Kills the process group the call left running, if any and still the recorded one; its pgid when killed. */
  private killOrphans(task: LiveTask, stored: StoredCall): number | undefined {
    const group = stored.processGroup;
    if (group === undefined) return undefined;
    const kill = this.opts.killProcessGroup ?? killRecordedGroup;
    if (!kill(group)) return undefined;
    this.opts.logger.warn(
      { taskId: task.id, callId: stored.id, pgid: group.pgid },
      'killed the process group an interrupted call left running',
    );
    return group.pgid;
  }

  /**
   * The reminder is the supervisor's word on the pause: given after every answer to the copy before
   * it was decided. True when it was logged; false when it was not given now (a later sweep tries again).
   */
  private async remind(task: LiveTask, calls: StoredCall[]): Promise<boolean> {
    // An answer under way here decides the calls' fate: no reminder beside it (nor a sweep waiting for it).
    if (task.answerPending) return false;
    const given = await task.answering(async () => {
      const waiting = task.awaiting();
      if (!PAUSED.has(task.state) || !task.idle || waiting.length === 0) return false;
      const first = Math.min(...calls.map((c) => c.expiresAt?.getTime() ?? Infinity));
      const seconds = Math.max(0, Math.round((first - Date.now()) / 1000));
      const names = calls.map((c) => `${c.toolName} (${c.id})`).join(', ');
      const when = `in about ${seconds} s (at ${new Date(first).toISOString()})`;
      return (await remindTask(task, waiting, `Reminder: ${names} will be cancelled ${when} unless answered.`)) !== undefined;
    });
    notWorkedHere(task); // loaded for the reminder: kept only as any paused copy is (parked)
    return given;
  }

  private async expire(taskId: string, calls: StoredCall[]): Promise<void> {
    // Loaded before the claim: a claimed call must always be declined here, never left claimed.
    const task = await this.load(taskId, 'expiring unanswered calls');
    if (!task) return;
    // An expiry is an answer (cancel). One under way here goes first, and the sweep does not wait
    // for it (no lease would be renewed meanwhile): a won answer leaves nothing to expire, a lost
    // one leaves the calls to the next sweep.
    if (task.answerPending) return;
    await task.answering(() => this.expireOn(task, calls));
  }

  private async expireOn(task: LiveTask, found: StoredCall[]): Promise<void> {
    // A call an answer here took since the sweep found it is that answer's (a copy without the call is checked by the claim).
    const calls = found.filter((c) => (task.turn.find((x) => x.snapshot.id === c.id)?.phase ?? 'awaiting') === 'awaiting');
    if (calls.length === 0) return;
    const claim = calls.map((c) => ({ id: c.id, answer: ConfirmationOptionId.cancel }));
    const until = new Date(Date.now() + this.opts.leaseMs);
    // The copy may be one kept in memory since it paused (TaskCache.park): the claim checks it. One
    // that runs a call here is this process's own, but its last seq trails that call's writes.
    const idle = task.idle;
    const claimed = await this.opts.store.claimCalls(task.id, claim, this.opts.instanceId, until, idle ? task.lastSeq : undefined);
    if (!claimed.ok && claimed.behind !== undefined) {
      if (idle) staleCopy(task); // moved on elsewhere: the next sweep reads it afresh
      return;
    }
    if (!claimed.ok) {
      notWorkedHere(task); // answered meanwhile: this copy is not worked on here
      return;
    }
    task.lastSeq = Math.max(task.lastSeq, claimed.lastSeq); // a reminder logged elsewhere is behind the copy now
    workHere(task);
    await this.opts.loop.guard(task, 'expiring unanswered calls', async () => {
      resumeWorking(task); // the turn goes on without the expired calls
      for (const stored of calls) {
        const call = task.turn.find((c) => c.snapshot.id === stored.id);
        if (!call || call.phase === 'done') continue; // claimed above: stored as ready, with the cancel answer
        call.answer = ConfirmationOptionId.cancel;
        declineCall(task, call, { reason: 'Nobody answered within APPROVAL_TIMEOUT; the call was cancelled.', type: 'approval_timeout' });
      }
      await this.opts.loop.settle(task);
    });
  }
}
