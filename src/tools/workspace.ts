/**
 * Workspace confinement: every path a tool touches is resolved here first, and
 * anything whose real location (after following symlinks) lies outside the
 * workspace, or is one of the server's own files ({@link ProtectedPaths}), is refused.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ToolError } from './tool.js';

/**
 * Outcome of {@link resolveInWorkspace}: the real absolute path — with the workspace's own real
 * path it was checked against, resolved in the same call (what it is relative to: {@link relativeIn}) —
 * or why it is refused.
 */
export type ResolveResult =
  | {
      ok: true;
      path: string;
      workspace: string;
      /** Nothing was there when it was resolved (the path is where it would be created). */
      missing?: true;
    }
  | { ok: false; error: ToolError };

/** Symlink hops followed before a path is declared a loop. */
const MAX_LINK_HOPS = 40;

/** The `code` of a Node system error, if any. */
export function errorCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : undefined;
}

/** A short reason from a Node system error, without the stack. */
export function errorReason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * One file-system question the path resolution asks: the real path of a path (realpath(3),
 * throwing its error), or the target of a symlink (undefined when it is none, or unreadable).
 * The resolution is written once, as steps that yield these questions ({@link realPathSteps},
 * {@link resolveSteps}); {@link askAsync} answers them off the event loop (libuv's thread
 * pool), which every tool call uses, and {@link askSync} on it, which only startup uses (the
 * server's own files, named in its configuration).
 */
type PathQuestion = { kind: 'realpath'; path: string } | { kind: 'linkTarget'; path: string };

/** Steps yielding {@link PathQuestion}s and ending with `T`. */
type PathSteps<T> = Generator<PathQuestion, T, string | undefined>;

/** Runs `steps`, answering each question through the thread pool: a slow or hung disk holds this call only. */
async function askAsync<T>(steps: PathSteps<T>): Promise<T> {
  let next = steps.next();
  while (next.done !== true) {
    const q = next.value;
    let answer: string | undefined;
    try {
      // One native realpath(3) call, not the JS fs.realpath's lstat per path component.
      answer = q.kind === 'realpath' ? await fs.promises.realpath(q.path) : await linkTarget(q.path);
    } catch (err) {
      next = steps.throw(err);
      continue;
    }
    next = steps.next(answer);
  }
  return next.value;
}

/**
 * Runs `steps` on the event loop. Only for paths the server's configuration names, at startup
 * (ProtectedPaths): never for a tool call.
 */
function askSync<T>(steps: PathSteps<T>): T {
  let next = steps.next();
  while (next.done !== true) {
    const q = next.value;
    let answer: string | undefined;
    try {
      answer = q.kind === 'realpath' ? fs.realpathSync.native(q.path) : linkTargetSync(q.path);
    } catch (err) {
      next = steps.throw(err);
      continue;
    }
    next = steps.next(answer);
  }
  return next.value;
}

/** The target of the symlink at `p`, or undefined when `p` is none (readlink fails EINVAL) or cannot be read. */
async function linkTarget(p: string): Promise<string | undefined> {
  try {
    return await fs.promises.readlink(p);
  } catch {
    return undefined;
  }
}

/** {@link linkTarget} on the event loop (see {@link askSync}). */
function linkTargetSync(p: string): string | undefined {
  try {
    return fs.readlinkSync(p);
  } catch {
    return undefined;
  }
}

/**
 * The real path of `abs`, following symlinks even when the final target does not
 * exist yet (a dangling link is followed to where it would write). Returns
 * undefined on a symlink loop (ELOOP, or more than MAX_LINK_HOPS dangling links followed).
 */
function* realPathSteps(abs: string): PathSteps<string | undefined> {
  return (yield* realPathWalk(abs))?.real;
}

/**
 * {@link realPathSteps}, also saying whether `abs` itself exists (`exists` false: the real path
 * is where it would be created). `realRoot`: a real path resolved just before, in the same
 * resolution (the workspace's): a walk up a path that does not exist stops there without
 * asking again.
 */
function* realPathWalk(abs: string, realRoot?: string): PathSteps<{ real: string; exists: boolean } | undefined> {
  let existing = abs;
  let rest: string[] = [];
  for (let hops = 0; hops <= MAX_LINK_HOPS;) {
    if (existing === realRoot && rest.length > 0) return { real: path.join(realRoot, ...rest), exists: false };
    try {
      const real = yield { kind: 'realpath', path: existing };
      return { real: path.join(real as string, ...rest), exists: rest.length === 0 };
    } catch (err) {
      const code = errorCode(err);
      if (code === 'ELOOP') return undefined;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
    }
    // `existing` does not resolve: a dangling symlink, or simply not there yet.
    const link = yield { kind: 'linkTarget', path: existing };
    if (link !== undefined) {
      existing = path.resolve(path.dirname(existing), link, ...rest);
      rest = [];
      hops++;
      continue;
    }
    const parent = path.dirname(existing);
    if (parent === existing) return { real: path.join(existing, ...rest), exists: false };
    rest.unshift(path.basename(existing));
    existing = parent;
  }
  return undefined;
}

/** `name` with the case of each letter swapped (`Auth.json` → `aUTH.JSON`). */
function swapCase(name: string): string {
  return [...name].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join('');
}

/**
 * Whether the file system holding `abs` ignores case: the nearest existing ancestor-or-self
 * whose name has letters is looked up under its swapped-case name, and is the same file. On the
 * event loop: asked once per protected path, when ProtectedPaths is built at startup.
 */
function caseInsensitiveAtSync(abs: string): boolean {
  for (let p = abs; ; p = path.dirname(p)) {
    const name = path.basename(p);
    const swapped = swapCase(name);
    if (swapped !== name) {
      let self: fs.Stats | undefined;
      try {
        self = fs.statSync(p);
      } catch {
        // not there (yet): ask its parent
      }
      if (self !== undefined) {
        try {
          const other = fs.statSync(path.join(path.dirname(p), swapped));
          return other.dev === self.dev && other.ino === self.ino;
        } catch {
          return false;
        }
      }
    }
    if (path.dirname(p) === p) return false;
  }
}

/**
 * The server's own files (its data directory, its keys, its settings): no file or search tool
 * reads, lists, searches or changes them, whatever the workspace. Each is kept as its real
 * path (symlinks resolved; a path that does not exist yet is resolved against its nearest
 * existing parent) and covers itself and everything beneath it. On a case-insensitive file
 * system, paths are compared without case.
 */
export class ProtectedPaths {
  /** Nothing protected (tools built without a server around them, e.g. in tests). */
  static readonly NONE = new ProtectedPaths([]);
  private readonly entries: ReadonlyArray<{ path: string; foldCase: boolean }>;

  /** @param paths absolute or cwd-relative paths of the server's own files and directories */
  constructor(paths: readonly string[]) {
    const seen = new Set<string>();
    const entries: Array<{ path: string; foldCase: boolean }> = [];
    for (const given of paths) {
      const abs = path.resolve(given);
      let real: string | undefined;
      try {
        // Built once at startup, from the paths the server is configured with: resolved on the event loop.
        real = askSync(realPathSteps(abs));
      } catch {
        // unreadable on the way: keep the path as given
      }
      const p = real ?? abs;
      if (seen.has(p)) continue;
      seen.add(p);
      entries.push({ path: p, foldCase: caseInsensitiveAtSync(p) });
    }
    this.entries = entries;
  }

  /** The protected real paths. */
  get paths(): string[] {
    return this.entries.map((e) => e.path);
  }

  /** True when the real path `real` is a protected path or lies beneath one. */
  covers(real: string): boolean {
    return this.entries.some((e) => (e.foldCase ? isWithin(e.path.toLowerCase(), real.toLowerCase()) : isWithin(e.path, real)));
  }

  /**
   * True when the entry at `abs` (in a real directory) is protected, or is a symlink that
   * leads, wherever it points, into a protected path: listings leave such entries out.
   */
  async hides(abs: string): Promise<boolean> {
    if (this.entries.length === 0) return false;
    if (this.covers(abs)) return true;
    let real: string | undefined;
    try {
      real = await askAsync(realPathSteps(abs));
    } catch {
      return false;
    }
    return real !== undefined && this.covers(real);
  }
}

/** The refusal of a path argument that names (or lies in) one of the server's own files. */
export function protectedPathError(argName: string, given: string): ToolError {
  return {
    type: 'path_protected',
    message:
      `${argName} "${given}" is one of this server's own files (its data, keys or settings); ` +
      'no tool may read, list, search or change them',
  };
}

/** True when `candidate` is `root` or lies beneath it (both absolute, normalised). */
export function isWithin(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate);
  return rel === '' || (rel !== '..' && !rel.startsWith('..' + path.sep) && !path.isAbsolute(rel));
}

