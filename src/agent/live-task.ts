/**
 * A task while the process holds it: its A2A snapshot, its event log, the tool calls
 * of the current model turn, and the abort signal for everything it runs.
 */
import type { Message, Task } from '@a2a-js/sdk';
import { stateName, STATE_TO_V1 } from '../protocol/a2a.js';
import type { ModelPart } from './model/model-client.js';
import type { AnyTool } from '../tools/tool.js';
import { EventLog } from './event-log.js';
import type { LoggedEvent } from './event-log.js';
import { PAUSE_OR_TERMINAL } from './wire/agent-events.js';
import type { AgentEvent, TaskStateName, ToolCallSnapshot } from './wire/agent-events.js';
import type { WireEncoder } from './wire/wire-encoder.js';
import type { ContextState } from './context-registry.js';

/** Where one tool call of the current turn stands. */
/** `ready`: to run without asking; `awaiting`: waits for a person. */
export type CallPhase = 'ready' | 'awaiting' | 'executing' | 'done';

export interface TurnCall {
  snapshot: ToolCallSnapshot;
  phase: CallPhase;
  /** The model's own id for the call, echoed in the function response. */
  modelCallId?: string;
  tool?: AnyTool;
  /** Validated arguments (absent when validation failed or the tool is unknown). */
  args?: Record<string, unknown>;
  /** The option the user chose, once answered. */
  answer?: string;
  /** What the model is told about this call once it is done. */
  response?: ModelPart;
  /** The latest card sent for this call (re-sent when a client resubscribes to a pause). */
  lastEvent?: LoggedEvent;
}

export class LiveTask {
  readonly log = new EventLog();
  readonly abort = new AbortController();
  /** Calls of the model turn in progress, in the model's order. */
  turn: TurnCall[] = [];
  /** Every call of this task by tool_call_id, answered or not (to refuse second answers). */
  readonly calls = new Map<string, TurnCall>();
  /** Model steps since the last user message (bounded, see AgentOptions.maxModelSteps). */
  steps = 0;
  /** True while the model loop runs (between a user message and the next pause or end). */
  modelRunning = false;
  /** The history message that text deltas are being folded into. */
  private textMessageId: string | undefined;
  /** Calls whose approval card is already in the history (a re-prompt does not repeat it). */
  private readonly askedInHistory = new Set<string>();

  constructor(
    readonly task: Task,
    readonly context: ContextState,
    private readonly encoder: WireEncoder,
    readonly model: string,
  ) {}

  get id(): string {
    return this.task.id;
  }

  get state(): TaskStateName {
    return stateName(this.task.status?.state) as TaskStateName;
  }

  get isCanceled(): boolean {
    return this.state === 'canceled';
  }

  /** Calls still waiting for a person. */
  awaiting(): TurnCall[] {
    return this.turn.filter((c) => c.phase === 'awaiting');
  }

  findCall(id: string): TurnCall | undefined {
    return this.turn.find((c) => c.snapshot.id === id);
  }

  /** Nothing is running: no model stream and no executing call. */
  get idle(): boolean {
    return !this.modelRunning && !this.turn.some((c) => c.phase === 'executing');
  }

  /** Logs the Task snapshot (the first event of a new task's stream). */
  publishSnapshot(): LoggedEvent {
    return this.log.append({ payload: { $case: 'task', value: structuredClone(this.task) } }, false);
  }

  /**
   * Encodes and logs an agent event, and moves the task's status with it. After the task
   * was canceled nothing more is published: late results of aborted work are dropped.
   */
  publish(event: AgentEvent): LoggedEvent | undefined {
    if (this.isCanceled) return undefined;
    const update = this.encoder.encode(event, { taskId: this.task.id, contextId: this.task.contextId, model: this.model });
    this.task.status = update.status;
    const final = event.type === 'state' && PAUSE_OR_TERMINAL.has(event.state);
    this.recordHistory(event, update.status?.message, final);
    return this.log.append({ payload: { $case: 'statusUpdate', value: update } }, final);
  }

  /**
   * Task history keeps what a reader of `tasks/get` or `message/send` needs: the answer text
   * (deltas folded into one message per run of text), each card that asks for approval
   * (so a non-streaming client can show the diff and the options), every call's final card,
   * and each pause or end. ToolCalls stay in their own messages, as on the stream.
   */
  private recordHistory(event: AgentEvent, message: Message | undefined, final: boolean): void {
    if (message === undefined) return;
    const history = this.task.history;
    const last = history[history.length - 1];
    if (event.type === 'text') {
      if (last !== undefined && last.messageId === this.textMessageId) {
        const part = last.parts[0];
        if (part?.content?.$case === 'text') part.content.value += event.delta;
        return;
      }
      this.textMessageId = message.messageId;
      history.push(structuredClone(message));
      return;
    }
    this.textMessageId = undefined;
    if (event.type === 'tool-call') {
      const status = event.call.status;
      const asks = status === 'PENDING' && event.call.confirmation !== undefined && !this.askedInHistory.has(event.call.id);
      if (asks) this.askedInHistory.add(event.call.id);
      if (asks || status === 'SUCCEEDED' || status === 'FAILED' || status === 'CANCELLED') history.push(message);
      return;
    }
    if (final) history.push(message);
  }

  publishCall(call: TurnCall): void {
    call.lastEvent = this.publish({ type: 'tool-call', call: structuredClone(call.snapshot) }) ?? call.lastEvent;
  }

  addUserMessage(message: Message): void {
    this.task.history.push(message);
  }

  setState(state: TaskStateName): void {
    if (this.task.status) this.task.status.state = STATE_TO_V1[state];
  }
}
