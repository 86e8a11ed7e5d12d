/**
 * A fixture directory of a test file's own, made at import time. Not `t.testdir` at a file's top
 * level: the unit and in-process suites import many files into one process, where every top-level
 * `t.testdir` is the same directory and the last one written replaces the others'.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';

/** A layout: a string is a file's content, `{ symlink: target }` a link, an object a folder. */
export interface Layout {
  [name: string]: string | { symlink: string } | Layout;
}

function make(layout: Layout, at: string): void {
  for (const [name, value] of Object.entries(layout)) {
    const p = path.join(at, name);
    if (typeof value === 'string') fs.writeFileSync(p, value);
    else if (typeof value.symlink === 'string') fs.symlinkSync(value.symlink, p);
    else {
      fs.mkdirSync(p);
      make(value, p);
    }
  }
}

/** A fresh directory (real path) holding `layout`, removed when the test file ends. */
export function ownDir(prefix: string, layout: Layout = {}): string {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`)));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  make(layout, dir);
  return dir;
}
