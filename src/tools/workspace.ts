/**
 * Workspace confinement: every path a tool touches is resolved here first, and
 * anything whose real location (after following symlinks) lies outside the
 * workspace is refused.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ToolError } from './tool.js';

/** Outcome of {@link resolveInWorkspace}: the real absolute path, or why it is refused. */
export type ResolveResult = { ok: true; path: string } | { ok: false; error: ToolError };

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
 * The real path of `abs`, following symlinks even when the final target does not
 * exist yet (a dangling link is followed to where it would write). Returns
 * undefined on a symlink loop.
 */
function realPathOf(abs: string, hops = 0): string | undefined {
  if (hops > MAX_LINK_HOPS) return undefined;
  let existing = abs;
  const rest: string[] = [];
  for (;;) {
    try {
      return path.join(fs.realpathSync(existing), ...rest);
    } catch (err) {
      const code = errorCode(err);
      if (code === 'ELOOP') return undefined;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
    }
    // `existing` does not resolve: a dangling symlink, or simply not there yet.
    let link: string | undefined;
    try {
      if (fs.lstatSync(existing).isSymbolicLink()) link = fs.readlinkSync(existing);
    } catch {
      // not present at all; keep walking up
    }
    if (link !== undefined) {
      return realPathOf(path.resolve(path.dirname(existing), link, ...rest), hops + 1);
    }
    const parent = path.dirname(existing);
    if (parent === existing) return path.join(existing, ...rest);
    rest.unshift(path.basename(existing));
    existing = parent;
  }
}

/** True when `candidate` is `root` or lies beneath it (both absolute, normalised). */
export function isWithin(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate);
  return rel === '' || (rel !== '..' && !rel.startsWith('..' + path.sep) && !path.isAbsolute(rel));
}

/** The real path of the workspace itself, or an error when it is missing. */
export function realWorkspace(workspace: string): ResolveResult {
  try {
    return { ok: true, path: fs.realpathSync(path.resolve(workspace)) };
  } catch (err) {
    return {
      ok: false,
      error: { type: 'workspace_not_found', message: `The workspace ${workspace} is not accessible: ${errorReason(err)}` },
    };
  }
}

/**
 * Resolves a tool's path argument inside the workspace.
 *
 * Relative paths are taken against the workspace; symlinks along the longest
 * existing prefix (and dangling links) are followed, and the result must lie
 * inside the workspace's real path. The returned path is that real, absolute path.
 *
 * @param workspace absolute path of the session workspace
 * @param p the raw argument value (anything the model sent)
 * @param argName the argument's name, used in error messages
 */
export function resolveInWorkspace(workspace: string, p: unknown, argName: string): ResolveResult {
  if (typeof p !== 'string' || p.trim() === '') {
    return {
      ok: false,
      error: { type: 'invalid_argument', message: `${argName} must be a non-empty string path (absolute or relative to the workspace)` },
    };
  }
  if (p.includes('\0')) {
    return { ok: false, error: { type: 'invalid_argument', message: `${argName} must not contain a NUL character` } };
  }
  const ws = realWorkspace(workspace);
  if (!ws.ok) return ws;
  const outside: ResolveResult = {
    ok: false,
    error: { type: 'path_outside_workspace', message: `${argName} "${p}" is outside the workspace ${ws.path}` },
  };
  const lexical = path.resolve(ws.path, p);
  if (!isWithin(ws.path, lexical)) return outside;
  let real: string | undefined;
  try {
    real = realPathOf(lexical);
  } catch (err) {
    return { ok: false, error: { type: 'path_unresolvable', message: `Cannot resolve ${argName} "${p}": ${errorReason(err)}` } };
  }
  if (real === undefined) {
    return { ok: false, error: { type: 'path_unresolvable', message: `${argName} "${p}" is a symlink loop` } };
  }
  return isWithin(ws.path, real) ? { ok: true, path: real } : outside;
}

/** `abs` relative to the workspace with forward slashes (`.` for the workspace itself). */
export function workspaceRelative(workspace: string, abs: string): string {
  const ws = realWorkspace(workspace);
  const rel = path.relative(ws.ok ? ws.path : workspace, abs);
  return rel === '' ? '.' : rel.split(path.sep).join('/');
}

/** How to name a user-given path in a message: relative paths say what they are relative to. */
export function describeGivenPath(workspace: string, given: string): string {
  return path.isAbsolute(given) ? given : `${given} (relative to the workspace ${workspace})`;
}
