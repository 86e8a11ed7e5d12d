/**
 * The model loop: stream a model turn, show its text and thoughts, open its tool calls,
 * run what needs no approval, then pause for a person or go on with the results.
 * Every path ends in exactly one of: `input-required`, `completed`, `failed`.
 */
import { randomUUID } from 'node:crypto';
import { ToolFailure } from '../tools/tool.js';
import { needsApproval, optionsFor } from './approval-policy.js';
import { memoryInstruction } from './memory.js';
import { hashShown } from './live-task.js';
import type { LiveTask, TurnCall } from './live-task.js';
import { ModelError } from './model/model-client.js';
import type { ModelClient, ModelFunctionCall, ModelPart } from './model/model-client.js';
import type { TaskStore } from './task-store.js';
import type { ToolCallSnapshot } from './wire/agent-events.js';
import type { Toolbox, ToolSet } from './toolbox.js';
import { executeCall } from './tool-runner.js';

export interface AgentLogger {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface TurnLoopOptions {
  model: ModelClient;
  toolbox: Toolbox;
  store: TaskStore;
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

export class TurnLoop {
  constructor(private readonly opts: TurnLoopOptions) {}

  get modelName(): string {
    return this.opts.model.model;
  }

  /** Starts the model on a new user message. Returns at once; the run is detached. */
  startTurn(task: LiveTask, userParts: ModelPart[]): void {
    task.appendHistory({ role: 'user', parts: userParts });
    task.steps = 0;
    void this.step(task);
  }

  /**
   * Opens a turn of calls the server itself proposes (a slash command), without the model:
   * they are approved like any call, and when the last one is done the task completes
   * instead of going back to the model. Resolves once the cards are published.
   */
  async startDirectTurn(task: LiveTask, calls: ModelFunctionCall[]): Promise<void> {
    task.modelRunning = true;
    try {
      await this.refreshTools(task);
      await this.openTurn(task, calls);
    } catch (err) {
      task.modelRunning = false;
      this.fail(task, err);
      return;
    }
    void (async () => {
      for (const call of task.turn) {
        if (call.phase === 'ready' && !task.isCanceled) await executeCall(task, call);
      }
      task.modelRunning = false;
      await this.settle(task);
    })();
  }

  /** Re-resolves the context's tools (its MCP servers may have stopped while it was idle) and the calls' tools. */
  async refreshTools(task: LiveTask): Promise<ToolSet> {
    const set = await this.opts.toolbox.forContext(task.context);
    task.context.tools = set;
    for (const call of task.turn) {
      if (call.tool !== undefined) call.tool = set.byName.get(call.snapshot.toolName) ?? call.tool;
    }
    return set;
  }

  /** Runs approved calls in order (each starts as soon as the previous ends), then moves the task on. */
  async runCalls(task: LiveTask, calls: TurnCall[]): Promise<void> {
    if (calls.some((c) => c.tool?.mcp !== undefined)) await this.refreshTools(task).catch(() => undefined);
    for (const call of calls) {
      if (task.isCanceled) return;
      await executeCall(task, call);
    }
    await this.settle(task);
  }

  /**
   * Moves a task on after one of its calls was answered or finished: pauses when a call
   * still waits for a person, continues the model when every call has a result. Reads the
   * turn from the store, because another process may be running calls of the same turn.
   */
  async settle(task: LiveTask): Promise<void> {
    if (task.isCanceled || !task.idle || task.state !== 'working') return;
    await task.flush();
    const stored = await this.opts.store.loadTurn(task.id);
    if (task.isCanceled || !task.idle) return;
    if (stored.some((c) => c.phase === 'ready' || c.phase === 'executing')) return; // its runner settles
    const waiting = stored.filter((c) => c.phase === 'awaiting');
    if (waiting.length > 0) {
      task.publish({ type: 'state', state: 'input-required', text: pausePrompt(waiting) });
      return;
    }
    if (!(await this.opts.store.closeTurn(task.id, task.turnNo))) return; // another process continued
    if (task.slashCommand !== undefined) {
      const text = commandSummary(
        task.slashCommand,
        stored.map((c) => c.snapshot),
      );
      task.turn = [];
      task.publish({ type: 'state', state: 'completed', text });
      return;
    }
    const responses = stored.map((c) => c.response).filter((p): p is ModelPart => p !== undefined);
    if (responses.length > 0) task.appendHistory({ role: 'user', parts: responses });
    task.turn = [];
    void this.step(task);
  }

