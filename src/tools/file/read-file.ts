/** `read_file`: returns the text of one file inside the workspace. */
import fs from 'node:fs/promises';
import type { Tool, ToolContext, ToolError, ToolParameterSchema, ToolResult } from '../tool.js';
import { describeGivenPath, errorCode, errorReason, resolveInWorkspace } from '../workspace.js';

/** Arguments of `read_file`. */
export interface ReadFileArgs extends Record<string, unknown> {
  file_path: string;
}

/** Files larger than this are refused. */
export const MAX_READ_BYTES = 2 * 1024 * 1024;
/** How much of the head is scanned for a NUL byte to detect binary files. */
const BINARY_SNIFF_BYTES = 8 * 1024;

function fail(type: string, message: string): ToolResult {
  return { isError: true, error: { type, message } };
}

/** Reads a text file (absolute or workspace-relative); refuses directories, binaries and files over 2 MB. */
export class ReadFileTool implements Tool<ReadFileArgs> {
  readonly name = 'read_file';
  readonly kind = 'read' as const;
  readonly description =
    'Reads and returns the content of a text file. The path may be absolute or relative to the workspace, ' +
    'and must lie inside the workspace. Binary files, directories and files larger than 2 MB are refused.';
  readonly parameters: ToolParameterSchema = {
    type: 'object',
    properties: {
      file_path: { type: 'string', description: 'Path of the file to read, absolute or relative to the workspace.' },
    },
    required: ['file_path'],
  };

  validate(
    args: Record<string, unknown>,
    ctx: Pick<ToolContext, 'workspace'>,
  ): { ok: true; args: ReadFileArgs } | { ok: false; error: ToolError } {
    const resolved = resolveInWorkspace(ctx.workspace, args.file_path, 'file_path');
    if (!resolved.ok) return resolved;
    return { ok: true, args: { file_path: args.file_path as string } };
  }

  describe(args: ReadFileArgs): string {
    return `Read ${args.file_path}`;
  }

  async run(args: ReadFileArgs, ctx: ToolContext): Promise<ToolResult> {
    const resolved = resolveInWorkspace(ctx.workspace, args.file_path, 'file_path');
    if (!resolved.ok) return { isError: true, error: resolved.error };
    const where = describeGivenPath(ctx.workspace, args.file_path);
    let handle: fs.FileHandle;
    try {
      handle = await fs.open(resolved.path, 'r');
    } catch (err) {
      if (errorCode(err) === 'ENOENT' || errorCode(err) === 'ENOTDIR') return fail('file_not_found', `File not found: ${where}`);
      return fail('read_error', `Cannot read ${where}: ${errorReason(err)}`);
    }
    try {
      const stat = await handle.stat();
      if (stat.isDirectory()) {
        return fail('target_is_directory', `${where} is a directory, not a file; use list_directory to see its entries`);
      }
      if (!stat.isFile()) return fail('read_error', `${where} is not a regular file`);
      if (stat.size > MAX_READ_BYTES) {
        return fail(
          'file_too_large',
          `File too large: ${where} is ${stat.size} bytes; read_file only reads files up to ${MAX_READ_BYTES} bytes (2 MB)`,
        );
      }
      const bytes = await handle.readFile();
      if (bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0)) {
        return fail('binary_file', `${where} is a binary file (it contains NUL bytes); read_file only reads text files`);
      }
      const text = bytes.toString('utf8');
      return { llmContent: text, display: { type: 'text', text } };
    } catch (err) {
      return fail('read_error', `Cannot read ${where}: ${errorReason(err)}`);
    } finally {
      await handle.close().catch(() => undefined);
    }
  }
}
