/**
 * Checkpoint queries of PgTaskStore (see schema.checkpoints): one row per call, written once,
 * found by call id or by name, listed newest first.
 */
import { and, desc, eq, getTableColumns, isNull, sql, type SQL } from 'drizzle-orm';
import type { Checkpoint, CheckpointFile } from '../agent/task-store.js';
import type { StoreDb } from './db.js';
import { checkpoints } from './schema.js';

type Row = typeof checkpoints.$inferSelect;

function fromRow(r: Row): Checkpoint {
  return {
    callId: r.callId,
    name: r.name,
    taskId: r.taskId,
    contextId: r.contextId,
    workspace: r.workspace,
    ...(r.principal !== null ? { principal: r.principal } : {}),
    toolName: r.toolName,
    historyLength: r.historyLength,
    ...(r.messageId !== null ? { messageId: r.messageId } : {}),
    files: r.files as CheckpointFile[],
    ...(r.restoreOf !== null ? { restoreOf: r.restoreOf } : {}),
    createdAt: r.createdAt,
  };
}

/** The first checkpoint of a call stays. */
export async function saveCheckpoint(db: StoreDb, c: Checkpoint): Promise<void> {
  await db
    .insert(checkpoints)
    .values({
      callId: c.callId,
      name: c.name,
      taskId: c.taskId,
      contextId: c.contextId,
      workspace: c.workspace,
      principal: c.principal ?? null,
      toolName: c.toolName,
      historyLength: c.historyLength,
      messageId: c.messageId ?? null,
      files: c.files.map((f) => (f.content === undefined ? { path: f.path } : { path: f.path, content: f.content })),
      restoreOf: c.restoreOf ?? null,
      createdAt: c.createdAt,
    })
    .onConflictDoNothing();
}

export async function loadCheckpoint(db: StoreDb, key: string, of?: { principal: string | undefined }): Promise<Checkpoint | undefined> {
  const [byId] = await db.select().from(checkpoints).where(eq(checkpoints.callId, key));
  if (byId) return fromRow(byId);
  const owner =
    of === undefined ? undefined : of.principal === undefined ? isNull(checkpoints.principal) : eq(checkpoints.principal, of.principal);
  const [byName] = await db
    .select()
    .from(checkpoints)
    .where(and(eq(checkpoints.name, key), owner))
    .orderBy(desc(checkpoints.createdAt), desc(checkpoints.callId))
    .limit(1);
  return byName && fromRow(byName);
}

/** Newest first; each file by its path only (a list names checkpoints, loadCheckpoint restores one). */
export async function listCheckpoints(db: StoreDb, q: { workspace?: string; principal?: string; limit: number }): Promise<Checkpoint[]> {
  const filters: SQL[] = [];
  if (q.workspace !== undefined) filters.push(eq(checkpoints.workspace, q.workspace));
  if (q.principal !== undefined) filters.push(eq(checkpoints.principal, q.principal));
  // The files' paths only: a file's content is up to 2 MiB, and a list of 100 would carry them all.
  const files = sql<CheckpointFile[]>`(select coalesce(jsonb_agg(jsonb_build_object('path', f->'path') order by n), '[]'::jsonb)
    from jsonb_array_elements(${checkpoints.files}) with ordinality as e(f, n))`;
  const rows = await db
    .select({ ...getTableColumns(checkpoints), files })
    .from(checkpoints)
    .where(filters.length ? and(...filters) : undefined)
    .orderBy(desc(checkpoints.createdAt), desc(checkpoints.callId))
    .limit(Math.max(0, Math.floor(q.limit)));
  return rows.map(fromRow);
}
