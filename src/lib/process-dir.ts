/**
 * A private directory of this process's in the host's temp directory, made on first use (and
 * again if something removed it), filled by `fill`, removed when the process exits.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A getter of the directory (`<tmp>/<prefix>-XXXXXX`), made lazily; `fill` sets it up each time it is made. */
export function processDir(prefix: string, fill: (dir: string) => void): () => string {
  let current: string | undefined;
  return () => {
    if (current !== undefined && fs.existsSync(current)) return current;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`));
    fill(dir);
    if (current === undefined) process.once('exit', () => current !== undefined && fs.rmSync(current, { recursive: true, force: true }));
    current = dir;
    return dir;
  };
}
