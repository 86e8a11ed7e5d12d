/**
 * TaskStore on drizzle-orm, the same code for PGlite and PostgreSQL. Every rule of the
 * port contract is decided by the database: row locks order appenders and claimers, the
 * snapshot and its event share a transaction, and pg_notify (delivered on commit) tells
 * every process about new events.
 */
import type { StreamResponse, Task } from '@a2a-js/sdk';
import { and, asc, count, desc, eq, max, sql, type SQL } from 'drizzle-orm';
import type { ModelContent } from '../agent/model/model-client.js';
import type {
  AuditEntry,
  AuditRecord,
  CallClaim,
  ClaimResult,
  StoredCall,
  StoredContext,
  StoredEvent,
  StoredTask,
  TaskStore,
} from '../agent/task-store.js';
import { rowsOf, type Database, type StoreDb } from './db.js';
import * as calls_ from './call-queries.js';
import { auditFromRow, eventFromRow, responseToJson, stateName, taskFromJson, taskToJson } from './mappers.js';
import { auditLog, contextHistory, contexts, events, tasks, trustGrants } from './schema.js';

type Listener = (taskId: string, seq: number) => void;

/** The durable TaskStore. Owns `database`: close() closes it. */
export class PgTaskStore implements TaskStore {
  private readonly db: StoreDb;
  private readonly listeners = new Set<Listener>();
  private listening?: Promise<() => Promise<void>>;
  private closed?: Promise<void>;

  constructor(private readonly database: Database) {
    this.db = database.db;
  }

  /** Idempotent: a context that exists keeps its first workspace (two processes may race here). */
  async createContext(ctx: { id: string; workspace: string }): Promise<void> {
    await this.db.insert(contexts).values(ctx).onConflictDoNothing();
  }

  async loadContext(id: string): Promise<StoredContext | undefined> {
    const [row] = await this.db.select().from(contexts).where(eq(contexts.id, id));
    if (!row) return undefined;
    const history = await this.db
      .select({ content: contextHistory.content })
      .from(contextHistory)
      .where(eq(contextHistory.contextId, id))
      .orderBy(asc(contextHistory.idx));
    const trust = await this.db
      .select({ toolName: trustGrants.toolName })
      .from(trustGrants)
      .where(eq(trustGrants.contextId, id))
      .orderBy(asc(trustGrants.createdAt), asc(trustGrants.toolName));
    return {
      id: row.id,
      workspace: row.workspace,
      history: history.map((h) => h.content as ModelContent),
      trustedTools: trust.map((g) => g.toolName),
    };
  }

  /** Throws when the context does not exist. */
  async appendHistory(contextId: string, contents: ModelContent[]): Promise<void> {
    if (contents.length === 0) return;
    await this.db.transaction(async (tx) => {
      // Locks the context row: concurrent appenders queue here, so each sees the other's max.
      const locked = await tx
        .update(contexts)
        .set({ updatedAt: sql`now()` })
        .where(eq(contexts.id, contextId))
        .returning({ id: contexts.id });
      if (locked.length === 0) throw new Error(`appendHistory: unknown context ${contextId}`);
      const [{ last }] = await tx
        .select({ last: max(contextHistory.idx) })
        .from(contextHistory)
        .where(eq(contextHistory.contextId, contextId));
      const start = (last ?? -1) + 1;
      await tx.insert(contextHistory).values(contents.map((content, i) => ({ contextId, idx: start + i, content })));
    });
  }

  async addTrust(contextId: string, toolName: string, principal?: string): Promise<void> {
    await this.db
      .insert(trustGrants)
      .values({ contextId, toolName, principal: principal ?? null })
      .onConflictDoNothing();
  }

  /** The task's context must exist (createContext first); a duplicate id throws. */
  async createTask(task: Task, principal?: string): Promise<void> {
    await this.db.insert(tasks).values({
      id: task.id,
      contextId: task.contextId,
      state: stateName(task.status?.state),
      principal: principal ?? null,
      task: taskToJson(task),
    });
  }

  async loadTask(id: string): Promise<StoredTask | undefined> {
    const [row] = await this.db.select().from(tasks).where(eq(tasks.id, id));
    if (!row) return undefined;
    const stored: StoredTask = { task: taskFromJson(row.task), lastSeq: row.lastSeq };
    if (row.principal !== null) stored.principal = row.principal;
    return stored;
  }

