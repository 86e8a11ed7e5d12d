/**
 * A task while this process works on it: its A2A snapshot, the calls of its current
 * model turn, its conversation, and the abort signal for everything it runs. Every
 * change is written through the TaskStore, in order, on one queue per task; an event
 * reaches a stream only after it is committed ("nothing that was sent is lost").
 */
import { createHash } from 'node:crypto';
import { Role, type Message, type Task } from '@a2a-js/sdk';
import { stateName, STATE_TO_V1 } from '../../protocol/a2a.js';
import { isStaleWrite } from '../../protocol/errors.js';
import { DEVTOOL_EXTENSION_URI } from '../../protocol/extension.js';
import type { ModelContent, ModelPart } from '../model/model-client.js';
import type { AnyTool } from '../../tools/tool.js';
import type { EventHub } from './event-hub.js';
import type {
  AuditEntry,
  CallPhase,
  ClaimResult,
  ClaimTerms,
  ContextSettings,
  NewContext,
  NewTaskOptions,
  StoredCall,
  TaskStore,
} from '../task-store.js';
import type { ToolSet } from './toolbox.js';
import { PAUSE_OR_TERMINAL, PAUSED, TERMINAL } from '../wire/agent-events.js';
import { applyArtifact } from '../wire/artifacts.js';
import type { AgentEvent, TaskStateName, TokenUsage, ToolCallSnapshot } from '../wire/agent-events.js';
import type { Encoders, WireDialect, WireEncoder } from '../wire/wire-encoder.js';
import type { AgentLogger } from '../logger.js';
import { ClaimNotWon, type WriteOp, type WriteQueue } from './write-queue.js';
import type { LiveOutputOptions } from './live-output.js';
import { NO_METRICS, type Metrics, type TaskEndState } from '../../lib/metrics.js';

type EventOp = Extract<WriteOp, { kind: 'event' }>;

const EMPTY_BATCH = Object.freeze({ events: [], calls: [], history: [], trust: [], audit: [] });

export type { CallPhase };

/** What a conversation keeps across its tasks (loaded from the store with the task). */
export interface ContextState {
  id: string;
  /** Absolute real path; every tool call of the context is confined to it. */
  workspace: string;
  history: ModelContent[];
  /** Grant keys from `proceed_always…` answers (approval-policy.ts). */
  trustedTools: Set<string>;
  settings: ContextSettings;
  /** The tools the context can call (built-in and MCP), resolved when it is loaded. */
  tools: ToolSet;
  /** The principal that started the conversation (undefined without authentication). */
  principal?: string;
  /** Shell-like calls may run without a card (the sandbox is in force, or the operator allowed it unconfined): approval-policy.ts. */
  confined?: boolean;
  /** A context made up here and not stored yet: its first task's creation stores it (LiveTask.create). */
  unsaved?: NewContext;
}

/**
 * Whether the principal answering a task may approve its calls, and which roles would
 * (runtime/pause.ts). Set from the caller of every message to the task (MessageRouter); absent
 * on a copy loaded without a message, whose pause then keeps the state it was stored with.
 */
export interface PauseAuthority {
  mayApprove: boolean;
  approverRoles: readonly string[];
}

export interface TurnCall {
  snapshot: ToolCallSnapshot;
  phase: CallPhase;
  turn: number;
  position: number;
  /** The model's own id for the call, echoed in the function response. */
  modelCallId?: string;
  tool?: AnyTool;
  /** Validated arguments (absent when validation failed or the tool is unknown). */
  args?: Record<string, unknown>;
  /** The option the user chose, once answered. */
  answer?: string;
  /** The user's feedback with an approving answer: told to the model with the call's result. */
  feedback?: string;
  /** What the model is told about this call once it is done. */
  response?: ModelPart;
  shownHash?: string;
  /**
   * The shownHash of the card a person's answer named (absent: it needed no approval, or an
   * "always" answer on another card covered it). Only such a call skips being judged again before it runs.
   */
  approvedCard?: string;
  proposedAt: Date;
  expiresAt?: Date;
  /**
   * A runner of this copy (TurnLoop.runReady) took the call: it is judged again and run by that
   * one only. The model loop's runner and an answer's (to another card of the turn) may both
   * reach a call approved meanwhile; the await of its judgement lies between their checks.
   */
  runner?: true;
  /** The process group the running call started (recorded so a recovery can kill it after a crash). */
  processGroup?: { pgid: number; stamp: string };
  /**
   * Loaded from the store already claimed or running: another process runs it (or ran it and
   * died), never this copy — so it does not keep the copy busy (in memory, leased) here.
   */
  elsewhere?: boolean;
}

