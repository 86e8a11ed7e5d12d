/**
 * Tool-call queries of PgTaskStore: turns, claims, turn closing and leases (upserts are
 * part of the group commit, commit.ts). Claims and turn closing are decided by row locks
 * and keys, never by the caller's memory.
 */
import { and, asc, eq, getTableColumns, gte, inArray, isNull, lt, max, notExists, or, sql } from 'drizzle-orm';
import type { CallClaim, ClaimCommitResult, ClaimResult, ClaimTerms, StoredCall, WriteBatch } from '../agent/task-store.js';
import { planBatch, seqsOf } from './batch-plan.js';
import { commitBatch, planJson, raisedRefusal, type NotifyTo } from './commit.js';
import { anyOf, rowsOf, type Database, type Queryable, type StoreDb } from './db.js';
import { callFromRow } from './mappers.js';
import { closedTurns, tasks, toolCalls } from './schema.js';

const LIVE_PHASES = ['executing', 'ready'] as const;

/** The calls of the task's highest turn, in position order. */
export async function loadTurn(db: StoreDb, taskId: string): Promise<StoredCall[]> {
  const latest = db
    .select({ turn: max(toolCalls.turn) })
    .from(toolCalls)
    .where(eq(toolCalls.taskId, taskId));
  const rows = await db
    .select()
    .from(toolCalls)
    .where(and(eq(toolCalls.taskId, taskId), eq(toolCalls.turn, sql`(${latest})`)))
    .orderBy(asc(toolCalls.position));
  return rows.map(callFromRow);
}

/** One call by id. */
export async function loadCall(db: StoreDb, id: string): Promise<StoredCall | undefined> {
  const [row] = await db.select().from(toolCalls).where(eq(toolCalls.id, id));
  return row ? callFromRow(row) : undefined;
}

/** The claim's one statement (a fixed text, run by Database.query: prepared, no ORM). */
export const CLAIM_STATEMENT = 'select devtool_claim_calls($1::text, $2::jsonb, $3::text, $4::timestamptz, $5::integer) as r';

/**
 * One statement: the stored function `devtool_claim_calls` (drizzle/0008_claim_function.sql; with
 * `expectSeq`, drizzle/0011_commit_function.sql refuses a copy behind the store before anything)
 * locks the task row first (as every commit and re-prompt does: no deadlock, and no event is
 * appended while the claim decides), moves each claimed call awaiting → ready in id order — all
 * or, when one is not awaiting (another answer won) or shows another card, none — leases the
 * task to `owner`, and commits synchronously (an approval is on disk before its call can run, so
 * no crash of the database can undo it and let the call be approved and run a second time).
 * Under READ COMMITTED a concurrent claimer waits on the row lock, then re-checks phase='awaiting'
 * against the committed row: exactly one of them wins.
 */
export async function claimCalls(
  db: Queryable,
  taskId: string,
  claims: CallClaim[],
  owner: string,
  leaseUntil: Date,
  expectSeq?: number,
): Promise<ClaimResult> {
  const [row] = await db.query<{ r: ClaimAnswer }>(CLAIM_STATEMENT, [
    taskId,
    claimsJson(claims),
    owner,
    leaseUntil.toISOString(),
    expectSeq ?? null,
  ]);
  return claimOutcome(row?.r, claims);
}

/** What devtool_claim_calls (and devtool_claim_commit) answer. */
interface ClaimAnswer {
  ok: boolean;
  last_seq?: number;
  lost?: string[];
  behind?: number;
  seqs?: Record<string, number>;
}

/** The claims as the functions read them. */
function claimsJson(claims: CallClaim[]): string {
  return JSON.stringify(claims.map((c) => ({ id: c.id, answer: c.answer, args: c.args, snapshot: c.snapshot, shown_hash: c.shownHash })));
}

