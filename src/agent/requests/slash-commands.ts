/**
 * Slash commands (RFC §3.3): `commands/get` lists them; `command/execute` starts one as a
 * task of its own and answers at once with ExecuteSlashCommandResponse (`execution_id` =
 * the task id). Its progress is that task's TaskStatusUpdateEvents, followed with
 * `tasks/resubscribe` on the execution id (Last-Event-ID: 0 replays from the start).
 *
 * - /tools: the tools and the rule each is approved by.
 * - /mcp: the MCP servers, their status and tools.
 * - /memory show | refresh | list | add <fact>: the workspace's context file (GEMINI.md); adding asks like any edit.
 * - /init: the model drafts GEMINI.md for the project, asking before it writes.
 * - /extensions [list]: the gemini-cli extensions loaded from EXTENSIONS_DIR (extensions-command.ts).
 * - /restore <checkpoint> | list: put back the files of a checkpointed call (restore-commands.ts).
 */
import { randomUUID } from 'node:crypto';
import type {
  CommandExecutionStatusName,
  DevtoolSchema,
  ExecuteSlashCommandResponseJson,
  GetAllSlashCommandsResponseJson,
  SlashCommandJson,
} from '../../protocol/devtool-schema.js';
import { invalidParams, isUnsupported } from '../../protocol/errors.js';
import { DEVTOOL_EXTENSION_URI } from '../../protocol/extension.js';
import { textPart, userMessage } from '../../protocol/a2a.js';
import type { Caller } from '../../protocol/caller.js';
import type { ProtectedPaths } from '../../tools/index.js';
import { autoApproval, serverGrant } from '../policy/approval-policy.js';
import type { ContextState, LiveTask } from '../runtime/live-task.js';
import { MEMORY_FILE, readMemory, withMemory } from '../runtime/memory.js';
import { memorySubcommands } from './memory-commands.js';
import type { RestoreCommands } from './restore-commands.js';
import { endTurn } from '../runtime/task-lifecycle.js';
import type { TaskFactory } from './task-factory.js';
import type { TurnLoop } from '../runtime/turn-loop.js';
import type { WireDialect } from '../wire/wire-encoder.js';
import type { Decoders } from '../wire/wire-decoder.js';
import { EXTENSIONS_COMMAND, EXTENSIONS_LIST_COMMAND, extensionsAnswer, extensionsText, type ExtensionInfo } from './extensions-command.js';

export interface SlashCommandsOptions {
  schema: DevtoolSchema;
  factory: TaskFactory;
  /** Reads the AgentSettings in a command's metadata (the RFC's decoder). */
  decoders: Decoders;
  loop: TurnLoop;
  /** The extensions loaded at start, and EXTENSIONS_DIR (undefined when off). */
  extensions?: { list: readonly ExtensionInfo[]; dir?: string };
  /** `restore` and `restore list` (absent: not offered). */
  restore?: RestoreCommands;
}

interface CommandRun {
  context: ContextState;
  args: string;
  /** The command as typed, e.g. "/memory add". */
  label: string;
}

interface CommandSpec extends SlashCommandJson {
  sub_commands?: CommandSpec[];
  /** What a missing argument's message shows after the command (default: a fact to remember). */
  example?: string;
  /** The conversation the command runs in when the request names none (default: a new one). */
  contextFor?: (args: string, caller: Caller | undefined) => Promise<string | undefined>;
  /** Absent on a command that only groups subcommands. */
  run?: (run: CommandRun) => Promise<Started>;
  /** The legacy dialect's whole `/executeCommand` answer, where the original gives data rather than text. */
  legacy?: () => { name: string; data: unknown };
}

type Started =
  | { kind: 'text'; text: string }
  | { kind: 'calls'; calls: Array<{ name: string; args: Record<string, unknown> }> }
  | { kind: 'model'; prompt: string }
  /** The command cannot run as asked (FAILED_TO_START with this message). */
  | { kind: 'failed'; message: string };

