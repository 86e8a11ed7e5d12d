/**
 * The durable-state port. The agent reads and writes tasks, their numbered event logs,
 * tool calls, conversations, trust grants and the audit log only through this interface;
 * src/store implements it on drizzle-orm (PGlite or PostgreSQL).
 *
 * Contract (every implementation MUST):
 * - Number each task's appended events 1, 2, 3… with no gap and no duplicate, even when
 *   several processes append to the same task at once (the database decides the order).
 * - Compact: storing an event with a `key` deletes the task's earlier events with the same
 *   key (in the same transaction; a keyed event superseded within one batch is never stored).
 *   So the stored log may have gaps where superseded events were, and a reader resuming
 *   after any seq (stored or compacted) gets every later event still stored, in order.
 *   Only events that a later one wholly replaces are keyed (a call's EXECUTING cards).
 * - Save the task snapshot in the same transaction as the event that changed it, so a
 *   reader never sees an event whose task state is not stored yet (and vice versa).
 * - Decide call claims in the database: `claimCalls` is all-or-nothing, and of two
 *   concurrent claims of the same awaiting call exactly one succeeds.
 * - Notify subscribers of every appended event, from any process on the same database.
 */
import type { StreamResponse, Task, TaskStatus } from '@a2a-js/sdk';
import type { ModelContent, ModelPart } from './model/model-client.js';
import type { ToolCallSnapshot } from './wire/agent-events.js';
import type { WireDialect } from './wire/wire-encoder.js';

/** `ready`: to run without asking; `awaiting`: waits for a person. */
export type { CallPhase } from '../protocol/task-states.js';
import type { CallPhase } from '../protocol/task-states.js';

export interface StoredEvent {
  seq: number;
  response: StreamResponse;
  /** True for the event that ends a stream: a pause (`input-required`) or a terminal state. */
  final: boolean;
  /** Compaction key (see WriteBatch): a later event with the same key supersedes this one. */
  key?: string;
}

export interface StoredTask {
  task: Task;
  /** The principal that started the task (undefined when authentication is off). */
  principal?: string;
  lastSeq: number;
  /** The wire dialect the task speaks for its whole life (its events are logged in it). */
  dialect: WireDialect;
}

/** See TaskStore.loadVersion. */
export interface TaskVersion {
  lastSeq: number;
  /** Opaque; equal while the context's history and settings did not change. */
  context: string;
}

/** How a new task is stored. */
export interface NewTaskOptions {
  /**
   * Leased to `lease.owner` in the same statement: a sweep of any process never sees it
   * unleased (and so never takes it for a dead process's).
   */
  lease?: { owner: string; until: Date };
  /** Default 'rfc'. */
  dialect?: WireDialect;
}

/** One tool call, as proposed to the user and as it moved on. */
export interface StoredCall {
  /** The tool_call_id shown to clients. */
  id: string;
  taskId: string;
  /** The model turn within the task the call belongs to (0, 1, 2…). */
  turn: number;
  /** Order of the call within its turn (the model's order). */
  position: number;
  toolName: string;
  /** The model's own id for the call, echoed in its function response. */
  modelCallId?: string;
  /** Validated arguments; absent when validation failed or the tool is unknown. */
  args?: Record<string, unknown>;
  /** The card as last shown (ToolCall fields, dialect-free). */
  snapshot: ToolCallSnapshot;
  phase: CallPhase;
  /** The option the user chose. */
  answer?: string;
  /** What the model is told once the call is done. */
  response?: ModelPart;
  /** sha256 of the confirmation card as shown (what an approval approves). */
  shownHash?: string;
  proposedAt: Date;
  /** When an unanswered call is cancelled (APPROVAL_TIMEOUT); absent = never. */
  expiresAt?: Date;
  /** The instance running the call and until when it promised to renew. */
  leaseOwner?: string;
  leaseUntil?: Date;
  /**
   * The process group the running call started (a shell command) and a stamp of its leader:
   * what a recovery kills when the call's process died and left the group running.
   */
  processGroup?: { pgid: number; stamp: string };
}

export interface StoredContext {
  id: string;
  /** Absolute real path of the workspace. */
  workspace: string;
  /** The model conversation, oldest first. */
  history: ModelContent[];
  /** Tools trusted by `proceed_always` for the rest of the context. */
  trustedTools: string[];
  settings: ContextSettings;
  /** The principal that started the conversation (undefined when authentication was off). */
  principal?: string;
}

