/**
 * The model loop: stream a model turn, show its text and thoughts, open its tool calls,
 * run what needs no approval, then pause for a person or go on with the results.
 * Every path ends in exactly one of: `input-required`, `completed`, `failed`.
 * Runs are detached from requests through TaskRuns, so an error fails its task, never the process.
 */
import { endTurn, failTask, pauseTask } from './task-lifecycle.js';
import { commandSummary, danglingAnswers, proposeCall, rejudgeCall, requestApproval, runCall, showCall } from './call-lifecycle.js';
import { memoryInstruction } from './memory.js';
import type { LiveTask, TurnCall } from './live-task.js';
import type { AgentLogger } from '../logger.js';
import { ModelError } from '../model/model-client.js';
import type { ModelClient, ModelContent, ModelFunctionCall, ModelOutcome, ModelPart, ModelRequest } from '../model/model-client.js';
import { Role } from '@a2a-js/sdk';
import type { TaskRuns } from './task-runs.js';
import type { TokenUsage } from '../wire/agent-events.js';
import type { TaskStore } from '../task-store.js';
import type { ProtectedPaths } from '../../tools/index.js';
import { callTool, type Toolbox, type ToolSet } from './toolbox.js';

export interface TurnLoopOptions {
  model: ModelClient;
  toolbox: Toolbox;
  store: TaskStore;
  /** Owner of the loop's detached runs: an error in one fails its task. */
  runs: TaskRuns;
  systemInstruction: string;
  logger: AgentLogger;
  /** Model steps allowed per user message before the task fails (a runaway guard). */
  maxModelSteps?: number;
  /** Attempts for a model call that fails before streaming anything, retryable errors only. */
  modelAttempts?: number;
  /** First retry delay, ms; doubles each time (±20% jitter). */
  retryBaseDelayMs?: number;
  /** No retry starts later than this after the first attempt (ms, default 30 s). */
  retryBudgetMs?: number;
  /** Unanswered calls are cancelled after this long (ms); undefined = never. */
  approvalTimeoutMs?: number;
}

/** "**Subject** description" is how Gemini thought summaries start. */
export function splitThought(text: string): { subject: string; description: string } {
  const m = /^\s*\*\*(.+?)\*\*\s*([\s\S]*)$/.exec(text);
  return m ? { subject: (m[1] ?? '').trim(), description: (m[2] ?? '').trim() } : { subject: '', description: text.trim() };
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });

