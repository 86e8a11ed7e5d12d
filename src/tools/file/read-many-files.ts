/** `read_many_files`: concatenates the text files named by paths, directories and globs. */
import fs from 'node:fs/promises';
import path from 'node:path';
import picomatch from 'picomatch';
import { compileGlob, type CompiledGlob } from '../search/glob-pattern.js';
import { DEFAULT_MATCH_BUDGET_MS, MatchBudget, PathFilter } from '../search/path-filter.js';
import { RegexWorker } from '../search/regex-worker.js';
import { pathKind, resolvePattern, walkFiles, type WalkEntry } from '../search/walk.js';
import type { Tool, ToolContext, ToolError, ToolParameterSchema, ToolResult, Validation } from '../tool.js';
import {
  fileKind,
  ProtectedPaths,
  protectedPathError,
  realWorkspace,
  resolveInWorkspace,
  type WorkspaceToolOptions,
} from '../workspace.js';
import { readTextFile } from './read-file.js';

/** Arguments of `read_many_files`. */
export interface ReadManyFilesArgs extends Record<string, unknown> {
  /** Files, directories or glob patterns, relative to the workspace. */
  paths: string[];
  /** Extra glob patterns, read as if they were in `paths`. */
  include?: string[];
  /** Glob patterns of files to leave out (a pattern without `/` matches the base name). */
  exclude?: string[];
  /** Whether directories are read recursively (default true). */
  recursive?: boolean;
  /** Whether {@link DEFAULT_EXCLUDED_DIRS} and {@link DEFAULT_EXCLUDED_FILES} apply (default true). */
  useDefaultExcludes?: boolean;
}

/** Constructor options of {@link ReadManyFilesTool}. */
export interface ReadManyFilesOptions extends WorkspaceToolOptions {
  /** Stop adding files once the content would exceed this many bytes (default 1 MB). */
  maxTotalBytes?: number;
  /** Read at most this many files (default 500). */
  maxFiles?: number;
  /** Matching all the patterns of one call against the walked paths may take this long (default 5 s). */
  matchBudgetMs?: number;
}

/** Directories left out of directory and glob expansion unless useDefaultExcludes is false. */
export const DEFAULT_EXCLUDED_DIRS: ReadonlySet<string> = new Set([
  'node_modules',
  '.git',
  'dist',
  'build',
  '.data',
  'coverage',
  '.nyc_output',
  '.tap',
  '.next',
  '.cache',
  '__pycache__',
  '.venv',
  'venv',
  '.idea',
  '.vscode',
]);
/** File patterns left out likewise (secrets and compiled artefacts). */
export const DEFAULT_EXCLUDED_FILES: readonly string[] = ['.env', '.env.*', '*.pyc', '*.class', '*.o', '*.so', '.DS_Store'];

/** Patterns per argument (paths, include, exclude): each costs a match per walked path. */
export const MAX_PATTERNS_PER_ARG = 100;

const DEFAULT_MAX_TOTAL_BYTES = 1024 * 1024;
const DEFAULT_MAX_FILES = 500;

interface Candidate {
  real: string;
  rel: string;
}

/** `special`: paths named outright that are not regular files, each with what it is. */
type Collected = { files: Candidate[]; missing: string[]; special: string[] };

function invalid(message: string): { ok: false; error: ToolError } {
  return { ok: false, error: { type: 'invalid_argument', message } };
}

/** Every path and include pattern, with the argument it came from (`paths[0]`, `include[1]`) for messages. */
function namedPatterns(args: Pick<ReadManyFilesArgs, 'paths' | 'include'>): Array<[pattern: string, name: string]> {
  return [
    ...args.paths.map((p, i): [string, string] => [p, `paths[${i}]`]),
    ...(args.include ?? []).map((p, i): [string, string] => [p, `include[${i}]`]),
  ];
}

/** An optional array of non-empty strings. */
function stringList(v: unknown, name: string, required: boolean): { ok: true; value?: string[] } | { ok: false; error: ToolError } {
  if (v === undefined || v === null) return required ? invalid(`${name} must be a non-empty array of strings`) : { ok: true };
  if (!Array.isArray(v) || (required && v.length === 0))
    return invalid(`${name} must be a${required ? ' non-empty' : 'n'} array of strings`);
  if (v.length > MAX_PATTERNS_PER_ARG) {
    return invalid(`${name} has ${v.length} entries; at most ${MAX_PATTERNS_PER_ARG} are allowed (use broader patterns or several calls)`);
  }
  for (const [i, item] of (v as unknown[]).entries()) {
    if (typeof item !== 'string' || item.trim() === '') return invalid(`${name}[${i}] must be a non-empty string`);
  }
  return { ok: true, value: v as string[] };
}

