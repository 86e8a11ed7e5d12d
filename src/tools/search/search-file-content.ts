/** `search_file_content`: a regular-expression search over the text files of the workspace, in plain JS. */
import path from 'node:path';
import { looksBinary } from '../file/read-file.js';
import type { Tool, ToolContext, ToolError, ToolParameterSchema, ToolResult, Validation } from '../tool.js';
import {
  describeGivenPath,
  ProtectedPaths,
  readRegularFile,
  realWorkspace,
  resolveInWorkspace,
  relativeIn,
  type WorkspaceToolOptions,
} from '../workspace.js';
import { compileGlob, type CompiledGlob } from './glob-pattern.js';
import { DEFAULT_MATCH_BUDGET_MS, PathFilter } from './path-filter.js';
import { RegexWorker } from './regex-worker.js';
import { ALWAYS_SKIPPED_DIRS, pathKind, walkFiles, type WalkEntry } from './walk.js';

/** Arguments of `search_file_content`. */
export interface SearchFileContentArgs extends Record<string, unknown> {
  /** JavaScript regular expression source, matched case-insensitively against each line. */
  pattern: string;
  /** File or directory to search (default: the workspace). */
  path?: string;
  /** Glob filter on file paths relative to `path`, e.g. `*.ts` or `src/**\/*.{ts,tsx}`. */
  include?: string;
}

/** Constructor options of {@link SearchFileContentTool}. */
export interface SearchFileContentOptions extends WorkspaceToolOptions {
  /** Stop after this many matching lines (default 500). */
  maxMatches?: number;
  /** Files larger than this are not searched (default 1 MB). */
  maxFileBytes?: number;
  /** The pattern may run this long on one file before the search fails (default 5 s). */
  fileTimeoutMs?: number;
  /** Matching `include` against all the walked paths of one call may take this long (default 5 s). */
  matchBudgetMs?: number;
}

const DEFAULT_MAX_MATCHES = 500;
const DEFAULT_MAX_FILE_BYTES = 1024 * 1024;
/** Matched lines longer than this are cut (minified files would flood the model). */
const MAX_LINE_CHARS = 500;

type Target = { ok: true; real: string; isFile: boolean } | { ok: false; error: ToolError };

function invalid(message: string): { ok: false; error: ToolError } {
  return { ok: false, error: { type: 'invalid_argument', message } };
}

/** Compiles the pattern as Gemini CLI's JS fallback does: case-insensitive. */
function compile(pattern: string): { ok: true; regex: RegExp } | { ok: false; error: ToolError } {
  try {
    return { ok: true, regex: new RegExp(pattern, 'i') };
  } catch (err) {
    return invalid(`pattern is not a valid JavaScript regular expression: ${(err as Error).message}`);
  }
}

/**
 * Compiles `include` as a filter: without `/` it matches the base name at any depth (`*.ts`),
 * as ripgrep's and Gemini CLI's filters do; with `/`, the whole path relative to `path`.
 */
function compileInclude(include: string): { ok: true; glob: CompiledGlob } | { ok: false; error: ToolError } {
  return compileGlob(include, { basename: !include.includes('/') }, 'include');
}

/** Searches file contents line by line; skips binaries, large files, node_modules, .git and the server's own files. */
export class SearchFileContentTool implements Tool<SearchFileContentArgs> {
  readonly name = 'search_file_content';
  readonly kind = 'read' as const;
  readonly description =
    'Searches for a regular expression (JavaScript syntax, case-insensitive) in the content of the text files in a ' +
    'directory (default: the workspace) or in one file. include filters files by glob, e.g. "*.ts" or ' +
    '"src/**/*.{ts,tsx}". Returns the matching lines with their file paths and line numbers. Binary files, ' +
    'files over 1 MB, node_modules and .git are skipped.';
  readonly parameters: ToolParameterSchema = {
    type: 'object',
    properties: {
      pattern: { type: 'string', description: 'The regular expression to search for, e.g. "function\\s+\\w+" or "TODO".' },
      path: { type: 'string', description: 'Directory or file to search, absolute or relative to the workspace (default: the workspace).' },
      include: { type: 'string', description: 'Optional glob of the files to search, e.g. "*.js" or "src/**/*.{ts,tsx}".' },
    },
    required: ['pattern'],
  };
  private readonly maxMatches: number;
  private readonly maxFileBytes: number;
  private readonly fileTimeoutMs: number;
  private readonly matchBudgetMs: number;
  private readonly protectedPaths: ProtectedPaths;

  constructor(options: SearchFileContentOptions = {}) {
    this.protectedPaths = options.protectedPaths ?? ProtectedPaths.NONE;
    this.maxMatches = options.maxMatches ?? DEFAULT_MAX_MATCHES;
    this.maxFileBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
    this.fileTimeoutMs = options.fileTimeoutMs ?? 5_000;
    this.matchBudgetMs = options.matchBudgetMs ?? DEFAULT_MATCH_BUDGET_MS;
  }

  async validate(args: Record<string, unknown>, ctx: Pick<ToolContext, 'workspace'>): Promise<Validation<SearchFileContentArgs>> {
    const { pattern, include } = args;
    if (typeof pattern !== 'string' || pattern === '') return invalid('pattern must be a non-empty regular expression string');
    const compiled = compile(pattern);
    if (!compiled.ok) return compiled;
    const out: SearchFileContentArgs = { pattern };
    if (include !== undefined && include !== null && include !== '') {
      if (typeof include !== 'string') return invalid('include must be a glob pattern string when given');
      const compiledInclude = compileInclude(include);
      if (!compiledInclude.ok) return compiledInclude;
      out.include = include;
    }
    if (args.path !== undefined && args.path !== null && args.path !== '') {
      out.path = args.path as string;
      const target = await this.target(out, ctx.workspace);
      if (!target.ok) return target;
    }
    return { ok: true, args: out };
  }

