/** The default tool set and the tool classes, shaped like Gemini CLI's tools. */
import { ListDirectoryTool } from './file/list-directory.js';
import { ReadFileTool } from './file/read-file.js';
import { WriteFileTool } from './file/write-file.js';
import { RunShellCommandTool, type RunShellCommandOptions } from './shell/run-shell-command.js';
import type { AnyTool } from './tool.js';

export { ListDirectoryTool, type ListDirectoryArgs } from './file/list-directory.js';
export { ReadFileTool, MAX_READ_BYTES, type ReadFileArgs } from './file/read-file.js';
export { WriteFileTool, type WriteFileArgs } from './file/write-file.js';
export { RunShellCommandTool, type RunShellCommandArgs, type RunShellCommandOptions } from './shell/run-shell-command.js';
export { resolveInWorkspace, type ResolveResult } from './workspace.js';
export { unifiedDiff } from './diff.js';

/** Options for {@link createDefaultTools}. */
export interface DefaultToolsOptions {
  shell?: RunShellCommandOptions;
}

/** `read_file`, `list_directory`, `write_file` and `run_shell_command`, in that order. */
export function createDefaultTools(options: DefaultToolsOptions = {}): AnyTool[] {
  return [new ReadFileTool(), new ListDirectoryTool(), new WriteFileTool(), new RunShellCommandTool(options.shell)];
}
