/**
 * The workspace walker shared by `glob`, `search_file_content` and `read_many_files`,
 * with glob-pattern resolution and a small `.gitignore` reader.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import picomatch from 'picomatch';
import type { ToolError } from '../tool.js';
import { protectedPathError, readRegularFile, resolveInWorkspace, type ProtectedPaths } from '../workspace.js';
import { checkGlobComplexity, compileGlob, type CompiledGlob } from './glob-pattern.js';

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
  /**
   * Called once per directory that has subdirectories, with their real paths; resolves to a
   * flag per subdirectory, true skipping it with everything below, or undefined to stop the
   * walk. Asynchronous so that the matching runs in the search worker (path-filter.ts), not on
   * the event loop. Files are not pruned here: callers filter them in batches (PathFilter.stream).
   */
  prune?: (dirs: readonly string[]) => Promise<readonly boolean[] | undefined>;
}

/** An entry of one directory that the walk would take, before pruning. */
interface Candidate {
  rel: string;
  abs: string;
  real: string;
  isDir: boolean;
}

/**
 * Yields the regular files under `root` (a real directory path inside the workspace),
 * depth-first in name order. Symlinked files are yielded when their target is a file
 * inside the workspace; symlinked directories are not descended into (as ripgrep and
 * the glob package do by default), which also rules out cycles and duplicates.
 * Unreadable directories and the server's own files are skipped.
 */
export async function* walkFiles(root: string, options: WalkOptions): AsyncGenerator<WalkEntry> {
  const { signal, prune } = options;
  const pending: string[] = [''];
  while (pending.length > 0) {
    if (signal?.aborted) return;
    const relDir = pending.pop() as string;
    const candidates = await directoryCandidates(root, relDir, options);
    if (candidates === undefined) continue;
    const dirs = candidates.filter((c) => c.isDir);
    const skip = prune && dirs.length > 0 ? await prune(dirs.map((d) => d.real)) : [];
    if (skip === undefined) return;
    const subdirs: string[] = [];
    for (const [i, dir] of dirs.entries()) if (skip[i] !== true) subdirs.push(dir.rel);
    for (const c of candidates) {
      if (signal?.aborted) return;
      if (!c.isDir) yield { rel: c.rel, abs: c.abs, real: c.real };
    }
    // Reversed so that popping visits subdirectories in name order.
    for (const dir of subdirs.reverse()) pending.push(dir);
  }
}

