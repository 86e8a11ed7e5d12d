/** Where a path a tool would follow lies in the workspace, links resolved (the sandbox's tool-config binds). */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { isWithin } from '../workspace.js';

/** True when `p` lies strictly beneath `dir` (not `dir` itself). */
const beneath = (dir: string, p: string): boolean => p !== dir && isWithin(dir, p);

/**
 * Where `p` lies, links resolved: the real path when it exists; else the first missing
 * component under the real path of its deepest existing ancestor (what a command would have to
 * create first). Undefined when that is outside the workspace.
 */
export async function locate(
  workspace: string,
  p: string,
  kind: 'file' | 'dir',
): Promise<{ path: string; kind: 'file' | 'dir'; exists: boolean } | undefined> {
  const real = await fsp.realpath(p).catch(() => undefined);
  if (real !== undefined) {
    const st = await fsp.stat(real).catch(() => undefined);
    if (st === undefined || !beneath(workspace, real)) return undefined;
    return { path: real, kind: st.isDirectory() ? 'dir' : 'file', exists: true };
  }
  let missing = p;
  for (let i = 0; i < 256; i++) {
    const parent = path.dirname(missing);
    const realParent = await fsp.realpath(parent).catch(() => undefined);
    if (realParent !== undefined) {
      const first = path.join(realParent, path.basename(missing));
      if (!beneath(workspace, first)) return undefined;
      return { path: first, kind: missing === p ? kind : 'dir', exists: false };
    }
    if (parent === missing) return undefined;
    missing = parent;
  }
  return undefined;
}
