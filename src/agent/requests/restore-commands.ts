/**
 * `restore` and `restore list` (gemini-cli's commands, on this server's checkpoints; see
 * runtime/checkpoints.ts). A restore is a side effect like any write: it proposes one
 * `restore_file` call per file that differs from the checkpoint, each with its card and diff,
 * through the approval gate and the audit log; each takes a checkpoint of what it overwrites, so a
 * restore is undone by restoring that one. Only the checkpoint's own files are put back — nothing
 * else anyone changed since — and the conversation is left as it is (the answer says so).
 * A checkpoint is named by its call's tool_call_id or by its gemini-cli name, and only a caller
 * owning its context may list or restore it, only in its workspace.
 */
import type { Caller } from '../../protocol/caller.js';
import { readRegularFile, resolveInWorkspace, type ProtectedPaths } from '../../tools/index.js';
import type { ContextState } from '../runtime/live-task.js';
import type { Checkpoint, CheckpointFile, TaskStore } from '../task-store.js';

export interface RestoreCommandsOptions {
  store: TaskStore;
  /** The server's own files: never read or written by a restore. */
  protectedPaths: ProtectedPaths;
  /** Whether edits are checkpointed (CHECKPOINTING): `restore list` says so when it finds none. */
  checkpointing: boolean;
  /** The owner a caller's tasks are stored under (Access.ownerFor: undefined without authentication). */
  ownerFor: (caller: Caller | undefined) => string | undefined;
}

/** How a command started, as SlashCommands runs it. */
type Started =
  | { kind: 'text'; text: string }
  | { kind: 'calls'; calls: Array<{ name: string; args: Record<string, unknown> }> }
  | { kind: 'failed'; message: string };

/** The part of SlashCommands' command spec these commands fill. */
interface Spec {
  name: string;
  description: string;
  arguments?: Array<{ name: string; description: string; is_required: boolean }>;
  example?: string;
  sub_commands?: Spec[];
  contextFor?: (args: string, caller: Caller | undefined) => Promise<string | undefined>;
  run?: (r: { context: ContextState; args: string }) => Promise<Started>;
}

/** How many checkpoints `restore list` shows. */
const LIST_LIMIT = 100;

/** The original's answer entries: `{type: "message", messageType, content}`. */
export interface LegacyMessage {
  type: 'message';
  messageType: 'info' | 'error';
  content: string;
}

export class RestoreCommands {
  constructor(private readonly opts: RestoreCommandsOptions) {}

  /** The `restore <checkpoint>` command with its `list` subcommand. */
  spec(): Spec {
    return {
      name: 'restore',
      description: 'Put back the files a checkpointed tool call changed (asks like any edit, and can be undone the same way)',
      arguments: [
        {
          name: 'checkpoint',
          description: "The checkpoint's name or the tool_call_id of its call (restore list shows them)",
          is_required: true,
        },
      ],
      example: '2026-01-02T03-04-05_678Z-app.ts-write_file',
      contextFor: (args, caller) => this.contextFor(args, caller),
      run: (r) => this.restore(r.context, r.args),
      sub_commands: [
        {
          name: 'list',
          description: 'List the checkpoints of this workspace, newest first',
          run: async (r) => ({ kind: 'text', text: await this.listText(r.context) }),
        },
      ],
    };
  }

  /** The checkpoint named `key` when `owner` may restore it (its task's principal), else undefined. */
  async find(key: string, owner: string | undefined): Promise<Checkpoint | undefined> {
    if (key === '') return undefined;
    const cp = await this.opts.store.loadCheckpoint(key, { principal: owner });
    return cp !== undefined && cp.principal === owner ? cp : undefined;
  }

  /** A restore without a context runs in its checkpoint's own conversation (when the caller's). */
  private async contextFor(args: string, caller: Caller | undefined): Promise<string | undefined> {
    return (await this.find(args.trim(), this.opts.ownerFor(caller)))?.contextId;
  }

  /** The restore_file calls that put the checkpoint's changed files back, or why there are none. */
  private async restore(context: ContextState, key: string): Promise<Started> {
    const cp = await this.find(key, context.principal);
    if (cp === undefined || cp.workspace !== context.workspace) {
      return { kind: 'failed', message: `No checkpoint "${key}" in ${context.workspace}. restore list shows the checkpoints.` };
    }
    const changed: CheckpointFile[] = [];
    for (const file of cp.files) if (!(await this.unchanged(context.workspace, file))) changed.push(file);
    if (changed.length === 0) {
      return { kind: 'text', text: `Nothing to restore: ${cp.files.map((f) => f.path).join(', ')} already as at checkpoint ${cp.name}.` };
    }
    const calls = changed.map((f) => ({
      name: 'restore_file',
      args: { file_path: f.path, checkpoint: cp.name, ...(f.content !== undefined ? { content: f.content } : {}) },
    }));
    return { kind: 'calls', calls };
  }

  /** True when the file is as the checkpoint kept it (same bytes, or absent both times). */
  private async unchanged(workspace: string, file: CheckpointFile): Promise<boolean> {
    const resolved = await resolveInWorkspace(workspace, file.path, 'file_path', this.opts.protectedPaths);
    if (!resolved.ok) return false; // restore_file refuses it, with the reason, on its card
    const now = await readRegularFile(resolved.path, 16 * 1024 * 1024); // larger than any checkpoint keeps: changed
    if (!now.ok) return now.reason === 'missing' && file.content === undefined;
    return file.content !== undefined && now.bytes.equals(Buffer.from(file.content, 'base64'));
  }

  /** `restore list` for a conversation: its workspace's checkpoints the caller owns, newest first. */
  private async listText(context: ContextState): Promise<string> {
    const list = await this.opts.store.listCheckpoints({ workspace: context.workspace, principal: context.principal, limit: LIST_LIMIT });
    if (list.length === 0) {
      const off = this.opts.checkpointing
        ? ''
        : ' Checkpointing is off (CHECKPOINTING=true or checkpointing.enabled in the settings file turns it on).';
      return `No checkpoints in ${context.workspace}.${off}`;
    }
    const lines = list.map((c) => `- ${c.name} (tool_call_id ${c.callId}): ${c.files.map((f) => f.path).join(', ')}`);
    return `Checkpoints in ${context.workspace}, newest first (restore <name or tool_call_id> puts a call's files back):\n${lines.join('\n')}`;
  }

  /** gemini-cli's `restore list` answer: `[{messageId, checkpoint}]` as JSON, the caller's newest first. */
  async legacyList(caller: Caller | undefined): Promise<LegacyMessage> {
    const owner = this.opts.ownerFor(caller);
    const list = await this.opts.store.listCheckpoints({ ...(owner !== undefined ? { principal: owner } : {}), limit: LIST_LIMIT });
    const entries = list.map((c) => ({ messageId: c.messageId ?? c.callId, checkpoint: c.name }));
    return { type: 'message', messageType: 'info', content: JSON.stringify(entries) };
  }
}
