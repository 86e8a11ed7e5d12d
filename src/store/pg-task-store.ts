/**
 * TaskStore on PGlite or PostgreSQL, the same code for both: the hot path's statements (the
 * group commit, the claim, the log read) as fixed texts straight on the driver
 * (Database.query), everything else through drizzle-orm. Every rule of the
 * port contract is decided by the database: row locks order appenders and claimers, the
 * snapshot and its event share a transaction, and pg_notify (delivered on commit) tells
 * every process about new events. Every write of events, calls, history, grants and audit
 * goes through the group commit (commit.ts); the single-item methods are one-item batches.
 */
import { randomBytes } from 'node:crypto';
import type { StreamResponse, Task } from '@a2a-js/sdk';
import { and, asc, count, desc, eq, sql, type SQL } from 'drizzle-orm';
import type { ModelContent } from '../agent/model/model-client.js';
import type {
  AuditEntry,
  AuditRecord,
  CallClaim,
  Checkpoint,
  ClaimCommitResult,
  ClaimResult,
  ClaimTerms,
  EventListener,
  NewContext,
  NewTaskOptions,
  StoredCall,
  ContextSettings,
  StoredContext,
  StoredEvent,
  StoredTask,
  TaskStore,
  TaskVersion,
  WorkspaceClaim,
  WriteBatch,
} from '../agent/task-store.js';
import { claimWorkspace } from './workspace-claims.js';
import { anyOf, rowsOf, type Database, type StoreDb } from './db.js';
import * as calls_ from './call-queries.js';
import * as checkpoints_ from './checkpoint-queries.js';
import * as push_ from './push-queries.js';
import type { PushConfigInput, PushConfigRecord, PushStore } from '../push/push-store.js';
import type { StoredSigningKey } from '../push/push-signer.js';
import { parseNotification } from './batch-plan.js';
import { commitBatch, type NotifyTo } from './commit.js';
import { stateName } from '../protocol/a2a.js';
import { auditFromRow, eventFromRow, taskFromJson, taskToJson } from './mappers.js';
import { auditLog, contextHistory, contexts, tasks, trustGrants } from './schema.js';

/** A jsonb value of a raw query: parsed by both drivers, but kept as text when a driver did not. */
function jsonValue(value: unknown): unknown {
  return typeof value === 'string' ? (JSON.parse(value) as unknown) : value;
}

/**
 * The log read (eventsAfter) as a fixed text, run by Database.query (prepared, no ORM): every
 * replay, resubscription and follower of another process's task reads it. `limit null` is no
 * limit, so one text serves both.
 */
const EVENTS_AFTER = `select e.seq - e.span + x.i::int as seq, x.p as payload, e.final
  from events e,
    jsonb_array_elements(case when e.span = 1 then jsonb_build_array(e.payload) else e.payload end) with ordinality as x(p, i)
  where e.task_id = $1::text and e.seq > $2::int and e.seq - e.span + x.i::int > $2::int
  order by e.seq, x.i limit $3::int`;

/** A batch with nothing in it, to spread the one-kind writes over. */
const NOTHING: WriteBatch = Object.freeze({ events: [], calls: [], history: [], trust: [], audit: [] });

/** The durable TaskStore. Owns `database`: close() closes it. */
export class PgTaskStore implements TaskStore, PushStore {
  private readonly db: StoreDb;
  private readonly listeners = new Set<EventListener>();
  private listening?: Promise<() => Promise<void>>;
  private closed?: Promise<void>;
  /** This store's commits notify with its own origin token: their listeners hear them as local. */
  private readonly notify: NotifyTo;

  constructor(private readonly database: Database) {
    this.db = database.db;
    this.notify = { channel: database.notifyChannel, origin: randomBytes(6).toString('hex') };
  }

  /** Idempotent: a context that exists keeps its first workspace (two processes may race here). */
  async createContext(ctx: NewContext): Promise<void> {
    await this.db
      .insert(contexts)
      .values({ id: ctx.id, workspace: ctx.workspace, settings: ctx.settings ?? {}, principal: ctx.principal ?? null })
      .onConflictDoNothing();
  }

  async updateContextSettings(id: string, settings: ContextSettings): Promise<void> {
    await this.db.update(contexts).set({ settings, updatedAt: new Date() }).where(eq(contexts.id, id));
  }

