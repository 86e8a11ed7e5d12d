/**
 * Group commit. Every write of every task goes through one queue; whatever accumulates
 * while a commit runs goes into the next one, as one transaction. A quiet server commits
 * each write at once (no added latency); a busy one shares each commit's cost among many
 * writes. Order is kept: batches commit one after another, in the order writes arrived.
 */
import type { StreamResponse, Task, TaskStatus } from '@a2a-js/sdk';
import type { ModelContent } from '../model/model-client.js';
import type {
  AuditEntry,
  ClaimCommitResult,
  ClaimResult,
  ClaimTerms,
  NewContext,
  NewTask,
  StoredCall,
  TaskStore,
  WriteBatch,
} from '../task-store.js';
import type { AgentLogger } from '../logger.js';
import { isStoreUnavailable, sqlStateOf } from '../../protocol/errors.js';
import { phaseEnd, phaseStart } from '../../protocol/probe.js';
import { NO_METRICS, type Metrics } from '../../lib/metrics.js';

export type WriteOp =
  | { kind: 'create'; context?: NewContext; task: NewTask }
  | { kind: 'event'; taskId: string; task?: Task; status?: TaskStatus; response: StreamResponse; final: boolean; key?: string }
  | { kind: 'call'; call: StoredCall }
  | { kind: 'history'; contextId: string; contents: ModelContent[] }
  | { kind: 'trust'; contextId: string; toolName: string; principal?: string }
  | { kind: 'audit'; entry: AuditEntry }
  | { kind: 'close-turn'; taskId: string; turn: number };

/**
 * The copy of a task whose writes these are (a LiveTask). Its events are version-checked
 * (WriteBatch.expect) against what it expects when its batch is built, and its `lastSeq`
 * advances as they commit. A batch the store refuses is retried one owner at a time, so an
 * owner's writes (a card, its call row, the audit entry, the task's status) land or fail together.
 */
export interface WriteOwner {
  readonly id: string;
  /** The last seq of the task this copy knows committed (advanced here, as its events commit). */
  lastSeq: number;
  /** What the store must still hold for this copy's events to land (see WriteBatch.expect). */
  expectation(): { lastSeq: number } | { state: string };
}

interface Queued {
  op: WriteOp;
  owner?: WriteOwner;
  /** Resolves with the event's seq (events) or 0, once committed; rejects if it could not be. */
  resolve: (seq: number) => void;
  reject: (err: unknown) => void;
  /** phaseStart() when queued (0 unless the bench probes): the wait until its commit starts. */
  queuedAt: number;
}

function toBatch(items: Queued[]): WriteBatch {
  const batch: WriteBatch = { events: [], calls: [], history: [], trust: [], audit: [] };
  const expected = new Set<WriteOwner>();
  const expect: NonNullable<WriteBatch['expect']> = [];
  for (const { op, owner } of items) {
    if (op.kind === 'event' && owner !== undefined && !expected.has(owner)) {
      expected.add(owner);
      expect.push({ taskId: owner.id, ...owner.expectation() });
    }
    if (op.kind === 'create') {
      batch.create ??= { contexts: [], tasks: [] };
      if (op.context !== undefined) batch.create.contexts.push(op.context);
      batch.create.tasks.push(op.task);
    } else if (op.kind === 'event')
      batch.events.push({ taskId: op.taskId, task: op.task, status: op.status, response: op.response, final: op.final, key: op.key });
    else if (op.kind === 'call') batch.calls.push(op.call);
    else if (op.kind === 'history') batch.history.push({ contextId: op.contextId, contents: op.contents });
    else if (op.kind === 'trust') batch.trust.push({ contextId: op.contextId, toolName: op.toolName, principal: op.principal });
    else if (op.kind === 'close-turn') (batch.closeTurns ??= []).push({ taskId: op.taskId, turn: op.turn });
    else batch.audit.push(op.entry);
  }
  return expect.length > 0 ? { ...batch, expect } : batch;
}

