/**
 * Sets a `message/send` / `message/stream` moving by what its dialect's decoder says it means
 * (wire/wire-decoder.ts): a new task, answers to waiting tool calls (the resume handler), or a
 * follow-up to a completed task (RFC Appendix A step 10). Everything that can be refused is
 * refused here, before the first event, so a refusal is a plain JSON-RPC error and changes nothing.
 */
import { randomUUID } from 'node:crypto';
import type { SendMessageRequest } from '@a2a-js/sdk';
import type { A2aVersion } from '../../protocol/a2a.js';
import type { Caller } from '../../protocol/caller.js';
import { ConfirmationOptionId } from '../../protocol/extension.js';
import type { Access } from '../policy/access.js';
import { forbidden, invalidParams, taskNotFound, unsupported } from '../../protocol/errors.js';
import type { LiveTask, TurnCall } from '../runtime/live-task.js';
import { applyResume, CopyBehind, planResume } from './resume-handler.js';
import { refusedHere, staleCopy, startWorking, workHere } from '../runtime/task-lifecycle.js';
import type { KnownCalls } from './resume-handler.js';
import { checkSameWorkspace } from '../policy/settings.js';
import type { WireDialect } from '../wire/wire-encoder.js';
import { carriesAnswer, chooseDialect, namedCallIds, settingsOf } from '../wire/wire-decoder.js';
import type { Decoders, NewTaskIntent, TaskIntent } from '../wire/wire-decoder.js';
import type { TaskCache } from '../runtime/task-cache.js';
import { phaseEnd, phaseStart } from '../../protocol/probe.js';
import type { TaskStore } from '../task-store.js';
import type { TaskFactory } from './task-factory.js';
import { userTurns, type TurnLoop } from '../runtime/turn-loop.js';
import type { Metrics } from '../../lib/metrics.js';

export interface MessageRouterOptions {
  /** One decoder per dialect: a message is read once, by its task's. */
  decoders: Decoders;
  loop: TurnLoop;
  store: TaskStore;
  cache: TaskCache;
  access: Access;
  /** Opens contexts and creates tasks (shared with the slash commands and the legacy REST routes). */
  factory: TaskFactory;
  instanceId: string;
  leaseMs: number;
  /** WIRE_DIALECT: the dialect of a new task whose first message carries no marker of either. Default 'rfc'. */
  defaultDialect?: WireDialect;
  /** Counts the messages decided once more because the copy here was behind the store. */
  metrics?: Pick<Metrics, 'staleCopyRetried'>;
}

/** The task a message set moving and where its stream starts reading the log. */
export interface Routed {
  task: LiveTask;
  afterSeq: number;
}

/**
 * Which tasks take a follow-up message that is not an answer to a waiting call: one paused at
 * `input-required` by the model itself (a question to the user: the text is the answer), and,
 * except under A2A v1.0 (whose terminal states are final), a `completed` one. Throws
 * unsupported (-32004) saying what to do instead.
 */
function refuseContinuation(task: LiveTask, version: A2aVersion): void {
  // A question, not a tool pause: no call of the turn is open. (A call whose answer another
  // request claimed is no longer awaiting but still open: that task is refused, not continued.)
  const question = task.state === 'input-required' && task.turn.every((c) => c.phase === 'done');
  if (question || (task.state === 'completed' && version !== '1.0')) return;
  const contextId = task.task.contextId;
  if (task.state === 'working') {
    throw unsupported(`Task ${task.id} is still working; send the next message after it pauses or completes, or cancel it`);
  }
  if (task.state === 'completed') {
    throw unsupported(
      `Task ${task.id} is completed, and under A2A v1.0 a task in a terminal state takes no further message; ` +
        `send it with contextId ${contextId} and no taskId to start a new task in the same conversation`,
    );
  }
  throw unsupported(`Task ${task.id} is ${task.state} and cannot be continued; start a new task in context ${contextId}`);
}

export class MessageRouter {
  constructor(private readonly opts: MessageRouterOptions) {}

