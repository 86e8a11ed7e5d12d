/**
 * `restore_file`: puts one file of a checkpoint back — its bytes as they were, or, for a file the
 * checkpointed call created, its removal. Never offered to the model: only the server's `restore`
 * command proposes it, and like any edit it shows a card with the diff and waits for a person
 * (unless the approval mode lets edits run). It writes through the same guarded write as
 * `write_file` (inside the workspace, never through a link, never the server's own files), and
 * refuses any path under a `.git` folder: a restore never touches a repository's internals.
 */
import { createHash } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { unifiedDiff } from '../diff.js';
import { staleProposal, ToolFailure } from '../tool.js';
import type { FileChange, Tool, ToolContext, ToolError, ToolParameterSchema, ToolProposal, ToolResult, Validation } from '../tool.js';
import {
  errorReason,
  isWithin,
  ProtectedPaths,
  readRegularFile,
  realWorkspacePath,
  resolveInWorkspace,
  relativeIn,
  type WorkspaceToolOptions,
} from '../workspace.js';
import { MAX_READ_BYTES as MAX_EDIT_BYTES } from './read-file.js';
import { writeCreatingParents } from './write-file.js';

/** Arguments of `restore_file`. */
export interface RestoreFileArgs extends Record<string, unknown> {
  /** Relative to the workspace, `/`-separated. */
  file_path: string;
  /** The bytes to put back (base64); absent: the file did not exist, and is removed. */
  content?: string;
  /** The checkpoint the file comes from (its name), for the card and the record. */
  checkpoint: string;
}

type Planned = { ok: true; change: FileChange; current?: Buffer } | { ok: false; error: ToolError };

const invalid = (message: string): { ok: false; error: ToolError } => ({ ok: false, error: { type: 'invalid_argument', message } });

/** True when `rel` names a `.git` folder or something in one (any case: case-insensitive disks). */
function inGitInternals(rel: string): boolean {
  return rel.split('/').some((part) => part.toLowerCase() === '.git');
}

export class RestoreFileTool implements Tool<RestoreFileArgs> {
  readonly name = 'restore_file';
  readonly kind = 'edit' as const;
  readonly description = 'Puts one file of a checkpoint back as it was before the checkpointed call ran (the restore command).';
  readonly parameters: ToolParameterSchema = {
    type: 'object',
    properties: {
      file_path: { type: 'string', description: 'The file, relative to the workspace.' },
      content: { type: 'string', description: 'Its bytes (base64); absent when the file did not exist.' },
      checkpoint: { type: 'string', description: 'The checkpoint it comes from.' },
    },
    required: ['file_path', 'checkpoint'],
  };
  private readonly protectedPaths: ProtectedPaths;

  constructor(options: WorkspaceToolOptions = {}) {
    this.protectedPaths = options.protectedPaths ?? ProtectedPaths.NONE;
  }

  async validate(args: Record<string, unknown>, ctx: Pick<ToolContext, 'workspace'>): Promise<Validation<RestoreFileArgs>> {
    const { file_path: given, content, checkpoint } = args;
    if (typeof checkpoint !== 'string' || checkpoint === '') return invalid('checkpoint must name the checkpoint restored');
    if (typeof given !== 'string' || given === '' || path.posix.isAbsolute(given) || given.split('/').includes('..')) {
      return invalid('file_path must be a path relative to the workspace, without ".."');
    }
    if (inGitInternals(given))
      return { ok: false, error: { type: 'path_protected', message: `${given} is inside a .git folder; a restore never touches it` } };
    if (content !== undefined && (typeof content !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(content))) {
      return invalid('content must be base64 (absent: the file did not exist)');
    }
    const resolved = await resolveInWorkspace(ctx.workspace, given, 'file_path', this.protectedPaths);
    if (!resolved.ok) return resolved;
    return { ok: true, args: { file_path: given, checkpoint, ...(content !== undefined ? { content } : {}) } };
  }

  editedPath(args: RestoreFileArgs): string {
    return args.file_path;
  }

  describe(args: RestoreFileArgs): string {
    return args.content === undefined
      ? `Remove ${args.file_path} (it did not exist at checkpoint ${args.checkpoint})`
      : `Restore ${args.file_path} from checkpoint ${args.checkpoint}`;
  }

  async propose(args: RestoreFileArgs, ctx: Pick<ToolContext, 'workspace'>): Promise<ToolProposal> {
    const planned = await this.plan(args, ctx.workspace);
    if (!planned.ok) throw new ToolFailure(planned.error);
    return { type: 'edit', change: planned.change };
  }

