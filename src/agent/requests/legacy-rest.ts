/**
 * The REST side routes of gemini-cli's own a2a-server, with its request and answer shapes:
 * `POST /tasks` (a task with agent settings, no message yet), `GET /tasks/metadata`,
 * `GET /tasks/:taskId/metadata`, `GET /listCommands` and `POST /executeCommand` (this server's
 * slash commands). Every answer is `{ status, body }`; refusals throw the wire errors
 * (invalidParams, taskNotFound, forbidden), which the transport turns into `{ error }` bodies.
 */
import type { Caller } from '../../protocol/caller.js';
import { randomUUID } from 'node:crypto';
import { messageText, stateName } from '../../protocol/a2a.js';
import { invalidParams, taskNotFound } from '../../protocol/errors.js';
import type { GetAllSlashCommandsResponseJson } from '../../protocol/devtool-schema.js';
import type { Access } from '../policy/access.js';
import { readLegacySettings } from '../policy/settings.js';
import type { RequestedSettings, WorkspacePolicy } from '../policy/settings.js';
import type { TaskCache } from '../runtime/task-cache.js';
import type { EventHub } from '../runtime/event-hub.js';
import type { TaskStore } from '../task-store.js';
import type { Encoders } from '../wire/wire-encoder.js';
import type { TaskFactory } from './task-factory.js';
import type { SlashCommands } from './slash-commands.js';
import type { RestoreCommands } from './restore-commands.js';
import { isObject } from '../../lib/is-object.js';

export interface LegacyRestOptions {
  factory: TaskFactory;
  commands: SlashCommands;
  store: TaskStore;
  cache: TaskCache;
  access: Access;
  encoders: Encoders;
  model: string;
  workspacePolicy?: WorkspacePolicy;
  /** `restore` and `restore list`, answered in gemini-cli's shapes (absent: as any other command). */
  restore?: RestoreCommands;
  /** Follows a restore that runs without asking to its end, so the answer says how it went. */
  hub?: EventHub;
}

/** How long `restore <name>` waits for a restore that runs without asking before it answers with the task. */
const RESTORE_WAIT_MS = 10_000;

export interface RestAnswer {
  status: number;
  body?: unknown;
}

/** That server's command listing: subcommands named by their full path ("memory show"). */
interface LegacyCommand {
  name: string;
  description: string;
  arguments: Array<{ name: string; description: string; isRequired: boolean }>;
  subCommands: LegacyCommand[];
}

type CommandJson = GetAllSlashCommandsResponseJson['commands'][number];

/** gemini-cli's listed commands, in its order; this server's others follow, and `init` runs unlisted as there. */
const ORIGINAL_LISTED = ['extensions', 'restore', 'memory'];
const UNLISTED = new Set(['init']);

/** The original's listed commands first, in its order, then this server's own. */
function legacyListed(commands: CommandJson[]): CommandJson[] {
  const rank = (c: CommandJson) => (ORIGINAL_LISTED.includes(c.name) ? ORIGINAL_LISTED.indexOf(c.name) : ORIGINAL_LISTED.length);
  return commands.filter((c) => !UNLISTED.has(c.name)).sort((a, b) => rank(a) - rank(b));
}

function legacyCommand(c: CommandJson, parent?: string): LegacyCommand {
  const name = parent === undefined ? c.name : `${parent} ${c.name}`;
  return {
    name,
    description: c.description ?? '',
    arguments: (c.arguments ?? []).map((a) => ({ name: a.name, description: a.description ?? '', isRequired: a.is_required === true })),
    subCommands: (c.sub_commands ?? []).map((s) => legacyCommand(s, name)),
  };
}

export class LegacyRest {
  constructor(private readonly opts: LegacyRestOptions) {}

  /** POST /tasks `{agentSettings?, contextId?}` → 201 and the new task's id (a JSON string). */
  async createTask(body: unknown, caller: Caller | undefined): Promise<RestAnswer> {
    const b = isObject(body) ? body : {};
    if (b.contextId !== undefined && typeof b.contextId !== 'string') throw invalidParams('contextId must be a string');
    const settings =
      b.agentSettings === undefined ? undefined : { kind: 'agent-settings', ...(isObject(b.agentSettings) ? b.agentSettings : {}) };
    const requested = readLegacySettings(settings, 'agentSettings', this.opts.workspacePolicy);
    return { status: 201, body: await this.createIdleTask(requested, b.contextId, caller) };
  }

  /**
   * A legacy task with no message yet, in a new or given context. It waits as a finished turn
   * does (`completed` here, `input-required` on its wire): its first message starts it.
   */
  private async createIdleTask(requested: RequestedSettings | undefined, contextId: string | undefined, caller: Caller | undefined) {
    const { factory } = this.opts;
    const context = await factory.openContext(contextId || randomUUID(), requested, caller, !contextId);
    return factory.exclusive(context.id, async () => {
      if (contextId) await factory.admit(context, requested); // a context made up just now has no task
      return (await factory.createTask(context, undefined, caller, { dialect: 'legacy' })).id;
    });
  }

  /** GET /listCommands. */
  listCommands(): RestAnswer {
    return { status: 200, body: { commands: legacyListed(this.opts.commands.list().commands).map((c) => legacyCommand(c)) } };
  }

