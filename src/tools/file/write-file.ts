/** `write_file`: creates or overwrites one file inside the workspace, after showing a diff. */
import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { unifiedDiff } from '../diff.js';
import { MAX_READ_BYTES as MAX_EDIT_BYTES } from './read-file.js';
import { contentHash, staleProposal, ToolFailure } from '../tool.js';
import type { FileChange, Tool, ToolContext, ToolError, ToolParameterSchema, ToolProposal, ToolResult, Validation } from '../tool.js';
import {
  describeGivenPath,
  errorCode,
  errorReason,
  ProtectedPaths,
  isWithin,
  readRegularFile,
  realWorkspacePath,
  resolveInWorkspace,
  relativeIn,
  type WorkspaceToolOptions,
} from '../workspace.js';

/** Arguments of `write_file`. */
export interface WriteFileArgs extends Record<string, unknown> {
  file_path: string;
  content: string;
}

type Planned = { ok: true; change: FileChange; rel: string } | { ok: false; error: ToolError };

/** Number of lines in `text` (a trailing newline does not start a new line). */
function countLines(text: string): number {
  if (text === '') return 0;
  const n = text.split('\n').length;
  return text.endsWith('\n') ? n - 1 : n;
}

/** Writes a whole file, creating parent directories inside the workspace as needed. */
export class WriteFileTool implements Tool<WriteFileArgs> {
  readonly name = 'write_file';
  readonly kind = 'edit' as const;
  readonly description =
    'Writes content to a file inside the workspace, replacing it if it exists and creating it ' +
    '(and any missing parent directories) if it does not. The path may be absolute or relative to the workspace.';
  readonly parameters: ToolParameterSchema = {
    type: 'object',
    properties: {
      file_path: { type: 'string', description: 'Path of the file to write, absolute or relative to the workspace.' },
      content: { type: 'string', description: 'The complete new content of the file.' },
    },
    required: ['file_path', 'content'],
  };
  private readonly protectedPaths: ProtectedPaths;

  constructor(options: WorkspaceToolOptions = {}) {
    this.protectedPaths = options.protectedPaths ?? ProtectedPaths.NONE;
  }

  async validate(args: Record<string, unknown>, ctx: Pick<ToolContext, 'workspace'>): Promise<Validation<WriteFileArgs>> {
    const resolved = await resolveInWorkspace(ctx.workspace, args.file_path, 'file_path', this.protectedPaths);
    if (!resolved.ok) return resolved;
    if (typeof args.content !== 'string') {
      return { ok: false, error: { type: 'invalid_argument', message: 'content must be a string (the complete new file content)' } };
    }
    // The card shows the whole content as a diff, computed on the event loop: bounded like what a read returns.
    if (args.content.length > MAX_EDIT_BYTES && Buffer.byteLength(args.content) > MAX_EDIT_BYTES) {
      return { ok: false, error: contentTooLarge(Buffer.byteLength(args.content)) };
    }
    const file_path = args.file_path as string;
    if (await isDirectory(resolved.path)) {
      return { ok: false, error: directoryError(ctx.workspace, file_path) };
    }
    return { ok: true, args: { file_path, content: args.content } };
  }

  editedPath(args: WriteFileArgs): string {
    return args.file_path;
  }

  describe(args: WriteFileArgs): string {
    return `Write ${args.file_path}`;
  }

  /** A protected target fails here (nobody is asked); other failures are shown and fail when run. */
  async propose(args: WriteFileArgs, ctx: Pick<ToolContext, 'workspace'>): Promise<ToolProposal> {
    const planned = await this.plan(args, ctx.workspace);
    if (!planned.ok && planned.error.type === 'path_protected') throw new ToolFailure(planned.error);
    if (!planned.ok) return { type: 'generic', description: `Cannot write ${args.file_path}: ${planned.error.message}` };
    return { type: 'edit', change: planned.change };
  }

  withModifiedContent(args: WriteFileArgs, newContent: string): WriteFileArgs {
    return { ...args, content: newContent };
  }

  async run(args: WriteFileArgs, ctx: ToolContext): Promise<ToolResult> {
    const planned = await this.plan(args, ctx.workspace);
    if (!planned.ok) return { isError: true, error: planned.error };
    const { change, rel } = planned;
    const where = describeGivenPath(ctx.workspace, args.file_path);
    // What a card showed is written only over the content it was computed from (read just above).
    if (ctx.expectedBase !== undefined && change.baseHash !== ctx.expectedBase)
      return { isError: true, error: staleProposal(args.file_path) };
    try {
      await writeCreatingParents(change.filePath, change.newContent, this.guard(ctx));
    } catch (err) {
      return { isError: true, error: { type: 'write_error', message: `Cannot write ${where}: ${errorReason(err)}` } };
    }
    const lines = countLines(change.newContent);
    const how = change.oldContent === undefined ? 'created' : 'overwritten';
    return {
      llmContent: `Wrote ${lines} line${lines === 1 ? '' : 's'} to ${rel} (${how})`,
      display: { type: 'diff', change },
    };
  }

  private guard(ctx: ToolContext): WriteGuard {
    return { workspace: ctx.workspace, protectedPaths: this.protectedPaths, refuse: ctx.refuseWrite };
  }