/** How a context's tool calls are approved, and its own MCP servers (AgentSettings, extension fields). */
export interface ContextSettings {
  approvalMode?: 'DEFAULT' | 'AUTO_EDIT' | 'YOLO';
  allowedTools?: string[];
  /** McpServerConfig JSON by server name, as the client sent it (checked by the MCP layer). */
  mcpServers?: Record<string, Record<string, unknown>>;
}

export type AuditDecision =
  | 'proposed'
  | 'authorized'
  | 'declined'
  | 'denied_identity'
  | 'denied_unauthorized'
  | 'executed'
  | 'succeeded'
  | 'failed'
  | 'cancelled'
  | 'expired'
  | 'interrupted'
  /** A call that was ready went back to waiting with a new card (re-judged before it ran, or its file changed). */
  | 're-proposed';

export interface AuditEntry {
  taskId: string;
  contextId: string;
  toolCallId?: string;
  decision: AuditDecision;
  principal?: string;
  optionId?: string;
  shownHash?: string;
  detail?: Record<string, unknown>;
}

export interface AuditRecord extends AuditEntry {
  id: number;
  at: Date;
}

export interface CallClaim {
  id: string;
  answer: string;
  /** Replacement arguments (modify_with_editor) and the card that goes with them. */
  args?: Record<string, unknown>;
  snapshot?: ToolCallSnapshot;
  /**
   * The hash of the card the answer approves (StoredCall.shownHash of the copy that read it):
   * when given, the claim fails unless the stored card is that one — a call re-proposed
   * meanwhile (reopenCall) is not approved by an answer to its earlier card.
   */
  shownHash?: string;
}

/** One file as a checkpoint keeps it. */
export interface CheckpointFile {
  /** Relative to the checkpoint's workspace, `/`-separated, never `..` or absolute. */
  path: string;
  /** The file's bytes (base64) before the call ran; absent: the file did not exist. */
  content?: string;
}

/**
 * The files an approved file-modifying call was about to touch, as they were, taken right before
 * it ran (CHECKPOINTING). `restore` puts exactly these files back, and nothing else.
 */
export interface Checkpoint {
  /** The tool_call_id of the call (the id its card showed): one checkpoint per call. */
  callId: string;
  /** gemini-cli's name, `<ISO time>-<file>-<tool>` (the time with `-` and `_` for `:` and `.`). */
  name: string;
  taskId: string;
  contextId: string;
  /** The real path of the workspace the files are relative to. */
  workspace: string;
  /** The principal of the task (undefined without authentication): only it may list or restore it. */
  principal?: string;
  toolName: string;
  /** The conversation position: the length of the context's history when the call ran. */
  historyLength: number;
  /** The task's last user message when the call ran (what gemini-cli's `restore list` shows). */
  messageId?: string;
  files: CheckpointFile[];
  /** On the checkpoint a restore took of what it overwrote: the checkpoint it put back. */
  restoreOf?: string;
  createdAt: Date;
}

/**
 * `lastSeq`: the task's last logged event once the claim is decided. Every event before it was
 * committed before the claim (a re-prompt of the claimed calls can only come before, see
 * commitWhileAwaiting), so a stream of what the winning answer does starts after it.
 */
/**
 * A claim's outcome. Lost: the calls that were not awaiting (another answer won), or — when the
 * claimer said which last seq it knows and the task is at another, or another owner runs calls of
 * the task under a live lease (its writes will move the task on) — `behind`, the stored last seq:
 * the claimer's copy is behind the store and nothing was claimed.
 */
export type ClaimResult = { ok: true; lastSeq: number } | { ok: false; notAwaiting: string[]; behind?: number };

/** An answer's claim: what TaskStore.claimCalls takes, as one value (TaskStore.claimAndCommit). */
export interface ClaimTerms {
  taskId: string;
  claims: CallClaim[];
  owner: string;
  leaseUntil: Date;
  /** The last seq the claimer's copy knows; the claim is refused (`behind`) when the task is at another. */
  expectSeq?: number;
}

