/**
 * Group commit (TaskStore.commit): a whole WriteBatch in one transaction, at a cost per
 * statement rather than per item. Rows travel as ONE JSON parameter per table, expanded
 * by jsonb_to_recordset: a batch of any size is a handful of statements with four
 * parameters or fewer (no 65,535 bind-parameter ceiling, one parse per statement).
 *
 * Statements are issued without waiting for each other: postgres.js pipelines them on the
 * transaction's connection and the server runs them in issue order; PGlite queues them.
 * Lock order, the same in every process, keeps concurrent commits deadlock-free:
 * task rows (ids sorted) → context rows (sorted) → call rows (sorted) → grant keys (sorted).
 */
import { getTableColumns, sql, type SQL } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';
import type { WriteBatch } from '../agent/task-store.js';
import { planBatch, seqsOf, type BatchPlan, type TaskBump } from './batch-plan.js';
import { rowsOf, type StoreDb } from './db.js';
import { callToRow } from './mappers.js';
import { auditLog, contextHistory, contexts, events, tasks, toolCalls, trustGrants } from './schema.js';

type Columns = Record<string, PgColumn>;

const CALL_REPLACED = [
  'taskId', 'turn', 'position', 'toolName', 'modelCallId', 'args', 'snapshot', 'phase',
  'answer', 'response', 'shownHash', 'proposedAt', 'expiresAt', 'leaseOwner', 'leaseUntil',
] as const satisfies ReadonlyArray<keyof typeof toolCalls.$inferInsert>;
const CALL_FIELDS = ['id', ...CALL_REPLACED] as const;
const TRUST_FIELDS = ['contextId', 'toolName', 'principal'] as const satisfies ReadonlyArray<keyof typeof trustGrants.$inferInsert>;
const AUDIT_FIELDS = [
  'taskId', 'contextId', 'toolCallId', 'decision', 'principal', 'optionId', 'shownHash', 'detail',
] as const satisfies ReadonlyArray<keyof typeof auditLog.$inferInsert>;

/**
 * `insert into <table> (<fields>) select <fields> from jsonb_to_recordset(<rows>) … order by i`:
 * the column names and SQL types come from the drizzle schema; each row carries its position
 * `i`, so rows are written (and locked, and numbered by serials) in the given order. Absent
 * and null values both become SQL NULL.
 */
function insertRows(table: typeof toolCalls | typeof trustGrants | typeof auditLog, fields: readonly string[], rows: Array<Record<string, unknown>>): SQL {
  const columns = getTableColumns(table) as Columns;
  const cols = fields.map((f) => columns[f]);
  const json = rows.map((row, i) => {
    const out: Record<string, unknown> = { i };
    for (const f of fields) out[columns[f].name] = row[f] ?? undefined;
    return out;
  });
  const names = sql.raw(cols.map((c) => `"${c.name}"`).join(', '));
  const defs = sql.raw([...cols.map((c) => `"${c.name}" ${c.getSQLType()}`), 'i integer'].join(', '));
  return sql`insert into ${table} (${names}) select ${names} from jsonb_to_recordset(${JSON.stringify(json)}::jsonb) as x(${defs}) order by x.i`;
}

/** Locks the task row and reserves `count` seqs: last_seq - count + 1 … last_seq. */
function bumpTask(t: TaskBump): SQL {
  return sql`update ${tasks} set last_seq = last_seq + ${t.count}::int, task = ${t.snapshot}::jsonb,
    state = ${t.state}::text, updated_at = now() where id = ${t.id}::text returning last_seq`;
}

/** Every event of the batch, its seq read from the (already bumped, locked) task row. */
function insertEvents(plan: BatchPlan): SQL {
  return sql`insert into ${events} (task_id, seq, payload, final)
    select x.task_id, t.last_seq - x.back, x.payload, x.final
    from jsonb_to_recordset(${JSON.stringify(plan.events)}::jsonb) as x(task_id text, back integer, payload jsonb, final boolean)
    join ${tasks} t on t.id = x.task_id`;
}

/** One `<taskId>:<lastSeq>:<0|1>` per task (parseNotification), delivered at commit. */
function notifyTasks(plan: BatchPlan, channel: string): SQL {
  const json = JSON.stringify(plan.tasks.map((t) => ({ id: t.id, f: t.final ? 1 : 0 })));
  return sql`select pg_notify(${channel}::text, x.id || ':' || t.last_seq || ':' || x.f)
    from jsonb_to_recordset(${json}::jsonb) as x(id text, f integer) join ${tasks} t on t.id = x.id`;
}

/**
 * Locks the contexts (FOR NO KEY UPDATE, in id order; task inserts only take KEY SHARE) so
 * concurrent appenders of one context queue here, and returns the ids that exist.
 */
function lockContexts(plan: BatchPlan): SQL {
  const ids = JSON.stringify(plan.history.map((h) => h.contextId));
  return sql`update ${contexts} set updated_at = now() where id in (
    select id from ${contexts} where id in (select jsonb_array_elements_text(${ids}::jsonb)) order by id for no key update
  ) returning id`;
}