  private async step(task: LiveTask): Promise<void> {
    task.modelRunning = true;
    try {
      if (++task.steps > (this.opts.maxModelSteps ?? 50)) {
        throw new ModelError(`the model made more than ${this.opts.maxModelSteps ?? 50} steps for one message; stopped`, false);
      }
      const set = await this.refreshTools(task);
      this.reportFailedServers(task, set);
      const calls = await this.streamModel(task, set);
      if (task.isCanceled) return;
      if (calls.length === 0) {
        task.modelRunning = false;
        task.publish({ type: 'state', state: 'completed' });
        return;
      }
      await this.openTurn(task, calls);
      for (const call of task.turn) {
        if (call.phase === 'ready' && !task.isCanceled) await executeCall(task, call);
      }
    } catch (err) {
      task.modelRunning = false;
      this.fail(task, err);
      return;
    }
    task.modelRunning = false;
    await this.settle(task);
  }

  /** A server that failed to start is reported once per context, and the rest of the tools work. */
  private reportFailedServers(task: LiveTask, set: ToolSet): void {
    for (const s of this.opts.toolbox.unreportedFailures(task.context.id, set)) {
      task.publish({
        type: 'text',
        delta: `MCP server "${s.name}" is unavailable: ${s.error ?? s.status}. Its tools cannot be used in this conversation.\n\n`,
      });
    }
  }

  private fail(task: LiveTask, err: unknown): void {
    if (task.isCanceled) return;
    const reason = err instanceof ModelError ? `Model call failed: ${err.message}` : `Agent error: ${(err as Error).message}`;
    if (!(err instanceof ModelError)) this.opts.logger.error({ err, taskId: task.id }, 'agent loop crashed');
    abandonTurn(task, reason);
    task.publish({ type: 'state', state: 'failed', text: reason, error: reason });
  }

  /** Streams one model turn (with retries before the first part) and returns its function calls. */
  private async streamModel(task: LiveTask, set: ToolSet): Promise<ModelFunctionCall[]> {
    const attempts = this.opts.modelAttempts ?? 3;
    const signal = task.abort.signal;
    const memory = await memoryInstruction(task.context.workspace);
    const systemInstruction = memory === undefined ? this.opts.systemInstruction : `${this.opts.systemInstruction}\n\n${memory}`;
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      const parts: ModelPart[] = [];
      try {
        const request = { systemInstruction, contents: task.context.history, tools: set.declarations };
        let slice = Date.now();
        for await (const chunk of this.opts.model.generate(request, signal)) {
          // A model that streams faster than I/O runs must not starve the event loop (other
          // clients, the commits and the SSE writes of this very answer).
          if (Date.now() - slice > 10) {
            await new Promise<void>((resolve) => setImmediate(resolve));
            slice = Date.now();
          }
          for (const part of chunk.parts) {
            parts.push(part);
            if (task.isCanceled) continue;
            if (part.thought && part.text) task.publish({ type: 'thought', ...splitThought(part.text) });
            else if (part.text) task.publish({ type: 'text', delta: part.text });
          }
        }
      } catch (err) {
        if (signal.aborted) return [];
        // Retries with backoff (and jitter) while it can help: retryable errors, nothing streamed yet,
        // at most `attempts` attempts, all within the retry budget (30 s).
        const delay = Math.round((this.opts.retryBaseDelayMs ?? 1000) * 2 ** (attempt - 1) * (0.8 + Math.random() * 0.4));
        const inBudget = Date.now() - started + delay <= (this.opts.retryBudgetMs ?? 30_000);
        const retry = err instanceof ModelError && err.retryable && parts.length === 0 && attempt < attempts && inBudget;
        if (!retry) {
          const e = err instanceof ModelError ? err : new ModelError((err as Error).message, false, undefined, { cause: err });
          if (attempt > 1) e.message = `${e.message} (after ${attempt} attempts)`;
          throw e;
        }
        this.opts.logger.warn({ taskId: task.id, attempt, err: err.message, delayMs: delay }, 'model call failed; retrying');
        await sleep(delay, signal);
        continue;
      }
      task.appendHistory({ role: 'model', parts: parts.length > 0 ? parts : [{ text: '' }] });
      return parts.filter((p) => p.functionCall !== undefined).map((p) => p.functionCall as ModelFunctionCall);
    }
  }