  /** Most recently updated first. `state` is an A2A name ('working') or 'TASK_STATE_WORKING'. */
  async listTasks(q: { contextId?: string; state?: string; limit: number; offset: number }): Promise<{ tasks: Task[]; total: number }> {
    const filters: SQL[] = [];
    if (q.contextId !== undefined) filters.push(eq(tasks.contextId, q.contextId));
    if (q.state !== undefined) filters.push(eq(tasks.state, stateName(q.state)));
    const where = filters.length ? and(...filters) : undefined;
    const [{ total }] = await this.db.select({ total: count() }).from(tasks).where(where);
    const rows = await this.db
      .select({ task: tasks.task })
      .from(tasks)
      .where(where)
      .orderBy(desc(tasks.updatedAt), asc(tasks.id))
      .limit(q.limit)
      .offset(q.offset);
    return { tasks: rows.map((r) => taskFromJson(r.task)), total };
  }

  /** Throws when the task was never created. */
  async appendEvent(task: Task, response: StreamResponse, final: boolean): Promise<number> {
    // One statement is one transaction: the three steps of the contract in a single round
    // trip (half the latency of BEGIN/UPDATE/INSERT/NOTIFY/COMMIT, measured on both drivers).
    // - bumped: the UPDATE's row lock orders appenders from every process; seq = last_seq.
    // - logged: the event is stored with the seq, in the same transaction as the snapshot.
    // - pg_notify is delivered on commit only, so a woken reader always finds the event.
    const result = await this.db.execute(sql`
      with bumped as (
        update ${tasks} set last_seq = last_seq + 1, task = ${JSON.stringify(taskToJson(task))}::jsonb,
          state = ${stateName(task.status?.state)}::text, updated_at = now()
        where id = ${task.id}::text
        returning last_seq
      ), logged as (
        insert into ${events} (task_id, seq, payload, final)
        select ${task.id}::text, last_seq, ${JSON.stringify(responseToJson(response))}::jsonb, ${final}::boolean from bumped
        returning seq
      )
      select seq, pg_notify(${this.database.notifyChannel}::text, ${task.id}::text || ':' || seq) from logged`);
    const [row] = rowsOf<{ seq: number }>(result);
    if (!row) throw new Error(`appendEvent: unknown task ${task.id}`);
    return Number(row.seq);
  }

  async eventsAfter(taskId: string, afterSeq: number): Promise<StoredEvent[]> {
    const rows = await this.db
      .select({ seq: events.seq, payload: events.payload, final: events.final })
      .from(events)
      .where(and(eq(events.taskId, taskId), sql`${events.seq} > ${afterSeq}`))
      .orderBy(asc(events.seq));
    return rows.map(eventFromRow);
  }

  /**
   * One LISTEN per store, opened on first use and kept until close(); listeners share it.
   * With postgres.js, notifications sent while its listen connection reconnects are lost:
   * readers should re-read eventsAfter(lastSeen) when they wake, not trust the payload alone.
   */
  async subscribe(listener: Listener): Promise<() => Promise<void>> {
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
    const cut = payload.lastIndexOf(':'); // task ids may contain ':'; the seq never does
    const taskId = payload.slice(0, cut);
    const seq = Number(payload.slice(cut + 1));
    if (cut < 0 || !Number.isInteger(seq)) return;
    for (const l of [...this.listeners]) {
      try {
        l(taskId, seq);
      } catch {
        // One listener's bug must not starve the others of notifications.
      }
    }
  }

  saveCalls(calls: StoredCall[]): Promise<void> {
    return calls_.saveCalls(this.db, calls);
  }

  loadTurn(taskId: string): Promise<StoredCall[]> {
    return calls_.loadTurn(this.db, taskId);
  }

  loadCall(id: string): Promise<StoredCall | undefined> {
    return calls_.loadCall(this.db, id);
  }

  claimCalls(taskId: string, claims: CallClaim[], owner: string, leaseUntil: Date): Promise<ClaimResult> {
    return calls_.claimCalls(this.db, taskId, claims, owner, leaseUntil);
  }

  closeTurn(taskId: string, turn: number): Promise<boolean> {
    return calls_.closeTurn(this.db, taskId, turn);
  }

  renewLeases(owner: string, leaseUntil: Date): Promise<void> {
    return calls_.renewLeases(this.db, owner, leaseUntil);
  }

  findInterrupted(now: Date): Promise<StoredCall[]> {
    return calls_.findInterrupted(this.db, now);
  }

  findExpired(now: Date): Promise<StoredCall[]> {
    return calls_.findExpired(this.db, now);
  }

  /** Append-only: nothing in the code updates or deletes audit rows. */
  async audit(entry: AuditEntry): Promise<void> {
    await this.db.insert(auditLog).values({
      taskId: entry.taskId,
      contextId: entry.contextId,
      toolCallId: entry.toolCallId ?? null,
      decision: entry.decision,
      principal: entry.principal ?? null,
      optionId: entry.optionId ?? null,
      shownHash: entry.shownHash ?? null,
      detail: entry.detail ?? null,
    });
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
