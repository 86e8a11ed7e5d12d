/**
 * Group commit (TaskStore.commit): a whole WriteBatch in one transaction, at a cost per
 * statement rather than per item. Rows travel as ONE JSON parameter per table, expanded
 * by jsonb_to_recordset: a batch of any size is a handful of statements with four
 * parameters or fewer (no 65,535 bind-parameter ceiling, one parse per statement).
 *
 * All the events of a batch are ONE statement (the task rows' locks, one UPDATE bumping
 * every task, the inserts, the notifications); what else the batch holds follows in the
 * same transaction. Statements are issued without waiting for each other: postgres.js
 * pipelines them on the transaction's connection, the server runs them in issue order;
 * PGlite queues them. A batch that is one statement (one task's events; or only calls, only
 * grants, only audit) runs without BEGIN/COMMIT, a statement being its own transaction.
 *
 * Lock order, the same in every process, keeps concurrent commits deadlock-free:
 * task rows (in id order) → context rows (id order) → call rows (id order) → grant keys.
 */
import { getTableColumns, sql, type SQL } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';
import type { WriteBatch } from '../agent/task-store.js';
import { planBatch, seqsOf, type BatchPlan, type TaskBump } from './batch-plan.js';
import { anyOf, rowsOf, type StoreDb } from './db.js';
import { callToRow } from './mappers.js';
import { CALL_PHASE_ORDER, FINISHED } from '../protocol/task-states.js';
import { sqlStateOf, StaleWriteError } from '../protocol/errors.js';
import { auditLog, contextHistory, contexts, events, tasks, toolCalls, trustGrants } from './schema.js';

/**
 * A batch refused before anything was written (the transaction rolls back), marked with the
 * SQLSTATE foreign_key_violation like the database's own refusals, so the write queue knows
 * the outcome is certain and may retry the other writes of the batch.
 */
function rejected(message: string): Error {
  return Object.assign(new Error(message), { code: '23503' });
}

type Columns = Record<string, PgColumn>;

/** Where a commit's notifications go, and the committing store's origin token (parseNotification). */
export interface NotifyTo {
  channel: string;
  origin: string;
}

const CALL_REPLACED = [
  'taskId',
  'turn',
  'position',
  'toolName',
  'modelCallId',
  'args',
  'snapshot',
  'phase',
  'answer',
  'response',
  'shownHash',
  'proposedAt',
  'expiresAt',
  'leaseOwner',
  'leaseUntil',
  'pgid',
  'processStamp',
] as const satisfies ReadonlyArray<keyof typeof toolCalls.$inferInsert>;
const CALL_FIELDS = ['id', ...CALL_REPLACED] as const;
const TRUST_FIELDS = ['contextId', 'toolName', 'principal'] as const satisfies ReadonlyArray<keyof typeof trustGrants.$inferInsert>;
const AUDIT_FIELDS = [
  'taskId',
  'contextId',
  'toolCallId',
  'decision',
  'principal',
  'optionId',
  'shownHash',
  'detail',
] as const satisfies ReadonlyArray<keyof typeof auditLog.$inferInsert>;

/** The column of a field one of the `*_FIELDS` lists names (their types tie them to the schema). */
function columnOf(columns: Columns, field: string): PgColumn {
  const column = columns[field];
  if (column === undefined) throw new Error(`commit: the schema has no column for ${field}`);
  return column;
}

/**
 * `insert into <table> (<fields>) select <fields> from jsonb_to_recordset(<rows>) … order by i`:
 * the column names and SQL types come from the drizzle schema; each row carries its position
 * `i`, so rows are written (and locked, and numbered by serials) in the given order. Absent
 * and null values both become SQL NULL.
 */
function insertRows(
  table: typeof toolCalls | typeof trustGrants | typeof auditLog,
  fields: readonly string[],
  rows: Array<Record<string, unknown>>,
): SQL {
  const columns = getTableColumns(table) as Columns;
  const pairs = fields.map((field) => ({ field, column: columnOf(columns, field) }));
  const cols = pairs.map((p) => p.column);
  const json = rows.map((row, i) => {
    const out: Record<string, unknown> = { i };
    for (const { field, column } of pairs) out[column.name] = row[field] ?? undefined;
    return out;
  });
  const names = sql.raw(cols.map((c) => `"${c.name}"`).join(', '));
  const defs = sql.raw([...cols.map((c) => `"${c.name}" ${c.getSQLType()}`), 'i integer'].join(', '));
  return sql`insert into ${table} (${names}) select ${names} from jsonb_to_recordset(${JSON.stringify(json)}::jsonb) as x(${defs}) order by x.i`;
}

/**
 * The task's new snapshot: the plan's whole one, or the stored one with the plan's status
 * (a status-only tail: the stored history stays, nothing of it crosses the wire).
 */
