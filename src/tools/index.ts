/** The default tool set and the tool classes, shaped like Gemini CLI's tools. */
import { ListDirectoryTool } from './file/list-directory.js';
import { ReadFileTool } from './file/read-file.js';
import { ReadManyFilesTool } from './file/read-many-files.js';
import { ReplaceTool } from './file/replace.js';
import { WriteFileTool } from './file/write-file.js';
import { GlobTool } from './search/glob.js';
import { SearchFileContentTool } from './search/search-file-content.js';
import { RunShellCommandTool, type RunShellCommandOptions } from './shell/run-shell-command.js';
import type { AnyTool } from './tool.js';
import { ProtectedPaths, resolveInWorkspace as resolveConfined, type ResolveResult } from './workspace.js';

export { ListDirectoryTool, type ListDirectoryArgs } from './file/list-directory.js';
export { ReadFileTool, MAX_READ_BYTES, type ReadFileArgs } from './file/read-file.js';
export {
  ReadManyFilesTool,
  DEFAULT_EXCLUDED_DIRS,
  DEFAULT_EXCLUDED_FILES,
  type ReadManyFilesArgs,
  type ReadManyFilesOptions,
} from './file/read-many-files.js';
export { ReplaceTool, type ReplaceArgs } from './file/replace.js';
export { WriteFileTool, type WriteFileArgs } from './file/write-file.js';
export { GlobTool, type GlobArgs, type GlobOptions } from './search/glob.js';
export { SearchFileContentTool, type SearchFileContentArgs, type SearchFileContentOptions } from './search/search-file-content.js';
export { RunShellCommandTool, type RunShellCommandArgs, type RunShellCommandOptions } from './shell/run-shell-command.js';
export { MAX_READABLE_LINE, readShellLine } from './shell/shell-line.js';
export type { ShellCommand, ShellLine } from './shell/shell-line.js';
export {
  createShellSandbox,
  NO_SANDBOX,
  SandboxUnavailableError,
  type ShellSandbox,
  type ShellSandboxMode,
  type CreateSandboxOptions,
} from './shell/sandbox.js';
export { killRecordedGroup, recordGroup } from './shell/process-group.js';
export { GIT_SAFE_CONFIG, gitSafeEnvironment } from './shell/git-env.js';
export { ProtectedPaths, readRegularFile, type RegularFileRead, type ResolveResult, type WorkspaceToolOptions } from './workspace.js';
export { unifiedDiff } from './diff.js';

/**
 * Workspace confinement for callers outside the tools (the agent's GEMINI.md reader): the
 * tools' resolver, checking the server's own files only when they are given.
 */
export function resolveInWorkspace(
  workspace: string,
  p: unknown,
  argName: string,
  protectedPaths: ProtectedPaths = ProtectedPaths.NONE,
): ResolveResult {
  return resolveConfined(workspace, p, argName, protectedPaths);
}

/** Options for {@link createDefaultTools}. */
export interface DefaultToolsOptions {
  shell?: RunShellCommandOptions;
  /**
   * The server's own files and directories (DATA_DIR, AUTH_CONFIG, SETTINGS_FILE, credentials):
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
