/**
 * The tools a conversation may use: the built-in workspace tools, the tools of the MCP
 * servers the operator configured (shared by every context), and those of the servers a
 * context's AgentSettings name (started for that context, in its workspace, and stopped
 * when it has been idle for a while). The agent sees MCP only through the McpConnector
 * port; app.ts plugs in the @modelcontextprotocol/sdk implementation.
 */
import { Background } from '../../lib/background.js';
import { ProtectedPaths } from '../../tools/index.js';
import type { AnyTool } from '../../tools/tool.js';
import type { FunctionDeclaration } from '../model/model-client.js';
import type { ContextSettings } from '../task-store.js';

export interface McpServerStatus {
  name: string;
  transport: 'stdio' | 'http';
  status: 'connected' | 'failed' | 'disconnected';
  error?: string;
  /** The server's own tool names. */
  tools: string[];
}

/** A started set of MCP servers. */
export interface McpConnection {
  start(): Promise<void>;
  tools(): AnyTool[];
  status(): McpServerStatus[];
  close(): Promise<void>;
}

export type McpServersJson = NonNullable<ContextSettings['mcpServers']>;

/** The MCP port. */
export interface McpConnector {
  /** Checks server configs (which fields go together, names); a message naming the field, or undefined. */
  check(servers: McpServersJson, at: string): string | undefined;
  /** `clientGiven`: the servers come from a client's AgentSettings (their HTTP URLs are checked and pinned). */
  connect(servers: McpServersJson, opts: { cwd: string; clientGiven?: boolean }): McpConnection;
}

export interface ToolboxLogger {
  warn(obj: object, msg: string): void;
}

export interface ToolboxOptions {
  builtin: readonly AnyTool[];
  mcp?: McpConnector;
  /** Servers from the operator's settings file; they run in `defaultCwd` unless they name a cwd. */
  serverMcp?: McpServersJson;
  defaultCwd: string;
  logger: ToolboxLogger;
  /** A context's own servers stop after this long without use (ms). */
  idleMs?: number;
  /** The server's own files: out of reach of every tool, and of the GEMINI.md reader. */
  protectedPaths?: ProtectedPaths;
  /**
   * Tools no context is offered (the extensions' `excludeTools`): a name as the model sees it
   * (`read_file`, `github__create_issue`) or gemini-cli's class name (`ShellTool`).
   * `run_shell_command(rm -rf)` excludes the whole tool: an exclusion is never weaker than written.
   */
  excludeTools?: readonly string[];
  /** Tools only the server's own commands propose (restore_file): never declared to the model, never run for it. */
  commandTools?: readonly AnyTool[];
}

/** What one context can call right now. */
export interface ToolSet {
  byName: ReadonlyMap<string, AnyTool>;
  declarations: FunctionDeclaration[];
  /** Every MCP server the context sees: the operator's, then its own. */
  servers: McpServerStatus[];
  /** The tools only the server's own commands propose (not in byName: the model neither sees nor calls them). */
  commandTools?: ReadonlyMap<string, AnyTool>;
}

/** The tool a stored or proposed call of `name` runs: the context's, else a command's own. */
export function callTool(set: ToolSet, name: string): AnyTool | undefined {
  return set.byName.get(name) ?? set.commandTools?.get(name);
}

interface ContextServers {
  key: string;
  connection: McpConnection;
  started: Promise<void>;
  lastUsed: number;
}

/**
 * gemini-cli's class names for its built-in tools, which its `excludeTools` accepts beside the
 * tool names (`ShellTool(rm -rf)`): an extension written for it must exclude the same tools here.
 */
const GEMINI_CLI_TOOL_CLASSES: Readonly<Record<string, string>> = {
  ReadFileTool: 'read_file',
  ReadManyFilesTool: 'read_many_files',
  LSTool: 'list_directory',
  GlobTool: 'glob',
  GrepTool: 'search_file_content',
  RipGrepTool: 'search_file_content',
  WriteFileTool: 'write_file',
  EditTool: 'replace',
  SmartEditTool: 'replace',
  ShellTool: 'run_shell_command',
};

/**
 * The tool an `excludeTools` entry names: spaces and a per-command `(…)` part dropped, a class
 * name mapped. No regex: `/\(.*\)$/` on an entry of many `(` takes quadratic time (minutes at start).
 */
function excludedName(entry: string): string {
  let name = entry.trim();
  const open = name.indexOf('(');
  if (open >= 0 && name.endsWith(')')) name = name.slice(0, open).trim();
  return Object.hasOwn(GEMINI_CLI_TOOL_CLASSES, name) ? (GEMINI_CLI_TOOL_CLASSES[name] as string) : name;
}

const declaration = (t: AnyTool): FunctionDeclaration => ({ name: t.name, description: t.description, parameters: { ...t.parameters } });

export class Toolbox {
  private global?: McpConnection;
  /** Failed servers already reported to each context (each is reported once). */
  private readonly reported = new Map<string, Set<string>>();
  private readonly contexts = new Map<string, ContextServers>();
  private readonly builtinDeclarations: FunctionDeclaration[];
  private readonly builtinTools: readonly AnyTool[];
  private readonly excluded: ReadonlySet<string>;
  private sweeper?: NodeJS.Timeout;
  /** Idle stops and replaced connections closing in the background. */
  private readonly background: Background;