export const INIT_PROMPT = `You are setting up the context file ${MEMORY_FILE} for this project. Explore the workspace with your read-only tools (list_directory, glob, read_file, read_many_files, search_file_content) to learn what the project is, how it is built, tested and run, its layout, and its conventions. Then write ${MEMORY_FILE} at the workspace root with write_file: a concise Markdown document with the sections "Project overview", "Building and running", "Testing", "Layout" and "Conventions". State only what you found in the files; where something is unknown, say so. Write the file once, then reply with a one-paragraph summary.`;

export class SlashCommands {
  private readonly commands: CommandSpec[];

  constructor(private readonly opts: SlashCommandsOptions) {
    this.commands = [
      {
        name: 'tools',
        description: 'List the tools the agent can use and whether each asks before running',
        run: async (r) => ({ kind: 'text', text: await toolsText(r.context) }),
      },
      {
        name: 'mcp',
        description: 'List the MCP servers, their status and their tools',
        run: async (r) => ({ kind: 'text', text: mcpText(r.context) }),
      },
      {
        name: 'memory',
        description: `Show or add to the project context file (${MEMORY_FILE}) the model reads`,
        sub_commands: [
          {
            name: 'show',
            description: `Show ${MEMORY_FILE}`,
            run: async (r) => ({ kind: 'text', text: await memoryText(r.context, this.opts.loop.protectedPaths) }),
          },
          ...memorySubcommands(this.opts.loop.protectedPaths),
          {
            name: 'add',
            description: `Add a fact to ${MEMORY_FILE} (asks before writing, like any edit)`,
            arguments: [{ name: 'fact', description: 'The text to remember', is_required: true }],
            run: async (r) => ({
              kind: 'calls',
              calls: [
                {
                  name: 'write_file',
                  args: {
                    file_path: MEMORY_FILE,
                    content: withMemory(await readMemory(r.context.workspace, this.opts.loop.protectedPaths), r.args),
                  },
                },
              ],
            }),
          },
        ],
      },
      {
        name: 'init',
        description: `Have the model analyse the project and draft ${MEMORY_FILE} (asks before writing)`,
        run: async (r) => {
          const existing = await readMemory(r.context.workspace, this.opts.loop.protectedPaths);
          if (existing !== undefined && existing.trim() !== '') {
            return {
              kind: 'text',
              text: `${MEMORY_FILE} already exists in ${r.context.workspace}; nothing was changed. Use /memory show to read it, or /memory add to extend it.`,
            };
          }
          return { kind: 'model', prompt: INIT_PROMPT };
        },
      },
      this.extensionsCommand(),
      ...(opts.restore ? [opts.restore.spec()] : []),
    ];
  }

  private extensionsCommand(): CommandSpec {
    const { list = [], dir } = this.opts.extensions ?? {};
    const run = async (): Promise<Started> => ({ kind: 'text', text: extensionsText(list, dir) });
    const legacy = () => extensionsAnswer(list);
    return { ...EXTENSIONS_COMMAND, run, legacy, sub_commands: [{ ...EXTENSIONS_LIST_COMMAND, run, legacy }] };
  }

  /** The legacy answer of the command `path` names, when it has one (see CommandSpec.legacy). */
  legacyAnswer(path: string[]): { name: string; data: unknown } | undefined {
    const found = this.resolve(path);
    return typeof found === 'string' ? undefined : found.spec.legacy?.();
  }

  /** GetAllSlashCommandsResponse (proto3 JSON). */
  list(): GetAllSlashCommandsResponseJson {
    const strip = (c: CommandSpec): SlashCommandJson => ({
      name: c.name,
      description: c.description,
      ...(c.arguments ? { arguments: c.arguments } : {}),
      ...(c.sub_commands ? { sub_commands: c.sub_commands.map(strip) } : {}),
    });
    return this.opts.schema.getAllSlashCommandsResponse({ commands: this.commands.map(strip) });
  }