function claimOutcome(r: ClaimAnswer | undefined, claims: CallClaim[]): ClaimResult {
  const answer = r ?? { ok: false, lost: claims.map((c) => c.id) };
  if (answer.ok) return { ok: true, lastSeq: Number(answer.last_seq ?? 0) };
  if (answer.behind !== undefined) return { ok: false, notAwaiting: [], behind: Number(answer.behind) };
  const lost = new Set(answer.lost ?? []);
  return { ok: false, notAwaiting: claims.map((c) => c.id).filter((id) => lost.has(id)) };
}

/** claimCalls and the commit that follows it, as one statement (a fixed text, prepared). */
export const CLAIM_COMMIT_STATEMENT =
  'select devtool_claim_commit($1::text, $2::jsonb, $3::text, $4::timestamptz, $5::integer, $6::jsonb, $7::text, $8::text) as r';

/**
 * One statement, the stored function `devtool_claim_commit` (drizzle/0013_claim_with_commit.sql):
 * the claim as claimCalls makes it and, only when it is won, `batch` as commitBatch writes it,
 * expected at the last seq the claim found; see TaskStore.claimAndCommit. A batch the commit
 * refuses (raised, so the claim rolls back with it) answers `behind`, at the seq it names.
 */
export async function claimAndCommit(db: Queryable, notify: NotifyTo, terms: ClaimTerms, batch: WriteBatch): Promise<ClaimCommitResult> {
  const { taskId, claims, owner, leaseUntil, expectSeq } = terms;
  const plan = planBatch(batch);
  const params = [
    taskId,
    claimsJson(claims),
    owner,
    leaseUntil.toISOString(),
    expectSeq ?? null,
    planJson(plan),
    notify.channel,
    notify.origin,
  ];
  let answer: ClaimAnswer | undefined;
  try {
    [{ r: answer } = { r: undefined }] = await db.query<{ r: ClaimAnswer }>(CLAIM_COMMIT_STATEMENT, params);
  } catch (err) {
    const refusal = raisedRefusal(err);
    return { ok: false, notAwaiting: [], behind: Number(refusal.stale?.[0]?.last_seq ?? expectSeq ?? 0) };
  }
  const outcome = claimOutcome(answer, claims);
  if (!outcome.ok) return outcome;
  return { ...outcome, seqs: seqsOf(plan, new Map(Object.entries(answer?.seqs ?? {}))) };
}

/** ready → awaiting with a new card (and id), only under `owner`'s lease; see TaskStore.reopenCall. */
export async function reopenCall(db: StoreDb, call: StoredCall, owner: string, previousId: string = call.id): Promise<boolean> {
  const rows = await db
    .update(toolCalls)
    .set({
      id: call.id,
      phase: 'awaiting',
      answer: null,
      args: call.args ?? null,
      snapshot: call.snapshot,
      shownHash: call.shownHash ?? null,
      expiresAt: call.expiresAt ?? null,
      remindedAt: null,
      leaseOwner: null,
      leaseUntil: null,
      updatedAt: sql`now()`,
    })
    .where(
      and(eq(toolCalls.taskId, call.taskId), eq(toolCalls.id, previousId), eq(toolCalls.phase, 'ready'), eq(toolCalls.leaseOwner, owner)),
    )
    .returning({ id: toolCalls.id });
  return rows.length === 1;
}

/**
 * commit(batch) while every call of `callIds` is awaiting; see TaskStore.commitWhileAwaiting.
 * Lock order as in commit.ts: the task row, then the calls, FOR SHARE — a claim's UPDATE waits
 * for this commit, and a claim that committed first left its row not awaiting (re-read after
 * the wait under READ COMMITTED).
 */
export async function commitWhileAwaiting(
  db: Database,
  notify: NotifyTo,
  batch: WriteBatch,
  taskId: string,
  callIds: string[],
): Promise<number[] | undefined> {
  const ids = [...new Set(callIds)];
  return db.transaction(async (tx) => {
    await tx.query(LOCK_TASK, [taskId]);
    const still = await tx.query(LOCK_AWAITING_CALLS, [taskId, JSON.stringify(ids)]);
    if (still.length !== ids.length) return undefined;
    return commitBatch(tx, notify, batch);
  });
}