  private readonly commandTools: ReadonlyMap<string, AnyTool>;

  constructor(private readonly opts: ToolboxOptions) {
    this.excluded = new Set((opts.excludeTools ?? []).map(excludedName));
    this.builtinTools = opts.builtin.filter((t) => !this.excluded.has(t.name));
    this.builtinDeclarations = this.builtinTools.map(declaration);
    this.commandTools = new Map((opts.commandTools ?? []).map((t) => [t.name, t]));
    this.background = new Background((err, what) => opts.logger.warn({ err }, `${what} failed`));
  }

  /** The built-in tools every context has (those no extension excludes). */
  get builtin(): readonly AnyTool[] {
    return this.builtinTools;
  }

  /** Starts the operator's servers (a failed one is logged and reported to each context once). */
  async start(): Promise<void> {
    const { mcp, serverMcp } = this.opts;
    if (mcp !== undefined && serverMcp !== undefined && Object.keys(serverMcp).length > 0) {
      this.global = mcp.connect(serverMcp, { cwd: this.opts.defaultCwd });
      await this.global.start();
      for (const s of this.global.status()) {
        if (s.status === 'failed') this.opts.logger.warn({ server: s.name, error: s.error }, 'MCP server failed to start');
      }
    }
    const idle = this.opts.idleMs ?? 10 * 60_000;
    this.sweeper = setInterval(() => this.background.run('stopping idle MCP servers', () => this.sweep(idle)), Math.min(idle, 60_000));
    this.sweeper.unref();
  }

  /** Checks a client's mcp_servers before anything is stored. */
  checkServers(servers: McpServersJson, at: string): string | undefined {
    if (this.opts.mcp === undefined) return Object.keys(servers).length > 0 ? `${at}: MCP is not available on this server` : undefined;
    return this.opts.mcp.check(servers, at);
  }

  /** The context's tools, starting its own MCP servers on first use. */
  async forContext(ctx: { id: string; workspace: string; settings: ContextSettings }): Promise<ToolSet> {
    const own = this.ownServers(ctx);
    if (own !== undefined) {
      own.lastUsed = Date.now();
      await own.started;
    }
    const tools = new Map<string, AnyTool>(this.builtinTools.map((t) => [t.name, t]));
    const declarations = [...this.builtinDeclarations];
    const ownNames = new Set(own ? own.connection.status().map((s) => s.name) : []);
    const add = (t: AnyTool) => {
      if (tools.has(t.name) || this.excluded.has(t.name)) return;
      tools.set(t.name, t);
      declarations.push(declaration(t));
    };
    // A context's own server replaces an operator server of the same name.
    for (const t of own?.connection.tools() ?? []) add(t);
    for (const t of this.global?.tools() ?? []) if (!ownNames.has(t.mcp?.serverName ?? '')) add(t);
    const servers = [...(this.global?.status() ?? []).filter((s) => !ownNames.has(s.name)), ...(own?.connection.status() ?? [])];
    return { byName: tools, declarations, servers, commandTools: this.commandTools };
  }

  /** Failed servers this context has not been told about yet; marks them told. */
  unreportedFailures(contextId: string, set: ToolSet): McpServerStatus[] {
    if (!set.servers.some((s) => s.status === 'failed')) return [];
    let told = this.reported.get(contextId);
    if (told === undefined) this.reported.set(contextId, (told = new Set()));
    const fresh = set.servers.filter((s) => s.status === 'failed' && !told.has(s.name));
    for (const s of fresh) told.add(s.name);
    return fresh;
  }

  /** The server's own files (see ToolboxOptions.protectedPaths). */
  get protectedPaths(): ProtectedPaths {
    return this.opts.protectedPaths ?? ProtectedPaths.NONE;
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    await this.background.drain();
    const all = [...this.contexts.values()].map((c) => c.connection.close().catch(() => undefined));
    this.contexts.clear();
    await Promise.all([...all, this.global?.close().catch(() => undefined)]);
  }

  private ownServers(ctx: { id: string; workspace: string; settings: ContextSettings }): ContextServers | undefined {
    const servers = ctx.settings.mcpServers;
    const mcp = this.opts.mcp;
    if (mcp === undefined || servers === undefined || Object.keys(servers).length === 0) return undefined;
    const key = JSON.stringify(servers);
    const current = this.contexts.get(ctx.id);
    if (current?.key === key) return current;
    if (current) this.background.run('closing replaced MCP servers', () => current.connection.close());
    const connection = mcp.connect(servers, { cwd: ctx.workspace, clientGiven: true });
    const entry: ContextServers = {
      key,
      connection,
      lastUsed: Date.now(),
      started: connection.start().then(() => {
        for (const s of connection.status()) {
          if (s.status === 'failed')
            this.opts.logger.warn({ contextId: ctx.id, server: s.name, error: s.error }, 'MCP server failed to start');
        }
      }),
    };
    this.contexts.set(ctx.id, entry);
    return entry;
  }

  private async sweep(idleMs: number): Promise<void> {
    const now = Date.now();
    for (const [id, entry] of this.contexts) {
      if (now - entry.lastUsed < idleMs) continue;
      this.contexts.delete(id);
      await entry.connection.close();
    }
  }
}