/**
 * A filter pattern compiled for the search worker: without `/` it matches the base name at
 * any depth (`*.ts`), as ripgrep's and Gemini CLI's filters do; with `/`, the whole path
 * relative to the workspace. `dir/` excludes everything below dir. Over the complexity limit:
 * `pattern_too_complex`, as for paths and include.
 */
function compileFilter(pattern: string, name: string): { ok: true; glob: CompiledGlob } | { ok: false; error: ToolError } {
  const p = pattern.endsWith('/') ? `${pattern}**` : pattern;
  if (p.includes('\0')) return invalid(`${name} must not contain a NUL character`);
  return compileGlob(p, { basename: !p.includes('/') }, name);
}

/** The exclude patterns compiled (see compileFilter), or the first one refused. */
function compileExcludes(exclude: readonly string[] | undefined): { ok: true; globs: CompiledGlob[] } | { ok: false; error: ToolError } {
  const globs: CompiledGlob[] = [];
  for (const [i, p] of (exclude ?? []).entries()) {
    const compiled = compileFilter(p, `exclude[${i}]`);
    if (!compiled.ok) return compiled;
    globs.push(compiled.glob);
  }
  return { ok: true, globs };
}

/** {@link DEFAULT_EXCLUDED_FILES}, compiled once. */
const DEFAULT_EXCLUDED_GLOBS: readonly CompiledGlob[] = DEFAULT_EXCLUDED_FILES.map((p) => {
  const compiled = compileFilter(p, 'default exclude');
  if (!compiled.ok) throw new Error(compiled.error.message);
  return compiled.glob;
});

/** What a path that is neither a file nor a directory is ("a named pipe (FIFO)"). */
async function describeSpecial(real: string): Promise<string> {
  try {
    return fileKind(await fs.lstat(real));
  } catch {
    return 'gone';
  }
}

/** `real` relative to the workspace, with forward slashes. */
function relTo(workspace: string, abs: string): string {
  return path.relative(workspace, abs).split(path.sep).join('/');
}

/** The entries of a walk, each with `rel` relative to the workspace (what excludes match). */
async function* workspaceRelativeEntries(workspace: string, walk: AsyncIterable<WalkEntry>): AsyncGenerator<Candidate & { abs: string }> {
  for await (const entry of walk) yield { real: entry.real, abs: entry.abs, rel: relTo(workspace, entry.abs) };
}

/** Reads many text files at once, each under a `--- path ---` header. */
export class ReadManyFilesTool implements Tool<ReadManyFilesArgs> {
  readonly name = 'read_many_files';
  readonly kind = 'read' as const;
  readonly description =
    'Reads several text files at once and returns their contents, each under a "--- <path> ---" header. paths ' +
    'may name files, directories (read recursively unless recursive is false) or glob patterns such as ' +
    '"src/**/*.ts", all relative to the workspace. Binary files and files over 2 MB are skipped and listed; ' +
    'node_modules, .git, dist, build, coverage and similar are left out unless useDefaultExcludes is false. ' +
    'At most 500 files or 1 MB of content are returned.';
  readonly parameters: ToolParameterSchema = {
    type: 'object',
    properties: {
      paths: {
        type: 'array',
        items: { type: 'string' },
        description: 'Files, directories or glob patterns relative to the workspace, e.g. ["README.md", "src/**/*.ts"].',
      },
      include: { type: 'array', items: { type: 'string' }, description: 'Additional glob patterns to read, e.g. ["**/*.md"].' },
      exclude: { type: 'array', items: { type: 'string' }, description: 'Glob patterns of files to leave out, e.g. ["**/*.test.ts"].' },
      recursive: {
        type: 'boolean',
        description: 'Whether directories named in paths are read recursively (default true); glob patterns set their own depth.',
      },
      useDefaultExcludes: {
        type: 'boolean',
        description: 'Whether to leave out node_modules, .git, dist, build, coverage, .env files and the like (default true).',
      },
    },
    required: ['paths'],
  };
  private readonly maxTotalBytes: number;
  private readonly maxFiles: number;
  private readonly matchBudgetMs: number;
  private readonly protectedPaths: ProtectedPaths;

  constructor(options: ReadManyFilesOptions = {}) {
    this.maxTotalBytes = options.maxTotalBytes ?? DEFAULT_MAX_TOTAL_BYTES;
    this.maxFiles = options.maxFiles ?? DEFAULT_MAX_FILES;
    this.matchBudgetMs = options.matchBudgetMs ?? DEFAULT_MATCH_BUDGET_MS;
    this.protectedPaths = options.protectedPaths ?? ProtectedPaths.NONE;
  }

