/** `list_directory`: lists the entries of one directory inside the workspace. */
import type { Dirent } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Tool, ToolContext, ToolParameterSchema, ToolResult, Validation } from '../tool.js';
import { describeGivenPath, errorCode, errorReason, ProtectedPaths, resolveInWorkspace, type WorkspaceToolOptions } from '../workspace.js';

/** Arguments of `list_directory`. */
export interface ListDirectoryArgs extends Record<string, unknown> {
  dir_path: string;
}

function fail(type: string, message: string): ToolResult {
  return { isError: true, error: { type, message } };
}

/** Lists a directory: sorted, directories first with a trailing `/`; the server's own files are left out. */
export class ListDirectoryTool implements Tool<ListDirectoryArgs> {
  readonly name = 'list_directory';
  readonly kind = 'read' as const;
  readonly description =
    'Lists the names of the files and subdirectories in a directory inside the workspace. ' +
    'Directories come first and end with "/". The path may be absolute or relative to the workspace ("." is the workspace).';
  readonly parameters: ToolParameterSchema = {
    type: 'object',
    properties: {
      dir_path: { type: 'string', description: 'Path of the directory to list, absolute or relative to the workspace.' },
    },
    required: ['dir_path'],
  };
  private readonly protectedPaths: ProtectedPaths;

  constructor(options: WorkspaceToolOptions = {}) {
    this.protectedPaths = options.protectedPaths ?? ProtectedPaths.NONE;
  }

  async validate(args: Record<string, unknown>, ctx: Pick<ToolContext, 'workspace'>): Promise<Validation<ListDirectoryArgs>> {
    const resolved = await resolveInWorkspace(ctx.workspace, args.dir_path, 'dir_path', this.protectedPaths);
    if (!resolved.ok) return resolved;
    return { ok: true, args: { dir_path: args.dir_path as string } };
  }

  describe(args: ListDirectoryArgs): string {
    return `List ${args.dir_path}`;
  }

  async run(args: ListDirectoryArgs, ctx: ToolContext): Promise<ToolResult> {
    const resolved = await resolveInWorkspace(ctx.workspace, args.dir_path, 'dir_path', this.protectedPaths);
    if (!resolved.ok) return { isError: true, error: resolved.error };
    const where = describeGivenPath(ctx.workspace, args.dir_path);
    let entries: Dirent[];
    let more: boolean;
    try {
      ({ entries, more } = await readEntries(resolved.path));
    } catch (err) {
      const code = errorCode(err);
      if (code === 'ENOENT') return fail('dir_not_found', `Directory not found: ${where}`);
      if (code === 'ENOTDIR') {
        return fail('path_is_not_a_directory', `${where} is a file, not a directory; use read_file to read it`);
      }
      return fail('list_error', `Cannot list ${where}: ${errorReason(err)}`);
    }
    const dirs: string[] = [];
    const files: string[] = [];
    for (const entry of entries) {
      const abs = path.join(resolved.path, entry.name);
      // The server's own files, and links into them, are not shown.
      if (await this.protectedPaths.hides(abs)) continue;
      const isDir = entry.isDirectory() || (entry.isSymbolicLink() && (await this.linksToDirectory(ctx.workspace, abs)));
      (isDir ? dirs : files).push(entry.name);
    }
    const byName = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
    const lines = [...dirs.sort(byName).map((d) => `${d}/`), ...files.sort(byName)];
    const cut = more ? `\n(only the first ${MAX_LISTED} entries read are shown; use glob with a pattern to find others)` : '';
    const text =
      lines.length === 0 ? `Directory ${args.dir_path} is empty.` : `Directory listing for ${args.dir_path}:\n${lines.join('\n')}${cut}`;
    return { llmContent: text, display: { type: 'text', text } };
  }

  /** A symlink counts as a directory only when its target is a directory inside the workspace. */
  private async linksToDirectory(workspace: string, linkPath: string): Promise<boolean> {
    const target = await resolveInWorkspace(workspace, linkPath, 'entry', this.protectedPaths);
    if (!target.ok) return false;
    try {
      return (await fs.stat(target.path)).isDirectory();
    } catch {
      return false;
    }
  }
}

/**
 * Entries one listing reads at most: a directory of 100,000 files held the event loop for
 * 1.8 s (every entry checked, sorted and sent to the model), and listing runs unasked.
 */
export const MAX_LISTED = 5_000;

/** Up to {@link MAX_LISTED} entries of `dir`, read in batches; `more` when it has others. */
async function readEntries(dir: string): Promise<{ entries: Dirent[]; more: boolean }> {
  const handle = await fs.opendir(dir, { bufferSize: 256 });
  const entries: Dirent[] = [];
  // The loop closes the directory however it ends.
  for await (const entry of handle) {
    if (entries.length === MAX_LISTED) return { entries, more: true };
    entries.push(entry);
  }
  return { entries, more: false };
}
