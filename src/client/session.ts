/**
 * One task as a person follows it: start it or attach to it, fold every item of its streams
 * into a TaskView, tell listeners, answer its cards, and when a stream drops before the task
 * paused or ended, resubscribe with `Last-Event-ID` = the last event applied (with backoff), so
 * the view goes on exactly after it: no event twice, none missing.
 */
import type { A2AConnection, OutgoingMessage } from './connection.js';
import { buildMessage } from './connection.js';
import { A2AClientError, RpcCode, StreamDroppedError } from './errors.js';
import { emptyView, foldEvent } from './view.js';
import type { ConnectionState, StreamItem, TaskView } from './view.js';
import { TERMINAL_STATES } from './wire.js';
import type { JsonObject } from './wire.js';

export interface TaskSessionOptions {
  /** The first reconnection waits this long (ms, default 250); each next one twice as long… */
  retryBaseMs?: number;
  /** …up to this (ms, default 5000). */
  retryMaxMs?: number;
  /** Reconnections in a row without an event before the session gives up (default 40: about 3 minutes). */
  maxRetries?: number;
}

export interface SendOptions {
  contextId?: string;
  taskId?: string;
  /** Message metadata: AgentSettings under the extension URI on a conversation's first message. */
  metadata?: JsonObject;
}

export interface AnswerOptions {
  /** With `modify_with_editor`: the content to write instead of the proposal. */
  newContent?: string;
  /** A note for the model, with the answer. */
  feedback?: string;
}

type Listener = (view: TaskView) => void;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done);
  });
}

export class TaskSession {
  private current: TaskView = emptyView();
  private readonly listeners = new Set<Listener>();
  private abort: AbortController | undefined;

  constructor(
    readonly connection: A2AConnection,
    private readonly options: TaskSessionOptions = {},
  ) {}

  /** The view as folded so far. */
  get view(): TaskView {
    return this.current;
  }

