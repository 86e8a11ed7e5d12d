/** `glob`: finds files by glob pattern inside the workspace, newest first. */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Tool, ToolContext, ToolError, ToolParameterSchema, ToolResult, Validation } from '../tool.js';
import {
  describeGivenPath,
  ProtectedPaths,
  realWorkspace,
  resolveInWorkspace,
  relativeIn,
  type WorkspaceToolOptions,
} from '../workspace.js';
import { compileGlob } from './glob-pattern.js';
import { DEFAULT_MATCH_BUDGET_MS, MatchBudget, PathFilter } from './path-filter.js';
import { RegexWorker } from './regex-worker.js';
import {
  ALWAYS_SKIPPED_DIRS,
  isDirectory,
  loadGitignore,
  pathKind,
  resolvePattern,
  walkFiles,
  type Gitignore,
  type ResolvedPattern,
  type WalkEntry,
} from './walk.js';

/** Arguments of `glob`. */
export interface GlobArgs extends Record<string, unknown> {
  pattern: string;
  /** Directory to search in (default: the workspace). */
  path?: string;
  /** Default false. */
  case_sensitive?: boolean;
  /** Default true. */
  respect_git_ignore?: boolean;
}

/** Constructor options of {@link GlobTool}. */
export interface GlobOptions extends WorkspaceToolOptions {
  /** At most this many paths are returned (default 1000). */
  maxResults?: number;
  /** Matching the pattern against all the walked paths of one call may take this long (default 5 s). */
  matchBudgetMs?: number;
}

const DEFAULT_MAX_RESULTS = 1000;

/** `workspace`: the workspace's real path, resolved with the search directory (what the results are relative to). */
type Setup = { ok: true; workspace: string; searchDir: string; pattern: ResolvedPattern } | { ok: false; error: ToolError };

function invalid(message: string): { ok: false; error: ToolError } {
  return { ok: false, error: { type: 'invalid_argument', message } };
}

/** Finds files whose path (relative to `path`) matches a glob; returns absolute paths, most recently modified first. */
export class GlobTool implements Tool<GlobArgs> {
  readonly name = 'glob';
  readonly kind = 'read' as const;
  readonly description =
    'Finds files matching a glob pattern (e.g. "src/**/*.ts", "**/*.md") inside the workspace and returns their ' +
    'absolute paths, sorted by modification time (newest first). The pattern is relative to path (default: the ' +
    'workspace). Matching is case-insensitive unless case_sensitive is true. node_modules and .git are never ' +
    'searched, and files ignored by the workspace .gitignore are left out unless respect_git_ignore is false.';
  readonly parameters: ToolParameterSchema = {
    type: 'object',
    properties: {
      pattern: { type: 'string', description: 'The glob pattern to match, e.g. "**/*.py" or "docs/*.md".' },
      path: { type: 'string', description: 'Directory to search in, absolute or relative to the workspace (default: the workspace).' },
      case_sensitive: { type: 'boolean', description: 'Whether matching is case-sensitive (default false).' },
      respect_git_ignore: { type: 'boolean', description: 'Whether to leave out files ignored by .gitignore (default true).' },
    },
    required: ['pattern'],
  };
  private readonly maxResults: number;
  private readonly matchBudgetMs: number;
  private readonly protectedPaths: ProtectedPaths;

  constructor(options: GlobOptions = {}) {
    this.maxResults = options.maxResults ?? DEFAULT_MAX_RESULTS;
    this.matchBudgetMs = options.matchBudgetMs ?? DEFAULT_MATCH_BUDGET_MS;
    this.protectedPaths = options.protectedPaths ?? ProtectedPaths.NONE;
  }

  async validate(args: Record<string, unknown>, ctx: Pick<ToolContext, 'workspace'>): Promise<Validation<GlobArgs>> {
    const out: GlobArgs = { pattern: args.pattern as string };
    if (args.path !== undefined && args.path !== null && args.path !== '') out.path = args.path as string;
    for (const flag of ['case_sensitive', 'respect_git_ignore'] as const) {
      const v = args[flag];
      if (v === undefined || v === null) continue;
      if (typeof v !== 'boolean') return invalid(`${flag} must be a boolean when given`);
      out[flag] = v;
    }
    const setup = await this.setup(out, ctx.workspace);
    if (!setup.ok) return setup;
    return { ok: true, args: out };
  }

  describe(args: GlobArgs): string {
    return `Find files matching ${args.pattern}${args.path ? ` in ${args.path}` : ''}`;
  }