  /** Creates a PENDING card per call (with its confirmation request when it must wait). */
  private async openTurn(task: LiveTask, calls: ModelFunctionCall[]): Promise<void> {
    task.turnNo += 1;
    task.turn = calls.map((fc, position) => this.newCall(task, fc, position, task.context.tools));
    for (const call of task.turn) await this.prepareApproval(task, call);
    for (const call of task.turn) {
      task.publishCall(call);
      if (call.phase === 'awaiting') task.audit({ toolCallId: call.snapshot.id, decision: 'proposed', shownHash: call.shownHash });
    }
  }

  private newCall(task: LiveTask, fc: ModelFunctionCall, position: number, set: ToolSet): TurnCall {
    const input = fc.args ?? {};
    const call: TurnCall = {
      snapshot: { id: `tc_${randomUUID()}`, toolName: fc.name, status: 'PENDING', input },
      phase: 'ready',
      turn: task.turnNo,
      position,
      modelCallId: fc.id,
      proposedAt: new Date(),
    };
    const tool = set.byName.get(fc.name);
    if (tool === undefined) {
      call.snapshot.error = {
        message: `Unknown tool "${fc.name}". Available tools: ${[...set.byName.keys()].join(', ')}`,
        type: 'unknown_tool',
      };
      return call;
    }
    call.tool = tool;
    const checked = tool.validate(input, { workspace: task.context.workspace });
    if (!checked.ok) {
      call.snapshot.error = checked.error;
      return call;
    }
    call.args = checked.args;
    call.snapshot.description = tool.describe(checked.args);
    return call;
  }

  /** Attaches the confirmation request when the call must wait. Async: proposals read files. */
  private async prepareApproval(task: LiveTask, call: TurnCall): Promise<void> {
    if (call.tool === undefined || call.args === undefined) return;
    if (!needsApproval(call.tool, call.args, task.context)) return;
    try {
      const proposal = call.tool.propose
        ? await call.tool.propose(call.args, { workspace: task.context.workspace })
        : { type: 'generic' as const, description: call.snapshot.description ?? call.tool.name };
      call.snapshot.confirmation = { options: optionsFor(call.tool, call.args), proposal };
      call.phase = 'awaiting';
      call.shownHash = hashShown(call.snapshot);
      if (this.opts.approvalTimeoutMs !== undefined) call.expiresAt = new Date(call.proposedAt.getTime() + this.opts.approvalTimeoutMs);
    } catch (err) {
      call.snapshot.error =
        err instanceof ToolFailure
          ? err.error
          : { message: `Could not prepare ${call.tool.name}: ${(err as Error).message}`, type: 'proposal_failed' };
      call.args = undefined;
    }
  }
}

/**
 * Ends a turn that will not go on (the task was canceled or failed): the model's function
 * calls get their responses in the conversation, so the context's history stays valid for
 * the next task (Gemini refuses a function-call turn that is not followed by its responses).
 */
export function abandonTurn(task: LiveTask, reason: string): void {
  if (task.turn.length === 0 || task.slashCommand !== undefined) return;
  const parts: ModelPart[] = task.turn.map(
    (c) => c.response ?? { functionResponse: { id: c.modelCallId, name: c.snapshot.toolName, response: { error: reason } } },
  );
  task.appendHistory({ role: 'user', parts });
  task.turn = [];
}

/** How a slash command's own calls ended, for its completed event. */
export function commandSummary(command: string, calls: ReadonlyArray<ToolCallSnapshot>): string {
  const lines = calls.map((c) => {
    const what = c.description ?? c.toolName;
    if (c.status === 'SUCCEEDED') return `done: ${what}`;
    if (c.status === 'CANCELLED') return `not done (${c.error?.type === 'declined' ? 'declined' : 'cancelled'}): ${what}`;
    return `failed: ${what}${c.error ? ` (${c.error.message})` : ''}`;
  });
  return `${command}: ${lines.join('; ')}`;
}

/** The text of the input-required event: what is waiting and how to answer. */
export function pausePrompt(waiting: ReadonlyArray<Pick<TurnCall, 'snapshot'>>): string {
  const list = waiting.map(
    (c) => `${c.snapshot.toolName} (${c.snapshot.id})${c.snapshot.description ? `: ${c.snapshot.description}` : ''}`,
  );
  const how =
    waiting.length === 1
      ? 'Reply "yes" to allow it or "no" to reject it, or send a ToolCallConfirmation.'
      : 'Send a ToolCallConfirmation for each (tool_call_id, selected_option_id).';
  return `Waiting for approval of ${waiting.length === 1 ? 'a tool call' : `${waiting.length} tool calls`}: ${list.join('; ')}. ${how}`;
}