/** claimAndCommit's outcome: the claim's, and when it was won the seqs of the batch's events, in batch order. */
export type ClaimCommitResult = { ok: true; lastSeq: number; seqs: number[] } | Extract<ClaimResult, { ok: false }>;

/**
 * Writes that commit together (group commit): many tasks' events, calls, history, grants
 * and audit entries in one transaction, so the cost of a commit is shared under load.
 */
/** A context to create (as TaskStore.createContext: one that exists is left as it is). */
export interface NewContext {
  id: string;
  workspace: string;
  settings?: ContextSettings;
  principal?: string;
}

/** A task to create (as TaskStore.createTask: its id must be new, its context stored or created by the same batch). */
export interface NewTask {
  task: Task;
  principal?: string;
  opts?: NewTaskOptions;
}

export interface WriteBatch {
  /**
   * Created before anything else of the batch (a task's start: its context, the task, its first
   * events and history in one commit); refused with the rest of the batch.
   */
  create?: { contexts: NewContext[]; tasks: NewTask[] };
  /**
   * Events to append, in order; a task may appear several times. Each carries either the
   * whole task snapshot after it (`task`), or — for the many small events of a running task,
   * so their cost does not grow with the task's history — only the task's new `status`
   * (the stored snapshot keeps its history and takes this status).
   * An event with a `key` (never a final one) supersedes the task's earlier events with the
   * same key: they leave the stored log (see the contract above).
   */
  events: Array<{ taskId: string; task?: Task; status?: TaskStatus; response: StreamResponse; final: boolean; key?: string }>;
  /**
   * Checked writes: for each task named here, what its writer's copy knows — the task's last seq
   * (the copy is current), or only its state (a cancel: valid whatever else was appended, as
   * long as the task is still in that state). When the batch appends events to such a task and
   * the store holds another last seq (or state) — another process moved the task on meanwhile —
   * the whole batch is refused with a StaleWriteError and nothing is written. Whether named or
   * not, a task stored failed, canceled or rejected (FINISHED) takes no event: refused the same way.
   */
  expect?: Array<{ taskId: string; lastSeq: number } | { taskId: string; state: string }>;
  /** Calls to insert or replace (by id, under saveCalls' forward-only rule); a later entry for the same id wins. */
  calls: StoredCall[];
  /** Model conversation to append, in order. */
  history: Array<{ contextId: string; contents: ModelContent[] }>;
  trust: Array<{ contextId: string; toolName: string; principal?: string }>;
  audit: AuditEntry[];
  /**
   * Turns to close (as closeTurn), after the batch's calls are saved: each must have every call
   * done and not be closed already, or the whole batch is refused (StaleWriteError naming the turn).
   */
  closeTurns?: Array<{ taskId: string; turn: number }>;
}

/**
 * A notification of appended events: the task, its newest seq, whether any of them was final,
 * and `local`: true when the commit was made through this same store object (this process),
 * which then knows the events already. An implementation that cannot tell leaves it undefined.
 */
export type EventListener = (taskId: string, seq: number, final: boolean, local?: boolean) => void;

/** See TaskStore.claimWorkspace. `conflict`: another principal's claimed directory that overlaps the one asked for. */
export type WorkspaceClaim = { ok: true } | { ok: false; conflict: string };

export interface TaskStore {
  createContext(ctx: NewContext): Promise<void>;
  /** Replaces a context's settings (a later message changed its approval mode or allowed tools). */
  updateContextSettings(id: string, settings: ContextSettings): Promise<void>;
  loadContext(id: string): Promise<StoredContext | undefined>;
  /** Appends to the context's model conversation (in order). */
  appendHistory(contextId: string, contents: ModelContent[]): Promise<void>;
  addTrust(contextId: string, toolName: string, principal?: string): Promise<void>;

  /** Stores a new task, with its wire dialect and optionally leased (see NewTaskOptions). */
  createTask(task: Task, principal?: string, opts?: NewTaskOptions): Promise<void>;
  loadTask(id: string): Promise<StoredTask | undefined>;
  /**
   * What a copy of the task kept in memory must match to be current: the task's last seq and a
   * version of its context that changes with every change of the context's history or settings.
   * Undefined when no such task.
   */
  loadVersion(id: string): Promise<TaskVersion | undefined>;
  /** `principal` limits the list to that principal's tasks; `states` to tasks in any of these states (with `state`: in both). */
  listTasks(q: {
    contextId?: string;
    state?: string;
    states?: readonly string[];
    principal?: string;
    limit: number;
    offset: number;
  }): Promise<{ tasks: Task[]; total: number }>;