  async run(args: GlobArgs, ctx: ToolContext): Promise<ToolResult> {
    const setup = await this.setup(args, ctx.workspace);
    if (!setup.ok) return { isError: true, error: setup.error };
    const { workspace, searchDir, pattern } = setup;
    const nocase = args.case_sensitive !== true;
    const gitignore = args.respect_git_ignore === false ? undefined : await loadGitignore(workspace, this.protectedPaths);

    // Walk from the pattern's literal base when it exists; a case-insensitive match may
    // still find it under another spelling, so then walk the whole search directory.
    let root = pattern.baseReal;
    let lexicalRoot = pattern.baseLexical;
    let glob = pattern.glob;
    if (!(await isDirectory(root))) {
      if (!nocase || pattern.relPattern === undefined) return this.noMatch(args, workspace, searchDir);
      root = searchDir;
      lexicalRoot = searchDir;
      glob = pattern.relPattern;
    }
    const matched = await this.matchingFiles(root, glob, nocase, workspace, gitignore, ctx.signal);
    if (!matched.ok) return { isError: true, error: matched.error };
    const found: { path: string; mtime: number }[] = [];
    for (const entry of matched.entries) {
      let mtime: number;
      try {
        mtime = (await fs.stat(entry.real)).mtimeMs;
      } catch {
        continue; // gone since it was listed
      }
      found.push({ path: path.join(lexicalRoot, entry.rel), mtime });
    }
    if (ctx.signal.aborted) return { isError: true, error: { type: 'cancelled', message: 'The file search was cancelled' } };
    if (found.length === 0) return this.noMatch(args, workspace, searchDir, gitignore?.notes);
    found.sort((a, b) => b.mtime - a.mtime || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    return this.report(
      args,
      relativeIn(workspace, searchDir),
      found.map((f) => f.path),
      gitignore,
    );
  }

  /**
   * The files under `root` whose path matches `glob`. The walk runs here; the matching of the
   * pattern and of the `.gitignore` rules runs in the search worker within one time budget, so
   * no pattern and no `.gitignore` line can freeze the server.
   */
  private async matchingFiles(
    root: string,
    glob: string,
    nocase: boolean,
    workspace: string,
    gitignore: Gitignore | undefined,
    signal: AbortSignal,
  ): Promise<{ ok: true; entries: WalkEntry[] } | { ok: false; error: ToolError }> {
    const compiled = compileGlob(glob, { nocase }, 'pattern');
    if (!compiled.ok) return compiled;
    const worker = new RegexWorker();
    const budget = new MatchBudget(this.matchBudgetMs);
    const ignored =
      gitignore && gitignore.globs.length > 0 ? new PathFilter(worker, gitignore.globs, '.gitignore', budget, signal) : undefined;
    const relToWorkspace = (real: string): string => path.relative(workspace, real).split(path.sep).join('/');
    // Ignored directories are not walked; ignored files are filtered in batches, like the pattern.
    const prune = ignored && ((dirs: readonly string[]) => ignored.matches(dirs.map((d) => ({ rel: relToWorkspace(d), isDir: true }))));
    const walk = walkFiles(root, { workspace, protectedPaths: this.protectedPaths, skipDirs: ALWAYS_SKIPPED_DIRS, signal, prune });
    try {
      const filter = new PathFilter(worker, compiled.glob, 'pattern', budget, signal);
      const kept = ignored ? ignored.stream(walk, { keep: false, key: (e) => relToWorkspace(e.real) }) : walk;
      const entries: WalkEntry[] = [];
      for await (const entry of filter.stream(kept)) entries.push(entry);
      const failure = ignored?.failure ?? filter.failure;
      return failure ? { ok: false, error: failure } : { ok: true, entries };
    } finally {
      worker.close();
    }
  }

  /** Gemini CLI's listing, capped at maxResults with a notice. */
  private report(args: GlobArgs, where: string, paths: string[], gitignore: Gitignore | undefined): ToolResult {
    const shown = paths.slice(0, this.maxResults);
    const respected = gitignore !== undefined && gitignore.globs.length > 0;
    const lines = [
      `Found ${paths.length} file(s) matching "${args.pattern}" within ${where}` +
        `${respected ? ' (respecting .gitignore)' : ''}, sorted by modification time (newest first):`,
      ...shown,
    ];
    if (paths.length > shown.length) {
      lines.push(
        `[Results truncated: showing the ${shown.length} most recently modified of ${paths.length} files. ` +
          'Use a more specific pattern or path to see the rest.]',
      );
    }
    for (const note of gitignore?.notes ?? []) lines.push(`[Note: ${note}]`);
    const text = lines.join('\n');
    return { llmContent: text, display: { type: 'text', text } };
  }

  /** `workspace`: the workspace's real path (Setup.workspace). */
  private noMatch(args: GlobArgs, workspace: string, searchDir: string, notes: readonly string[] = []): ToolResult {
    const text = [
      `No files found matching pattern "${args.pattern}" within ${relativeIn(workspace, searchDir)}`,
      ...notes.map((n) => `[Note: ${n}]`),
    ].join('\n');
    return { llmContent: text, display: { type: 'text', text } };
  }

  /** Resolves `path` (must be a directory inside the workspace) and the pattern's base. */
  private async setup(args: GlobArgs, workspace: string): Promise<Setup> {
    let searchDir: string;
    let real: string;
    if (args.path === undefined) {
      const ws = await realWorkspace(workspace);
      if (!ws.ok) return ws;
      searchDir = real = ws.path;
    } else {
      const resolved = await resolveInWorkspace(workspace, args.path, 'path', this.protectedPaths);
      if (!resolved.ok) return resolved;
      const kind = await pathKind(resolved.path);
      const where = describeGivenPath(workspace, args.path);
      if (kind === 'missing') return { ok: false, error: { type: 'dir_not_found', message: `Directory not found: ${where}` } };
      if (kind !== 'directory') {
        return {
          ok: false,
          error: { type: 'path_is_not_a_directory', message: `path ${where} is not a directory; glob searches directories` },
        };
      }
      searchDir = resolved.path;
      real = resolved.workspace;
    }
    const pattern = await resolvePattern(workspace, searchDir, args.pattern, 'pattern', this.protectedPaths);
    if (!pattern.ok) return pattern;
    return { ok: true, workspace: real, searchDir, pattern: pattern.pattern };
  }
}