/** The items of a batch by owner, in first-seen order (items without one each alone). */
function byOwner(items: Queued[]): Queued[][] {
  const groups = new Map<WriteOwner | Queued, Queued[]>();
  for (const item of items) {
    const key = item.owner ?? item;
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return [...groups.values()];
}

/**
 * True when the database answered the batch with an error (a SQLSTATE outside class 08,
 * "connection exception"), so nothing of it was stored and its writes may be retried.
 * Anything else (socket closed, timeout, the session terminated by a shutdown or an
 * administrator: 57P01–57P03) leaves the outcome unknown.
 */
export function rejectedByDatabase(err: unknown): boolean {
  if (isStoreUnavailable(err)) return false;
  const code = sqlStateOf(err);
  return code !== undefined && !code.startsWith('08');
}

/**
 * Why a write was not stored: it was to commit with its task's answer claim (WriteQueue.claimWith),
 * and the claim was not won — or the store failed while deciding it (`cause`). The copy that
 * queued it was changed for an answer that does not hold: it stops and is read afresh.
 */
export class ClaimNotWon extends Error {
  constructor(
    readonly taskId: string,
    override readonly cause?: unknown,
  ) {
    super(
      cause === undefined
        ? `the answer's claim on task ${taskId} was not won: nothing of it was written`
        : `the answer's claim on task ${taskId} failed (${(cause as Error).message}): nothing of it was written here`,
    );
    this.name = 'ClaimNotWon';
  }
}

interface PendingClaim {
  terms: ClaimTerms;
  /** The owner's writes queued since claimWith: they go with the claim. */
  items: Queued[];
  resolve: (result: ClaimResult) => void;
  reject: (err: unknown) => void;
}

/** What keeps an owner's writes in order: its task (two copies of one task share it), or one key for writes without an owner. */
const keyOf = (item: Queued): string => (item.owner === undefined ? '' : item.owner.id);

export class WriteQueue {
  private pending: Queued[] = [];
  /** A start of commits is scheduled (a microtask away). */
  private scheduled = false;
  /** The commits in flight (they never reject: a failed commit rejects its writes' promises instead). */
  private readonly running = new Set<Promise<void>>();
  /** Tasks (keyOf) with writes in a commit in flight: their next writes wait for it. */
  private readonly busy = new Set<string>();
  /** Owners whose next commit is their answer's claim (claimWith), not sent yet. */
  private readonly claiming = new Map<WriteOwner, PendingClaim>();
  /** Those of them whose writes were released: their claims go out as soon as their task has no commit in flight. */
  private readonly claimsReady = new Set<WriteOwner>();
  /** The claims in flight, each with its owner's writes (never rejecting, like `running`). */
  private readonly claimsRunning = new Set<Promise<void>>();
  /** Owners whose claim was not won: nothing of theirs is written any more. */
  private readonly refused = new WeakMap<WriteOwner, ClaimNotWon>();
  /** Commits so far and writes they carried (for the benchmark and the log). */
  readonly stats = { commits: 0, writes: 0 };

  constructor(
    private readonly store: TaskStore,
    private readonly logger: AgentLogger,
    /** Each commit's latency and size (default: not counted). */
    private readonly metrics: Metrics = NO_METRICS,
    /**
     * How many commits may be in flight at once (default 1). Each takes only writes of tasks
     * that no commit in flight carries, so a task's writes still commit one batch after
     * another, in the order they were queued, and a refused batch never holds back another
     * task's; batches of different tasks run side by side (on PostgreSQL each on a connection
     * of its own: the database overlaps their work and their WAL flushes, and this process
     * builds the next batch while the last one runs).
     */
    private readonly lanes = 1,
  ) {}

  /**
   * Queues a write; resolves with its seq (events) or 0 once committed. An idle queue starts
   * its commit once the code that queued the write has run to its end (a microtask), not at
   * once: the writes one step queues together (a call's row and its card, an event and its
   * audit entry) share one commit. (A microtask, not a later turn of the event loop: what
   * goes into which commit depends only on the order of the code, never on I/O timing.)
   */
  push(op: WriteOp, owner?: WriteOwner): Promise<number> {
    const refused = owner && this.refused.get(owner);
    if (refused !== undefined) return Promise.reject(refused);
    return new Promise<number>((resolve, reject) => {
      const item: Queued = { op, ...(owner !== undefined ? { owner } : {}), resolve, reject, queuedAt: phaseStart() };
      const claim = owner && this.claiming.get(owner);
      if (claim === undefined) this.pending.push(item);
      else claim.items.push(item);
      this.kick();
    });
  }

  /** Owners whose writes wait in the queue until they are released (see hold). */
  private readonly held = new Set<WriteOwner>();

  /**
   * Keeps `owner`'s writes queued, not committed, until release(owner): the writes of one step
   * that awaits in between (a card judged on the disk, a tool's run judged again) then share
   * one commit. Nothing of them reaches a client before that commit; other owners' writes go on.
   */
  hold(owner: WriteOwner): void {
    this.held.add(owner);
  }

  /** Ends hold(owner): its queued writes go into the next commit. */
  release(owner: WriteOwner): void {
    if (!this.held.delete(owner)) return;
    if (this.claiming.has(owner)) this.claimsReady.add(owner);
    this.kick();
  }

  /**
   * Makes the answer's claim `terms` the next commit of `owner`'s writes: held from now on (see
   * hold), they go — once released — with the claim as ONE statement of their own
   * (TaskStore.claimAndCommit), not in a group commit, so nothing of what the copy did for the
   * answer lands unless the claim is won. Resolves with the claim's outcome once decided. When it
   * is not won, or the store fails while deciding it (then this rejects with the store's error),
   * those writes — and every later write of `owner` — are refused with ClaimNotWon.
   */
  claimWith(owner: WriteOwner, terms: ClaimTerms): Promise<ClaimResult> {
    this.hold(owner);
    return new Promise<ClaimResult>((resolve, reject) => this.claiming.set(owner, { terms, items: [], resolve, reject }));
  }

  /**
   * Withdraws `owner`'s claim before it was sent (what was to follow it failed): the claim
   * rejects with `err`, and the owner's writes are refused as for a claim not won.
   */
  dropClaim(owner: WriteOwner, err: unknown): void {
    const claim = this.claiming.get(owner);
    if (claim === undefined) return;
    this.claiming.delete(owner);
    this.claimsReady.delete(owner);
    this.held.delete(owner);
    this.refuse(owner, claim.items, new ClaimNotWon(owner.id, err));
    claim.reject(err);
  }

  /** Refuses `items` and whatever `owner` still has queued, now and from now on. */
  private refuse(owner: WriteOwner, items: Queued[], why: ClaimNotWon): void {
    this.refused.set(owner, why);
    const left = this.pending.filter((i) => i.owner === owner);
    this.pending = this.pending.filter((i) => i.owner !== owner);
    for (const item of [...items, ...left]) item.reject(why);
  }

  /** Schedules a start of commits unless one is scheduled or nothing can start. */
  private kick(): void {
    if (this.scheduled) return;
    if (this.claimsReady.size === 0 && (this.running.size >= this.lanes || this.pending.length === 0)) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.start();
    });
  }

  /** Starts the claims whose writes were released, then a commit of what is ready in each free lane. */
  private start(): void {
    this.startClaims();
    while (this.running.size < this.lanes) {
      const items = this.takeReady();
      if (items.length === 0) return;
      const keys = new Set(items.map(keyOf));
      for (const key of keys) this.busy.add(key);
      for (const item of items) phaseEnd('commit wait', item.queuedAt);
      const run: Promise<void> = this.commit(items).finally(() => {
        for (const key of keys) this.busy.delete(key);
        this.running.delete(run);
        this.kick();
      });
      this.running.add(run);
    }
  }

  /**
   * Sends each released claim with its owner's writes (claimWith), outside the lanes: a claim
   * goes out at once, beside the group commit in flight, as a claim always did.
   */
  private startClaims(): void {
    for (const owner of this.claimsReady) {
      const claim = this.claiming.get(owner);
      if (claim === undefined || this.busy.has(owner.id)) continue;
      this.claimsReady.delete(owner);
      this.claiming.delete(owner);
      const items = claim.items;
      for (const item of items) phaseEnd('commit wait', item.queuedAt);
      this.busy.add(owner.id);
      const run: Promise<void> = this.claimCommit(owner, claim, items).finally(() => {
        this.busy.delete(owner.id);
        this.claimsRunning.delete(run);
        this.kick();
      });
      this.claimsRunning.add(run);
    }
  }

  /**
   * The claim and `items` as one statement (TaskStore.claimAndCommit) — on a quiet queue. While a
   * group commit is in flight the server is busy, and the claim goes alone (claimCalls): once it
   * is won its writes join the next group commit, whose one function call they share with every
   * other task's (measured at 200 clients: carried by each claim, the same writes cost this
   * process 0.4–0.5 ms and the database 0.1 cores more per flow). Either way nothing of them
   * lands unless the claim is won.
   */
  private async claimCommit(owner: WriteOwner, claim: PendingClaim, items: Queued[]): Promise<void> {
    const started = performance.now();
    const alone = this.running.size > 0;
    const { taskId, claims, owner: claimer, leaseUntil, expectSeq } = claim.terms;
    let result: ClaimResult | ClaimCommitResult;
    try {
      result = alone
        ? await this.store.claimCalls(taskId, claims, claimer, leaseUntil, expectSeq)
        : await this.store.claimAndCommit(claim.terms, toBatch(items));
    } catch (err) {
      // Unknown whether it committed: the copy stops (a claim that did commit lapses with its lease: see the supervisor).
      this.refuse(owner, items, new ClaimNotWon(owner.id, err));
      claim.reject(err);
      return;
    }
    if (!result.ok) {
      this.refuse(owner, items, new ClaimNotWon(owner.id));
      claim.resolve(result);
      return;
    }
    if (!alone) {
      this.metrics.committed((performance.now() - started) / 1000, items.length);
      this.stats.commits += 1;
      this.stats.writes += items.length;
      this.settled(items, (result as Extract<ClaimCommitResult, { ok: true }>).seqs);
    } else {
      // What the store logged before the claim (another instance's reminder of this pause) is
      // behind the copy now: its writes, queued ahead of any it made since, follow the claim.
      owner.lastSeq = Math.max(owner.lastSeq, result.lastSeq);
      this.pending.unshift(...items);
    }
    claim.resolve({ ok: true, lastSeq: result.lastSeq });
  }

  /** Resolves committed writes with their seqs (`seqs`: the events', in order), advancing each owner's last seq. */
  private settled(items: Queued[], seqs: number[]): void {
    let e = 0;
    for (const item of items) {
      const seq = item.op.kind === 'event' ? (seqs[e++] ?? 0) : 0;
      // Before the next batch is built (it reads the owner's expectation).
      if (item.owner !== undefined && seq > item.owner.lastSeq) item.owner.lastSeq = seq;
      item.resolve(seq);
    }
  }

  /** Resolves once every write queued so far (and meanwhile) was committed or refused: shutdown. Ends every hold. */
  async flushed(): Promise<void> {
    this.held.clear();
    for (const owner of this.claiming.keys()) this.claimsReady.add(owner);
    this.kick();
    // A commit's end starts the next (kick → a microtask), so wait a microtask past each.
    while (this.running.size > 0 || this.claimsRunning.size > 0 || this.scheduled) {
      await Promise.all([...this.running, ...this.claimsRunning]);
      await Promise.resolve();
    }
  }

  /**
   * The queued writes that may commit now, taken out of the queue in order: not of a held
   * owner, nor of a task with a commit in flight (those wait, and so every later write of
   * theirs: a task's writes never overtake each other).
   */
  private takeReady(): Queued[] {
    if (this.held.size === 0 && this.busy.size === 0) {
      const all = this.pending;
      this.pending = [];
      return all;
    }
    const ready: Queued[] = [];
    const waiting: Queued[] = [];
    for (const item of this.pending) {
      if ((item.owner !== undefined && this.held.has(item.owner)) || this.busy.has(keyOf(item))) waiting.push(item);
      else ready.push(item);
    }
    this.pending = waiting;
    return ready;
  }

  private async commit(items: Queued[]): Promise<void> {
    try {
      const started = performance.now();
      const seqs = await this.store.commit(toBatch(items));
      this.metrics.committed((performance.now() - started) / 1000, items.length);
      this.stats.commits += 1;
      this.stats.writes += items.length;
      this.settled(items, seqs);
    } catch (err) {
      const groups = byOwner(items);
      if (groups.length === 1 || !rejectedByDatabase(err)) {
        // Alone, or the outcome is unknown (the connection failed, perhaps after COMMIT was
        // sent): retrying could store the same events twice under new seqs, so every write
        // of the batch fails and its task fails visibly.
        for (const item of items) item.reject(err);
        return;
      }
      // One bad write must not sink the others: commit each owner's writes alone to isolate it.
      this.logger.warn({ err, writes: items.length, owners: groups.length }, 'batch commit failed; retrying it one task at a time');
      for (const group of groups) await this.commit(group);
    }
  }
}
