/**
 * Group commit (TaskStore.commit): a whole WriteBatch as ONE statement, the stored function
 * `devtool_commit` (drizzle/0011_commit_function.sql), which is its own transaction: one round
 * trip per batch of any size, no BEGIN/COMMIT, the same fixed statement text every time
 * (COMMIT_STATEMENT, run by Database.query straight on the driver: prepared once per connection
 * by postgres.js, once per worker on PGlite). The batch travels as one JSON parameter.
 *
 * The function takes its locks in the order every writer keeps — task rows (id order) →
 * context rows (id order) → call rows (id order) → grant keys — checks everything before it
 * writes anything, and answers either the tasks' new last_seq or why it wrote nothing: a copy
 * behind the store (StaleWriteError), an unknown task or context (a refusal).
 */
import { getTableColumns } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';
import type { WriteBatch } from '../agent/task-store.js';
import { planBatch, seqsOf, type BatchPlan } from './batch-plan.js';
import type { Queryable } from './db.js';
import { callToRow, taskToJson } from './mappers.js';
import { stateName } from '../protocol/a2a.js';
import { CALL_PHASE_ORDER, FINISHED } from '../protocol/task-states.js';
import { sqlStateOf, StaleWriteError } from '../protocol/errors.js';
import { auditLog, toolCalls } from './schema.js';

/**
 * A batch refused before anything was written, marked with the SQLSTATE foreign_key_violation
 * like the database's own refusals, so the write queue knows the outcome is certain and may
 * retry the other writes of the batch.
 */
function rejected(message: string): Error {
  return Object.assign(new Error(message), { code: '23503' });
}

/** Where a commit's notifications go, and the committing store's origin token (parseNotification). */
export interface NotifyTo {
  channel: string;
  origin: string;
}

/** Field name → column name of a table (the function reads rows by column name). */
function columnNames(table: typeof toolCalls | typeof auditLog): Array<[string, string]> {
  const columns: Record<string, PgColumn> = getTableColumns(table);
  return Object.entries(columns).map(([field, column]) => [field, column.name]);
}
const CALL_COLUMNS = columnNames(toolCalls);
const AUDIT_COLUMNS = columnNames(auditLog);

/** A row keyed by column names; absent and undefined values are left out (SQL NULL). */
function byColumn(row: object, columns: Array<[string, string]>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [field, name] of columns) {
    const value = (row as Record<string, unknown>)[field];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

const FINISHED_LIST = [...FINISHED];

/** The function's argument: the plan in the shape its statements read (see the migration). */
export function planJson(plan: BatchPlan): string {
  return JSON.stringify({
    finished: FINISHED_LIST,
    phases: CALL_PHASE_ORDER,
    new_contexts: plan.create.contexts.map((c) => ({
      id: c.id,
      workspace: c.workspace,
      settings: c.settings ?? {},
      principal: c.principal,
    })),
    new_tasks: plan.create.tasks.map(({ task, principal, opts = {} }) => ({
      id: task.id,
      context_id: task.contextId,
      state: stateName(task.status?.state),
      principal,
      task: taskToJson(task),
      dialect: opts.dialect ?? 'rfc',
      lease_owner: opts.lease?.owner,
      lease_until: opts.lease?.until,
    })),
    tasks: plan.tasks.map((t) => ({
      id: t.id,
      n: t.count,
      task: t.snapshot,
      status: t.status,
      state: t.state,
      f: t.final ? 1 : 0,
      e: t.expect?.lastSeq,
      s: t.expect?.state,
    })),
    events: plan.stored,
    // One per (task, key): see BatchPlan.stored.
    keyed: plan.stored.filter((e) => e.key !== null).map((e) => ({ task_id: e.task_id, key: e.key })),
    contexts: plan.history.map((h) => h.contextId),
    history: plan.history.flatMap((h) => h.contents.map((content, k) => ({ c: h.contextId, k, content }))),
    calls: plan.calls.map((c) => byColumn(callToRow(c), CALL_COLUMNS)),
    trust: plan.trust.map((g) => ({ context_id: g.contextId, tool_name: g.toolName, principal: g.principal })),
    audit: plan.audit.map((a) => byColumn(a, AUDIT_COLUMNS)),
    close_turns: plan.closeTurns.map((c) => ({ task_id: c.taskId, turn: c.turn })),
  });
}

/** The SQLSTATE devtool_commit raises a refusal with when the batch created rows (they must roll back). */
const REFUSED_AFTER_CREATING = 'DVCM1';

/** The message of the database's own error in `err` (the driver's error itself, or a wrapper's cause). */
function messageOf(err: unknown): string {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if ((e as { code?: unknown }).code === REFUSED_AFTER_CREATING) return e.message;
  }
  throw err;
}

/** The refusal devtool_commit raised in `err` (so that what the statement wrote rolls back); rethrows any other error. */
export function raisedRefusal(err: unknown): CommitAnswer {
  // A refusal after creations: raised, so that they roll back; its message is the answer.
  if (sqlStateOf(err) !== REFUSED_AFTER_CREATING) throw err;
  return JSON.parse(messageOf(err)) as CommitAnswer;
}

/** The group commit's one statement (a fixed text: prepared once per connection; no ORM builds it). */
export const COMMIT_STATEMENT = 'select devtool_commit($1::jsonb, $2::text, $3::text) as r';

/** What devtool_commit answers. */
export interface CommitAnswer {
  seqs?: Record<string, number>;
  stale?: Array<{ id: string; last_seq: number; state: string; e: number | null; s: string | null; turn?: number }>;
  unknown_task?: string;
  unknown_context?: string;
}

/**
 * Commits `batch` as one statement (see TaskStore.commit) and returns the seqs of its events
 * in batch order; an empty batch does nothing. An unknown task or context, or a copy behind
 * the store, fails the whole batch with nothing written.
 */
export async function commitBatch(db: Queryable, notify: NotifyTo, batch: WriteBatch): Promise<number[]> {
  const plan = planBatch(batch);
  if (plan.empty) return [];
  const r = await db.query<{ r: CommitAnswer | string }>(COMMIT_STATEMENT, [planJson(plan), notify.channel, notify.origin]).then((rows) => {
    const answer = rows[0]?.r;
    return typeof answer === 'string' ? (JSON.parse(answer) as CommitAnswer) : (answer ?? {});
  }, raisedRefusal);
  if (r.unknown_task !== undefined) throw rejected(`commit: unknown task ${r.unknown_task}`);
  if (r.unknown_context !== undefined) throw rejected(`commit: unknown context ${r.unknown_context}`);
  if (r.stale !== undefined) {
    throw new StaleWriteError(
      r.stale.map((s) => ({
        taskId: s.id,
        expected: { ...(s.e === null ? {} : { lastSeq: s.e }), ...(s.s === null ? {} : { state: s.s }) },
        stored: { lastSeq: s.last_seq, state: s.state },
        ...(s.turn !== undefined ? { turn: s.turn } : {}),
      })),
    );
  }
  return seqsOf(plan, new Map(Object.entries(r.seqs ?? {})));
}