  /**
   * Appends one event to the task's log and saves `task` (its new snapshot) in the same
   * transaction. Returns the event's sequence number. Notifies every subscriber.
   */
  appendEvent(task: Task, response: StreamResponse, final: boolean): Promise<number>;
  /** Stored events with seq > afterSeq, in order (compacted seqs are missing); at most `limit` of them when given. */
  eventsAfter(taskId: string, afterSeq: number, limit?: number): Promise<StoredEvent[]>;
  /**
   * Calls `listener` after events are appended by any process (at least once per task per
   * commit, with the newest seq). Resolves once listening.
   */
  subscribe(listener: EventListener): Promise<() => Promise<void>>;
  /**
   * Commits a batch in ONE transaction and returns the sequence numbers given to
   * `batch.events`, in order. Same guarantees as appendEvent for each event; the task
   * snapshot stored is the one of the task's last event in the batch. Notifies subscribers.
   */
  commit(batch: WriteBatch): Promise<number[]>;
  /**
   * Commits `batch` like `commit`, but only while every call of `callIds` (of task `taskId`) is
   * still awaiting in the store, decided in the same transaction: a concurrent claim of one of
   * them either commits first (then nothing is written and the result is undefined) or waits
   * until this batch is committed. A re-prompt re-sends cards as waiting through it, so a stale
   * copy of a task can never log a pause over a call that another answer claimed.
   */
  commitWhileAwaiting(batch: WriteBatch, taskId: string, callIds: string[]): Promise<number[] | undefined>;