/** commitWhileAwaiting's locks, as fixed texts (the commit in the same transaction is one already). */
const LOCK_TASK = 'select id from tasks where id = $1::text for no key update';
const LOCK_AWAITING_CALLS = `select id from tool_calls
  where task_id = $1::text and id = any(array(select jsonb_array_elements_text($2::jsonb))) and phase = 'awaiting'
  order by id for share`;

/**
 * loadTurn and closeTurn as ONE statement: the latest turn's calls, and the insert that closes
 * `turn` only when none of them is other than done (a data-modifying CTE: it runs whether or not
 * the main query reads it, and reads the same snapshot as `latest`). One row per call, each with
 * the closing's count — or one row of NULL calls when the turn has none (the left join).
 */
export async function settleTurn(db: StoreDb, taskId: string, turn: number): Promise<{ calls: StoredCall[]; closed: boolean }> {
  const rows = rowsOf<Record<string, unknown>>(
    await db.execute(sql`with latest as (
        select * from ${toolCalls} where task_id = ${taskId}
          and turn = (select max(turn) from ${toolCalls} where task_id = ${taskId})
      ), closing as (
        insert into ${closedTurns} (task_id, turn)
        select ${taskId}::text, ${turn}::int where not exists (select 1 from latest where phase <> 'done')
        on conflict do nothing returning turn
      )
      select l.*, (select count(*) from closing)::int as closed_now
      from (select 1) as one left join latest l on true order by l.position`),
  );
  const closed = Number(rows[0]?.closed_now ?? 0) > 0;
  return { calls: rows.filter((r) => r.id !== null && r.id !== undefined).map((r) => callFromRow(fromDriver(r))), closed };
}

/** A tool_calls row read by raw SQL (column names, driver values) as drizzle's select gives it. */
function fromDriver(raw: Record<string, unknown>): typeof toolCalls.$inferSelect {
  const out: Record<string, unknown> = {};
  for (const [key, column] of Object.entries(getTableColumns(toolCalls))) {
    const value = raw[column.name];
    out[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
  }
  return out as typeof toolCalls.$inferSelect;
}

/** INSERT … ON CONFLICT DO NOTHING: only the first closer gets a row back. */
export async function closeTurn(db: StoreDb, taskId: string, turn: number): Promise<boolean> {
  const rows = await db.insert(closedTurns).values({ taskId, turn }).onConflictDoNothing().returning({ turn: closedTurns.turn });
  return rows.length === 1;
}

/**
 * Extends the leases `owner` holds on the executing/ready calls of `taskIds`. The rows are locked in id order
 * first, as a group commit locks the calls it writes: a plain UPDATE locks them in the order it
 * finds them, and racing a commit that holds one of them it deadlocked (seen by the bench at 200
 * clients on PostgreSQL; the database aborted one side).
 */
export async function renewLeases(db: StoreDb, owner: string, leaseUntil: Date, taskIds: readonly string[]): Promise<void> {
  if (taskIds.length === 0) return;
  const mine = db
    .select({ id: toolCalls.id })
    .from(toolCalls)
    .where(and(inArray(toolCalls.taskId, [...taskIds]), eq(toolCalls.leaseOwner, owner), inArray(toolCalls.phase, [...LIVE_PHASES])))
    .orderBy(sql`${toolCalls.id} collate "C"`) // code-unit order, as the commit sorts the calls it writes
    .for('no key update');
  await db
    .update(toolCalls)
    .set({ leaseUntil, updatedAt: sql`now()` })
    .where(and(sql`${toolCalls.id} = any(array(${mine}))`, eq(toolCalls.leaseOwner, owner), inArray(toolCalls.phase, [...LIVE_PHASES])));
}

/** The epoch: a lease released at shutdown lapsed before any `now` a sweep compares it with. */
const RELEASED = new Date(0);

/** Every lease `owner` holds on tasks and calls lapses now; see TaskStore.releaseLeases. */
export async function releaseLeases(db: StoreDb, owner: string): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.update(tasks).set({ leaseUntil: RELEASED }).where(eq(tasks.leaseOwner, owner));
    await tx
      .update(toolCalls)
      .set({ leaseUntil: RELEASED, updatedAt: sql`now()` })
      .where(eq(toolCalls.leaseOwner, owner));
  });
}