  async validate(args: Record<string, unknown>, ctx: Pick<ToolContext, 'workspace'>): Promise<Validation<ReadManyFilesArgs>> {
    const paths = stringList(args.paths, 'paths', true);
    if (!paths.ok) return paths;
    const out: ReadManyFilesArgs = { paths: paths.value as string[] };
    for (const name of ['include', 'exclude'] as const) {
      const list = stringList(args[name], name, false);
      if (!list.ok) return list;
      if (list.value !== undefined) out[name] = list.value;
    }
    for (const name of ['recursive', 'useDefaultExcludes'] as const) {
      const v = args[name];
      if (v === undefined || v === null) continue;
      if (typeof v !== 'boolean') return invalid(`${name} must be a boolean when given`);
      out[name] = v;
    }
    const excludes = compileExcludes(out.exclude);
    if (!excludes.ok) return excludes;
    const ws = await realWorkspace(ctx.workspace);
    if (!ws.ok) return ws;
    for (const [p, name] of namedPatterns(out)) {
      const checked = await resolvePattern(ctx.workspace, ws.path, p, name, this.protectedPaths);
      if (!checked.ok) return checked;
      // A path named outright must itself be readable: a protected file fails the call here.
      if (!picomatch.scan(p).isGlob) {
        const target = await resolveInWorkspace(ctx.workspace, path.resolve(ws.path, p), name, this.protectedPaths);
        if (!target.ok && target.error.type === 'path_protected') return { ok: false, error: protectedPathError(name, p) };
      }
    }
    return { ok: true, args: out };
  }

  describe(args: ReadManyFilesArgs): string {
    return `Read ${[...args.paths, ...(args.include ?? [])].join(', ')}`;
  }

  async run(args: ReadManyFilesArgs, ctx: ToolContext): Promise<ToolResult> {
    const ws = await realWorkspace(ctx.workspace);
    if (!ws.ok) return { isError: true, error: ws.error };
    const collected = await this.collect(args, ws.path, ctx.signal);
    if (!collected.ok) return { isError: true, error: collected.error };
    if (ctx.signal.aborted) return { isError: true, error: { type: 'cancelled', message: 'Reading the files was cancelled' } };
    const { files, missing, special } = collected.value;
    if (files.length === 0) {
      const notes = [
        ...(missing.length > 0 ? [`not found: ${missing.join(', ')}`] : []),
        ...(special.length > 0 ? [`not regular files, never read: ${special.join('; ')}`] : []),
      ];
      const also = notes.length > 0 ? ` (${notes.join('; ')})` : '';
      return {
        isError: true,
        error: {
          type: 'no_files_matched',
          message: `No files matched ${JSON.stringify([...args.paths, ...(args.include ?? [])])}${also} after excludes; check the paths with glob or list_directory`,
        },
      };
    }
    return this.concatenate(files, missing, special);
  }

  /** Reads the candidates in order until a cap is reached; lists what was skipped and why. */
  private async concatenate(files: Candidate[], missing: string[], special: string[]): Promise<ToolResult> {
    const sections: string[] = [];
    const read: string[] = [];
    const skipped: string[] = [...missing.map((m) => `${m} (not found)`), ...special];
    const notices: string[] = [];
    let total = 0;
    for (const [i, file] of files.entries()) {
      if (read.length >= this.maxFiles) {
        notices.push(`[Output truncated: read the first ${this.maxFiles} files; ${files.length - i} more matched files were not read.]`);
        break;
      }
      const result = await readTextFile(file.real, file.rel, this.name);
      if (!result.ok) {
        const why =
          result.error.type === 'binary_file'
            ? 'binary file'
            : result.error.type === 'file_too_large'
              ? 'larger than 2 MB'
              : result.error.message;
        skipped.push(`${file.rel} (${why})`);
        continue;
      }
      const section = `--- ${file.rel} ---\n${result.text}\n`;
      const size = Buffer.byteLength(section);
      if (size > this.maxTotalBytes) {
        skipped.push(`${file.rel} (larger than the ${this.maxTotalBytes}-byte output limit; use read_file with offset/limit)`);
        continue;
      }
      if (total + size > this.maxTotalBytes) {
        notices.push(
          `[Output truncated: reached the ${this.maxTotalBytes}-byte limit; ${file.rel} and ${files.length - i - 1} more matched ` +
            'files were not read. Narrow paths or add exclude patterns to read the rest.]',
        );
        break;
      }
      total += size;
      sections.push(section);
      read.push(file.rel);
    }
    const tail = [
      ...notices,
      ...(skipped.length > 0 ? [`Skipped ${skipped.length} file(s):\n${skipped.map((s) => `- ${s}`).join('\n')}`] : []),
    ];
    const body = read.length > 0 ? `${sections.join('')}--- End of content ---` : 'No text files were read.';
    const llmContent = [body, ...tail].join('\n');
    const listing = [`Read ${read.length} file(s)${read.length > 0 ? ':' : '.'}`, ...read.map((r) => `- ${r}`), ...tail].join('\n');
    return { llmContent, display: { type: 'text', text: listing } };
  }