/** Gives the event loop a turn when a model streams faster than I/O runs (other clients, commits, this answer's writes). */
const yieldToIo = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The history entries of a user's message to the model: the message, after error responses to
 * any function calls of the conversation that nothing answered (call-lifecycle's danglingAnswers).
 */
export function userTurns(history: readonly ModelContent[], parts: ModelPart[]): ModelContent[] {
  const dangling = danglingAnswers(history, 'The call was interrupted: its result was lost.');
  return [...(dangling ? [dangling] : []), { role: 'user', parts }];
}

export class TurnLoop {
  constructor(private readonly opts: TurnLoopOptions) {}

  get modelName(): string {
    return this.opts.model.model;
  }

  /** The server's own files, out of every tool's reach (the slash commands read GEMINI.md through it too). */
  get protectedPaths(): ProtectedPaths {
    return this.opts.toolbox.protectedPaths;
  }

  /** Starts the model on a new user message. Returns at once; the run is detached. */
  startTurn(task: LiveTask, userParts: ModelPart[]): void {
    if (task.halted) return; // its start could not be stored, and it was failed for that
    task.appendHistory(...userTurns(task.context.history, userParts));
    this.runTurn(task);
  }

  /** Starts the model on the user's turn already in the task's history (TaskFactory.createTask's `history`). Returns at once. */
  runTurn(task: LiveTask): void {
    if (task.halted) return;
    task.steps = 0;
    this.opts.runs.detach(task, 'running the model', () => this.step(task));
  }

  /**
   * Opens a turn of calls the server itself proposes (a slash command), without the model:
   * they are approved like any call, and when the last one is done the task completes
   * instead of going back to the model. Resolves once the cards are published.
   */
  async startDirectTurn(task: LiveTask, calls: ModelFunctionCall[]): Promise<void> {
    task.modelRunning = true;
    await this.opts.runs.guard(task, "opening the command's tool calls", async () => {
      await this.refreshTools(task);
      await this.openTurn(task, calls, true);
    });
    if (task.halted) return task.releaseWrites(); // failTask stopped the model flag too
    this.opts.runs.detach(task, 'running tool calls', async () => {
      try {
        await this.runReady(task, task.turn);
      } finally {
        task.modelRunning = false;
      }
      await this.settle(task);
    });
  }

  /**
   * Runs approved calls detached (each starts as soon as the previous ends), then moves the task
   * on. The writes the answer queued (held by the caller: LiveTask.holdWrites) commit with the
   * first call's EXECUTING card, which runCall commits before the tool starts.
   */
  runApproved(task: LiveTask, calls: TurnCall[]): void {
    this.opts.runs.detach(task, 'running tool calls', async () => {
      if (calls.some((c) => c.tool?.mcp !== undefined)) {
        // Re-resolving may start MCP servers: only for a won answer, so the answer's claim is
        // decided first, also one under way (the EXECUTING card then follows in a commit of its own).
        await task.claimNow();
        if (task.halted) return;
        await this.refreshTools(task).catch(() => undefined);
      }
      await this.runReady(task, calls);
      await this.settle(task);
    });
  }

  /** Fails `task` because `what` threw `err` (see TaskRuns.fail). */
  fail(task: LiveTask, what: string, err: unknown): void {
    this.opts.runs.fail(task, what, err);
  }

  /** Runs `work` for `task`; an error fails the task instead of reaching the caller. */
  guard(task: LiveTask, what: string, work: () => Promise<unknown>): Promise<void> {
    return this.opts.runs.guard(task, what, work);
  }

  /** Re-resolves the context's tools (its MCP servers may have stopped while it was idle) and the calls' tools. */
  async refreshTools(task: LiveTask): Promise<ToolSet> {
    const set = await this.opts.toolbox.forContext(task.context);
    task.context.tools = set;
    for (const call of task.turn) {
      if (call.tool !== undefined) call.tool = callTool(set, call.snapshot.toolName) ?? call.tool;
    }
    return set;
  }

  /**
   * Runs the ready calls in order, each judged again right before it runs (rejudgeCall): one
   * that now needs a person gets a fresh card instead, and the task pauses on it after the rest.
   */
  /**
   * Runs the ready calls in order. A call's result is held (runCall) for what follows it: the
   * next call's EXECUTING card, or what settle() writes, which every caller runs next; on a
   * throw the hold ends here.
   */
  private async runReady(task: LiveTask, calls: TurnCall[]): Promise<void> {
    try {
      for (const call of calls) {
        if (task.halted) return;
        // Another runner of this copy may hold it (the model loop's, and an answer's to another card of the turn).
        if (call.phase !== 'ready' || call.runner === true) continue;
        call.runner = true;
        try {
          if (await rejudgeCall(task, call, this.opts.approvalTimeoutMs)) await runCall(task, call);
        } finally {
          call.runner = undefined;
        }
      }
    } catch (err) {
      task.releaseWrites();
      throw err;
    }
  }

  /**
   * Moves a task on after one of its calls was answered or finished: pauses when a call
   * still waits for a person, continues the model when every call has a result. Reads the
   * turn from the store, because another process may be running calls of the same turn.
   */
  async settle(task: LiveTask): Promise<void> {
    try {
      await this.settleTurn(task);
    } finally {
      task.releaseWrites();
    }
  }

  /**
   * The turn's outcome as this copy knows it, when it ran every call of the turn itself and each
   * is done: no read. The calls' results (held), the turn's close and what follows commit as one
   * batch, which the store refuses — and this copy stops, behind it — unless the stored turn has
   * every call done and was not closed yet. True when it settled so.
   */
  private async settleHere(task: LiveTask): Promise<boolean> {
    if (task.turn.length === 0 || !task.turn.every((c) => c.phase === 'done' && c.elsewhere !== true)) return false;
    task.closeTurn();
    const next = this.afterTurn(
      task,
      task.turn.map((c) => ({ snapshot: c.snapshot, response: c.response })),
    );
    await task.flush();
    if (!task.halted) next?.();
    return true;
  }

  /**
   * What follows a turn whose calls are all done: a slash command's turn ends the task; else the
   * results go to the model. Returns what starts the model, to run once this is committed.
   */
  private afterTurn(task: LiveTask, calls: Array<{ snapshot: TurnCall['snapshot']; response?: ModelPart }>): (() => void) | undefined {
    task.turn = [];
    if (task.slashCommand !== undefined) {
      endTurn(task, {
        state: 'completed',
        text: commandSummary(
          task.slashCommand,
          calls.map((c) => c.snapshot),
        ),
      });
      return undefined;
    }
    const responses = calls.map((c) => c.response).filter((p): p is ModelPart => p !== undefined);
    if (responses.length > 0) task.appendHistory({ role: 'user', parts: responses });
    task.publish({ type: 'turn-step', step: 'model' });
    return () => this.opts.runs.detach(task, 'running the model', () => this.step(task));
  }

  private async settleTurn(task: LiveTask): Promise<void> {
    if (task.halted || !task.idle || task.state !== 'working') return;
    if (await this.settleHere(task)) return;
    await task.flush();
    if (task.halted) return; // its writes were refused (an answer's claim not won among them)
    // The turn, closed in the same statement when every call of it is done.
    const { calls: stored, closed } = await this.opts.store.settleTurn(task.id, task.turnNo);
    if (task.halted || !task.idle) return;
    if (stored.some((c) => c.phase === 'ready' || c.phase === 'executing')) return; // its runner settles
    const waiting = stored.filter((c) => c.phase === 'awaiting');
    if (waiting.length > 0) {
      pauseTask(task, waiting);
      return;
    }
    if (!closed) return; // another process continued
    this.afterTurn(task, stored)?.();
  }

  private async step(task: LiveTask): Promise<void> {
    task.modelRunning = true;
    try {
      if (++task.steps > (this.opts.maxModelSteps ?? 50)) {
        throw new ModelError(`the model made more than ${this.opts.maxModelSteps ?? 50} steps for one message; stopped`, false);
      }
      const set = await this.refreshTools(task);
      this.reportFailedServers(task, set);
      const { calls, outcome } = await this.streamModel(task, set);
      if (task.halted) return task.releaseWrites();
      if (calls.length === 0) {
        const direct = outcome?.reply === 'message' && outcome.state === 'completed' && task.steps === 1 && task.isFirstMessage();
        endTurn(task, {
          state: outcome?.state ?? 'completed',
          ...(outcome?.text !== undefined ? { text: outcome.text } : {}),
          ...(direct ? { reply: 'message' as const } : {}),
        });
        return;
      }
      if (await this.openTurn(task, calls)) return; // paused
      await this.runReady(task, task.turn);
    } catch (err) {
      task.releaseWrites();
      if (!(err instanceof ModelError)) throw err; // TaskRuns fails the task and logs it
      failTask(task, `Model call failed: ${err.message}`); // the model's reason names no internals
      return;
    } finally {
      // Before any end above is committed (its commit releases the task only when it is idle).
      task.modelRunning = false;
    }
    await this.settle(task);
  }

  /** A server that failed to start is reported once per context, and the rest of the tools work. */
  private reportFailedServers(task: LiveTask, set: ToolSet): void {
    for (const s of this.opts.toolbox.unreportedFailures(task.context.id, set)) {
      const delta = `MCP server "${s.name}" is unavailable: ${s.error ?? s.status}. Its tools cannot be used in this conversation.\n\n`;
      task.publish({ type: 'text', delta });
    }
  }

  /** Streams one model turn (with retries before the first part) and returns its function calls and outcome. */
  private async streamModel(task: LiveTask, set: ToolSet): Promise<{ calls: ModelFunctionCall[]; outcome?: ModelOutcome }> {
    const signal = task.abort.signal;
    const memory = await memoryInstruction(task.context.workspace, this.opts.toolbox.protectedPaths);
    const systemInstruction = memory === undefined ? this.opts.systemInstruction : `${this.opts.systemInstruction}\n\n${memory}`;
    const messageId = task.task.history.findLast((m) => m.role === Role.ROLE_USER)?.messageId;
    const request = { systemInstruction, messageId, contents: task.context.history, tools: set.declarations };
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      const parts: ModelPart[] = [];
      let outcome: ModelOutcome | undefined;
      try {
        outcome = await this.streamOnce(task, request, parts);
      } catch (err) {
        if (signal.aborted) return { calls: [] };
        const delay = this.retryDelay(err, attempt, parts.length, started);
        this.opts.logger.warn({ taskId: task.id, attempt, err: (err as Error).message, delayMs: delay }, 'model call failed; retrying');
        await sleep(delay, signal);
        continue;
      }
      const calls = parts.filter((p) => p.functionCall !== undefined).map((p) => p.functionCall as ModelFunctionCall);
      // The turn's calls open next (openTurn): this history entry joins their cards' commit.
      if (calls.length > 0) task.holdWrites();
      task.appendHistory({ role: 'model', parts: parts.length > 0 ? parts : [{ text: '' }] });
      return { calls, outcome };
    }
  }

  /**
   * One model call: publishes text, thoughts and artifacts as they stream, collects every part
   * in `parts`, and returns the outcome the model named (the last one wins).
   */
  private async streamOnce(task: LiveTask, request: ModelRequest, parts: ModelPart[]): Promise<ModelOutcome | undefined> {
    let slice = Date.now();
    let outcome: ModelOutcome | undefined;
    let usage: TokenUsage | undefined;
    for await (const chunk of this.opts.model.generate(request, task.abort.signal)) {
      if (chunk.usage !== undefined) usage = chunk.usage; // each chunk's counts are the call's so far
      if (Date.now() - slice > 10) {
        await yieldToIo();
        slice = Date.now();
      }
      for (const part of chunk.parts) {
        parts.push(part);
        if (task.halted) continue;
        if (part.thought && part.text) task.publish({ type: 'thought', ...splitThought(part.text) });
        else if (part.text) task.publish({ type: 'text', delta: part.text });
      }
      if (chunk.outcome !== undefined) outcome = chunk.outcome;
      if (task.halted) continue;
      for (const artifact of chunk.artifacts ?? []) task.publish({ type: 'artifact', artifact });
    }
    if (usage !== undefined) task.addUsage(usage);
    return outcome;
  }

  /**
   * The wait before retrying a failed model call, or throws the error as a ModelError when it
   * must not be retried: retries only for retryable errors, nothing streamed yet, at most
   * `modelAttempts` attempts, all within the retry budget. Delays double, with ±20% jitter.
   */
  private retryDelay(err: unknown, attempt: number, streamed: number, started: number): number {
    const delay = Math.round((this.opts.retryBaseDelayMs ?? 1000) * 2 ** (attempt - 1) * (0.8 + Math.random() * 0.4));
    const inBudget = Date.now() - started + delay <= (this.opts.retryBudgetMs ?? 30_000);
    const attempts = this.opts.modelAttempts ?? 3;
    if (err instanceof ModelError && err.retryable && streamed === 0 && attempt < attempts && inBudget) return delay;
    const e = err instanceof ModelError ? err : new ModelError((err as Error).message, false, undefined, { cause: err });
    if (attempt > 1) e.message = `${e.message} (after ${attempt} attempts)`;
    throw e;
  }

  /**
   * Creates a PENDING card per call (with its confirmation request when it must wait); `byCommand`:
   * a slash command's own calls. When none runs without asking and some wait, the task pauses on
   * them in the same synchronous step, so the cards and their pause share one commit, and the turn
   * need not be read back: nobody can answer a card before it is committed (settle reads the turn
   * because a call of a turn whose cards are out may be answered on another instance meanwhile).
   * True when it paused.
   */
  private async openTurn(task: LiveTask, calls: ModelFunctionCall[], byCommand = false): Promise<boolean> {
    // The cards (judged with awaits in between) commit with the pause, or — when calls run at once —
    // with the first one's EXECUTING card (runCall commits it before the tool starts; settle ends the
    // hold when none runs).
    task.holdWrites();
    try {
      const paused = await this.proposeTurn(task, calls, byCommand);
      if (paused) task.releaseWrites();
      return paused;
    } catch (err) {
      task.releaseWrites();
      throw err;
    }
  }

  private async proposeTurn(task: LiveTask, calls: ModelFunctionCall[], byCommand: boolean): Promise<boolean> {
    task.turnNo += 1;
    task.publish({ type: 'turn-step', step: 'calls' });
    // Validating resolves path arguments off the event loop: the turn holds each call once it is proposed.
    task.turn = [];
    for (const [position, fc] of calls.entries()) task.turn.push(await proposeCall(task, fc, position, task.context.tools, byCommand));
    for (const call of task.turn) await requestApproval(task, call, this.opts.approvalTimeoutMs);
    for (const call of task.turn) showCall(task, call);
    const waiting = task.awaiting();
    if (task.turn.some((c) => c.phase === 'ready') || waiting.length === 0 || task.halted) return false;
    task.modelRunning = false; // before the pause commits: its commit releases the task only when idle
    pauseTask(task, waiting);
    return true;
  }
}
