/**
 * Push queries of PgTaskStore: configs with their delivery cursors, the due-config lease,
 * and the push signing keys. The task's event log is the outbox (see schema.pushConfigs).
 */
import { and, asc, eq, gt, isNull, lt, lte, or, sql } from 'drizzle-orm';
import type { PushConfigInput, PushConfigRecord } from '../push/push-store.js';
import type { StoredSigningKey } from '../push/push-signer.js';
import type { StoreDb } from './db.js';
import { pushConfigs, signingKeys, tasks } from './schema.js';

type Row = typeof pushConfigs.$inferSelect;

function fromRow(r: Row): PushConfigRecord {
  return {
    taskId: r.taskId,
    id: r.id,
    url: r.url,
    ...(r.token !== null ? { token: r.token } : {}),
    ...(r.authScheme !== null ? { authentication: { scheme: r.authScheme, credentials: r.authCredentials ?? '' } } : {}),
    wireVersion: r.wireVersion === '0.3' ? '0.3' : '1.0',
    ...(r.principal !== null ? { principal: r.principal } : {}),
    deliveredSeq: r.deliveredSeq,
    attempts: r.attempts,
    nextAttemptAt: r.nextAttemptAt,
    ...(r.lastError !== null ? { lastError: r.lastError } : {}),
    dropped: r.dropped,
    createdAt: r.createdAt,
  };
}

export async function savePushConfig(db: StoreDb, c: PushConfigInput, afterSeq: number): Promise<void> {
  const fields = {
    url: c.url,
    token: c.token ?? null,
    authScheme: c.authentication?.scheme ?? null,
    authCredentials: c.authentication?.credentials ?? null,
    wireVersion: c.wireVersion,
    principal: c.principal ?? null,
  };
  await db
    .insert(pushConfigs)
    .values({ taskId: c.taskId, id: c.id, ...fields, deliveredSeq: afterSeq })
    .onConflictDoUpdate({
      target: [pushConfigs.taskId, pushConfigs.id],
      set: { ...fields, attempts: 0, nextAttemptAt: new Date(), lastError: null },
    });
}

export async function getPushConfig(db: StoreDb, taskId: string, id: string): Promise<PushConfigRecord | undefined> {
  const [row] = await db
    .select()
    .from(pushConfigs)
    .where(and(eq(pushConfigs.taskId, taskId), eq(pushConfigs.id, id)));
  return row ? fromRow(row) : undefined;
}

export async function listPushConfigs(db: StoreDb, taskId: string): Promise<PushConfigRecord[]> {
  const rows = await db
    .select()
    .from(pushConfigs)
    .where(eq(pushConfigs.taskId, taskId))
    .orderBy(asc(pushConfigs.createdAt), asc(pushConfigs.id));
  return rows.map(fromRow);
}

export async function hasPushConfigs(db: StoreDb): Promise<boolean> {
  const rows = await db.select({ id: pushConfigs.id }).from(pushConfigs).limit(1);
  return rows.length > 0;
}

export async function deletePushConfig(db: StoreDb, taskId: string, id: string): Promise<boolean> {
  const gone = await db
    .delete(pushConfigs)
    .where(and(eq(pushConfigs.taskId, taskId), eq(pushConfigs.id, id)))
    .returning({ id: pushConfigs.id });
  return gone.length > 0;
}

/** One statement: pick due configs (skipping rows another process is locking) and lease them. */
export async function claimDuePushes(db: StoreDb, owner: string, now: Date, leaseUntil: Date, limit: number): Promise<PushConfigRecord[]> {
  const due = db
    .select({ taskId: pushConfigs.taskId, id: pushConfigs.id })
    .from(pushConfigs)
    .innerJoin(tasks, eq(tasks.id, pushConfigs.taskId))
    .where(
      and(
        gt(tasks.lastSeq, pushConfigs.deliveredSeq),
        lte(pushConfigs.nextAttemptAt, now),
        or(isNull(pushConfigs.leaseUntil), lt(pushConfigs.leaseUntil, now)),
      ),
    )
    .orderBy(asc(pushConfigs.nextAttemptAt))
    .limit(limit)
    .for('update', { of: pushConfigs, skipLocked: true });
  const rows = await db
    .update(pushConfigs)
    .set({ leaseOwner: owner, leaseUntil })
    .where(sql`(${pushConfigs.taskId}, ${pushConfigs.id}) in (${due})`)
    .returning();
  return rows.map(fromRow);
}

const held = (taskId: string, id: string, owner: string) =>
  and(eq(pushConfigs.taskId, taskId), eq(pushConfigs.id, id), eq(pushConfigs.leaseOwner, owner));

export async function advancePush(
  db: StoreDb,
  taskId: string,
  id: string,
  owner: string,
  seq: number,
  outcome: { dropped?: string },
): Promise<boolean> {
  const rows = await db
    .update(pushConfigs)
    .set({
      deliveredSeq: sql`greatest(${pushConfigs.deliveredSeq}, ${seq})`,
      attempts: 0,
      nextAttemptAt: new Date(),
      ...(outcome.dropped !== undefined ? { lastError: outcome.dropped, dropped: sql`${pushConfigs.dropped} + 1` } : {}),
    })
    .where(held(taskId, id, owner))
    .returning({ id: pushConfigs.id });
  return rows.length > 0;
}

export async function deferPush(
  db: StoreDb,
  taskId: string,
  id: string,
  owner: string,
  attempts: number,
  nextAttemptAt: Date,
  error: string | undefined,
  deliveredSeq?: number,
): Promise<boolean> {
  const rows = await db
    .update(pushConfigs)
    .set({
      attempts,
      nextAttemptAt,
      ...(error !== undefined ? { lastError: error } : {}),
      ...(deliveredSeq !== undefined ? { deliveredSeq: sql`greatest(${pushConfigs.deliveredSeq}, ${deliveredSeq})` } : {}),
      leaseOwner: null,
      leaseUntil: null,
    })
    .where(held(taskId, id, owner))
    .returning({ id: pushConfigs.id });
  return rows.length > 0;
}

export async function loadSigningKeys(db: StoreDb): Promise<StoredSigningKey[]> {
  const rows = await db.select().from(signingKeys).orderBy(asc(signingKeys.createdAt));
  return rows.map((r) => ({
    kid: r.kid,
    alg: r.alg,
    privateJwk: r.privateJwk as Record<string, unknown>,
    publicJwk: r.publicJwk as Record<string, unknown>,
    createdAt: r.createdAt,
  }));
}

/** Two processes may generate a first key at once: the second insert is a no-op and both re-read. */
export async function saveSigningKey(db: StoreDb, key: StoredSigningKey): Promise<void> {
  await db.insert(signingKeys).values(key).onConflictDoNothing();
}