/**
 * Takes the checkpoint of a file-modifying call right before it runs (runtime/checkpoints.ts):
 * its name, undefined when the call edits no named file; throws when the files cannot be kept.
 */
export interface CallCheckpoints {
  /** Whether `call` gets a checkpoint before it runs. */
  covers(call: TurnCall): boolean;
  take(task: LiveTask, call: TurnCall): Promise<string | undefined>;
}

/** What a LiveTask needs from its surroundings. */
export interface LiveTaskDeps {
  store: TaskStore;
  writes: WriteQueue;
  hub: EventHub;
  /** One encoder per wire dialect; a task uses its own dialect's. */
  encoders: Encoders;
  model: string;
  logger: AgentLogger;
  /** This process's lease name and how long a lease lasts. */
  instanceId: string;
  leaseMs: number;
  /** Bounds of a running call's live output (default DEFAULT_LIVE_OUTPUT). */
  liveOutput?: LiveOutputOptions;
  /** What the task's calls and ends are counted in (default: nothing). */
  metrics?: Metrics;
  /** Takes a checkpoint before each file-modifying call runs (CHECKPOINTING); absent: none are taken. */
  checkpoints?: CallCheckpoints;
  /** Called once a pause or end of the task is committed. */
  onFinal?: (task: LiveTask) => void;
  /** Called once, when a write of the task could not be committed (the task must fail). */
  onWriteFailed?: (task: LiveTask, err: unknown) => void;
  /** Called when the writes of a failing task could not be committed after every retry. */
  onAbandoned?: (task: LiveTask) => void;
  /** Called once, when the store refused a write of the task's copy as behind (StaleWriteError). */
  onOvertaken?: (task: LiveTask) => void;
  /** Whether the task stays in this process's memory (the task cache); told only by task-lifecycle.ts. */
  residency?: Residency;
}

/** The task cache as the task lifecycle sees it: keep a task in memory, or let it go. */
export interface Residency {
  hold(task: LiveTask): void;
  release(task: LiveTask, park?: boolean): void;
  discard(task: LiveTask): void;
  forget(task: LiveTask): void;
}

/** A write that was not committed, kept to be sent again. */
interface Unsaved {
  op: WriteOp;
  then?: (seq: number) => void;
}

/** How often a failing task's own writes are re-sent before it is left to the supervisor. */
const MAX_RESENDS = 10;
const resendDelayMs = (attempt: number) => Math.min(200 * 2 ** attempt, 10_000);

export class LiveTask {
  readonly abort = new AbortController();
  /** Calls of the model turn in progress, in the model's order. */
  turn: TurnCall[] = [];
  turnNo = -1;
  /** Model steps since the last user message (bounded, see TurnLoopOptions.maxModelSteps). */
  steps = 0;
  /**
   * Set on a task that runs a slash command's own calls (no model): the command, e.g. "/memory add".
   * Kept in the Task's metadata under the extension URI, so it survives a reload.
   */
  get slashCommand(): string | undefined {
    const meta = this.task.metadata?.[DEVTOOL_EXTENSION_URI] as { slash_command?: unknown } | undefined;
    return typeof meta?.slash_command === 'string' ? meta.slash_command : undefined;
  }

  /** True while the model loop runs (between a user message and the next pause or end). */
  modelRunning = false;
  /** The last committed sequence number (advanced as the write queue drains). */
  lastSeq: number;
  private writes: Promise<unknown> = Promise.resolve();
  /** The history message that text deltas are being folded into. */
  private textMessageId: string | undefined;
  /** Calls whose approval card is already in the history (a re-prompt does not repeat it). */
  private readonly askedInHistory = new Set<string>();