  /**
   * Inserts calls, or replaces them by id — but a call's phase only moves forward
   * (awaiting → ready → executing → done), only `claimCalls` moves it from awaiting to ready
   * and writes its answer, and only `reopenCall` moves it from ready back to awaiting: a save that would move a stored call backwards, or approve it, changes
   * nothing, and a save never changes a stored answer. So a stale copy of a task (another process
   * claimed or ran the call meanwhile) can never reopen or re-run a call.
   */
  saveCalls(calls: StoredCall[]): Promise<void>;
  /** The calls of the task's latest turn, in position order. */
  loadTurn(taskId: string): Promise<StoredCall[]>;
  loadCall(id: string): Promise<StoredCall | undefined>;
  /**
   * Moves every claimed call from `awaiting` to `ready` with its answer, under a lease
   * held by `owner` until `leaseUntil` — all or none — and leases the task to `owner` too, in
   * one statement committed synchronously. A call that is not awaiting (another answer won, or
   * it never waited) is reported and nothing changes.
   */
  claimCalls(taskId: string, claims: CallClaim[], owner: string, leaseUntil: Date, expectSeq?: number): Promise<ClaimResult>;
  /**
   * claimCalls, and only when the claim is won commit(batch), as ONE statement and one
   * transaction committed synchronously: what the answering copy writes once its answer holds
   * (the user's message, the task working again, the answers' audit and grants, the first
   * approved call's EXECUTING card) lands with the claim or not at all. The claim holds the task,
   * so the batch's events are expected at the last seq the claim found, not at the one its
   * builder expected. A claim not won writes nothing and answers as claimCalls does; a batch the
   * store refuses (the task ended meanwhile) takes the claim back with it and answers `behind`.
   */
  claimAndCommit(terms: ClaimTerms, batch: WriteBatch): Promise<ClaimCommitResult>;
  /**
   * The one move back: a call stored `ready` and leased by `owner` (the process about to run it)
   * goes back to `awaiting` with `call`'s new card (snapshot, args, shownHash, expiresAt) and
   * its new id (`call.id`; the stored row was `previousId`): its answer and lease are cleared, so
   * only a new answer naming the new card's id can approve it — a repeated answer to the old card
   * (a client's retry) finds no call. Used when a call is re-judged before it runs and now needs a person, or when
   * the file of an approved edit changed after its card was shown. False, and nothing changes,
   * when the call is not stored ready under `owner`'s lease.
   */
  reopenCall(call: StoredCall, owner: string, previousId?: string): Promise<boolean>;
  /**
   * Marks the task's model turn `turn` as closed — true exactly once per (task, turn), so
   * only one process continues the model after the last call of a turn settles.
   */
  closeTurn(taskId: string, turn: number): Promise<boolean>;
  /**
   * loadTurn and, when none of those calls is still to run or to answer (every one done),
   * closeTurn(taskId, turn) — in one statement. `closed` is closeTurn's answer (false when the
   * turn stays open): true exactly once per (task, turn). How a task moves on after a call.
   */
  settleTurn(taskId: string, turn: number): Promise<{ calls: StoredCall[]; closed: boolean }>;
  /** Marks these tasks as worked on by `owner` until `leaseUntil` (the model loop has no call lease). */
  leaseTasks(taskIds: string[], owner: string, leaseUntil: Date): Promise<void>;
  /**
   * Tasks left `working`/`submitted` whose task lease lapsed before `now` (or that never had
   * one) and none of whose calls holds a live lease: their process died mid-step.
   */
  findStaleTasks(now: Date): Promise<string[]>;
  /**
   * Extends the leases `owner` holds on the executing or ready calls of `taskIds` (the tasks
   * the process is running something for). A call stored under `owner`'s lease that the process
   * does not run — a claim committed while its reply was lost, so nothing here runs it — is not
   * renewed: its lease lapses and the sweep ends it as interrupted, instead of it waiting forever.
   */
  renewLeases(owner: string, leaseUntil: Date, taskIds: readonly string[]): Promise<void>;
  /**
   * Shutdown: every lease `owner` holds, on tasks and calls, lapses now (set to the epoch), so
   * any other process may take over at once — its next sweep ends what was left running,
   * instead of waiting for the leases to run out. The owner stays recorded (for the report).
   */
  releaseLeases(owner: string): Promise<void>;
  /** Calls left executing/ready whose lease lapsed before `now` (their process died). */
  findInterrupted(now: Date): Promise<StoredCall[]>;
  /**
   * Waiting calls that expire before `before` and got no reminder yet; marks them reminded at
   * `now`, so of several processes only one reminds.
   */
  claimReminders(before: Date, now: Date): Promise<StoredCall[]>;
  /**
   * Undoes `claimReminders(…, claimedAt)` for the calls of `callIds` that still await and were
   * marked then: their reminder was not given (the task was busy here, or its copy behind), so a
   * later sweep claims them again.
   */
  unclaimReminders(callIds: string[], claimedAt: Date): Promise<void>;
  /** Awaiting calls whose expiresAt is before `now`. */
  findExpired(now: Date): Promise<StoredCall[]>;

  /**
   * Claims directory `dir` (an absolute real path) for `principal`, unless another principal
   * claimed it, a directory above it or one inside it: then nothing changes and the result names
   * that claim. Claiming what the principal holds already succeeds. Of two concurrent claims of
   * overlapping directories by different principals, from any processes, exactly one succeeds.
   */
  claimWorkspace(dir: string, principal: string): Promise<WorkspaceClaim>;

  /**
   * Stores a checkpoint. A checkpoint of that call id stored already stays as it is (the first
   * one holds what the files were before the call ran).
   */
  saveCheckpoint(checkpoint: Checkpoint): Promise<void>;
  /**
   * The checkpoint of this call id, else the newest of this name — with `of`, the newest of this
   * name among that principal's (`undefined`: those made without authentication), so another
   * principal's checkpoint of the same name never hides the caller's own; undefined when none.
   */
  loadCheckpoint(callIdOrName: string, of?: { principal: string | undefined }): Promise<Checkpoint | undefined>;
  /**
   * Newest first (ties by call id), at most `limit`; the filters combine. Each file by its path
   * only, never its content (up to 2 MiB each): a list only names checkpoints.
   */
  listCheckpoints(q: { workspace?: string; principal?: string; limit: number }): Promise<Checkpoint[]>;

  audit(entry: AuditEntry): Promise<void>;
  listAudit(q: { taskId?: string; contextId?: string }): Promise<AuditRecord[]>;

  /** One round trip to the database (readiness): resolves when it answers, rejects when it cannot be reached or is closed. */
  ping(): Promise<void>;

  close(): Promise<void>;
}