  /**
   * `version` is the A2A version the request speaks: under v1.0 a task in a terminal state takes
   * no further message (a follow-up starts a new task in the context); under v0.3, as the
   * development-tool RFC's flow has it, a `completed` task continues.
   */
  async route(params: SendMessageRequest, caller?: Caller, version: A2aVersion = '0.3'): Promise<Routed> {
    const message = params.message;
    if (message === undefined) throw invalidParams('message is required');
    if (message.parts.length === 0) throw invalidParams('message.parts must not be empty');
    const taskId = message.taskId;
    const dialect = taskId ? await this.dialectOf(taskId) : chooseDialect(message.metadata, this.opts.defaultDialect ?? 'rfc');
    // The one reading of the message: everything below works on what it means.
    const intent = this.opts.decoders[dialect].decode(message);
    if (intent.kind === 'new-task') return this.startTask(intent, caller);
    if (this.opts.access.enabled) await this.refuseStranger(taskId, intent, caller);
    try {
      return await this.continueLoaded(taskId, intent, caller, version, true);
    } catch (err) {
      if (!(err instanceof CopyBehind)) throw err;
      this.opts.metrics?.staleCopyRetried();
      // The copy kept here was behind the store and nothing was applied: once more, on one read
      // afresh — whose claim checks the calls alone (their phase and card), so answers are not
      // starved by other messages' re-prompts appended meanwhile.
      try {
        return await this.continueLoaded(taskId, intent, caller, version, false);
      } catch (again) {
        throw again instanceof CopyBehind ? again.answer : again;
      }
    }
  }

  /**
   * The task from memory (kept as it was last worked on here, unchecked) or from the store,
   * continued by `intent`. `checkSeq`: an answer's claim also requires the task's last seq to be
   * the copy's (a copy kept in memory may be behind the store).
   */
  private async continueLoaded(
    taskId: string,
    intent: TaskIntent,
    caller: Caller | undefined,
    version: A2aVersion,
    checkSeq: boolean,
  ): Promise<Routed> {
    const worked = this.opts.cache.peek(taskId) !== undefined;
    const task = await this.opts.cache.get(taskId);
    if (task === undefined) throw taskNotFound(taskId);
    try {
      return await this.continueTask(task, intent, caller, version, checkSeq);
    } catch (err) {
      // A refused message leaves nothing behind in memory: not even a copy it loaded of a task
      // that works elsewhere (nothing would ever bring that copy up to date).
      if (err instanceof CopyBehind) staleCopy(task);
      else refusedHere(task, worked);
      throw err;
    }
  }

  private async continueTask(
    task: LiveTask,
    intent: TaskIntent,
    caller: Caller | undefined,
    version: A2aVersion,
    checkSeq: boolean,
  ): Promise<Routed> {
    const { access } = this.opts;
    const message = intent.message;
    if (message.contextId && message.contextId !== task.task.contextId) {
      throw invalidParams(`message.contextId "${message.contextId}" does not match task ${task.id} (context ${task.task.contextId})`);
    }
    const requested = settingsOf(intent);
    task.pauseAuthority = this.opts.factory.authorityOf(caller);
    const stamped = { ...message, contextId: task.task.contextId };
    const authorizing = phaseStart();
    checkSameWorkspace(requested, task.context.workspace);
    // A context opened before its workspace was claimed (WORKSPACE_SHARING was shared then) is checked again here.
    await this.opts.factory.checkWorkspace(caller, task.context.workspace);
    access.checkSettings(caller, requested);
    await this.opts.factory.checkMcpUrls(requested);
    phaseEnd('authorize', authorizing);
    await task.flush();
    const afterSeq = task.lastSeq;
    if (task.awaiting().length > 0) {
      const plan = planResume(task, intent, await this.knownCalls(task, intent));
      if (plan.kind === 'decisions' && !access.canApprove(caller)) {
        const approving = plan.decisions.filter((d) => d.option !== ConfirmationOptionId.cancel);
        if (approving.length > 0) {
          const hashes = new Map(approving.map((d) => [d.call.snapshot.id, d.call.shownHash]));
          await this.recordDenials(task.id, task.task.contextId, task.principal, caller, 'denied_unauthorized', hashes);
          throw forbidden(
            `${caller?.id ?? 'the caller'} may not authorize tool calls (${approving.map((d) => d.call.snapshot.id).join(', ')}); ` +
              `that needs role ${access.rules.approverRoles.join(' or ')}. The calls are still waiting; "cancel" is allowed.`,
          );
        }
      }
      // The claim leases the task to this instance in the same statement.
      const from = await applyResume(task, plan, this.opts.loop, stamped, access.ownerFor(caller), {
        owner: this.opts.instanceId,
        leaseUntil: () => new Date(Date.now() + this.opts.leaseMs),
        checkSeq,
      });
      // Only once the answer was accepted; the calls run already, so a failure here fails the task.
      await this.opts.loop.guard(task, 'applying the new settings', () => this.opts.factory.applySettings(task.context, requested));
      return { task, afterSeq: Math.max(afterSeq, from) };
    }
    if (carriesAnswer(intent)) {
      planResume(task, intent, await this.knownCalls(task, intent)); // throws the precise reason
      throw invalidParams(`Task ${task.id} is not waiting for a confirmation (state: ${task.state})`);
    }
    refuseContinuation(task, version);
    await this.opts.factory.exclusive(task.context.id, async () => {
      await this.opts.factory.checkContextFree(task.context.id, task.id);
      task.addUserMessage(stamped);
      workHere(task);
      await this.opts.store.leaseTasks([task.id], this.opts.instanceId, new Date(Date.now() + this.opts.leaseMs));
      startWorking(task);
      await task.flush();
      if (task.isBehind) throw new CopyBehind(unsupported(`Task ${task.id} changed while this message was applied; send it again`));
      // Only once the message was accepted: a copy found behind above (kept since it paused, while
      // another instance took the task on) must not store settings merged into its stale ones.
      await this.opts.loop.guard(task, 'applying the new settings', () => this.opts.factory.applySettings(task.context, requested));
    });
    this.opts.loop.startTurn(task, intent.parts);
    return { task, afterSeq };
  }