  /** The principal that started the task (undefined without authentication). */
  readonly principal?: string;
  /** The wire dialect the task speaks for its whole life. */
  readonly dialect: WireDialect;
  /** May the principal answering this task approve its calls (set per message; see runtime/pause.ts). */
  pauseAuthority?: PauseAuthority;

  constructor(
    readonly task: Task,
    readonly context: ContextState,
    private readonly deps: LiveTaskDeps,
    opts: { lastSeq?: number; principal?: string; dialect?: WireDialect } = {},
  ) {
    this.lastSeq = opts.lastSeq ?? 0;
    if (opts.principal !== undefined) this.principal = opts.principal;
    this.dialect = opts.dialect ?? 'rfc';
    this.shownState = this.state;
  }

  /** The encoder of the task's dialect. */
  get encoder(): WireEncoder {
    return this.deps.encoders[this.dialect];
  }

  /**
   * The hash the audit keeps of a card a person is asked to approve: sha256 of the JSON of the
   * card as this task's clients receive it (the DataPart of the call's update, in the task's
   * dialect), so what was approved can be checked against the bytes that were shown.
   */
  cardHash(snapshot: ToolCallSnapshot): string {
    const encoded = this.encoder.encode(
      { type: 'tool-call', call: snapshot },
      { taskId: this.task.id, contextId: this.task.contextId, model: this.model },
    );
    const part = encoded?.$case === 'statusUpdate' ? encoded.value.status?.message?.parts[0] : undefined;
    const card: unknown = part?.content?.$case === 'data' ? (part.content.value as unknown) : snapshot;
    return createHash('sha256').update(JSON.stringify(card)).digest('hex');
  }

  get id(): string {
    return this.task.id;
  }

  get model(): string {
    return this.deps.model;
  }

  /** Where the task's calls are counted (call-lifecycle.ts tells it). */
  get metrics(): Metrics {
    return this.deps.metrics ?? NO_METRICS;
  }

  /** Takes the checkpoints of the task's edits (undefined: checkpointing is off). */
  get checkpoints(): CallCheckpoints | undefined {
    return this.deps.checkpoints;
  }

  /** Bounds of a running call's live output. */
  get liveOutput(): LiveOutputOptions | undefined {
    return this.deps.liveOutput;
  }

  get state(): TaskStateName {
    return stateName(this.task.status?.state) as TaskStateName;
  }

  get isCanceled(): boolean {
    return this.state === 'canceled';
  }

  /** Canceled or failed (or detached at shutdown, or found behind the store): nothing more runs or is published for it. */
  get halted(): boolean {
    return this.detached || this.behind || this.state === 'canceled' || this.state === 'failed';
  }

  /**
   * Set when the store refused a write of this copy as stale (StaleWriteError): another process
   * moved the task on (a supervisor ended it, a cancel landed there). The copy stops.
   */
  private behind = false;

  /** True once the store refused this copy's writes as stale: another process moved the task on. */
  get isBehind(): boolean {
    return this.behind;
  }
  /** Set by checkStateOnly(): this copy's next writes need only the task's stored state, not its last seq. */
  private stateOnly?: string;

  /**
   * What the store must still hold for this copy's events to land (WriteOwner): the last seq it
   * knows — every write of a task's copy is version-checked, so a copy behind the store (another
   * process appended meanwhile) writes nothing — or, after checkStateOnly(), only the state.
   */
  expectation(): { lastSeq: number } | { state: string } {
    return this.stateOnly !== undefined ? { state: this.stateOnly } : { lastSeq: this.lastSeq };
  }

  /**
   * From now on this copy's writes need only the task to be stored in the state the copy is in
   * now (a cancel: valid whatever another process appended meanwhile, as long as the task did
   * not pause or end there).
   */
  checkStateOnly(): void {
    this.stateOnly = this.state;
  }

  /** True once a write of this copy was refused: the task fails for it, or the copy was overtaken. */
  get writesFailed(): boolean {
    return this.failing || this.behind;
  }

  /** True once the store refused this copy's writes as behind (see `behind`). */
  get overtaken(): boolean {
    return this.behind;
  }

  /** The task holds one user message: the one that started it. */
  isFirstMessage(): boolean {
    return this.task.history.filter((m) => m.role === Role.ROLE_USER).length === 1;
  }