/** The real path of the workspace itself, or an error when it is missing. */
export async function realWorkspace(workspace: string): Promise<ResolveResult> {
  return askAsync(realWorkspaceSteps(workspace));
}

function* realWorkspaceSteps(workspace: string): PathSteps<ResolveResult> {
  try {
    const real = (yield { kind: 'realpath', path: path.resolve(workspace) }) as string;
    return { ok: true, path: real, workspace: real };
  } catch (err) {
    return {
      ok: false,
      error: { type: 'workspace_not_found', message: `The workspace ${workspace} is not accessible: ${errorReason(err)}` },
    };
  }
}

/** Longest path a tool argument may name (Linux's PATH_MAX). */
export const MAX_PATH_CHARS = 4096;
/** Most folders a tool argument's path may have. */
export const MAX_PATH_PARTS = 256;

/**
 * Resolves a tool's path argument inside the workspace: the one place every file and search
 * tool turns a path into a real one, so the workspace and the server's own files are checked
 * for all of them.
 *
 * Relative paths are taken against the workspace; symlinks along the longest
 * existing prefix (and dangling links) are followed, and the result must lie
 * inside the workspace's real path (else `path_outside_workspace`) and outside every
 * protected path (else `path_protected`). The returned path is that real, absolute path.
 *
 * @param workspace absolute path of the session workspace
 * @param p the raw argument value (anything the model sent)
 * @param argName the argument's name, used in error messages
 * @param protectedPaths the server's own files (ProtectedPaths.NONE: none)
 */