  /**
   * A message from anyone but the task's principal is refused, and the answers it
   * carried are recorded (`denied_identity`); the calls stay pending. Checked against the
   * store before the task (and its context's MCP servers) is loaded here.
   */
  private async refuseStranger(taskId: string, intent: TaskIntent, caller: Caller | undefined): Promise<void> {
    const live = this.opts.cache.known(taskId);
    const stored = live ? undefined : await this.opts.store.loadTask(taskId);
    if (!live && !stored) throw taskNotFound(taskId);
    const owner = live ? live.principal : stored?.principal;
    if (this.opts.access.isOwner(caller, owner)) return;
    const turn = await this.opts.store.loadTurn(taskId);
    // Only calls the task really has are recorded: a stranger cannot fill the log with made-up ids.
    const named = namedCallIds(intent);
    const real = named.filter((id) => turn.some((c) => c.id === id));
    // An answer naming no call (yes/no, or malformed) would answer every waiting one.
    const yesNo = intent.kind !== 'follow-up';
    const ids = named.length > 0 ? real : yesNo ? turn.filter((c) => c.phase === 'awaiting').map((c) => c.id) : [];
    const hashes = new Map(ids.map((id) => [id, turn.find((c) => c.id === id)?.shownHash]));
    const contextId = live?.task.contextId ?? stored?.task.contextId ?? '';
    await this.recordDenials(taskId, contextId, owner, caller, 'denied_identity', hashes);
    this.opts.access.checkOwner(caller, owner, `task ${taskId}`);
  }

  /** Records refused answers (tool call id → the hash of the card shown) at once: the request fails right after. */
  private async recordDenials(
    taskId: string,
    contextId: string,
    owner: string | undefined,
    caller: Caller | undefined,
    decision: 'denied_identity' | 'denied_unauthorized',
    calls: ReadonlyMap<string, string | undefined>,
  ): Promise<void> {
    for (const [toolCallId, shownHash] of calls) {
      await this.opts.store.audit({
        taskId,
        contextId,
        toolCallId,
        decision,
        principal: caller?.id,
        shownHash,
        detail: { owner: owner ?? null, roles: [...(caller?.roles ?? [])] },
      });
    }
  }

  /** The current turn's calls, plus earlier calls of this task that the message names. */
  private async knownCalls(task: LiveTask, intent: TaskIntent): Promise<KnownCalls> {
    const known = new Map<string, TurnCall>(task.turn.map((c) => [c.snapshot.id, c]));
    for (const id of namedCallIds(intent)) {
      if (known.has(id)) continue;
      const stored = await this.opts.store.loadCall(id);
      if (stored && stored.taskId === task.id) known.set(id, this.opts.cache.fromStored(stored, task.context));
    }
    return known;
  }

  /** The dialect of a stored task (the cached copy's when there is one). Throws taskNotFound. */
  private async dialectOf(taskId: string): Promise<WireDialect> {
    const live = this.opts.cache.known(taskId);
    if (live) return live.dialect;
    const stored = await this.opts.store.loadTask(taskId);
    if (!stored) throw taskNotFound(taskId);
    return stored.dialect;
  }

  private async startTask(intent: NewTaskIntent, caller: Caller | undefined): Promise<Routed> {
    if (intent.refusal) throw intent.refusal;
    const { message, dialect } = intent;
    const contextId = message.contextId || randomUUID();
    const fresh = !message.contextId;
    const requested = settingsOf(intent);
    const context = await this.opts.factory.openContext(contextId, requested, caller, fresh);
    const task = await this.opts.factory.exclusive(context.id, async () => {
      if (!fresh) await this.opts.factory.admit(context, requested); // a context made up just now has no task
      return this.opts.factory.createTask(context, message, caller, { dialect, history: userTurns(context.history, intent.parts) });
    });
    this.opts.loop.runTurn(task);
    return { task, afterSeq: 0 };
  }
}
