/**
 * Checkpoints (CHECKPOINTING): right before an approved file-modifying call runs, the files it
 * will touch are read as they are (bytes, or "did not exist") and stored with the call's id, a
 * gemini-cli-style name and the conversation position. Only the files the call names — never the
 * whole workspace, never through git: a restore puts back exactly what the call changed, works in a
 * workspace that is no repository, and leaves the user's repository alone. The record is in the
 * store, so every instance sees it, after a restart too.
 */
import path from 'node:path';
import { Role } from '@a2a-js/sdk';
import { MAX_EDIT_BYTES, readRegularFile, resolveInWorkspace, type ProtectedPaths } from '../../tools/index.js';
import type { Checkpoint, CheckpointFile, TaskStore } from '../task-store.js';
import type { CallCheckpoints, LiveTask, TurnCall } from './live-task.js';

/** The tool a restore runs (tools/file/restore-file.ts): always checkpointed, so a restore can be undone. */
const RESTORE_TOOL = 'restore_file';

/** gemini-cli's checkpoint name: `<ISO time, ':'→'-' and '.'→'_'>-<file name>-<tool>`. */
export function checkpointName(at: Date, filePath: string, toolName: string): string {
  return `${at.toISOString().replace(/:/g, '-').replace(/\./g, '_')}-${path.basename(filePath)}-${toolName}`;
}

/** Why a call's files could not be kept: the call then does not run (nothing is written without its checkpoint). */
export class CheckpointError extends Error {}

export class Checkpointer implements CallCheckpoints {
  /**
   * @param everyEdit CHECKPOINTING: every file edit gets a checkpoint. Without it only restores do
   *   (a restore is always undoable).
   */
  constructor(
    private readonly store: TaskStore,
    private readonly protectedPaths: ProtectedPaths,
    private readonly everyEdit: boolean,
  ) {}

  covers(call: TurnCall): boolean {
    if (call.tool?.kind !== 'edit' || call.tool.editedPath === undefined || call.args === undefined) return false;
    return this.everyEdit || call.snapshot.toolName === RESTORE_TOOL;
  }

  /**
   * Takes the checkpoint of `call` when it is a file edit that names its file, and returns its name
   * (undefined: not a call that edits a named file). Throws CheckpointError when the file cannot
   * be read or the record cannot be stored.
   */
  async take(task: LiveTask, call: TurnCall): Promise<string | undefined> {
    const { tool, args } = call;
    if (tool?.kind !== 'edit' || tool.editedPath === undefined || args === undefined) return undefined;
    const { workspace } = task.context;
    const given = tool.editedPath(args);
    const resolved = await resolveInWorkspace(workspace, given, 'file_path', this.protectedPaths);
    if (!resolved.ok) return undefined; // the call fails on its own argument; nothing is written
    const file = await this.read(workspace, resolved.path);
    const at = new Date();
    const restoreOf = call.snapshot.toolName === RESTORE_TOOL && typeof args.checkpoint === 'string' ? args.checkpoint : undefined;
    const messageId = task.task.history.findLast((m) => m.role === Role.ROLE_USER)?.messageId;
    const checkpoint: Checkpoint = {
      callId: call.snapshot.id,
      name: checkpointName(at, resolved.path, call.snapshot.toolName),
      taskId: task.id,
      contextId: task.context.id,
      workspace,
      ...(task.principal !== undefined ? { principal: task.principal } : {}),
      toolName: call.snapshot.toolName,
      historyLength: task.context.history.length,
      ...(messageId !== undefined ? { messageId } : {}),
      files: [file],
      ...(restoreOf !== undefined ? { restoreOf } : {}),
      createdAt: at,
    };
    try {
      await this.store.saveCheckpoint(checkpoint);
    } catch (err) {
      throw new CheckpointError(`the checkpoint could not be stored (${(err as Error).message})`, { cause: err });
    }
    return checkpoint.name;
  }

  /** The file as it is: its bytes, or absent when there is none. */
  private async read(workspace: string, real: string): Promise<CheckpointFile> {
    const rel = path.relative(workspace, real).split(path.sep).join('/');
    // An edit refuses a larger file before it writes; a checkpoint of one would only fill the store.
    const read = await readRegularFile(real, MAX_EDIT_BYTES);
    if (read.ok) return { path: rel, content: read.bytes.toString('base64') };
    if (read.reason === 'missing') return { path: rel };
    throw new CheckpointError(`${rel} ${read.message}, so it cannot be kept in a checkpoint`);
  }
}
