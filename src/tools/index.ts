/** The default tool set and the tool classes, shaped like Gemini CLI's tools. */
import { ListDirectoryTool } from './file/list-directory.js';
import { ReadFileTool } from './file/read-file.js';
import { ReadManyFilesTool } from './file/read-many-files.js';
import { ReplaceTool } from './file/replace.js';
import { WriteFileTool } from './file/write-file.js';
import { RestoreFileTool } from './file/restore-file.js';
import { GlobTool } from './search/glob.js';
import { SearchFileContentTool } from './search/search-file-content.js';
import { RunShellCommandTool, type RunShellCommandOptions } from './shell/run-shell-command.js';
import type { AnyTool } from './tool.js';
import { ProtectedPaths, resolveInWorkspace as resolveConfined, type ResolveResult } from './workspace.js';

export { ListDirectoryTool } from './file/list-directory.js';
export { ReadFileTool } from './file/read-file.js';
export { ReadManyFilesTool } from './file/read-many-files.js';
export { ReplaceTool } from './file/replace.js';
export { WriteFileTool } from './file/write-file.js';
export { GlobTool } from './search/glob.js';
export { SearchFileContentTool } from './search/search-file-content.js';
export { RunShellCommandTool, type RunShellCommandOptions } from './shell/run-shell-command.js';
export { readShellLine } from './shell/shell-line.js';
export type { ShellCommand } from './shell/shell-line.js';
export { createShellSandbox } from './shell/sandbox.js';
export { killRecordedGroup } from './shell/process-group.js';
export { ProtectedPaths, readRegularFile, type ResolveResult } from './workspace.js';
/** The most an edit reads of the file it changes (a larger one is refused): what a checkpoint needs to keep. */
export { MAX_READ_BYTES as MAX_EDIT_BYTES } from './file/read-file.js';

/**
 * Workspace confinement for callers outside the tools (the agent's GEMINI.md reader): the
 * tools' resolver, checking the server's own files only when they are given.
 */
export function resolveInWorkspace(
  workspace: string,
  p: unknown,
  argName: string,
  protectedPaths: ProtectedPaths = ProtectedPaths.NONE,
): Promise<ResolveResult> {
  return resolveConfined(workspace, p, argName, protectedPaths);
}

/** Options for {@link createDefaultTools}. */
export interface DefaultToolsOptions {
  shell?: RunShellCommandOptions;
  /**
   * The server's own files and directories (DATA_DIR, AUTH_CONFIG, SETTINGS_FILE, EXTENSIONS_DIR, credentials):
   * every file and search tool refuses them and leaves them out of listings and searches;
   * no approval grant covers a shell line that names one, and the shell's sandbox
   * (`shell.sandbox`) masks them.
   */
  protectedPaths?: ProtectedPaths | readonly string[];
}

/**
 * Gemini CLI's core tools, in this order: `read_file`, `read_many_files`, `list_directory`,
 * `glob`, `search_file_content`, `write_file`, `replace`, `run_shell_command`.
 */
export function createDefaultTools(options: DefaultToolsOptions = {}): AnyTool[] {
  const given = options.protectedPaths ?? [];
  const protectedPaths = given instanceof ProtectedPaths ? given : new ProtectedPaths(given);
  return [
    new ReadFileTool({ protectedPaths }),
    new ReadManyFilesTool({ protectedPaths }),
    new ListDirectoryTool({ protectedPaths }),
    new GlobTool({ protectedPaths }),
    new SearchFileContentTool({ protectedPaths }),
    new WriteFileTool({ protectedPaths }),
    new ReplaceTool({ protectedPaths }),
    new RunShellCommandTool({ ...options.shell, protectedPaths }),
  ];
}

/**
 * The tools only the server's own commands propose, never the model: `restore_file` (the
 * `restore` command puts a checkpoint's files back through it, one card per file).
 */
export function createCommandTools(options: Pick<DefaultToolsOptions, 'protectedPaths'> = {}): AnyTool[] {
  const given = options.protectedPaths ?? [];
  const protectedPaths = given instanceof ProtectedPaths ? given : new ProtectedPaths(given);
  return [new RestoreFileTool({ protectedPaths })];
}