  describe(args: SearchFileContentArgs): string {
    return `Search for /${args.pattern}/ in ${args.path ?? '.'}${args.include ? ` (${args.include})` : ''}`;
  }

  async run(args: SearchFileContentArgs, ctx: ToolContext): Promise<ToolResult> {
    const compiled = compile(args.pattern);
    if (!compiled.ok) return { isError: true, error: compiled.error };
    const target = await this.target(args, ctx.workspace);
    if (!target.ok) return { isError: true, error: target.error };
    const ws = await realWorkspace(ctx.workspace);
    if (!ws.ok) return { isError: true, error: ws.error };
    const include = args.include === undefined ? undefined : compileInclude(args.include);
    if (include && !include.ok) return { isError: true, error: include.error };
    const files: AsyncIterable<WalkEntry> | WalkEntry[] = target.isFile
      ? [{ rel: path.basename(target.real), abs: target.real, real: target.real }]
      : walkFiles(target.real, {
          workspace: ws.path,
          protectedPaths: this.protectedPaths,
          skipDirs: ALWAYS_SKIPPED_DIRS,
          signal: ctx.signal,
        });
    const byFile = new Map<string, string[]>();
    let count = 0;
    let capped = false;
    // One worker matches both: the include glob against paths, the pattern against lines.
    const worker = new RegexWorker();
    const includeFilter = include && new PathFilter(worker, include.glob, 'include', this.matchBudgetMs, ctx.signal);
    try {
      for await (const file of includeFilter ? includeFilter.stream(files) : files) {
        if (ctx.signal.aborted) break;
        const text = await this.readSearchable(file.real);
        if (text === undefined) continue;
        const found = await worker.matchLines(compiled.regex, text, this.maxMatches - count, this.fileTimeoutMs, ctx.signal);
        if (!found.ok) {
          if (found.reason === 'cancelled') break;
          const rel = relativeIn(ws.path, file.abs);
          return {
            isError: true,
            error: {
              type: found.reason === 'timeout' ? 'search_timeout' : 'invalid_argument',
              message: `Search stopped in ${rel}: ${found.message}. Use a simpler pattern (avoid nested quantifiers such as (a+)+).`,
            },
          };
        }
        if (found.hits.length === 0) continue;
        const lines = text.split('\n');
        const rel = relativeIn(ws.path, file.abs);
        const hits = byFile.get(rel) ?? [];
        for (const i of found.hits) {
          const line = (lines[i] ?? '').replace(/\r$/, ''); // i indexes this very text
          hits.push(`L${i + 1}: ${line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}… [line truncated]` : line}`);
        }
        byFile.set(rel, hits);
        count += found.hits.length;
        capped = count >= this.maxMatches;
        if (capped) break;
      }
      if (includeFilter?.failure) return { isError: true, error: includeFilter.failure };
    } finally {
      worker.close();
    }
    if (ctx.signal.aborted) return { isError: true, error: { type: 'cancelled', message: 'The search was cancelled' } };
    const where = args.path ?? '.';
    const filter = args.include ? ` (filter: "${args.include}")` : '';
    if (count === 0) {
      const text = `No matches found for pattern "${args.pattern}" in path "${where}"${filter}.`;
      return { llmContent: text, display: { type: 'text', text } };
    }
    const sections = [...byFile].map(([rel, hits]) => `File: ${rel}\n${hits.join('\n')}`);
    let text =
      `Found ${count} match${count === 1 ? '' : 'es'} for pattern "${args.pattern}" in path "${where}"${filter}:\n` +
      `---\n${sections.join('\n---\n')}\n---`;
    if (capped) {
      text += `\n[Results truncated: stopped at the first ${this.maxMatches} matches. Use a more specific pattern, path or include to see the rest.]`;
    }
    return { llmContent: text, display: { type: 'text', text } };
  }

  /**
   * The file's text, or undefined when it is too large, binary, unreadable or not a regular
   * file (a named pipe or device is never opened for a blocking read: see readRegularFile).
   */
  private async readSearchable(real: string): Promise<string | undefined> {
    const read = await readRegularFile(real, this.maxFileBytes);
    if (!read.ok || looksBinary(read.bytes)) return undefined;
    return read.bytes.toString('utf8');
  }

  /** Resolves `path` (default: the workspace) to an existing file or directory inside it. */
  private async target(args: SearchFileContentArgs, workspace: string): Promise<Target> {
    if (args.path === undefined) {
      const ws = await realWorkspace(workspace);
      return ws.ok ? { ok: true, real: ws.path, isFile: false } : ws;
    }
    const resolved = await resolveInWorkspace(workspace, args.path, 'path', this.protectedPaths);
    if (!resolved.ok) return resolved;
    const kind = await pathKind(resolved.path);
    if (kind === 'missing') {
      return { ok: false, error: { type: 'path_not_found', message: `Path not found: ${describeGivenPath(workspace, args.path)}` } };
    }
    if (kind === 'other') return invalid(`path ${describeGivenPath(workspace, args.path)} is neither a file nor a directory`);
    return { ok: true, real: resolved.path, isFile: kind === 'file' };
  }
}