function snapshotOf(t: TaskBump): SQL {
  return t.snapshot !== undefined
    ? sql`${JSON.stringify(t.snapshot)}::jsonb`
    : sql`jsonb_set(task, '{status}', ${JSON.stringify(t.status)}::jsonb)`;
}

/**
 * `compacted`: deletes the stored events that the batch's keyed events supersede (same task,
 * same key). A data-modifying CTE sees the log as it was before the statement, so the rows
 * `logged` inserts are never its victims. Empty when the batch has no keyed event.
 */
function compaction(plan: BatchPlan): SQL {
  const keyed = plan.stored.filter((e) => e.key !== null); // one per (task, key): see BatchPlan.stored
  if (keyed.length === 0) return sql``;
  const json = JSON.stringify(keyed.map((e) => ({ task_id: e.task_id, key: e.key })));
  return sql`, compacted as (
      delete from ${events} e using bumped b, jsonb_to_recordset(${json}::jsonb) as k(task_id text, key text)
      where b.id = k.task_id and e.task_id = k.task_id and e.key = k.key
    )`;
}

/** The stored states no event follows (protocol FINISHED), as a SQL list. */
const FINISHED_LIST = sql.raw([...FINISHED].map((s) => `'${s}'`).join(', '));

/** The checks of a bump: not finished, and what the writer expects (WriteBatch.expect), if anything. */
function expected(t: TaskBump): SQL {
  const seq = t.expect?.lastSeq === undefined ? sql`` : sql` and last_seq = ${t.expect.lastSeq}::int`;
  const state = t.expect?.state === undefined ? sql`` : sql` and state = ${t.expect.state}::text`;
  return sql` and state not in (${FINISHED_LIST})${seq}${state}`;
}

/** The events of the batch (one task): the row lock, the bump, compaction, the events, the notification. */
function appendOneTask(plan: BatchPlan, t: TaskBump, notify: NotifyTo): SQL {
  const json = JSON.stringify(plan.stored.map(({ back, payload, final, key, span }) => ({ back, payload, final, key, span })));
  return sql`with bumped as (
      update ${tasks} set last_seq = last_seq + ${t.count}::int, task = ${snapshotOf(t)},
        state = ${t.state}::text, updated_at = now() where id = ${t.id}::text${expected(t)} returning id, last_seq
    )${compaction(plan)}, logged as (
      insert into ${events} (task_id, seq, payload, final, key, span)
      select b.id, b.last_seq - x.back, x.payload, x.final, x.key, x.span
      from bumped b, jsonb_to_recordset(${json}::jsonb) as x(back integer, payload jsonb, final boolean, key text, span integer)
    )
    select id, last_seq, pg_notify(${notify.channel}::text, id || ':' || last_seq || ':' || ${t.final ? 1 : 0}::int || ':' || ${notify.origin}::text) from bumped`;
}

/**
 * The events of the batch (several tasks) in ONE statement:
 * - locked: the task rows, FOR NO KEY UPDATE in id (index) order — the only place they get
 *   locked, so two commits on overlapping tasks queue instead of deadlocking; the UPDATE
 *   reads it as an InitPlan, i.e. only once every lock is held;
 * - bumped: one UPDATE for all tasks: last_seq += its count, its last snapshot (or the
 *   stored one with its last status, for a status-only tail) and state. The rows are found
 *   by index (`any(array(select id from locked))`), x is only joined to what they return.
 *   Under READ COMMITTED the UPDATE re-reads a row changed since the statement began
 *   (EvalPlanQual), so last_seq is the newest, and the lock keeps it so until commit;
 * - compacted: the stored events the batch's keyed events supersede are deleted;
 * - logged: every row to store, seq = new last_seq - back (its distance from the task's last),
 *   a text run's row (span > 1) at its last event's seq;
 * - one pg_notify per task `<taskId>:<lastSeq>:<0|1>:<origin>` (parseNotification), sent at commit.
 * Returns (id, last_seq) per task found; a missing task has no row and no events.
 */
