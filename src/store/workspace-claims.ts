/**
 * Workspace ownership (TaskStore.claimWorkspace): a directory belongs to the principal that
 * claimed it first, and no other principal may claim it, a directory inside it or one that
 * contains it. Decided in the database: the claim runs under a table lock, so of two claims of
 * overlapping directories from any two processes only the first commits.
 */
import { and, eq, ne, or, sql } from 'drizzle-orm';
import type { WorkspaceClaim } from '../agent/task-store.js';
import { anyOf, type StoreDb } from './db.js';
import { workspaceClaims } from './schema.js';
import { belowPrefix, selfAndAncestors } from './workspace-paths.js';

/** See TaskStore.claimWorkspace. */
export async function claimWorkspace(db: StoreDb, dir: string, principal: string): Promise<WorkspaceClaim> {
  // Already this principal's: nothing can overlap it (every later claim was checked against it).
  const [own] = await db.select({ principal: workspaceClaims.principal }).from(workspaceClaims).where(eq(workspaceClaims.path, dir));
  if (own?.principal === principal) return { ok: true };
  return db.transaction(async (tx) => {
    // Claims are rare (a principal's first context on a directory): serialising them is cheap.
    await tx.execute(sql`lock table ${workspaceClaims} in share row exclusive mode`);
    const [other] = await tx
      .select({ path: workspaceClaims.path })
      .from(workspaceClaims)
      .where(
        and(
          ne(workspaceClaims.principal, principal),
          or(
            sql`${workspaceClaims.path} = ${anyOf(selfAndAncestors(dir))}`,
            sql`starts_with(${workspaceClaims.path}, ${belowPrefix(dir)})`,
          ),
        ),
      )
      .limit(1);
    if (other !== undefined) return { ok: false as const, conflict: other.path };
    await tx.insert(workspaceClaims).values({ path: dir, principal }).onConflictDoNothing();
    return { ok: true as const };
  });
}
