/** `read_many_files`: concatenates the text files named by paths, directories and globs. */
import path from 'node:path';
import picomatch from 'picomatch';
import { filterMatcher, pathKind, resolvePattern, walkFiles } from '../search/walk.js';
import type { Tool, ToolContext, ToolError, ToolParameterSchema, ToolResult } from '../tool.js';
import {
  ProtectedPaths,
  protectedPathError,
  realWorkspace,
  resolveInWorkspace,
  workspaceRelative,
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

const DEFAULT_MAX_TOTAL_BYTES = 1024 * 1024;
const DEFAULT_MAX_FILES = 500;

interface Candidate {
  real: string;
  rel: string;
}

type Collected = { files: Candidate[]; missing: string[] };

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
  for (const [i, item] of (v as unknown[]).entries()) {
    if (typeof item !== 'string' || item.trim() === '') return invalid(`${name}[${i}] must be a non-empty string`);
  }
  return { ok: true, value: v as string[] };
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
  private readonly protectedPaths: ProtectedPaths;

  constructor(options: ReadManyFilesOptions = {}) {
    this.maxTotalBytes = options.maxTotalBytes ?? DEFAULT_MAX_TOTAL_BYTES;
    this.maxFiles = options.maxFiles ?? DEFAULT_MAX_FILES;
    this.protectedPaths = options.protectedPaths ?? ProtectedPaths.NONE;
  }

  validate(
    args: Record<string, unknown>,
    ctx: Pick<ToolContext, 'workspace'>,
  ): { ok: true; args: ReadManyFilesArgs } | { ok: false; error: ToolError } {
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
    const ws = realWorkspace(ctx.workspace);
    if (!ws.ok) return ws;
    for (const [p, name] of namedPatterns(out)) {
      const checked = resolvePattern(ctx.workspace, ws.path, p, name, this.protectedPaths);
      if (!checked.ok) return checked;
      // A path named outright must itself be readable: a protected file fails the call here.
      if (!picomatch.scan(p).isGlob) {
        const target = resolveInWorkspace(ctx.workspace, path.resolve(ws.path, p), name, this.protectedPaths);
        if (!target.ok && target.error.type === 'path_protected') return { ok: false, error: protectedPathError(name, p) };
      }
    }
    return { ok: true, args: out };
  }

  describe(args: ReadManyFilesArgs): string {
    return `Read ${[...args.paths, ...(args.include ?? [])].join(', ')}`;
  }

  async run(args: ReadManyFilesArgs, ctx: ToolContext): Promise<ToolResult> {
    const ws = realWorkspace(ctx.workspace);
    if (!ws.ok) return { isError: true, error: ws.error };
    const collected = await this.collect(args, ws.path, ctx.signal);
    if (!collected.ok) return { isError: true, error: collected.error };
    if (ctx.signal.aborted) return { isError: true, error: { type: 'cancelled', message: 'Reading the files was cancelled' } };
    const { files, missing } = collected.value;
    if (files.length === 0) {
      const also = missing.length > 0 ? ` (not found: ${missing.join(', ')})` : '';
      return {
        isError: true,
        error: {
          type: 'no_files_matched',
          message: `No files matched ${JSON.stringify([...args.paths, ...(args.include ?? [])])}${also} after excludes; check the paths with glob or list_directory`,
        },
      };
    }
    return this.concatenate(files, missing);
  }

  /** Reads the candidates in order until a cap is reached; lists what was skipped and why. */
  private async concatenate(files: Candidate[], missing: string[]): Promise<ToolResult> {
    const sections: string[] = [];
    const read: string[] = [];
    const skipped: string[] = missing.map((m) => `${m} (not found)`);
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

  /** Expands paths, directories and globs into workspace files, in argument order without duplicates. */
  private async collect(
    args: ReadManyFilesArgs,
    workspace: string,
    signal: AbortSignal,
  ): Promise<{ ok: true; value: Collected } | { ok: false; error: ToolError }> {
    const useDefaults = args.useDefaultExcludes !== false;
    // `dir/` excludes everything below dir.
    const userExcludes = (args.exclude ?? []).map((p) => filterMatcher(p.endsWith('/') ? `${p}**` : p));
    const excludes = [...userExcludes, ...(useDefaults ? DEFAULT_EXCLUDED_FILES : []).map((p) => filterMatcher(p))];
    const skipDirs = useDefaults ? DEFAULT_EXCLUDED_DIRS : undefined;
    // A directory an exclude pattern names (`fixtures`, `test/fixtures`) is not walked at all.
    const ignore = (real: string, isDir: boolean): boolean => isDir && userExcludes.some((m) => m(workspaceRelative(workspace, real)));
    const seen = new Set<string>();
    const files: Candidate[] = [];
    const missing: string[] = [];
    const add = (real: string, shown: string, explicit: boolean): void => {
      const rel = workspaceRelative(workspace, shown);
      if (seen.has(real) || (explicit ? userExcludes : excludes).some((m) => m(rel))) return;
      seen.add(real);
      files.push({ real, rel });
    };
    for (const [p, name] of namedPatterns(args)) {
      const resolved = resolvePattern(workspace, workspace, p, name, this.protectedPaths);
      if (!resolved.ok) return resolved;
      const { baseReal, glob } = resolved.pattern;
      if (!picomatch.scan(p).isGlob) {
        const target = resolveInWorkspace(workspace, path.resolve(workspace, p), name, this.protectedPaths);
        if (!target.ok) return target.error.type === 'path_protected' ? { ok: false, error: protectedPathError(name, p) } : target;
        const kind = pathKind(target.path);
        if (kind === 'file') add(target.path, path.isAbsolute(p) ? target.path : path.resolve(workspace, p), true);
        else if (kind === 'missing') missing.push(p);
        if (kind !== 'directory') continue;
        const walk = walkFiles(target.path, {
          workspace,
          protectedPaths: this.protectedPaths,
          skipDirs,
          signal,
          ignore,
          recursive: args.recursive !== false,
        });
        for await (const entry of walk) add(entry.real, entry.abs, false);
        continue;
      }
      if (pathKind(baseReal) !== 'directory') continue;
      const isMatch = picomatch(glob, { dot: true });
      for await (const entry of walkFiles(baseReal, { workspace, protectedPaths: this.protectedPaths, skipDirs, signal, ignore })) {
        if (isMatch(entry.rel)) add(entry.real, entry.abs, false);
      }
    }
    return { ok: true, value: { files, missing } };
  }
}