  /** Calls still waiting for a person. */
  awaiting(): TurnCall[] {
    return this.turn.filter((c) => c.phase === 'awaiting');
  }

  /** Nothing is running: no model stream and no executing call. */
  /** Where this task's stay in memory is decided (task-lifecycle.ts uses it); absent outside a cache. */
  get residency(): Residency | undefined {
    return this.deps.residency;
  }

  get idle(): boolean {
    return !this.modelRunning && !this.turn.some((c) => (c.phase === 'executing' || c.phase === 'ready') && c.elsewhere !== true);
  }

  /**
   * Queues a write (committed in order, grouped with other tasks' writes). `then` runs once
   * it is committed. A write that fails is never thrown (see writeFailed).
   */
  private enqueue(op: WriteOp, then?: (seq: number) => void, resendOnFailure = this.failing): void {
    const committed = this.deps.writes.push(op, this).then(
      (seq) => then?.(seq),
      (err: unknown) => this.writeFailed(err, { op, then }, resendOnFailure),
    );
    this.writes = Promise.all([this.writes, committed]);
  }

  /** Set once a write of the running task failed and the task was failed for it. */
  private failing = false;
  /** Writes waiting to be sent again, and how often they were. */
  private resends?: { attempts: number; unsaved: Unsaved[]; timer?: NodeJS.Timeout };

  /**
   * What a write the store refused means:
   * - a write of the failure path (queued after the task was failed for a write) is sent again,
   *   with backoff, until the store takes it;
   * - once the run's pause or end is queued, the task is not failed for it: its writes are sent
   *   again — but after an end (whose event stores the whole task), a stream frame before it
   *   (a text delta, an intermediate card) is dropped rather than sent after the end;
   * - while the task runs, the first refused write fails the task (onWriteFailed).
   */
  private writeFailed(err: unknown, write: Unsaved, resend: boolean): void {
    if (this.unborn) return; // refused with its creation (create() says so)
    if (isStaleWrite(err) || err instanceof ClaimNotWon) return this.overtakenBy(err);
    const finalQueued = PAUSE_OR_TERMINAL.has(this.state);
    // After an end, a stream frame is dropped; a pause keeps its cards (a client draws them). A
    // turn's close is never sent again: it was refused with the results it needs, and the task
    // fails for that (abandoning the turn) unless it already ended.
    const droppable = TERMINAL.has(this.state) && write.op.kind === 'event' && !write.op.final;
    const again = write.op.kind !== 'close-turn' && (resend || (finalQueued && !droppable));
    // A call's row is an upsert whose phase only moves forward: sent again it cannot land twice,
    // so it is always sent again — else a result whose commit was lost (its outcome unknown) left
    // the row `executing` under this process's lease, renewed for as long as the process lived,
    // beside a task that had failed. (Events are not: sent again, they could be stored twice.)
    if (again || write.op.kind === 'call') this.keepForResend(err, write);
    if (again) return;
    this.deps.logger.error({ err, taskId: this.id }, `store write failed: ${write.op.kind}${finalQueued ? ' (dropped)' : ''}`);
    if (finalQueued || this.failing) return;
    this.failing = true;
    this.deps.onWriteFailed?.(this, err);
  }

  /**
   * The store showed this copy is behind it (a claim naming its last seq, or a re-prompt, was
   * refused as such): it stops and leaves memory like a copy whose writes were refused, so an
   * answer queued on it meanwhile is applied again to a fresh copy, never to this one.
   */
  stopBehind(why: string): void {
    this.overtakenBy(new Error(why));
  }

  /**
   * The store refused this copy's writes: another process moved the task on. Nothing of it is
   * written or published here any more, whatever runs for it is aborted, and the copy leaves
   * this process's memory (onOvertaken); the next request or sweep reads the task afresh.
   */
  private overtakenBy(err: unknown): void {
    if (this.behind) return;
    this.behind = true;
    clearTimeout(this.resends?.timer);
    const why = err instanceof ClaimNotWon ? "the answer's claim did not hold" : 'another process moved this task on';
    this.deps.logger.warn({ err, taskId: this.id }, `${why}; this copy stops and is read afresh`);
    this.abort.abort();
    this.deps.onOvertaken?.(this);
  }

