/** `read_file`: returns the text of one file inside the workspace, whole or a range of lines. */
import type { Tool, ToolContext, ToolError, ToolParameterSchema, ToolResult, Validation } from '../tool.js';
import { describeGivenPath, ProtectedPaths, readRegularFile, resolveInWorkspace, type WorkspaceToolOptions } from '../workspace.js';

/** Arguments of `read_file`. */
export interface ReadFileArgs extends Record<string, unknown> {
  file_path: string;
  /** 0-based line number to start from. */
  offset?: number;
  /** Number of lines to return. */
  limit?: number;
}

/** Files larger than this are refused. */
export const MAX_READ_BYTES = 2 * 1024 * 1024;
/** How much of the head is scanned for a NUL byte to detect binary files. */
export const BINARY_SNIFF_BYTES = 8 * 1024;

/** True when the head of `bytes` holds a NUL byte (the heuristic git and ripgrep use). */
export function looksBinary(bytes: Uint8Array): boolean {
  return bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0);
}

/** Outcome of {@link readTextFile}. */
export type TextFileResult = { ok: true; text: string } | { ok: false; error: ToolError };

/**
 * Reads a regular text file of at most {@link MAX_READ_BYTES}, through readRegularFile (so a
 * FIFO, socket or device is refused without being opened for a blocking read). Failures are
 * values typed `file_not_found`, `target_is_directory`, `file_too_large`, `not_a_regular_file`,
 * `binary_file` or `read_error`.
 *
 * @param realPath the file's real path, already confined by resolveInWorkspace
 * @param where how messages name the file (see describeGivenPath)
 * @param toolName the tool named in refusals
 */
export async function readTextFile(realPath: string, where: string, toolName = 'read_file'): Promise<TextFileResult> {
  const fail = (type: string, message: string): TextFileResult => ({ ok: false, error: { type, message } });
  const read = await readRegularFile(realPath, MAX_READ_BYTES);
  if (!read.ok) {
    switch (read.reason) {
      case 'missing':
        return fail('file_not_found', `File not found: ${where}`);
      case 'directory':
        return fail('target_is_directory', `${where} is a directory, not a file; use list_directory to see its entries`);
      case 'too_large':
        return fail(
          'file_too_large',
          `File too large: ${where} is ${read.size} bytes; ${toolName} only reads files up to ${MAX_READ_BYTES} bytes (2 MB)`,
        );
      case 'not_regular':
        return fail('not_a_regular_file', `${where} ${read.message}; ${toolName} only reads regular files`);
      default:
        return fail('read_error', `Cannot read ${where}: it ${read.message}`);
    }
  }
  if (looksBinary(read.bytes)) {
    return fail('binary_file', `${where} is a binary file (contains NUL bytes); ${toolName} only reads text files`);
  }
  return { ok: true, text: read.bytes.toString('utf8') };
}

/** The lines of `text`, each keeping its own line ending (a trailing newline does not start a new line). */
export function splitLinesKeepEnds(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

/** An optional integer argument: absent, or an integer >= `min`. */
function optionalInteger(
  args: Record<string, unknown>,
  name: string,
  min: number,
  what: string,
): { ok: true; value?: number } | { ok: false; error: ToolError } {
  const v = args[name];
  if (v === undefined || v === null) return { ok: true };
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min) {
    const bound = min === 0 ? 'a non-negative integer' : `an integer >= ${min}`;
    return { ok: false, error: { type: 'invalid_argument', message: `${name} must be ${bound} (${what}); got ${JSON.stringify(v)}` } };
  }
  return { ok: true, value: v };
}

/** Reads a text file (absolute or workspace-relative); refuses directories, binaries and files over 2 MB. */
export class ReadFileTool implements Tool<ReadFileArgs> {
  readonly name = 'read_file';
  readonly kind = 'read' as const;
  readonly description =
    'Reads and returns the content of a text file. The path may be absolute or relative to the workspace, ' +
    'and must lie inside the workspace. Binary files, directories and files larger than 2 MB are refused. ' +
    'For large files, use offset (0-based first line) and limit (number of lines) to read a part; ' +
    'a notice says when lines were left out.';
  readonly parameters: ToolParameterSchema = {
    type: 'object',
    properties: {
      file_path: { type: 'string', description: 'Path of the file to read, absolute or relative to the workspace.' },
      offset: { type: 'integer', description: 'Optional 0-based line number to start reading from. Use with limit for large files.' },
      limit: { type: 'integer', description: 'Optional maximum number of lines to read (at least 1). Use with offset for large files.' },
    },
    required: ['file_path'],
  };
  private readonly protectedPaths: ProtectedPaths;

  constructor(options: WorkspaceToolOptions = {}) {
    this.protectedPaths = options.protectedPaths ?? ProtectedPaths.NONE;
  }

  async validate(args: Record<string, unknown>, ctx: Pick<ToolContext, 'workspace'>): Promise<Validation<ReadFileArgs>> {
    const resolved = await resolveInWorkspace(ctx.workspace, args.file_path, 'file_path', this.protectedPaths);
    if (!resolved.ok) return resolved;
    const offset = optionalInteger(args, 'offset', 0, '0-based line number to start reading from');
    if (!offset.ok) return offset;
    const limit = optionalInteger(args, 'limit', 1, 'number of lines to read');
    if (!limit.ok) return limit;
    const out: ReadFileArgs = { file_path: args.file_path as string };
    if (offset.value !== undefined) out.offset = offset.value;
    if (limit.value !== undefined) out.limit = limit.value;
    return { ok: true, args: out };
  }

  describe(args: ReadFileArgs): string {
    if (args.offset === undefined && args.limit === undefined) return `Read ${args.file_path}`;
    const from = (args.offset ?? 0) + 1;
    return `Read ${args.file_path} (lines ${from}-${args.limit === undefined ? 'end' : from + args.limit - 1})`;
  }

  async run(args: ReadFileArgs, ctx: ToolContext): Promise<ToolResult> {
    const resolved = await resolveInWorkspace(ctx.workspace, args.file_path, 'file_path', this.protectedPaths);
    if (!resolved.ok) return { isError: true, error: resolved.error };
    const where = describeGivenPath(ctx.workspace, args.file_path);
    const read = await readTextFile(resolved.path, where);
    if (!read.ok) return { isError: true, error: read.error };
    if (args.offset === undefined && args.limit === undefined) {
      return { llmContent: read.text, display: { type: 'text', text: read.text } };
    }
    const lines = splitLinesKeepEnds(read.text);
    const start = args.offset ?? 0;
    if (start > 0 && start >= lines.length) {
      const count = `${lines.length} line${lines.length === 1 ? '' : 's'}`;
      return {
        isError: true,
        error: {
          type: 'invalid_argument',
          message: `offset ${start} is beyond the end of ${where}, which has ${count} (valid offsets are 0-${Math.max(lines.length - 1, 0)})`,
        },
      };
    }
    const end = args.limit === undefined ? lines.length : Math.min(lines.length, start + args.limit);
    const content = lines.slice(start, end).join('');
    // Gemini CLI's notice, so the model knows the content is partial and how to page on.
    const partial = start > 0 || end < lines.length;
    const text = partial
      ? `[File content truncated: showing lines ${start + 1}-${end} of ${lines.length} total lines. ` +
        `Use offset/limit parameters to view more.]\n${content}`
      : content;
    return { llmContent: text, display: { type: 'text', text } };
  }
}