  /** One statement: the context row with its history and grants aggregated in order. */
  async loadContext(id: string): Promise<StoredContext | undefined> {
    const [row] = rowsOf<{ id: string; workspace: string; settings: unknown; principal: string | null; history: unknown; trust: unknown }>(
      await this.db.execute(sql`select c.id, c.workspace, c.settings, c.principal,
          coalesce((select jsonb_agg(h.content order by h.idx) from ${contextHistory} h where h.context_id = c.id), '[]'::jsonb) as history,
          coalesce((select jsonb_agg(g.tool_name order by g.created_at, g.tool_name) from ${trustGrants} g where g.context_id = c.id), '[]'::jsonb) as trust
        from ${contexts} c where c.id = ${id}`),
    );
    if (!row) return undefined;
    return {
      id: row.id,
      workspace: row.workspace,
      history: jsonValue(row.history) as ModelContent[],
      trustedTools: jsonValue(row.trust) as string[],
      settings: jsonValue(row.settings) as ContextSettings,
      ...(row.principal !== null ? { principal: row.principal } : {}),
    };
  }

  /** Throws when the context does not exist. */
  async appendHistory(contextId: string, contents: ModelContent[]): Promise<void> {
    await this.commit({ ...NOTHING, history: [{ contextId, contents }] });
  }

  /** The first grant of a tool in a context stays (its principal too). */
  async addTrust(contextId: string, toolName: string, principal?: string): Promise<void> {
    await this.commit({ ...NOTHING, trust: [{ contextId, toolName, principal }] });
  }

  /** The task's context must exist (createContext first); a duplicate id throws. */
  async createTask(task: Task, principal?: string, opts: NewTaskOptions = {}): Promise<void> {
    const { lease, dialect = 'rfc' } = opts;
    await this.db.insert(tasks).values({
      id: task.id,
      contextId: task.contextId,
      state: stateName(task.status?.state),
      principal: principal ?? null,
      task: taskToJson(task),
      dialect,
      ...(lease ? { leaseOwner: lease.owner, leaseUntil: lease.until } : {}),
    });
  }

  async loadTask(id: string): Promise<StoredTask | undefined> {
    const [row] = await this.db.select().from(tasks).where(eq(tasks.id, id));
    if (!row) return undefined;
    const stored: StoredTask = { task: taskFromJson(row.task), lastSeq: row.lastSeq, dialect: row.dialect === 'legacy' ? 'legacy' : 'rfc' };
    if (row.principal !== null) stored.principal = row.principal;
    return stored;
  }

  /**
   * One statement: the task's last seq and its context row's xmin (the transaction that last
   * wrote the row: every history append and settings change updates it).
   */
  async loadVersion(id: string): Promise<TaskVersion | undefined> {
    const [row] = rowsOf<{ last_seq: number; context: string }>(
      await this.db.execute(
        sql`select t.last_seq, c.xmin::text as context from ${tasks} t join ${contexts} c on c.id = t.context_id where t.id = ${id}`,
      ),
    );
    return row && { lastSeq: Number(row.last_seq), context: row.context };
  }

  /**
   * Most recently updated first. `state` (and each of `states`) is an A2A name ('working') or
   * 'TASK_STATE_WORKING'. One statement (the total is a window count over the same rows),
   * a second only for a page past the end.
   */
  async listTasks(q: {
    contextId?: string;
    state?: string;
    states?: readonly string[];
    principal?: string;
    limit: number;
    offset: number;
  }): Promise<{ tasks: Task[]; total: number }> {
    const filters: SQL[] = [];
    if (q.principal !== undefined) filters.push(eq(tasks.principal, q.principal));
    if (q.contextId !== undefined) filters.push(eq(tasks.contextId, q.contextId));
    if (q.state !== undefined) filters.push(eq(tasks.state, stateName(q.state)));
    if (q.states !== undefined) filters.push(sql`${tasks.state} = ${anyOf(q.states.map((s) => stateName(s)))}`);
    const where = filters.length ? and(...filters) : undefined;
    const rows = await this.db
      .select({ task: tasks.task, total: sql<number>`(count(*) over ())::int` })
      .from(tasks)
      .where(where)
      .orderBy(desc(tasks.updatedAt), asc(tasks.id))
      .limit(q.limit)
      .offset(q.offset);
    let total = rows[0]?.total;
    if (total === undefined) {
      const [counted] = q.offset > 0 ? await this.db.select({ total: count() }).from(tasks).where(where) : [];
      total = counted?.total ?? 0;
    }
    return { tasks: rows.map((r) => taskFromJson(r.task)), total: Number(total) };
  }