  /** Calls `listener` with every new view; returns the function that stops it. */
  onChange(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private set(view: TaskView): void {
    if (view === this.current) return;
    this.current = view;
    for (const listener of [...this.listeners]) listener(view);
  }

  private setConnection(connection: ConnectionState): void {
    if (this.current.connection !== connection) this.set({ ...this.current, connection });
  }

  /**
   * Sends a prompt and follows its stream to the next pause or the end. Without `taskId`,
   * continues the session's task when it can take a message (completed, or waiting), else
   * starts a new task in the session's conversation (or `contextId`).
   */
  send(text: string, opts: SendOptions = {}): Promise<TaskView> {
    const v = this.current;
    const continues = v.taskId !== '' && !['failed', 'canceled', 'rejected'].includes(v.state);
    const taskId = opts.taskId ?? (continues ? v.taskId : undefined);
    const contextId = opts.contextId ?? (v.contextId !== '' ? v.contextId : undefined);
    return this.sendMessage({
      text,
      ...(taskId !== undefined ? { taskId } : {}),
      ...(contextId !== undefined ? { contextId } : {}),
      ...(opts.metadata ? { metadata: opts.metadata } : {}),
    });
  }

  /**
   * Answers a waiting card with one of its options (`proceed_once`, `cancel`, …): a new
   * message/stream on the task with one ToolCallConfirmation DataPart
   * `{tool_call_id, selected_option_id, file_details?: {new_content}, feedback?}` (legacy tasks:
   * `{callId, outcome, newContent?, feedback?}`), followed like any stream.
   */
  answer(cardId: string, optionId: string, opts: AnswerOptions = {}): Promise<TaskView> {
    const v = this.current;
    if (v.taskId === '') return Promise.reject(new Error('answer: the session has no task'));
    const ids = { taskId: v.taskId, contextId: v.contextId };
    const data: JsonObject =
      v.dialect === 'legacy'
        ? { callId: cardId, outcome: optionId, ...(opts.newContent !== undefined ? { newContent: opts.newContent } : {}) }
        : {
            tool_call_id: cardId,
            selected_option_id: optionId,
            ...(opts.newContent !== undefined ? { file_details: { new_content: opts.newContent } } : {}),
          };
    if (opts.feedback === undefined) return this.sendMessage({ ...ids, data: [data] });
    return this.sendMessage({ ...ids, data: [{ ...data, feedback: opts.feedback }] }).catch((err: unknown) => {
      // A server that predates the answer's feedback field takes the note as a text part beside it.
      if (!(err instanceof A2AClientError && err.code === RpcCode.invalidParams && /feedback/.test(err.message))) throw err;
      return this.sendMessage({ ...ids, text: opts.feedback, data: [data] });
    });
  }

  /**
   * Runs a slash command in the session's conversation (or `contextId`) and follows the task that
   * runs it, like `attach`: its cards (a restore's, with the diff it will apply) are answered
   * with `answer`. A command that failed to start throws an A2AClientError with its reason.
   */
  async command(commandPath: string[], args = '', opts: { contextId?: string } = {}): Promise<TaskView> {
    const contextId = opts.contextId ?? (this.current.contextId !== '' ? this.current.contextId : undefined);
    const started = await this.connection.executeCommand(commandPath, { args, ...(contextId !== undefined ? { contextId } : {}) });
    if (started.executionId === undefined) {
      throw new A2AClientError(RpcCode.invalidParams, started.message ?? `/${commandPath.join(' ')} did not start`);
    }
    return this.attach(started.executionId);
  }

  /**
   * Puts back the file a checkpointed call changed (`checkpoint`: a card's `checkpoint`, or its id):
   * the `restore` command, whose card shows the diff and waits for an answer like any edit.
   */
  restore(checkpoint: string, opts: { contextId?: string } = {}): Promise<TaskView> {
    return this.command(['restore'], checkpoint, opts);
  }

  /** Follows an existing task: replays its whole event log (Last-Event-ID 0), then live events. */
  attach(taskId: string): Promise<TaskView> {
    this.stop();
    this.set({ ...emptyView(), taskId });
    return this.follow((signal) => this.connection.resubscribe(taskId, '0', { signal }));
  }

  /** Closes the session's stream; the task goes on (and may be attached to again). */
  detach(): void {
    this.stop();
    this.setConnection('closed');
  }

  /** Cancels the task (tasks/cancel) and closes the stream. */
  async cancel(): Promise<TaskView> {
    const taskId = this.current.taskId;
    if (taskId === '') throw new Error('cancel: the session has no task');
    this.stop();
    const task = await this.connection.cancel(taskId);
    this.set({ ...foldEvent(this.current, { event: task }), connection: 'closed' });
    return this.current;
  }

  private stop(): void {
    this.abort?.abort();
    this.abort = undefined;
  }

  private sendMessage(message: OutgoingMessage): Promise<TaskView> {
    const built = buildMessage(message);
    const own: StreamItem | undefined = message.taskId !== undefined ? { event: built } : undefined;
    this.stop();
    this.set({ ...this.current, final: false });
    return this.follow((signal) => this.connection.callStream('message/stream', { message: built }, {}, { signal }), own);
  }

  /**
   * Reads a stream into the view; on a drop (network failure, or an end before a pause or the
   * end of the task) resubscribes after the last event applied. Resolves with the view once a
   * stream ends at a pause or the end; rejects with the server's error (A2AClientError), or after
   * maxRetries failed reconnections.
   */
  private async follow(open: (signal: AbortSignal) => AsyncIterable<StreamItem>, own?: StreamItem): Promise<TaskView> {
    const abort = new AbortController();
    this.abort = abort;
    this.setConnection('live');
    let failures = 0;
    let stream = open(abort.signal);
    let pendingOwn = own;
    try {
      for (;;) {
        try {
          for await (const item of stream) {
            if (abort.signal.aborted) break;
            if (pendingOwn !== undefined) this.set(foldEvent(this.current, pendingOwn)); // the server took the message
            pendingOwn = undefined;
            failures = 0;
            this.set({ ...foldEvent(this.current, item), connection: 'live' });
          }
          if (abort.signal.aborted || this.current.final || TERMINAL_STATES.has(this.current.state)) return this.current;
          throw new StreamDroppedError('the stream ended before the task paused or ended');
        } catch (err) {
          if (abort.signal.aborted) return this.current;
          pendingOwn = undefined; // whether the server took it, the replay shows
          const retry = err instanceof StreamDroppedError && this.current.taskId !== '' && failures < (this.options.maxRetries ?? 40);
          if (!retry)
            throw err instanceof A2AClientError || err instanceof StreamDroppedError
              ? err
              : new StreamDroppedError(String(err), { cause: err });
          this.setConnection('reconnecting');
          await sleep(Math.min((this.options.retryBaseMs ?? 250) * 2 ** failures, this.options.retryMaxMs ?? 5000), abort.signal);
          failures++;
          if (abort.signal.aborted) return this.current;
          stream = this.connection.resubscribe(this.current.taskId, this.current.lastEventId ?? '0', { signal: abort.signal });
        }
      }
    } finally {
      if (this.abort === abort) {
        this.abort = undefined;
        this.setConnection('closed');
      }
    }
  }
}