function appendManyTasks(plan: BatchPlan, notify: NotifyTo): SQL {
  // An absent task (status-only) or status (whole snapshot) is NULL in x.
  const bumps = JSON.stringify(
    plan.tasks.map((t) => ({
      id: t.id,
      n: t.count,
      task: t.snapshot,
      status: t.status,
      state: t.state,
      f: t.final ? 1 : 0,
      e: t.expect?.lastSeq,
      s: t.expect?.state,
    })),
  );
  return sql`with locked as (
      select id from ${tasks} where id = ${anyOf(plan.tasks.map((t) => t.id))} order by id for no key update
    ), bumped as (
      update ${tasks} t set last_seq = t.last_seq + x.n, task = coalesce(x.task, jsonb_set(t.task, '{status}', x.status)),
        state = x.state, updated_at = now()
      from jsonb_to_recordset(${bumps}::jsonb) as x(id text, n integer, task jsonb, status jsonb, state text, f integer, e integer, s text)
      where t.id = any(array(select id from locked)) and t.id = x.id and t.state not in (${FINISHED_LIST})
        and (x.e is null or t.last_seq = x.e) and (x.s is null or t.state = x.s)
      returning t.id, t.last_seq, x.f
    )${compaction(plan)}, logged as (
      insert into ${events} (task_id, seq, payload, final, key, span)
      select e.task_id, b.last_seq - e.back, e.payload, e.final, e.key, e.span
      from jsonb_to_recordset(${JSON.stringify(plan.stored)}::jsonb) as e(task_id text, back integer, payload jsonb, final boolean, key text, span integer)
      join bumped b on b.id = e.task_id
    )
    select id, last_seq, pg_notify(${notify.channel}::text, id || ':' || last_seq || ':' || f || ':' || ${notify.origin}::text) from bumped`;
}

/**
 * Locks the contexts (FOR NO KEY UPDATE, in id order; task inserts only take KEY SHARE) so
 * concurrent appenders of one context queue here, and returns the ids that exist.
 */
function lockContexts(plan: BatchPlan): SQL {
  return sql`update ${contexts} set updated_at = now() where id = any(array(
    select id from ${contexts} where id = ${anyOf(plan.history.map((h) => h.contextId))} order by id for no key update
  )) returning id`;
}

/**
 * Appends each context's contents after its current last idx (visible: the row lock is held).
 * Contents of a missing context are skipped (lockContexts reports it, failing the batch);
 * the contexts are looked up by index as an InitPlan, not semi-joined (a seq scan).
 */
function insertHistory(plan: BatchPlan): SQL {
  const json = JSON.stringify(plan.history.flatMap((h) => h.contents.map((content, k) => ({ c: h.contextId, k, content }))));
  return sql`insert into ${contextHistory} (context_id, idx, content)
    select x.c, coalesce((select max(h.idx) from ${contextHistory} h where h.context_id = x.c), -1) + 1 + x.k, x.content
    from jsonb_to_recordset(${json}::jsonb) as x(c text, k integer, content jsonb)
    where x.c = any(array(select id from ${contexts} where id = ${anyOf(plan.history.map((h) => h.contextId))}))`;
}

/**
 * A batch of history alone (a model turn's contents), as ONE statement: the contexts' lock and the
 * insert, returning the locked ids (lockContexts' answer). Unlike the two statements of a
 * transaction, the insert's `max(idx)` reads the statement's snapshot, taken before the lock was
 * granted: an appender of the same context that committed meanwhile (another instance; one
 * context runs one model turn at a time) makes it collide on the key (23505). The database then
 * refused it and nothing was written: commitBatch writes it again the collision-free way (the
 * lock, then the insert in a statement of its own, in one transaction).
 */
function appendHistoryOnly(plan: BatchPlan): SQL {
  const json = JSON.stringify(plan.history.flatMap((h) => h.contents.map((content, k) => ({ c: h.contextId, k, content }))));
  return sql`with locked as (${lockContexts(plan)}), appended as (
      insert into ${contextHistory} (context_id, idx, content)
      select x.c, coalesce((select max(h.idx) from ${contextHistory} h where h.context_id = x.c), -1) + 1 + x.k, x.content
      from jsonb_to_recordset(${json}::jsonb) as x(c text, k integer, content jsonb)
      where x.c = any(array(select id from locked))
    )
    select id from locked`;
}

/** Throws (a refusal) when a context the plan appends history to was not found (`rows`: the locked ids). */
function checkContexts(plan: BatchPlan, rows: Array<Record<string, unknown>>): void {
  const found = new Set(rows.map((r) => String(r.id)));
  const missing = plan.history.find((h) => !found.has(h.contextId));
  if (missing) throw rejected(`commit: unknown context ${missing.contextId}`);
}

/** The order of call phases (protocol/task-states.ts): a stored call never moves back. */
const PHASE_CASES = sql.raw(CALL_PHASE_ORDER.map((p, i) => `when '${p}' then ${i}`).join(' '));
const phaseRank = (phase: SQL) => sql`(case ${phase} ${PHASE_CASES} end)`;

/**
 * Inserts calls, or replaces them by id (every column but the key and the answer; updated_at
 * bumped) only where the phase moves forward and not from awaiting to ready: approving is the
 * claim's alone (TaskStore.saveCalls).
 */