  private keepForResend(err: unknown, write: Unsaved): void {
    if (this.detached) return;
    const resends = (this.resends ??= { attempts: 0, unsaved: [] });
    resends.unsaved.push(write);
    resends.timer ??= setTimeout(() => this.resend(err), resendDelayMs(resends.attempts));
    resends.timer.unref();
  }

  private resend(lastError: unknown): void {
    const resends = this.resends;
    if (!resends || this.detached) return;
    resends.timer = undefined;
    const unsaved = resends.unsaved.splice(0);
    if (++resends.attempts > MAX_RESENDS) {
      this.deps.logger.error(
        { err: lastError, taskId: this.id, writes: unsaved.length },
        "store still refuses the task's writes; giving up",
      );
      this.deps.onAbandoned?.(this);
      return;
    }
    for (const write of unsaved) this.enqueue(write.op, write.then, true);
  }

  /** Set by detach(): the process is shutting down; nothing more runs or is written for the task. */
  private detached = false;

  /**
   * Stops everything this process does for the task (shutdown): its tool and model are aborted
   * and nothing more is published. The store keeps the task as last committed; its lease lapses
   * and a supervisor (here after a restart, or another instance) ends it.
   */
  detach(): void {
    this.detached = true;
    clearTimeout(this.resends?.timer);
    this.abort.abort();
  }

  /** Set when the task's creation was refused: it was never stored, and nothing more is written for it. */
  private unborn = false;

  /**
   * Queues the task's creation — and its context's, when the context is new (ContextState.unsaved) —
   * ahead of its first events, so a start is one commit. Resolves once committed; rejects with the
   * store's error, and then the copy writes nothing more (its events were refused with it).
   */
  create(principal: string | undefined, opts: NewTaskOptions): Promise<void> {
    const context = this.context.unsaved;
    this.context.unsaved = undefined;
    const op: WriteOp = { kind: 'create', ...(context ? { context } : {}), task: { task: structuredClone(this.task), principal, opts } };
    return this.deps.writes.push(op, this).then(
      () => undefined,
      (err: unknown) => {
        this.unborn = true;
        this.detach();
        throw err;
      },
    );
  }

  /**
   * Keeps this task's writes queued until flush() or releaseWrites() (WriteQueue.hold): the writes
   * of a step that awaits in between share one commit.
   */
  holdWrites(): void {
    this.deps.writes.hold(this);
  }

  releaseWrites(): void {
    this.deps.writes.release(this);
  }

  /**
   * Makes the answer's claim (`terms`, on this task) the next commit of this copy's writes
   * (WriteQueue.claimWith): held until released, what the copy writes for the answer lands with
   * the claim, in one statement, or not at all — and when it does not, the copy stops (its
   * writes are refused with ClaimNotWon: overtaken). Resolves with the claim's outcome.
   */
  claimWithNextCommit(terms: Omit<ClaimTerms, 'taskId'>): Promise<ClaimResult> {
    return this.deps.writes.claimWith(this, { ...terms, taskId: this.id });
  }

  /** The answer's claim on its own (TaskStore.claimCalls), before the copy changes: a lost one changes nothing here. */
  claimAlone(terms: Omit<ClaimTerms, 'taskId'>): Promise<ClaimResult> {
    return this.deps.store.claimCalls(this.id, terms.claims, terms.owner, terms.leaseUntil, terms.expectSeq);
  }

  /** The answers to this copy's waiting calls, decided one after another (see answering). */
  private answers: Promise<unknown> = Promise.resolve();

  /**
   * Runs `decide` once every answer given to this copy before it was decided: a person's answer
   * (judged, claimed, and what a won claim starts) or the supervisor's (an expiry, a reminder).
   * Two answers never interleave on one copy: the second sees what the first did — its calls no
   * longer waiting, or the copy stopped because its claim was not won. (Two answers applied side
   * by side, the losing one ahead of its claim, stopped the copy under the winner: a won claim
   * found nothing to run, and its calls stayed claimed under this process's lease.)
   */
  answering<T>(decide: () => Promise<T>): Promise<T> {
    this.answersInFlight++;
    const decided = this.answers.then(decide).finally(() => this.answersInFlight--);
    this.answers = decided.catch(() => undefined);
    return decided;
  }

