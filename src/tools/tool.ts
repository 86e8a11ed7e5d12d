/**
 * The tool port. A tool knows nothing of A2A, tasks or the model: it validates its
 * arguments, describes what it is about to do (so a person can approve it), and runs.
 * The agent maps proposals and results onto development-tool `ToolCall` messages.
 */
import { createHash } from 'node:crypto';

/** JSON Schema (the OpenAPI subset Gemini accepts) describing a tool's arguments. */
export interface ToolParameterSchema {
  type: 'object';
  properties: Record<string, { type: string; description?: string; items?: unknown; enum?: string[] }>;
  required?: string[];
}

/** How a tool touches the world; drives the default approval rule ("reads run, writes wait"). */
export type ToolKind = 'read' | 'edit' | 'execute' | 'other';

/** A file change as shown to the user before it is made. Paths are absolute. */
export interface FileChange {
  fileName: string;
  filePath: string;
  /** Absent when the file does not exist yet. */
  oldContent?: string;
  newContent: string;
  /** Unified diff of oldContent → newContent. */
  formattedDiff: string;
  /**
   * Which file content the diff was computed from ({@link contentHash} of oldContent, or of its
   * absence). Kept with the card, never sent: an approved edit is written only while the file
   * still has this content (ToolContext.expectedBase).
   */
  baseHash?: string;
}

/** The base of a FileChange: sha256 of the text, or `absent` for a file that does not exist. */
export function contentHash(text: string | undefined): string {
  return text === undefined ? 'absent' : `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;
}

/** What a side-effecting call will do, for the confirmation card. */
export type ToolProposal =
  | { type: 'edit'; change: FileChange }
  | { type: 'execute'; command: string; workingDirectory?: string }
  | { type: 'mcp'; serverName: string; toolName: string }
  | { type: 'generic'; description: string };

/** A process group a tool started (a shell command), as recorded with its call. */
export interface ProcessGroupRecord {
  pgid: number;
  /** Which process led it: `<machine boot id>:<leader's start time>` (a reused pid has another). */
  stamp: string;
}

export interface ToolContext {
  /** Absolute, real path of the session workspace. Tools MUST NOT touch anything outside it. */
  workspace: string;
  /** Aborted when the task is cancelled; long-running tools MUST stop promptly. */
  signal: AbortSignal;
  /** Streams progress (the whole text so far, not a delta). Optional for tools that finish at once. */
  onLiveOutput?: (wholeTextSoFar: string) => void;
  /**
   * Called once a tool started a process group that could outlive the server (a shell
   * command): the caller records it, so a recovery after a crash can kill it.
   */
  onProcessGroup?: (group: ProcessGroupRecord) => void;
  /**
   * For edit tools whose change a card showed: the card's FileChange.baseHash. The tool writes
   * only if the file still has that content (checked right before writing); otherwise it fails
   * `stale_proposal` and writes nothing. Absent: the change is computed on the file as it is.
   */
  expectedBase?: string;
  /**
   * For edit tools: called with the real path of the file as opened for writing (not followed
   * by name again: the descriptor's own path), right before anything is written. A reason
   * refuses the write. The caller judged the call on a path resolved earlier; a folder on the
   * way may have been swapped for a symlink since (by a command of another conversation on the
   * same workspace), so what the policy judged or the card showed is checked where the write
   * really lands. It answers with a promise: the judgement probes the disk, off the event loop.
   */
  refuseWrite?: (realPath: string) => Promise<string | undefined>;
}

/** What the user sees as the tool's result. */
export type ToolDisplay =
  { type: 'text'; text: string } | { type: 'diff'; change: FileChange } | { type: 'structured'; data: Record<string, unknown> };

export interface ToolError {
  /** Human-readable reason; also what the model is told. */
  message: string;
  /** Stable category, e.g. `file_not_found`, `path_outside_workspace`, `shell_exit_nonzero`. */
  type: string;
  statusCode?: number;
}

/**
 * A tool's outcome. Failures are values, never thrown: an expected failure (a missing file, a
 * non-zero exit) is a result the model is told about, not an exception that ends the turn.
 */
export type ToolResult =
  | { isError?: false; llmContent: string; display: ToolDisplay }
  | { isError: true; error: ToolError; llmContent?: string; liveOutput?: string };

/** What {@link Tool.validate} answers: the typed arguments, or why they are refused. */
export type Validation<A> = { ok: true; args: A } | { ok: false; error: ToolError };

export interface Tool<A extends Record<string, unknown> = Record<string, unknown>> {
  readonly name: string;
  readonly description: string;
  readonly parameters: ToolParameterSchema;
  readonly kind: ToolKind;
  /**
   * Checks and normalises raw model arguments. Returns the typed arguments or a
   * message naming the bad argument (fed back to the model as a FAILED call). A tool that looks
   * at the disk (a path argument) answers with a promise: nothing a model sends is resolved on
   * the event loop.
   */
  validate(args: Record<string, unknown>, ctx: Pick<ToolContext, 'workspace'>): Validation<A> | Promise<Validation<A>>;
  /** A short, human description of this particular call (ToolCall.description). */
  describe(args: A): string;
  /** The confirmation details for a side-effecting call. Read tools may omit it. */
  propose?(args: A, ctx: Pick<ToolContext, 'workspace'>): Promise<ToolProposal>;
  /**
   * For edit tools: the arguments that write `newContent` instead of the proposal
   * (the `modify_with_editor` option). Tools without it do not offer that option.
   */
  withModifiedContent?(args: A, newContent: string): A;
  run(args: A, ctx: ToolContext): Promise<ToolResult>;
  /**
   * For shell tools: the command line a call runs and where it starts; the approval rules read
   * it (agent/policy/shell-rules.ts). Undefined when the call has no runnable line. Asked per
   * call with the model's arguments, so it answers with a promise: its directory is resolved off
   * the event loop.
   */
  commandLine?(args: A, ctx: Pick<ToolContext, 'workspace'>): Promise<CommandLine | undefined>;
  /** For edit tools: the path a call writes, as the model gave it (AUTO_EDIT still asks for some). */
  editedPath?(args: A): string;
  /** Set on tools served by an MCP server. */
  readonly mcp?: McpOrigin;
}

/** What a shell call runs: its line, the directory it starts in, and the paths no grant may cover. */
export interface CommandLine {
  command: string;
  /** Absolute real path of the directory the line starts in. */
  cwd: string;
  /** The server's own files (a line naming one is never covered by a grant). */
  protectedPaths?: { covers(p: string): boolean };
}

/** Any tool, seen from the agent: its args are some JSON object (a tool checks their shape in `validate`). */
export type AnyTool = Tool<Record<string, unknown>>;

/** Where an MCP tool comes from (approval grants may cover a whole server). */
export interface McpOrigin {
  serverName: string;
  /** The tool's own name on its server (the agent offers it as `<server>__<tool>`). */
  toolName: string;
}

/**
 * Thrown by `propose()` when the call cannot be carried out as asked (e.g. `replace` finds no
 * unique match): the call fails with this error, before anyone is asked.
 */
export class ToolFailure extends Error {
  constructor(readonly error: ToolError) {
    super(error.message);
    this.name = 'ToolFailure';
  }
}

/** The error of an edit whose file changed after its card was shown: nothing was written. */
export function staleProposal(where: string): ToolError {
  return {
    type: 'stale_proposal',
    message: `${where} changed after the card was shown; nothing was written — propose the edit again (re-read the file first)`,
  };
}
