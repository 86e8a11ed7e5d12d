/** How workspace claims overlap (TaskStore.claimWorkspace), for both stores: no database imports here. */
import path from 'node:path';

/** `dir` and every directory above it, up to the root (absolute paths, as the workspace policy gives them). */
export function selfAndAncestors(dir: string): string[] {
  const out = [dir];
  for (let cur = dir, up = path.dirname(cur); up !== cur; cur = up, up = path.dirname(cur)) out.push(up);
  return out;
}

/** The prefix every directory below `dir` starts with. */
export const belowPrefix = (dir: string): string => (dir.endsWith(path.sep) ? dir : dir + path.sep);