  private answersInFlight = 0;

  /**
   * True while an answer to this copy waits or is decided (answering): the copy stays the one this
   * process keeps (TaskCache), so every request and sweep reaches it — and its answers stay in one
   * line — whatever a refused request or a stale check would otherwise drop.
   */
  get answerPending(): boolean {
    return this.answersInFlight > 0;
  }

  /** Withdraws the claim not sent yet (what was to follow it failed): nothing of it is written, the copy stops. */
  dropClaim(err: unknown): void {
    this.deps.writes.dropClaim(this, err);
  }

  /**
   * Sends the answer's claim now, with what this copy holds so far, when it still waits for the
   * writes that follow (claimWithNextCommit): before anything that needs the claim decided — a
   * store call on the claimed calls, a checkpoint written. The writes after it are held again.
   */
  async claimNow(): Promise<void> {
    // Also when it was sent already (another request flushed the copy): decided only once committed.
    await this.flush();
    if (!this.halted) this.holdWrites();
  }

  /** Resolves when every write queued so far is committed (ending a hold first). */
  flush(): Promise<void> {
    this.releaseWrites();
    return this.writes.then(() => undefined);
  }

  /** Logs the Task snapshot (the first event of a new task's stream). */
  publishSnapshot(): void {
    this.append({ payload: { $case: 'task', value: structuredClone(this.task) } }, false, true);
  }

  /**
   * Queues one event. The whole task (history included) is stored with pauses and ends;
   * the many events in between store only the new status, so an event's cost does not
   * grow with the length of the answer.
   */
  private append(response: Parameters<TaskStore['appendEvent']>[1], final: boolean, whole = final, key?: string): void {
    const op = this.eventOp(response, final, whole, key);
    this.enqueue(op, (seq) => this.committed(op, seq));
  }

  /**
   * A status-only event keeps a shallow copy of the status: encode() puts a new status object on
   * the task for every event, whose message is the event's own (its response carries the same
   * one, uncopied), and the only change made in place is setState's `state`. A deep copy of
   * every text delta's status was a measurable share of a long answer's CPU.
   */
  private eventOp(response: Parameters<TaskStore['appendEvent']>[1], final: boolean, whole = final, key?: string): EventOp {
    const op: EventOp = { kind: 'event', taskId: this.id, response, final };
    if (whole) op.task = structuredClone(this.task);
    else op.status = this.task.status && { ...this.task.status };
    if (key !== undefined) op.key = key;
    return op;
  }

  private committed({ response, final, key, task }: EventOp, seq: number): void {
    this.lastSeq = Math.max(this.lastSeq, seq);
    this.deps.hub.published(this.id, { seq, response, final, ...(key !== undefined ? { key } : {}) });
    if (!final) return;
    // Counted once committed (an end that was never stored did not happen); a final event stores the whole task.
    const state = stateName(task?.status?.state) as TaskStateName;
    if (TERMINAL.has(state)) this.metrics.taskEnded(state as TaskEndState);
    this.deps.onFinal?.(this);
  }

  /**
   * Encodes and logs an agent event, and moves the task's status with it. After the task
   * was canceled or failed nothing more is published: late results of aborted work are dropped.
   * A call's EXECUTING cards share a compaction key: each supersedes the previous one in the
   * stored log (the RFC replaces live_content on every update, so only the newest matters); its
   * output sent as artifact updates shares another (each holds the whole output so far).
   */
  publish(event: AgentEvent): void {
    if (this.halted) return;
    const encoded = this.encode(event);
    if (encoded === undefined) return; // the task's dialect shows nothing for it
    this.append(encoded.response, encoded.final, encoded.whole, encoded.key);
  }

  /**
   * The tokens the model calls used since the last pause or end was published (turn-loop.ts adds
   * each call's); the next pause or end carries them and starts the count again.
   */
  private usage?: TokenUsage;

  /** Adds one model call's token counts to the current run's. */
  addUsage(used: TokenUsage): void {
    const sum = (this.usage ??= { promptTokenCount: 0, candidatesTokenCount: 0, totalTokenCount: 0, cachedContentTokenCount: 0 });
    sum.promptTokenCount += used.promptTokenCount;
    sum.candidatesTokenCount += used.candidatesTokenCount;
    sum.totalTokenCount += used.totalTokenCount;
    sum.cachedContentTokenCount += used.cachedContentTokenCount;
  }