  /**
   * `command/execute`. Malformed params throw invalidParams (-32602); an unknown command or a
   * missing argument answers FAILED_TO_START with the reason; otherwise the command's task is
   * created and set moving before this resolves, in `dialect` (the legacy REST route asks for
   * its own; default RFC).
   */
  async execute(params: unknown, caller?: Caller, dialect: WireDialect = 'rfc'): Promise<ExecuteSlashCommandResponseJson> {
    const { schema, factory } = this.opts;
    if (typeof params !== 'object' || params === null || Array.isArray(params))
      throw invalidParams('params must be an ExecuteSlashCommandRequest object');
    const { metadata, ...rest } = params as Record<string, unknown>;
    if (metadata !== undefined && (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata))) {
      throw invalidParams('params.metadata must be a JSON object');
    }
    const parsed = schema.parseExecuteSlashCommandRequest(rest, 'params');
    if (!parsed.ok) throw invalidParams(parsed.message);
    const { command_path: commandPath, args, context_id: contextId } = parsed.value;
    const failed = (message: string) => schema.executeSlashCommandResponse({ status: 'FAILED_TO_START', message });

    const found = this.resolve(commandPath);
    if (typeof found === 'string') return failed(found);
    const { spec, label } = found;
    const required = (spec.arguments ?? []).filter((a) => a.is_required);
    if (required.length > 0 && args.trim() === '') {
      return failed(
        `${label} needs ${required.map((a) => `<${a.name}>`).join(' ')}: ${required.map((a) => a.description).join('; ')}. Example: ${label} ${spec.example ?? 'use pnpm, not npm'}`,
      );
    }
    if (required.length === 0 && (spec.arguments ?? []).length === 0 && args.trim() !== '') {
      return failed(`${label} takes no arguments (got "${args.trim()}")`);
    }
    const at = `params.metadata["${DEVTOOL_EXTENSION_URI}"]`;
    const requested = this.opts.decoders.rfc.settings(metadata as Record<string, unknown> | undefined, at);
    const own = contextId ?? (await spec.contextFor?.(args, caller));
    const context = await factory.openContext(own ?? randomUUID(), requested, caller, own === undefined);
    // Settings change only while the conversation is free (a busy one refuses the command, and a
    // refused message changes nothing); they apply before the command runs, which may use them.
    if (own !== undefined && factory.changesSettings(context, requested)) {
      await factory.exclusive(context.id, () => factory.admit(context, requested));
    }
    const started = await (spec.run as NonNullable<CommandSpec['run']>)({ context, args: args.trim(), label });
    if (started.kind === 'failed') return failed(started.message);
    const text = `${label}${args.trim() === '' ? '' : ` ${args.trim()}`}`;
    const message = userMessage(context.id, [textPart(text)]);
    const direct = started.kind !== 'model';
    const taskMetadata = direct ? { [DEVTOOL_EXTENSION_URI]: { slash_command: label } } : undefined;
    let task: LiveTask;
    try {
      task = await factory.exclusive(context.id, async () => {
        if (!direct && contextId !== undefined) await factory.checkContextFree(context.id); // a context made up just now has no task
        return factory.createTask(context, message, caller, { metadata: taskMetadata, dialect });
      });
    } catch (err) {
      if (isUnsupported(err)) return failed(err.message); // the conversation is busy
      throw err;
    }
    const status = await this.run(task, started);
    return schema.executeSlashCommandResponse({ execution_id: task.id, status });
  }

  private async run(task: LiveTask, started: Exclude<Started, { kind: 'failed' }>): Promise<CommandExecutionStatusName> {
    const { loop } = this.opts;
    switch (started.kind) {
      case 'text':
        task.publish({ type: 'text', delta: started.text });
        endTurn(task, { state: 'completed' });
        await task.flush();
        return 'STARTED';
      case 'model':
        loop.startTurn(task, [{ text: started.prompt }]);
        return 'STARTED';
      case 'calls': {
        await loop.startDirectTurn(task, started.calls);
        const waiting = task.awaiting();
        if (waiting.length === 0) return 'STARTED';
        await task.flush();
        return waiting.some((c) => c.tool?.commandLine !== undefined) ? 'AWAITING_SHELL_CONFIRMATION' : 'AWAITING_ACTION_CONFIRMATION';
      }
    }
  }

  /** The command a path names, or why there is none. A leading "/" is accepted. */
  private resolve(path: string[]): { spec: CommandSpec; label: string } | string {
    const names = path.map((p, i) => (i === 0 ? p.replace(/^\//, '') : p));
    let level = this.commands;
    let spec: CommandSpec | undefined;
    const seen: string[] = [];
    for (const name of names) {
      spec = level.find((c) => c.name === name);
      const where = seen.length === 0 ? 'command' : `subcommand of /${seen.join(' ')}`;
      if (spec === undefined)
        return `Unknown ${where} "${name}". Available: ${level.map((c) => (seen.length === 0 ? `/${c.name}` : c.name)).join(', ')}`;
      seen.push(name);
      level = spec.sub_commands ?? [];
    }
    const label = `/${seen.join(' ')}`;
    if (spec?.run === undefined) {
      return `${label} needs a subcommand: ${(spec?.sub_commands ?? []).map((c) => c.name).join(', ')} (command_path ${JSON.stringify([...names, (spec?.sub_commands ?? [])[0]?.name])})`;
    }
    return { spec, label };
  }
}

function firstSentence(text: string): string {
  const m = /^(.+?[.!?])(\s|$)/s.exec(text.trim());
  return (m?.[1] ?? text.trim()).replace(/\s+/g, ' ');
}

async function toolsText(ctx: ContextState): Promise<string> {
  const scope = { settings: ctx.settings, trustedTools: ctx.trustedTools, workspace: ctx.workspace, confined: ctx.confined };
  const mode = ctx.settings.approvalMode ?? 'DEFAULT';
  const lines: string[] = [];
  for (const tool of ctx.tools.byName.values()) {
    let rule: string;
    const auto = await autoApproval(tool, {}, scope);
    if (tool.commandLine !== undefined && auto === undefined) {
      const prefixes = (ctx.settings.allowedTools ?? [])
        .filter((a) => a.startsWith(`${tool.name}(`))
        .map((a) => a.slice(tool.name.length + 1, -1));
      const roots = [...ctx.trustedTools].filter((g) => g.startsWith(`${tool.name}(`)).map((g) => g.slice(tool.name.length + 1, -1));
      rule = 'asks';
      if (prefixes.length > 0) rule += `; runs without asking: commands starting with ${prefixes.map((p) => `"${p}"`).join(', ')}`;
      if (roots.length > 0) rule += `; allowed always in this conversation: ${roots.map((r) => `"${r}"`).join(', ')}`;
    } else if (auto === undefined) rule = 'asks';
    else rule = `runs without asking (${auto})`;
    if (tool.mcp !== undefined && auto === undefined && ctx.trustedTools.has(serverGrant(tool.mcp.serverName)))
      rule = 'runs without asking (server allowed always)';
    lines.push(`- ${tool.name} [${tool.kind}]: ${firstSentence(tool.description)} — ${rule}`);
  }
  return `Approval mode: ${mode}. ${lines.length} tools:\n${lines.join('\n')}`;
}

function mcpText(ctx: ContextState): string {
  const servers = ctx.tools.servers;
  if (servers.length === 0)
    return 'No MCP servers are configured. Add them in the server settings file (mcpServers) or in AgentSettings.mcp_servers.';
  const lines = servers.map((s) => {
    const head = `- ${s.name} (${s.transport}): ${s.status}`;
    if (s.status === 'failed' || s.error) return `${head} — ${s.error ?? 'no detail'}`;
    return `${head} — ${s.tools.length} tools${s.tools.length > 0 ? `: ${s.tools.map((t) => `${s.name}__${t}`).join(', ')}` : ''}`;
  });
  return `MCP servers:\n${lines.join('\n')}`;
}

async function memoryText(ctx: ContextState, protectedPaths: ProtectedPaths): Promise<string> {
  const text = await readMemory(ctx.workspace, protectedPaths);
  if (text === undefined || text.trim() === '')
    return `There is no ${MEMORY_FILE} in ${ctx.workspace} yet. /memory add <fact> starts one; /init drafts one.`;
  return `${MEMORY_FILE} (${ctx.workspace}):\n\n${text}`;
}