  /**
   * Expands paths, directories and globs into workspace files, in argument order without
   * duplicates. Every pattern (the globs in paths and include, exclude, the default excludes)
   * is matched in the search worker within one time budget for the call, never on the event loop.
   */
  private async collect(
    args: ReadManyFilesArgs,
    workspace: string,
    signal: AbortSignal,
  ): Promise<{ ok: true; value: Collected } | { ok: false; error: ToolError }> {
    const userGlobs = compileExcludes(args.exclude);
    if (!userGlobs.ok) return userGlobs;
    const useDefaults = args.useDefaultExcludes !== false;
    const worker = new RegexWorker();
    const budget = new MatchBudget(this.matchBudgetMs);
    const userExcludes = new PathFilter(worker, userGlobs.globs, 'exclude', budget, signal);
    const allExcludes = new PathFilter(
      worker,
      [...userGlobs.globs, ...(useDefaults ? DEFAULT_EXCLUDED_GLOBS : [])],
      'exclude',
      budget,
      signal,
    );
    const skipDirs = useDefaults ? DEFAULT_EXCLUDED_DIRS : undefined;
    // A directory an exclude pattern names (`fixtures`, `test/fixtures`) is not walked at all.
    const prune = (dirs: readonly string[]) => userExcludes.matches(dirs.map((d) => ({ rel: relTo(workspace, d), isDir: true })));
    const filters = [userExcludes, allExcludes];
    const walkOptions = { workspace, protectedPaths: this.protectedPaths, skipDirs, signal, prune };
    const seen = new Set<string>();
    const files: Candidate[] = [];
    const missing: string[] = [];
    const special: string[] = [];
    const add = (c: Candidate): void => {
      if (seen.has(c.real)) return;
      seen.add(c.real);
      files.push({ real: c.real, rel: c.rel });
    };
    try {
      for (const [p, name] of namedPatterns(args)) {
        const resolved = await resolvePattern(workspace, workspace, p, name, this.protectedPaths);
        if (!resolved.ok) return resolved;
        let walked: AsyncIterable<Candidate>;
        if (!picomatch.scan(p).isGlob) {
          const target = await resolveInWorkspace(workspace, path.resolve(workspace, p), name, this.protectedPaths);
          if (!target.ok) return target.error.type === 'path_protected' ? { ok: false, error: protectedPathError(name, p) } : target;
          const kind = await pathKind(target.path);
          if (kind === 'missing') missing.push(p);
          // A FIFO, socket or device is never opened: reading it could block or never end.
          if (kind === 'other') special.push(`${p} (${await describeSpecial(target.path)}, not a regular file)`);
          if (kind === 'file') {
            // A file named outright escapes the default excludes, not the user's.
            const shown = path.isAbsolute(p) ? target.path : path.resolve(workspace, p);
            walked = userExcludes.stream([{ real: target.path, rel: relTo(workspace, shown) }], { keep: false });
          } else if (kind === 'directory') {
            const walk = walkFiles(target.path, { ...walkOptions, recursive: args.recursive !== false });
            walked = allExcludes.stream(workspaceRelativeEntries(workspace, walk), { keep: false });
          } else continue;
        } else {
          const { baseReal, glob } = resolved.pattern;
          if ((await pathKind(baseReal)) !== 'directory') continue;
          const compiled = compileGlob(glob, {}, name);
          if (!compiled.ok) return compiled;
          const globFilter = new PathFilter(worker, compiled.glob, name, budget, signal);
          filters.push(globFilter);
          const matching = globFilter.stream(walkFiles(baseReal, walkOptions));
          walked = allExcludes.stream(workspaceRelativeEntries(workspace, matching), { keep: false });
        }
        for await (const c of walked) add(c);
        const failure = filters.find((f) => f.failure !== undefined)?.failure;
        if (failure) return { ok: false, error: failure };
      }
    } finally {
      worker.close();
    }
    return { ok: true, value: { files, missing, special } };
  }
}