  /** The state the task's last status update showed on its dialect's wire (EncodeContext.shownState). */
  private shownState: TaskStateName;

  /**
   * Encodes an event and moves the task's status (and history) with it; undefined when the
   * task's dialect shows nothing for the event (nothing changes then).
   */
  private encode(
    event: AgentEvent,
  ): { response: Parameters<TaskStore['appendEvent']>[1]; final: boolean; whole: boolean; key?: string } | undefined {
    const ends = event.type === 'state' && PAUSE_OR_TERMINAL.has(event.state);
    // A pause or an end carries the tokens the model used since the last one.
    if (event.type === 'state' && ends && event.usage === undefined && this.usage !== undefined) event = { ...event, usage: this.usage };
    const ctx = { taskId: this.task.id, contextId: this.task.contextId, model: this.model, shownState: this.shownState };
    const encoded = this.encoder.encode(event, ctx);
    if (encoded === undefined) return undefined;
    if (ends) this.usage = undefined;
    // A running call's cards share a key: the store keeps only the latest (compaction). Output sent
    // as artifact updates (the legacy dialect) has its own, so the card that it runs stays.
    const running = event.type === 'tool-call' && event.call.status === 'EXECUTING' ? event.call.id : undefined;
    const key = running !== undefined ? `${encoded.$case === 'artifactUpdate' ? 'output' : 'executing'}:${running}` : undefined;
    if (encoded.$case === 'artifactUpdate') {
      // The agent's own artifacts are the task's (stored whole); legacy live output is a view of a card.
      if (event.type !== 'artifact') return { response: { payload: encoded }, final: false, whole: false, key };
      if (encoded.value.artifact) applyArtifact(this.task, encoded.value.artifact, encoded.value.append);
      return { response: { payload: encoded }, final: false, whole: true, key };
    }
    const update = encoded.value;
    if (update.status) this.shownState = stateName(update.status.state) as TaskStateName;
    // The task's own state is the dialect-free one (a dialect may show it otherwise on the wire),
    // and only a state event moves it.
    const state = event.type === 'state' ? STATE_TO_V1[event.state] : this.task.status?.state;
    this.task.status = update.status && state !== undefined ? { ...update.status, state } : update.status;
    const final = ends;
    this.recordHistory(event, update.status?.message, final);
    return { response: { payload: encoded }, final, whole: final, key };
  }

  /**
   * Publishes `events` (after every write queued so far) only while the store still has the
   * calls `callIds` awaiting, in one transaction (TaskStore.commitWhileAwaiting): a copy of the
   * task that another answer overtook cannot log them, nor one behind the store (its last seq
   * is checked: it then stops, overtaken), nor a call list that is empty (nothing waits). Returns
   * their seqs; undefined, and the copy unchanged, when refused; a store error is thrown, the copy
   * unchanged too.
   */
  async publishWhileAwaiting(callIds: string[], events: AgentEvent[], message?: Message): Promise<number[] | undefined> {
    await this.flush();
    if (this.halted || callIds.length === 0) return undefined;
    // The events are encoded on this copy and the copy is put back at once: another request may
    // share it (the winning answer) while the store decides; the outcome is applied only if won.
    const before = {
      status: this.task.status,
      history: this.task.history.length,
      text: this.textMessageId,
      shown: this.shownState,
      usage: this.usage && { ...this.usage },
    };
    this.task.status = structuredClone(before.status);
    if (message) this.addUserMessage(message);
    const ops = events.flatMap((event) => {
      const encoded = this.encode(event);
      return encoded === undefined ? [] : [this.eventOp(encoded.response, encoded.final, encoded.whole, encoded.key)];
    });
    const after = {
      status: this.task.status,
      history: this.task.history.splice(before.history),
      text: this.textMessageId,
      shown: this.shownState,
      usage: this.usage,
    };
    this.task.status = before.status;
    this.textMessageId = before.text;
    this.shownState = before.shown;
    this.usage = before.usage;
    // Expected at the copy's last seq: a pause stores the whole task, and a copy that missed events
    // (another instance's re-prompt) would store its history over theirs.
    const batch = {
      ...EMPTY_BATCH,
      events: ops.map(({ taskId, task, status, response, final, key }) => ({ taskId, task, status, response, final, key })),
      expect: [{ taskId: this.id, ...this.expectation() }],
    };
    // A copy behind the store, or of a task ended elsewhere meanwhile, logs nothing (StaleWriteError) and stops.
    const seqs = await this.deps.store.commitWhileAwaiting(batch, this.id, callIds).catch((err: unknown) => {
      if (!isStaleWrite(err)) throw err;
      this.overtakenBy(err);
      return undefined;
    });
    if (seqs === undefined) return undefined;
    // Committed before any claim of these calls: unless a winner moved this copy on meanwhile, it pauses here.
    if (this.task.status === before.status && PAUSED.has(this.state)) {
      this.task.status = after.status;
      this.task.history.push(...after.history);
      this.textMessageId = after.text;
      this.shownState = after.shown;
      this.usage = after.usage;
    }
    ops.forEach((op, i) => this.committed(op, seqs[i] ?? 0));
    return seqs;
  }