/** Appends each context's contents after its current last idx (visible: the row lock is held). */
function insertHistory(plan: BatchPlan): SQL {
  const json = JSON.stringify(plan.history.flatMap((h) => h.contents.map((content, k) => ({ c: h.contextId, k, content }))));
  return sql`insert into ${contextHistory} (context_id, idx, content)
    select x.c, coalesce((select max(h.idx) from ${contextHistory} h where h.context_id = x.c), -1) + 1 + x.k, x.content
    from jsonb_to_recordset(${json}::jsonb) as x(c text, k integer, content jsonb) join ${contexts} ctx on ctx.id = x.c`;
}

/** Inserts or replaces calls by id; every column but the key is replaced, updated_at bumped. */
function upsertCalls(plan: BatchPlan): SQL {
  const columns = getTableColumns(toolCalls) as Columns;
  const set = sql.raw(CALL_REPLACED.map((f) => `"${columns[f].name}" = excluded."${columns[f].name}"`).join(', '));
  const rows = plan.calls.map((c) => callToRow(c) as Record<string, unknown>);
  return sql`${insertRows(toolCalls, CALL_FIELDS, rows)} on conflict (id) do update set ${set}, updated_at = now()`;
}

/** The statements of a plan, in lock order; `tasks` first, one per TaskBump. */
function statements(plan: BatchPlan, channel: string): { list: SQL[]; lockAt: number } {
  const list = plan.tasks.map(bumpTask);
  if (plan.events.length > 0) list.push(insertEvents(plan), notifyTasks(plan, channel));
  const lockAt = plan.history.length > 0 ? list.push(lockContexts(plan), insertHistory(plan)) - 2 : -1;
  if (plan.calls.length > 0) list.push(upsertCalls(plan));
  if (plan.trust.length > 0) list.push(sql`${insertRows(trustGrants, TRUST_FIELDS, plan.trust)} on conflict do nothing`);
  if (plan.audit.length > 0) list.push(insertRows(auditLog, AUDIT_FIELDS, plan.audit as unknown as Array<Record<string, unknown>>));
  return { list, lockAt };
}

/**
 * The batch touches one task and holds nothing but its events: one statement, which is
 * its own transaction — the bump, the events and the notification in a single round trip.
 */
async function commitOneTask(db: StoreDb, plan: BatchPlan, channel: string): Promise<number[]> {
  const t = plan.tasks[0];
  const json = JSON.stringify(plan.events.map(({ back, payload, final }) => ({ back, payload, final })));
  const result = await db.execute(sql`
    with bumped as (${bumpTask(t)}), logged as (
      insert into ${events} (task_id, seq, payload, final)
      select ${t.id}::text, b.last_seq - x.back, x.payload, x.final
      from bumped b, jsonb_to_recordset(${json}::jsonb) as x(back integer, payload jsonb, final boolean)
    )
    select last_seq, pg_notify(${channel}::text, ${t.id}::text || ':' || last_seq || ':' || ${t.final ? 1 : 0}::int) from bumped`);
  const [row] = rowsOf<{ last_seq: number }>(result);
  if (!row) throw new Error(`commit: unknown task ${t.id}`);
  return seqsOf(plan, new Map([[t.id, Number(row.last_seq)]]));
}

/**
 * Commits `batch` in one transaction (see TaskStore.commit) and returns the seqs of its
 * events in batch order; an empty batch does nothing. An unknown task or context fails
 * the whole batch (nothing is written), like the single-item methods.
 */
export async function commitBatch(db: StoreDb, channel: string, batch: WriteBatch): Promise<number[]> {
  const plan = planBatch(batch);
  if (plan.empty) return [];
  const onlyEvents = plan.calls.length + plan.history.length + plan.trust.length + plan.audit.length === 0;
  if (onlyEvents && plan.tasks.length === 1) return commitOneTask(db, plan, channel);
  const { list, lockAt } = statements(plan, channel);
  if (list.length === 1 && plan.tasks.length === 0) {
    await db.execute(list[0]); // a single statement is its own transaction
    return [];
  }
  return db.transaction(async (tx) => {
    // Issued at once, in order (each .then starts its query); awaited together.
    const results = await Promise.all(list.map((q) => tx.execute(q).then((r) => rowsOf<Record<string, unknown>>(r))));
    const lastSeq = new Map<string, number>();
    plan.tasks.forEach((t, k) => {
      const [row] = results[k];
      if (!row) throw new Error(`commit: unknown task ${t.id}`);
      lastSeq.set(t.id, Number(row.last_seq));
    });
    if (lockAt >= 0) {
      const found = new Set(results[lockAt].map((r) => String(r.id)));
      const missing = plan.history.find((h) => !found.has(h.contextId));
      if (missing) throw new Error(`commit: unknown context ${missing.contextId}`);
    }
    return seqsOf(plan, lastSeq);
  });
}