/** Executing/ready calls with no lease or a lapsed one (their process died). */
export async function findInterrupted(db: StoreDb, now: Date): Promise<StoredCall[]> {
  const rows = await db
    .select()
    .from(toolCalls)
    .where(and(inArray(toolCalls.phase, [...LIVE_PHASES]), or(isNull(toolCalls.leaseUntil), lt(toolCalls.leaseUntil, now))))
    .orderBy(asc(toolCalls.taskId), asc(toolCalls.turn), asc(toolCalls.position));
  return rows.map(callFromRow);
}

/** Awaiting calls past their expiresAt. */
export async function findExpired(db: StoreDb, now: Date): Promise<StoredCall[]> {
  const rows = await db
    .select()
    .from(toolCalls)
    .where(and(eq(toolCalls.phase, 'awaiting'), lt(toolCalls.expiresAt, now)))
    .orderBy(asc(toolCalls.taskId), asc(toolCalls.turn), asc(toolCalls.position));
  return rows.map(callFromRow);
}

/** Waiting calls that expire before `before` and were not reminded yet: marks them reminded (once, across processes). */
export async function claimReminders(db: StoreDb, before: Date, now: Date): Promise<StoredCall[]> {
  const rows = await db
    .update(toolCalls)
    .set({ remindedAt: now })
    .where(and(eq(toolCalls.phase, 'awaiting'), lt(toolCalls.expiresAt, before), isNull(toolCalls.remindedAt)))
    .returning();
  return rows.map(callFromRow).sort((a, b) => a.taskId.localeCompare(b.taskId) || a.position - b.position);
}

/** Clears the reminder mark `claimReminders(…, claimedAt)` set on the calls of `callIds` that still await. */
export async function unclaimReminders(db: StoreDb, callIds: string[], claimedAt: Date): Promise<void> {
  if (callIds.length === 0) return;
  await db
    .update(toolCalls)
    .set({ remindedAt: null })
    .where(and(sql`${toolCalls.id} = ${anyOf(callIds)}`, eq(toolCalls.phase, 'awaiting'), eq(toolCalls.remindedAt, claimedAt)));
}

/** Marks tasks as worked on by `owner` until `leaseUntil`. */
export async function leaseTasks(db: StoreDb, taskIds: string[], owner: string, leaseUntil: Date): Promise<void> {
  if (taskIds.length === 0) return;
  await db
    .update(tasks)
    .set({ leaseOwner: owner, leaseUntil })
    .where(sql`${tasks.id} = ${anyOf(taskIds)}`);
}

/**
 * Working/submitted tasks whose lease lapsed (or that never had one) and that no call
 * under a live lease covers: the process that ran their model step died.
 */
export async function findStaleTasks(db: StoreDb, now: Date): Promise<string[]> {
  const liveCall = db
    .select({ one: sql`1` })
    .from(toolCalls)
    .where(and(eq(toolCalls.taskId, tasks.id), inArray(toolCalls.phase, [...LIVE_PHASES]), gte(toolCalls.leaseUntil, now)));
  const rows = await db
    .select({ id: tasks.id })
    .from(tasks)
    .where(
      and(inArray(tasks.state, ['working', 'submitted']), or(isNull(tasks.leaseUntil), lt(tasks.leaseUntil, now)), notExists(liveCall)),
    );
  return rows.map((r) => r.id);
}
