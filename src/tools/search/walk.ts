/**
 * The workspace walker shared by `glob`, `search_file_content` and `read_many_files`,
 * with glob-pattern resolution and a small `.gitignore` reader.
 */
import { readFileSync, statSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import picomatch from 'picomatch';
import type { ToolError } from '../tool.js';
import { protectedPathError, resolveInWorkspace, type ProtectedPaths } from '../workspace.js';
import { checkGlobComplexity } from './glob-pattern.js';

/** Directory names never walked by `glob` and `search_file_content`. */
export const ALWAYS_SKIPPED_DIRS: ReadonlySet<string> = new Set(['node_modules', '.git']);

/** One file found by {@link walkFiles}. */
export interface WalkEntry {
  /** Path relative to the walk root, with forward slashes. */
  rel: string;
  /** The root joined with `rel` (a symlinked file keeps its link's path). */
  abs: string;
  /** The file's real path (symlinks followed); always inside the workspace. */
  real: string;
}

/** Options of {@link walkFiles}. */
export interface WalkOptions {
  /** Real path of the workspace: symlinked files whose target lies outside it are skipped. */
  workspace: string;
  /** The server's own files: never yielded nor descended into, nor reached through a symlink. */
  protectedPaths: ProtectedPaths;
  /** Directory names not descended into, at any depth. */
  skipDirs?: ReadonlySet<string>;
  /** Descend into subdirectories (default true). */
  recursive?: boolean;
  /** Stops the walk at the next directory or file when aborted. */
  signal?: AbortSignal;
  /** `real` is the directory's or file's real path; true skips it (a directory with everything below). */
  ignore?: (real: string, isDir: boolean) => boolean;
}

/**
 * Yields the regular files under `root` (a real directory path inside the workspace),
 * depth-first in name order. Symlinked files are yielded when their target is a file
 * inside the workspace; symlinked directories are not descended into (as ripgrep and
 * the glob package do by default), which also rules out cycles and duplicates.
 * Unreadable directories and the server's own files are skipped.
 */
export async function* walkFiles(root: string, options: WalkOptions): AsyncGenerator<WalkEntry> {
  const { skipDirs, signal, ignore, protectedPaths } = options;
  const recursive = options.recursive ?? true;
  const pending: string[] = [''];
  while (pending.length > 0) {
    if (signal?.aborted) return;
    const relDir = pending.pop() as string;
    let entries;
    try {
      entries = await fs.readdir(path.join(root, relDir), { withFileTypes: true });
    } catch {
      continue;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const subdirs: string[] = [];
    for (const entry of entries) {
      if (signal?.aborted) return;
      const rel = relDir === '' ? entry.name : `${relDir}/${entry.name}`;
      const abs = path.join(root, rel);
      if (entry.isDirectory()) {
        if (recursive && !skipDirs?.has(entry.name) && !protectedPaths.covers(abs) && !ignore?.(abs, true)) subdirs.push(rel);
      } else if (entry.isFile()) {
        if (!protectedPaths.covers(abs) && !ignore?.(abs, false)) yield { rel, abs, real: abs };
      } else if (entry.isSymbolicLink()) {
        const real = linkedFile(options.workspace, abs, protectedPaths);
        if (real !== undefined && !ignore?.(real, false)) yield { rel, abs, real };
      }
    }
    // Reversed so that popping visits subdirectories in name order.
    for (const dir of subdirs.reverse()) pending.push(dir);
  }
}

/** The real path of a symlink's target when it is a regular file inside the workspace and not protected. */
function linkedFile(workspace: string, link: string, protectedPaths: ProtectedPaths): string | undefined {
  const resolved = resolveInWorkspace(workspace, link, 'entry', protectedPaths);
  if (!resolved.ok) return undefined;
  try {
    return statSync(resolved.path).isFile() ? resolved.path : undefined;
  } catch {
    return undefined;
  }
}

/** A glob argument split into the directory to walk and the pattern to match below it. */
export interface ResolvedPattern {
  /** Real path of the pattern's literal leading directories (may not exist). */
  baseReal: string;
  /** The search directory joined with those directories, as the user would name them. */
  baseLexical: string;
  /** The pattern relative to the base (a literal name is escaped). */
  glob: string;
  /** The whole pattern relative to the search directory; undefined when the base lies outside it. */
  relPattern?: string;
}

/**
 * Resolves a glob argument against `searchDir` (a real directory inside the workspace).
 * Its literal leading directories go through resolveInWorkspace, so `../`, symlinks
 * out of the workspace and the server's own directories are refused like any path
 * argument; `..` after the first glob character and negated patterns are refused too,
 * and so is a pattern over the complexity limit (`pattern_too_complex`, glob-pattern.ts).
 */
export function resolvePattern(
  workspace: string,
  searchDir: string,
  pattern: unknown,
  argName: string,
  protectedPaths: ProtectedPaths,
): { ok: true; pattern: ResolvedPattern } | { ok: false; error: ToolError } {
  const invalid = (message: string): { ok: false; error: ToolError } => ({ ok: false, error: { type: 'invalid_argument', message } });
  if (typeof pattern !== 'string' || pattern.trim() === '') return invalid(`${argName} must be a non-empty glob pattern string`);
  if (pattern.includes('\0')) return invalid(`${argName} must not contain a NUL character`);
  const tooComplex = checkGlobComplexity(pattern, argName);
  if (tooComplex) return { ok: false, error: tooComplex };
  const scan = picomatch.scan(pattern);
  if (scan.negated) return invalid(`${argName} "${pattern}" is a negated pattern; negation is not supported here`);
  const base = scan.isGlob ? scan.base : path.dirname(pattern);
  const glob = scan.isGlob ? scan.glob : escapeGlob(path.basename(pattern));
  if (glob.split('/').includes('..')) {
    return invalid(`${argName} "${pattern}" must not contain ".." after a wildcard; name the directory before the wildcard instead`);
  }
  const baseLexical = path.resolve(searchDir, base === '' ? '.' : base);
  const resolved = resolveInWorkspace(workspace, baseLexical, argName, protectedPaths);
  if (!resolved.ok) {
    if (resolved.error.type === 'path_protected') return { ok: false, error: protectedPathError(argName, pattern) };
    if (resolved.error.type !== 'path_outside_workspace') return resolved;
    return { ok: false, error: { ...resolved.error, message: `${argName} "${pattern}" reaches outside the workspace ${workspace}` } };
  }
  const relBase = path.relative(searchDir, baseLexical).split(path.sep).join('/');
  const inside = relBase !== '..' && !relBase.startsWith('../') && !path.isAbsolute(relBase);
  const out: ResolvedPattern = { baseReal: resolved.path, baseLexical, glob };
  if (inside) out.relPattern = relBase === '' ? glob : `${relBase}/${glob}`;
  return { ok: true, pattern: out };
}

/** `name` with glob characters escaped, so picomatch matches it literally. */
function escapeGlob(name: string): string {
  return name.replace(/[\\*?[\]{}()!+@]/g, '\\$&');
}

/**
 * A matcher for a filter pattern (include/exclude): a pattern without `/` matches the
 * base name at any depth (`*.ts`), as ripgrep's and Gemini CLI's filters do; one with
 * `/` matches the whole relative path (`src/**\/*.ts`). Dot files match.
 * It matches on the calling thread with no time limit: for a pattern from the model, use
 * compileGlob (glob-pattern.ts) with `basename: !pattern.includes('/')` and a PathFilter.
 */
export function filterMatcher(pattern: string, nocase = false): (rel: string) => boolean {
  return picomatch(pattern, { dot: true, nocase, basename: !pattern.includes('/') });
}

/** True when `dir` is an existing directory. */
export function isDirectory(dir: string): boolean {
  return pathKind(dir) === 'directory';
}

/** What lies at `p` (symlinks followed). */
export function pathKind(p: string): 'directory' | 'file' | 'missing' | 'other' {
  try {
    const stat = statSync(p);
    return stat.isDirectory() ? 'directory' : stat.isFile() ? 'file' : 'other';
  } catch {
    return 'missing';
  }
}

interface IgnoreRule {
  match: (p: string) => boolean;
  dirOnly: boolean;
  anchored: boolean;
}

/**
 * Reads the workspace root `.gitignore` (only that file) and returns a predicate over
 * paths relative to the workspace. Supported subset: blank and `#` lines, `dir/`
 * (directories only), `*.ext` and other slash-less patterns (base name at any depth),
 * `/anchored` and `a/b` patterns (relative to the root), `**`. Negation (`!pattern`) is
 * ignored rather than half-implemented: it can only make fewer files ignored, so a file
 * it would re-include stays hidden. A line over the glob complexity limit is skipped:
 * these rules match on the calling thread, for every entry walked.
 * Returns undefined when there is no `.gitignore`.
 */
export function loadGitignore(workspace: string): ((relToWorkspace: string, isDir: boolean) => boolean) | undefined {
  let text: string;
  try {
    text = readFileSync(path.join(workspace, '.gitignore'), 'utf8');
  } catch {
    return undefined;
  }
  const rules: IgnoreRule[] = [];
  for (const raw of text.split(/\r?\n/)) {
    let line = raw.replace(/(?<!\\)\s+$/, '');
    if (line === '' || line.startsWith('#') || line.startsWith('!')) continue;
    const dirOnly = line.endsWith('/');
    if (dirOnly) line = line.replace(/\/+$/, '');
    // git: a slash at the start or in the middle anchors the pattern to the .gitignore's directory.
    const anchored = line.includes('/');
    line = line.replace(/^\/+/, '');
    if (line === '' || checkGlobComplexity(line, '.gitignore line') !== undefined) continue;
    rules.push({ match: picomatch(line, { dot: true }), dirOnly, anchored });
  }
  if (rules.length === 0) return undefined;
  return (rel, isDir) => rules.some((r) => (!r.dirOnly || isDir) && r.match(r.anchored ? rel : path.posix.basename(rel)));
}