export async function resolveInWorkspace(
  workspace: string,
  p: unknown,
  argName: string,
  protectedPaths: ProtectedPaths,
): Promise<ResolveResult> {
  // Judged when the call runs, on the disk as it is then: every call resolves afresh (no cache).
  return askAsync(resolveSteps(workspace, p, argName, protectedPaths));
}

function* resolveSteps(workspace: string, p: unknown, argName: string, protectedPaths: ProtectedPaths): PathSteps<ResolveResult> {
  if (typeof p !== 'string' || p.trim() === '') {
    return {
      ok: false,
      error: { type: 'invalid_argument', message: `${argName} must be a non-empty string path (absolute or relative to the workspace)` },
    };
  }
  if (p.includes('\0')) {
    return { ok: false, error: { type: 'invalid_argument', message: `${argName} must not contain a NUL character` } };
  }
  // Resolving walks up a path that does not exist folder by folder, each step a system call (on the
  // event loop once: a path thousands of folders deep cost a third of a second; now each holds a
  // thread of libuv's small pool, which every file operation of the server shares), and reads run unasked.
  if (p.length > MAX_PATH_CHARS || p.split(/[\\/]+/).length > MAX_PATH_PARTS) {
    return {
      ok: false,
      error: {
        type: 'invalid_argument',
        message: `${argName} is too long (at most ${MAX_PATH_CHARS} characters in ${MAX_PATH_PARTS} parts)`,
      },
    };
  }
  const ws = yield* realWorkspaceSteps(workspace);
  if (!ws.ok) return ws;
  const outside: ResolveResult = {
    ok: false,
    error: { type: 'path_outside_workspace', message: `${argName} "${p}" is outside the workspace ${ws.path}` },
  };
  const lexical = path.resolve(ws.path, p);
  if (!isWithin(ws.path, lexical)) return outside;
  let walk: { real: string; exists: boolean } | undefined;
  try {
    walk = yield* realPathWalk(lexical, ws.path);
  } catch (err) {
    return { ok: false, error: { type: 'path_unresolvable', message: `Cannot resolve ${argName} "${p}": ${errorReason(err)}` } };
  }
  if (walk === undefined) {
    return { ok: false, error: { type: 'path_unresolvable', message: `${argName} "${p}" is a symlink loop` } };
  }
  const { real, exists } = walk;
  if (!isWithin(ws.path, real)) return outside;
  if (protectedPaths.covers(real)) return { ok: false, error: protectedPathError(argName, p) };
  return { ok: true, path: real, workspace: ws.path, ...(exists ? {} : { missing: true as const }) };
}

/** Constructor options shared by the file and search tools. */
export interface WorkspaceToolOptions {
  /** The server's own files, refused as arguments and left out of listings (default: none). */
  protectedPaths?: ProtectedPaths;
}

/** The workspace's real path, or the path as given when it cannot be resolved (then nothing real lies within it). */
export async function realWorkspacePath(workspace: string): Promise<string> {
  const ws = await realWorkspace(workspace);
  return ws.ok ? ws.path : workspace;
}

/** `abs` relative to the workspace's real path `realWorkspace` (ResolveResult.workspace), with forward slashes (`.` for the workspace itself). */
export function relativeIn(realWorkspace: string, abs: string): string {
  const rel = path.relative(realWorkspace, abs);
  return rel === '' ? '.' : rel.split(path.sep).join('/');
}

/** How to name a user-given path in a message: relative paths say what they are relative to. */
export function describeGivenPath(workspace: string, given: string): string {
  return path.isAbsolute(given) ? given : `${given} (relative to the workspace ${workspace})`;
}