  /** Throws when the task was never created. One statement: as cheap as a commit gets. */
  async appendEvent(task: Task, response: StreamResponse, final: boolean): Promise<number> {
    const [seq] = await this.commit({ ...NOTHING, events: [{ taskId: task.id, task, response, final }] });
    if (seq === undefined) throw new Error(`appendEvent: the commit of task ${task.id} returned no seq`);
    return seq;
  }

  /**
   * Group commit; see commit.ts for the statements and the lock order. Throws (and writes
   * nothing) when any task or context of the batch does not exist.
   */
  commit(batch: WriteBatch): Promise<number[]> {
    return commitBatch(this.database, this.notify, batch);
  }

  commitWhileAwaiting(batch: WriteBatch, taskId: string, callIds: string[]): Promise<number[] | undefined> {
    return calls_.commitWhileAwaiting(this.database, this.notify, batch, taskId, callIds);
  }

  /**
   * A text run (a row of span > 1) is expanded by the database, and only the events after
   * `afterSeq` — at most `limit` of them — cross the wire and get parsed: a page read in the
   * middle of a long answer costs its page, not the runs around it (rows are found by their
   * last seq, in index order; a run's events follow in their array's order).
   */
  async eventsAfter(taskId: string, afterSeq: number, limit?: number): Promise<StoredEvent[]> {
    const page = limit === undefined ? null : Math.max(0, Math.floor(limit));
    const rows = await this.database.query<{ seq: number; payload: unknown; final: boolean }>(EVENTS_AFTER, [taskId, afterSeq, page]);
    return rows.map(eventFromRow);
  }

  /**
   * Listeners hear once per task per commit: the task, its newest seq, whether any of its
   * events in that commit was final, and whether this store made the commit (payload
   * `<taskId>:<seq>:<0|1>:<origin>`, parseNotification).
   * One LISTEN per store, opened on first use and kept until close(); listeners share it.
   * With postgres.js, notifications sent while its listen connection reconnects are lost:
   * readers should re-read eventsAfter(lastSeen) when they wake, not trust the payload alone.
   */
  async subscribe(listener: EventListener): Promise<() => Promise<void>> {
    if (this.closed) throw new Error('subscribe: store is closed');
    this.listeners.add(listener);
    try {
      await (this.listening ??= this.database.listen(this.database.notifyChannel, (p) => this.dispatch(p)));
    } catch (e) {
      this.listeners.delete(listener);
      this.listening = undefined;
      throw e;
    }
    return async () => {
      this.listeners.delete(listener);
    };
  }

  private dispatch(payload: string): void {
    const note = parseNotification(payload);
    if (!note) return;
    for (const l of [...this.listeners]) {
      try {
        l(note.taskId, note.seq, note.final, note.origin === this.notify.origin);
      } catch {
        // One listener's bug must not starve the others of notifications.
      }
    }
  }

  /** A later entry for the same id wins. */
  async saveCalls(calls: StoredCall[]): Promise<void> {
    await this.commit({ ...NOTHING, calls });
  }

  loadTurn(taskId: string): Promise<StoredCall[]> {
    return calls_.loadTurn(this.db, taskId);
  }

  loadCall(id: string): Promise<StoredCall | undefined> {
    return calls_.loadCall(this.db, id);
  }

  claimCalls(taskId: string, claims: CallClaim[], owner: string, leaseUntil: Date, expectSeq?: number): Promise<ClaimResult> {
    return calls_.claimCalls(this.database, taskId, claims, owner, leaseUntil, expectSeq);
  }

  claimAndCommit(terms: ClaimTerms, batch: WriteBatch): Promise<ClaimCommitResult> {
    return calls_.claimAndCommit(this.database, this.notify, terms, batch);
  }

  reopenCall(call: StoredCall, owner: string, previousId?: string): Promise<boolean> {
    return calls_.reopenCall(this.db, call, owner, previousId);
  }

  settleTurn(taskId: string, turn: number): Promise<{ calls: StoredCall[]; closed: boolean }> {
    return calls_.settleTurn(this.db, taskId, turn);
  }

  closeTurn(taskId: string, turn: number): Promise<boolean> {
    return calls_.closeTurn(this.db, taskId, turn);
  }

  renewLeases(owner: string, leaseUntil: Date, taskIds: readonly string[]): Promise<void> {
    return calls_.renewLeases(this.db, owner, leaseUntil, taskIds);
  }

  releaseLeases(owner: string): Promise<void> {
    return calls_.releaseLeases(this.db, owner);
  }