function upsertCalls(plan: BatchPlan): SQL {
  const columns = getTableColumns(toolCalls) as Columns;
  const set = sql.raw(
    CALL_REPLACED.filter((f) => f !== 'answer')
      .map((f) => columnOf(columns, f).name)
      .map((name) => `"${name}" = excluded."${name}"`)
      .join(', '),
  );
  const rows = plan.calls.map((c) => callToRow(c) as Record<string, unknown>);
  const stored = sql`${toolCalls.phase}`;
  const forward = sql`${phaseRank(stored)} <= ${phaseRank(sql.raw('excluded.phase'))} and not (${stored} = 'awaiting' and excluded.phase = 'ready')`;
  return sql`${insertRows(toolCalls, CALL_FIELDS, rows)} on conflict (id) do update set ${set}, updated_at = now() where ${forward}`;
}

/** The statements of a plan, in lock order; the events' one (if any) first. */
function statements(plan: BatchPlan, notify: NotifyTo): { list: SQL[]; lockAt: number } {
  const [onlyTask, ...moreTasks] = plan.tasks;
  const list =
    onlyTask === undefined ? [] : [moreTasks.length === 0 ? appendOneTask(plan, onlyTask, notify) : appendManyTasks(plan, notify)];
  const lockAt = plan.history.length > 0 ? list.push(lockContexts(plan), insertHistory(plan)) - 2 : -1;
  if (plan.calls.length > 0) list.push(upsertCalls(plan));
  if (plan.trust.length > 0) list.push(sql`${insertRows(trustGrants, TRUST_FIELDS, plan.trust)} on conflict do nothing`);
  if (plan.audit.length > 0) list.push(insertRows(auditLog, AUDIT_FIELDS, plan.audit as unknown as Array<Record<string, unknown>>));
  return { list, lockAt };
}

type Execute = (q: SQL) => Promise<Array<Record<string, unknown>>>;

/**
 * The new last_seq of every task of the plan. A task the events' statement did not bump does
 * not exist, or failed its version check: read once more to tell which (only on this refusal
 * path), and throw — a StaleWriteError, or an unknown-task refusal.
 */
async function lastSeqs(plan: BatchPlan, rows: Array<Record<string, unknown>>, execute: Execute): Promise<Map<string, number>> {
  const lastSeq = new Map(rows.map((r) => [String(r.id), Number(r.last_seq)]));
  const missing = plan.tasks.filter((t) => !lastSeq.has(t.id));
  if (missing.length === 0) return lastSeq;
  const found = await execute(sql`select id, last_seq, state from ${tasks} where id = ${anyOf(missing.map((t) => t.id))}`);
  const stored = new Map(found.map((r) => [String(r.id), { lastSeq: Number(r.last_seq), state: String(r.state) }]));
  const unknown = missing.find((t) => !stored.has(t.id));
  if (unknown) throw rejected(`commit: unknown task ${unknown.id}`);
  throw new StaleWriteError(missing.map((t) => ({ taskId: t.id, expected: t.expect ?? {}, stored: stored.get(t.id)! })));
}

/**
 * Commits `batch` in one transaction (see TaskStore.commit) and returns the seqs of its
 * events in batch order; an empty batch does nothing. An unknown task or context fails
 * the whole batch (nothing is written), like the single-item methods.
 */
export async function commitBatch(db: StoreDb, notify: NotifyTo, batch: WriteBatch): Promise<number[]> {
  const plan = planBatch(batch);
  if (plan.empty) return [];
  if (plan.tasks.length + plan.calls.length + plan.trust.length + plan.audit.length === 0) {
    const rows = await db.execute(appendHistoryOnly(plan)).then(
      (r) => rowsOf<Record<string, unknown>>(r),
      (err: unknown) => {
        if (sqlStateOf(err) === '23505') return undefined; // collided with a concurrent appender: below
        throw err;
      },
    );
    if (rows !== undefined) {
      checkContexts(plan, rows);
      return [];
    }
  }
  const { list, lockAt } = statements(plan, notify);
  // One statement is its own transaction — unless it must fail as a whole when one of
  // several tasks is missing: only a transaction can undo what it wrote for the others.
  const [single, ...more] = list;
  if (single !== undefined && more.length === 0 && plan.tasks.length <= 1) {
    const rows = rowsOf<Record<string, unknown>>(await db.execute(single));
    return seqsOf(plan, await lastSeqs(plan, rows, async (q) => rowsOf<Record<string, unknown>>(await db.execute(q))));
  }
  return db.transaction(async (tx) => {
    // Issued at once, in order (each .then starts its query); awaited together.
    const results = await Promise.all(list.map((q) => tx.execute(q).then((r) => rowsOf<Record<string, unknown>>(r))));
    // The events' statement comes first (see statements); a missing result reads as "no task/context found".
    const lastSeq = await lastSeqs(plan, plan.events.length > 0 ? (results[0] ?? []) : [], async (q) =>
      rowsOf<Record<string, unknown>>(await tx.execute(q)),
    );
    if (lockAt >= 0) checkContexts(plan, results[lockAt] ?? []);
    return seqsOf(plan, lastSeq);
  });
}