/** The entries of one directory the walk may take, in name order; undefined when it cannot be read. */
async function directoryCandidates(root: string, relDir: string, options: WalkOptions): Promise<Candidate[] | undefined> {
  const { skipDirs, protectedPaths } = options;
  const recursive = options.recursive ?? true;
  let entries;
  try {
    entries = await fs.readdir(path.join(root, relDir), { withFileTypes: true });
  } catch {
    return undefined;
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const out: Candidate[] = [];
  for (const entry of entries) {
    if (options.signal?.aborted) break;
    const rel = relDir === '' ? entry.name : `${relDir}/${entry.name}`;
    const abs = path.join(root, rel);
    if (entry.isDirectory()) {
      if (recursive && !skipDirs?.has(entry.name) && !protectedPaths.covers(abs)) out.push({ rel, abs, real: abs, isDir: true });
    } else if (entry.isFile()) {
      if (!protectedPaths.covers(abs)) out.push({ rel, abs, real: abs, isDir: false });
    } else if (entry.isSymbolicLink()) {
      const real = await linkedFile(options.workspace, abs, protectedPaths);
      if (real !== undefined) out.push({ rel, abs, real, isDir: false });
    }
    // FIFOs, sockets and devices are never yielded: no tool reads them.
  }
  return out;
}

/** The real path of a symlink's target when it is a regular file inside the workspace and not protected. */
async function linkedFile(workspace: string, link: string, protectedPaths: ProtectedPaths): Promise<string | undefined> {
  const resolved = await resolveInWorkspace(workspace, link, 'entry', protectedPaths);
  if (!resolved.ok) return undefined;
  try {
    return (await fs.stat(resolved.path)).isFile() ? resolved.path : undefined;
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
export async function resolvePattern(
  workspace: string,
  searchDir: string,
  pattern: unknown,
  argName: string,
  protectedPaths: ProtectedPaths,
): Promise<{ ok: true; pattern: ResolvedPattern } | { ok: false; error: ToolError }> {
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
  const resolved = await resolveInWorkspace(workspace, baseLexical, argName, protectedPaths);
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

/** True when `dir` is an existing directory. */
export async function isDirectory(dir: string): Promise<boolean> {
  return (await pathKind(dir)) === 'directory';
}

/** What lies at `p` (symlinks followed), asked off the event loop (`p` comes from a tool argument). */
export async function pathKind(p: string): Promise<'directory' | 'file' | 'missing' | 'other'> {
  try {
    const stat = await fs.stat(p);
    return stat.isDirectory() ? 'directory' : stat.isFile() ? 'file' : 'other';
  } catch {
    return 'missing';
  }
}

/** Bytes of `.gitignore` read at most; a larger one is not used (with a note). */
export const GITIGNORE_MAX_BYTES = 256 * 1024;
/** Rules of `.gitignore` used at most: each costs a match per walked path. */
export const GITIGNORE_MAX_RULES = 2_000;

/** The workspace `.gitignore` as globs for a PathFilter, with notes on what was left out. */
export interface Gitignore {
  /** Matched against paths relative to the workspace; `dirOnly` rules match directories only. */
  globs: CompiledGlob[];
  /** Why the file or some of its lines were not used, for the tool's output. */
  notes: string[];
}

/**
 * Reads the workspace root `.gitignore` (only that file) and compiles its rules to globs that
 * the search worker matches (a PathFilter): a line is a pattern from the workspace, so it never
 * runs on the event loop. The file is read only when it is a regular file inside the workspace
 * (a link to a file in the workspace is followed) of at most {@link GITIGNORE_MAX_BYTES}, through
 * readRegularFile: a named pipe, a device or a link out of the workspace is ignored with a note.
 * Supported subset: blank and `#` lines, `dir/` (directories only), `*.ext` and other slash-less
 * patterns (base name at any depth), `/anchored` and `a/b` patterns (relative to the root), `**`.
 * Negation (`!pattern`) is ignored rather than half-implemented: it can only make fewer files
 * ignored, so a file it would re-include stays hidden. A line over the glob complexity limit
 * is skipped with a note. Returns undefined when there is no `.gitignore` and nothing to note.
 */
export async function loadGitignore(workspace: string, protectedPaths: ProtectedPaths): Promise<Gitignore | undefined> {
  const resolved = await resolveInWorkspace(workspace, '.gitignore', '.gitignore', protectedPaths);
  if (!resolved.ok) return { globs: [], notes: [`.gitignore was not used: ${resolved.error.message}`] };
  const read = await readRegularFile(resolved.path, GITIGNORE_MAX_BYTES);
  if (!read.ok) return read.reason === 'missing' ? undefined : { globs: [], notes: [`.gitignore was not used: it ${read.message}`] };
  const globs: CompiledGlob[] = [];
  const notes: string[] = [];
  let skipped = 0;
  for (const raw of read.bytes.toString('utf8').split(/\r?\n/)) {
    let line = raw.replace(/(?<!\\)\s+$/, '');
    if (line === '' || line.startsWith('#') || line.startsWith('!')) continue;
    const dirOnly = line.endsWith('/');
    if (dirOnly) line = line.replace(/\/+$/, '');
    // git: a slash at the start or in the middle anchors the pattern to the .gitignore's directory.
    const anchored = line.includes('/');
    line = line.replace(/^\/+/, '');
    if (line === '') continue;
    const compiled = globs.length < GITIGNORE_MAX_RULES ? compileGlob(line, { basename: !anchored }, '.gitignore line') : undefined;
    if (!compiled?.ok) {
      skipped++;
      continue;
    }
    globs.push({ ...compiled.glob, dirOnly });
  }
  if (skipped > 0) {
    notes.push(
      `${skipped} .gitignore line(s) were not used (over the glob complexity limit, or past the first ${GITIGNORE_MAX_RULES} rules)`,
    );
  }
  return globs.length === 0 && notes.length === 0 ? undefined : { globs, notes };
}