  findInterrupted(now: Date): Promise<StoredCall[]> {
    return calls_.findInterrupted(this.db, now);
  }

  leaseTasks(taskIds: string[], owner: string, leaseUntil: Date): Promise<void> {
    return calls_.leaseTasks(this.db, taskIds, owner, leaseUntil);
  }

  findStaleTasks(now: Date): Promise<string[]> {
    return calls_.findStaleTasks(this.db, now);
  }

  findExpired(now: Date): Promise<StoredCall[]> {
    return calls_.findExpired(this.db, now);
  }

  claimReminders(before: Date, now: Date): Promise<StoredCall[]> {
    return calls_.claimReminders(this.db, before, now);
  }

  unclaimReminders(callIds: string[], claimedAt: Date): Promise<void> {
    return calls_.unclaimReminders(this.db, callIds, claimedAt);
  }

  savePushConfig(config: PushConfigInput, afterSeq: number): Promise<void> {
    return push_.savePushConfig(this.db, config, afterSeq);
  }

  getPushConfig(taskId: string, id: string): Promise<PushConfigRecord | undefined> {
    return push_.getPushConfig(this.db, taskId, id);
  }

  listPushConfigs(taskId: string): Promise<PushConfigRecord[]> {
    return push_.listPushConfigs(this.db, taskId);
  }

  hasPushConfigs(): Promise<boolean> {
    return push_.hasPushConfigs(this.db);
  }

  deletePushConfig(taskId: string, id: string): Promise<boolean> {
    return push_.deletePushConfig(this.db, taskId, id);
  }

  claimDuePushes(owner: string, now: Date, leaseUntil: Date, limit: number): Promise<PushConfigRecord[]> {
    return push_.claimDuePushes(this.db, owner, now, leaseUntil, limit);
  }

  advancePush(taskId: string, id: string, owner: string, seq: number, outcome: { dropped?: string }): Promise<boolean> {
    return push_.advancePush(this.db, taskId, id, owner, seq, outcome);
  }

  deferPush(
    taskId: string,
    id: string,
    owner: string,
    attempts: number,
    nextAttemptAt: Date,
    error: string | undefined,
    deliveredSeq?: number,
  ): Promise<boolean> {
    return push_.deferPush(this.db, taskId, id, owner, attempts, nextAttemptAt, error, deliveredSeq);
  }

  loadSigningKeys(): Promise<StoredSigningKey[]> {
    return push_.loadSigningKeys(this.db);
  }

  saveSigningKey(key: StoredSigningKey): Promise<void> {
    return push_.saveSigningKey(this.db, key);
  }

  /** Append-only: nothing in the code updates or deletes audit rows. */
  async claimWorkspace(dir: string, principal: string): Promise<WorkspaceClaim> {
    return claimWorkspace(this.db, dir, principal);
  }

  saveCheckpoint(checkpoint: Checkpoint): Promise<void> {
    return checkpoints_.saveCheckpoint(this.db, checkpoint);
  }

  loadCheckpoint(callIdOrName: string, of?: { principal: string | undefined }): Promise<Checkpoint | undefined> {
    return checkpoints_.loadCheckpoint(this.db, callIdOrName, of);
  }

  listCheckpoints(q: { workspace?: string; principal?: string; limit: number }): Promise<Checkpoint[]> {
    return checkpoints_.listCheckpoints(this.db, q);
  }

  async audit(entry: AuditEntry): Promise<void> {
    await this.commit({ ...NOTHING, audit: [entry] });
  }

  /** In insertion order; both filters combine; no filter lists everything. */
  async listAudit(q: { taskId?: string; contextId?: string }): Promise<AuditRecord[]> {
    const filters: SQL[] = [];
    if (q.taskId !== undefined) filters.push(eq(auditLog.taskId, q.taskId));
    if (q.contextId !== undefined) filters.push(eq(auditLog.contextId, q.contextId));
    const rows = await this.db
      .select()
      .from(auditLog)
      .where(filters.length ? and(...filters) : undefined)
      .orderBy(asc(auditLog.id));
    return rows.map(auditFromRow);
  }

  /** Stops listening and closes the database. Idempotent. */
  async ping(): Promise<void> {
    await this.db.execute(sql`select 1`);
  }

  close(): Promise<void> {
    this.closed ??= (async () => {
      this.listeners.clear();
      const unlisten = await this.listening?.catch(() => undefined);
      await unlisten?.().catch(() => {});
      await this.database.close();
    })();
    return this.closed;
  }
}