  /** Publishes the call's card and saves the call. */
  publishCall(call: TurnCall): void {
    // The row first: once a client sees a card, an answer to it must find the call.
    this.saveCall(call);
    this.publish({ type: 'tool-call', call: structuredClone(call.snapshot) });
  }

  /**
   * Stores `call`, set back to `awaiting` with its new card, through TaskStore.reopenCall (after
   * every write queued so far). False when the store does not have it ready under this
   * process's lease; nothing changed then.
   */
  async reopen(call: TurnCall, previousId: string): Promise<boolean> {
    await this.flush();
    if (this.halted) return false;
    if (!(await this.deps.store.reopenCall(this.toStored(call), this.deps.instanceId, previousId))) return false;
    this.askedInHistory.delete(call.snapshot.id); // its new card is kept in the history like a first one
    return true;
  }

  saveCall(call: TurnCall): void {
    this.enqueue({ kind: 'call', call: this.toStored(call) });
  }

  toStored(call: TurnCall): StoredCall {
    const running = call.phase === 'ready' || call.phase === 'executing';
    return {
      id: call.snapshot.id,
      taskId: this.id,
      turn: call.turn,
      position: call.position,
      toolName: call.snapshot.toolName,
      modelCallId: call.modelCallId,
      args: call.args,
      snapshot: structuredClone(call.snapshot),
      phase: call.phase,
      answer: call.answer,
      response: call.response,
      shownHash: call.shownHash,
      proposedAt: call.proposedAt,
      expiresAt: call.expiresAt,
      leaseOwner: running ? this.deps.instanceId : undefined,
      leaseUntil: running ? new Date(Date.now() + this.deps.leaseMs) : undefined,
      processGroup: call.phase === 'executing' ? call.processGroup : undefined,
    };
  }

  audit(entry: Omit<AuditEntry, 'taskId' | 'contextId'>): void {
    this.enqueue({ kind: 'audit', entry: { taskId: this.id, contextId: this.task.contextId, ...entry } });
  }

  /**
   * Closes the task's current turn in the store with the writes queued with it (WriteBatch.closeTurns):
   * refused with them — and this copy stops as behind the store — unless every call of the turn is
   * done there and the turn was not closed yet.
   */
  closeTurn(): void {
    this.enqueue({ kind: 'close-turn', taskId: this.id, turn: this.turnNo });
  }

  /** Adds to the context's model conversation, in memory and in the store. */
  appendHistory(...contents: ModelContent[]): void {
    this.context.history.push(...contents);
    this.enqueue({ kind: 'history', contextId: this.context.id, contents: structuredClone(contents) });
  }

  trust(toolName: string): void {
    this.context.trustedTools.add(toolName);
    this.enqueue({ kind: 'trust', contextId: this.context.id, toolName });
  }

  addUserMessage(message: Message): void {
    this.task.history.push(message);
  }

  setState(state: TaskStateName): void {
    if (this.task.status) this.task.status.state = STATE_TO_V1[state];
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
}