/** Outcome of {@link readRegularFile}: the bytes, or why the file was not read. */
export type RegularFileRead =
  | {
      ok: true;
      bytes: Buffer;
      /** With `truncate`: the file had more than `maxBytes` bytes (the first `maxBytes` are returned). */
      truncated?: boolean;
    }
  | {
      ok: false;
      /** `changed`: the path was replaced (by a link or another file) between the check and the open. */
      reason: 'missing' | 'directory' | 'not_regular' | 'too_large' | 'changed' | 'error';
      /** A phrase completing "<file> …", e.g. "is a named pipe (FIFO), not a regular file". */
      message: string;
      /** The file's size, for `too_large`. */
      size?: number;
    };

/** How a non-regular file is named in messages ("a named pipe (FIFO)"). */
export function fileKind(stat: fs.Stats): string {
  if (stat.isFIFO()) return 'a named pipe (FIFO)';
  if (stat.isSocket()) return 'a socket';
  if (stat.isCharacterDevice()) return 'a character device';
  if (stat.isBlockDevice()) return 'a block device';
  if (stat.isSymbolicLink()) return 'a symbolic link';
  return 'not a regular file';
}

/** Open flags of {@link readRegularFile}: a FIFO or device opens without waiting, a link is not followed. */
const SAFE_OPEN_FLAGS =
  fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0) | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NOCTTY ?? 0);

/**
 * The one way tools read a file's content: only a regular file of at most `maxBytes` is read,
 * and never on the event loop. `real` must be a real path (from resolveInWorkspace, or a walk
 * of real directories), so its last component is not a link: it is checked with lstat, opened
 * with O_NOFOLLOW (a link swapped in since fails) and O_NONBLOCK (a FIFO swapped in does not
 * hang the open), and the opened descriptor must be a regular file with the same device and
 * inode as checked. The read stops at `maxBytes` + 1 bytes, so a file that grows is cut off.
 * A named pipe, socket or device (`/dev/zero`) is refused before it is opened. With
 * `truncate`, a larger file is not refused: its first `maxBytes` are returned, `truncated` set.
 */
export async function readRegularFile(real: string, maxBytes: number, options: { truncate?: boolean } = {}): Promise<RegularFileRead> {
  let before: fs.Stats;
  try {
    before = await fs.promises.lstat(real);
  } catch (err) {
    const code = errorCode(err);
    if (code === 'ENOENT' || code === 'ENOTDIR') return { ok: false, reason: 'missing', message: 'does not exist' };
    return { ok: false, reason: 'error', message: `cannot be read: ${errorReason(err)}` };
  }
  if (before.isDirectory()) return { ok: false, reason: 'directory', message: 'is a directory, not a file' };
  if (!before.isFile()) return { ok: false, reason: 'not_regular', message: `is ${fileKind(before)}, not a regular file` };
  const tooLarge = (size: number): RegularFileRead => ({
    ok: false,
    reason: 'too_large',
    message: `is ${size} bytes, over the ${maxBytes}-byte limit`,
    size,
  });
  if (before.size > maxBytes && options.truncate !== true) return tooLarge(before.size);
  let handle: fs.promises.FileHandle;
  try {
    handle = await fs.promises.open(real, SAFE_OPEN_FLAGS);
  } catch (err) {
    if (errorCode(err) === 'ELOOP') return { ok: false, reason: 'changed', message: 'was replaced by a symbolic link while being read' };
    if (errorCode(err) === 'ENOENT') return { ok: false, reason: 'missing', message: 'does not exist' };
    return { ok: false, reason: 'error', message: `cannot be read: ${errorReason(err)}` };
  }
  try {
    const opened = await handle.stat();
    if (!opened.isFile() || opened.dev !== before.dev || opened.ino !== before.ino) {
      return { ok: false, reason: 'changed', message: 'was replaced by another file while being read' };
    }
    const bytes = await readAtMost(handle, maxBytes + 1, opened.size);
    if (bytes.length <= maxBytes) return { ok: true, bytes };
    return options.truncate === true ? { ok: true, bytes: bytes.subarray(0, maxBytes), truncated: true } : tooLarge(bytes.length);
  } catch (err) {
    return { ok: false, reason: 'error', message: `cannot be read: ${errorReason(err)}` };
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/**
 * Up to `limit` bytes from the start of an open regular file of `expected` bytes: one read of
 * `expected` + 1 bytes, whose short count is the end of the file; only a file that grew since
 * its stat is read on, in 64 KiB chunks, until `limit`.
 */
async function readAtMost(handle: fs.promises.FileHandle, limit: number, expected: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  let want = Math.min(limit, expected + 1);
  while (total < limit) {
    const chunk = Buffer.allocUnsafe(Math.min(want, limit - total));
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, total);
    chunks.push(chunk.subarray(0, bytesRead));
    total += bytesRead;
    if (bytesRead < chunk.length) break;
    want = 64 * 1024;
  }
  return Buffer.concat(chunks, total);
}