  /**
   * POST /executeCommand `{command, args[]}`. A command that answers at once gives `{name, data}`
   * with its text (as that server's do); one that starts work gives its task: `{name, data: {taskId, status}}`.
   */
  async executeCommand(body: unknown, caller: Caller | undefined): Promise<RestAnswer> {
    const b = isObject(body) ? body : {};
    const { command, args } = b;
    if (typeof command !== 'string' || command.trim() === '') return { status: 400, body: { error: 'Invalid "command" field.' } };
    if (args !== undefined && (!Array.isArray(args) || args.some((a) => typeof a !== 'string'))) {
      return { status: 400, body: { error: '"args" field must be an array.' } };
    }
    const path = command.trim().replace(/^\//, '').split(/\s+/);
    if (path[0] === 'restore' && this.opts.restore !== undefined) return this.restore(path, (args ?? []) as string[], caller);
    const answer = this.opts.commands.legacyAnswer(path);
    if (answer !== undefined) return { status: 200, body: answer };
    const res = await this.opts.commands.execute({ command_path: path, args: ((args ?? []) as string[]).join(' ') }, caller, 'legacy');
    if (res.execution_id === undefined) {
      const unknown = /^Unknown /.test(res.message ?? '');
      return { status: unknown ? 404 : 400, body: { error: unknown ? `Command not found: ${command}` : (res.message ?? 'failed') } };
    }
    const stored = await this.opts.store.loadTask(res.execution_id);
    const state = stateName(stored?.task.status?.state);
    if (stored && state === 'completed') {
      const last = [...stored.task.history].reverse().find((m) => messageText(m) !== '');
      return { status: 200, body: { name: command.trim(), data: last ? messageText(last) : '' } };
    }
    return { status: 200, body: { name: command.trim(), data: { taskId: res.execution_id, status: res.status } } };
  }

  /**
   * `restore list` → `{name: "restore list", data: {type: "message", messageType: "info", content: "[{messageId, checkpoint}]"}}`;
   * `restore <name>` → `{name: "restore", data: [{…"info", content}]}` once restored (a mode that lets edits
   * run), or the task that waits for its approval `{name: "restore", data: {taskId, status}}`; no name or an
   * unknown one → `{name: "restore", data: {…"error", content}}`. As gemini-cli's, always 200.
   */
  private async restore(path: string[], args: string[], caller: Caller | undefined): Promise<RestAnswer> {
    const restore = this.opts.restore as RestoreCommands;
    if (path[1] === 'list' && path.length === 2)
      return { status: 200, body: { name: 'restore list', data: await restore.legacyList(caller) } };
    const key = [...path.slice(1), ...args].join(' ').trim();
    const error = (content: string) => ({
      status: 200,
      body: { name: 'restore', data: { type: 'message', messageType: 'error', content } },
    });
    if (key === '') return error('Please provide a checkpoint name to restore (restore list shows them).');
    const res = await this.opts.commands.execute({ command_path: ['restore'], args: key }, caller, 'legacy');
    const taskId = res.execution_id;
    if (taskId === undefined) return error(res.message ?? `No checkpoint "${key}".`);
    if (res.status === 'STARTED' && this.opts.hub !== undefined) {
      for await (const ev of this.opts.hub.follow(taskId, 0, { signal: AbortSignal.timeout(RESTORE_WAIT_MS) })) if (ev.final) break;
    }
    const stored = await this.opts.store.loadTask(taskId);
    if (stored === undefined || stateName(stored.task.status?.state) !== 'completed') {
      return { status: 200, body: { name: 'restore', data: { taskId, status: res.status } } };
    }
    const last = [...stored.task.history].reverse().find((m) => messageText(m) !== '');
    const content = last ? messageText(last) : 'Restored.';
    const failed = (await this.opts.store.loadTurn(taskId)).some((c) => c.snapshot.status !== 'SUCCEEDED');
    if (failed) return error(content);
    return { status: 200, body: { name: 'restore', data: [{ type: 'message', messageType: 'info', content }] } };
  }

  /** GET /tasks/:taskId/metadata → `{metadata}`; 404 `{error: "Task not found"}`. */
  async taskMetadata(taskId: string, caller: Caller | undefined): Promise<RestAnswer> {
    const stored = this.opts.cache.peek(taskId) ?? (await this.opts.store.loadTask(taskId));
    if (!stored) throw taskNotFound(taskId);
    this.opts.access.checkOwner(caller, stored.principal, `task ${taskId}`);
    return { status: 200, body: { metadata: await this.metadataOf(taskId) } };
  }

  /** GET /tasks/metadata: the caller's most recent tasks (at most 100); 204 when there are none. */
  async allTaskMetadata(caller: Caller | undefined): Promise<RestAnswer> {
    const principal = this.opts.access.enabled ? (caller?.id ?? '') : undefined;
    const { tasks } = await this.opts.store.listTasks({ principal, limit: 100, offset: 0 });
    if (tasks.length === 0) return { status: 204 };
    const all = [];
    for (const t of tasks) all.push(await this.metadataOf(t.id));
    return { status: 200, body: all };
  }

  /** That server's task metadata: id, context, state (as the task's dialect shows it), model, MCP servers and tools. */
  private async metadataOf(taskId: string): Promise<Record<string, unknown>> {
    const stored = await this.opts.store.loadTask(taskId);
    if (!stored) throw taskNotFound(taskId);
    const task = this.opts.encoders[stored.dialect].taskView(stored.task);
    const context = await this.opts.cache.loadContext(task.contextId);
    const tools = [...(context?.tools.byName.values() ?? [])];
    const describe = (t: (typeof tools)[number]) => ({ name: t.name, description: t.description, parameterSchema: t.parameters });
    return {
      id: task.id,
      contextId: task.contextId,
      taskState: stateName(task.status?.state),
      model: this.opts.model,
      mcpServers: (context?.tools.servers ?? []).map((s) => ({
        name: s.name,
        status: s.status,
        tools: tools.filter((t) => t.mcp?.serverName === s.name).map(describe),
      })),
      availableTools: tools.map(describe),
    };
  }
}