  /** Resolves the target and reads what is there now, producing the change to make. */
  private async plan(args: WriteFileArgs, workspace: string): Promise<Planned> {
    const resolved = await resolveInWorkspace(workspace, args.file_path, 'file_path', this.protectedPaths);
    if (!resolved.ok) return resolved;
    if (typeof args.content !== 'string') {
      return { ok: false, error: { type: 'invalid_argument', message: 'content must be a string (the complete new file content)' } };
    }
    const filePath = resolved.path;
    let oldContent: string | undefined;
    // Only a regular file is read (or replaced): a FIFO or device there must not hold a thread.
    const current = await readRegularFile(filePath, MAX_EDIT_BYTES);
    if (current.ok) oldContent = current.bytes.toString('utf8');
    else if (current.reason === 'directory') return { ok: false, error: directoryError(workspace, args.file_path) };
    else if (current.reason !== 'missing') {
      return { ok: false, error: { type: 'write_error', message: `Cannot write ${args.file_path}: it ${current.message}` } };
    } else if (await parentIsFile(filePath)) {
      return {
        ok: false,
        error: { type: 'write_error', message: `Cannot write ${args.file_path}: a parent of it is a file, not a directory` },
      };
    }
    const rel = relativeIn(resolved.workspace, filePath);
    const change: FileChange = {
      fileName: path.basename(filePath),
      filePath,
      newContent: args.content,
      formattedDiff: unifiedDiff(rel, oldContent, args.content),
      baseHash: contentHash(oldContent),
    };
    if (oldContent !== undefined) change.oldContent = oldContent;
    return { ok: true, change, rel };
  }
}

/**
 * Where a write may land, checked on the opened descriptor's own path (a folder on the way may
 * have become a symlink since the path was resolved): inside the workspace, none of the server's
 * files, and whatever the caller's `refuse` says (ToolContext.refuseWrite).
 */
export interface WriteGuard {
  workspace: string;
  protectedPaths: ProtectedPaths;
  refuse?: ((realPath: string) => Promise<string | undefined>) | undefined;
}

/** Writes the file (text as UTF-8, bytes as they are); only when its directory is missing, creates it and writes again (replace and restore_file use it too). */
export async function writeCreatingParents(filePath: string, content: string | Uint8Array, guard?: WriteGuard): Promise<void> {
  try {
    await writeRegular(filePath, content, guard);
  } catch (err) {
    if (errorCode(err) !== 'ENOENT') throw err;
    await fs.mkdir(path.dirname(filePath), { recursive: true });
    await writeRegular(filePath, content, guard);
  }
}

/** Flags for writing an edit: never follow a final link, never block on a FIFO (ENXIO without a reader), no terminal. */
const WRITE_FLAGS = fsConstants.O_WRONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK | fsConstants.O_NOCTTY;

/** The real path of an open descriptor (Linux: /proc/self/fd); elsewhere the path resolved again. */
async function openedPath(fd: number, filePath: string): Promise<string> {
  try {
    return await fs.readlink(`/proc/self/fd/${fd}`);
  } catch {
    return fs.realpath(filePath);
  }
}

/** Why `guard` refuses a write landing at `real`, or undefined. */
async function refusal(real: string, guard: WriteGuard): Promise<string | undefined> {
  if (!isWithin(await realWorkspacePath(guard.workspace), real)) return `it would land outside the workspace (${real})`;
  if (guard.protectedPaths.covers(real)) return "it would land on one of the server's own files";
  return guard.refuse?.(real);
}

/**
 * Writes `content` to `filePath` only if it is (or becomes) a regular file: checked on the opened
 * descriptor, with the guard applied to where it really is, and truncated only then. A file this
 * call created for a refused write is removed again.
 */
async function writeRegular(filePath: string, content: string | Uint8Array, guard?: WriteGuard): Promise<void> {
  let handle: fs.FileHandle;
  let created = false;
  try {
    handle = await fs.open(filePath, WRITE_FLAGS);
  } catch (err) {
    if (errorCode(err) !== 'ENOENT') throw err;
    handle = await fs.open(filePath, WRITE_FLAGS | fsConstants.O_CREAT | fsConstants.O_EXCL, 0o666);
    created = true;
  }
  try {
    if (!(await handle.stat()).isFile()) throw new Error('it is not a regular file');
    if (guard !== undefined) {
      const real = await openedPath(handle.fd, filePath);
      const why = await refusal(real, guard);
      if (why !== undefined) {
        if (created) await fs.unlink(real).catch(() => undefined);
        throw new Error(`refused: ${why}`);
      }
    }
    await handle.truncate(0);
    await (typeof content === 'string' ? handle.writeFile(content, 'utf8') : handle.writeFile(content));
  } finally {
    await handle.close();
  }
}

/** True when some parent of `p` exists as a file (the write would fail with ENOTDIR). */
async function parentIsFile(p: string): Promise<boolean> {
  for (let dir = path.dirname(p); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    try {
      return !(await fs.stat(dir)).isDirectory();
    } catch {
      // not there: look further up
    }
  }
  return false;
}

async function isDirectory(p: string): Promise<boolean> {
  try {
    return (await fs.stat(p)).isDirectory();
  } catch {
    return false;
  }
}

function directoryError(workspace: string, given: string): ToolError {
  return {
    type: 'target_is_directory',
    message: `${describeGivenPath(workspace, given)} is a directory; write_file needs a file path`,
  };
}

/** The error for new content over {@link MAX_EDIT_BYTES} (`bytes` long). */
export function contentTooLarge(bytes: number): ToolError {
  return {
    type: 'content_too_large',
    message: `The new content would be ${bytes} bytes; the limit is ${MAX_EDIT_BYTES} bytes. Split it across smaller files.`,
  };
}