  async run(args: RestoreFileArgs, ctx: ToolContext): Promise<ToolResult> {
    const planned = await this.plan(args, ctx.workspace);
    if (!planned.ok) return { isError: true, error: planned.error };
    const { change } = planned;
    if (ctx.expectedBase !== undefined && change.baseHash !== ctx.expectedBase)
      return { isError: true, error: staleProposal(args.file_path) };
    const guard = { workspace: ctx.workspace, protectedPaths: this.protectedPaths, refuse: ctx.refuseWrite };
    try {
      if (args.content !== undefined) await writeCreatingParents(change.filePath, Buffer.from(args.content, 'base64'), guard);
      else if (planned.current !== undefined) await removeRegular(change.filePath, guard);
    } catch (err) {
      return { isError: true, error: { type: 'write_error', message: `Cannot restore ${args.file_path}: ${errorReason(err)}` } };
    }
    const what = args.content === undefined ? 'removed (it did not exist at the checkpoint)' : 'restored';
    return { llmContent: `${args.file_path} ${what} from checkpoint ${args.checkpoint}`, display: { type: 'diff', change } };
  }

  /** The change from the file as it is now to the checkpoint's content. */
  private async plan(args: RestoreFileArgs, workspace: string): Promise<Planned> {
    const resolved = await resolveInWorkspace(workspace, args.file_path, 'file_path', this.protectedPaths);
    if (!resolved.ok) return resolved;
    const filePath = resolved.path;
    const rel = relativeIn(resolved.workspace, filePath);
    if (inGitInternals(rel)) return { ok: false, error: { type: 'path_protected', message: `${rel} is inside a .git folder` } };
    const read = await readRegularFile(filePath, MAX_EDIT_BYTES);
    if (!read.ok && read.reason !== 'missing') {
      return { ok: false, error: { type: 'write_error', message: `Cannot restore ${args.file_path}: it ${read.message}` } };
    }
    const current = read.ok ? read.bytes : undefined;
    const oldContent = current !== undefined ? shown(current) : undefined;
    const newContent = args.content === undefined ? '' : shown(Buffer.from(args.content, 'base64'));
    const change: FileChange = {
      fileName: path.basename(filePath),
      filePath,
      newContent,
      formattedDiff: unifiedDiff(rel, oldContent, args.content === undefined ? undefined : newContent),
      // Of the bytes, not of what the card shows: bytes that are not UTF-8 changed after the card are stale.
      baseHash: current === undefined ? 'absent' : sha256(current),
    };
    if (oldContent !== undefined) change.oldContent = oldContent;
    return { ok: true, change, ...(current !== undefined ? { current } : {}) };
  }
}

/** Same as contentHash (tool.ts) for text, and exact for any bytes. */
const sha256 = (bytes: Buffer): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

/**
 * The bytes as a card shows them: as text when they are UTF-8, else by size and hash. A lossy
 * decoding (U+FFFD for each invalid byte) would show different bytes as the same text, and the
 * card must show exactly what is there and what is written.
 */
function shown(bytes: Buffer): string {
  const text = bytes.toString('utf8');
  return Buffer.from(text, 'utf8').equals(bytes) ? text : `(binary: ${bytes.length} bytes, ${sha256(bytes)})\n`;
}

/**
 * Removes a regular file, judged where it really is: opened without following a final link, its
 * descriptor's own path checked like a write's (inside the workspace, not the server's, the
 * caller's refusal), and only then unlinked.
 */
async function removeRegular(
  filePath: string,
  guard: { workspace: string; protectedPaths: ProtectedPaths; refuse?: ((real: string) => Promise<string | undefined>) | undefined },
): Promise<void> {
  const handle = await fs.open(filePath, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK | fsConstants.O_NOCTTY);
  let real: string;
  try {
    if (!(await handle.stat()).isFile()) throw new Error('it is not a regular file');
    real = await fs.readlink(`/proc/self/fd/${handle.fd}`).catch(() => fs.realpath(filePath));
  } finally {
    await handle.close();
  }
  if (!isWithin(await realWorkspacePath(guard.workspace), real)) throw new Error(`refused: it would land outside the workspace (${real})`);
  if (guard.protectedPaths.covers(real)) throw new Error("refused: it would land on one of the server's own files");
  const why = await guard.refuse?.(real);
  if (why !== undefined) throw new Error(`refused: ${why}`);
  await fs.unlink(real);
}
