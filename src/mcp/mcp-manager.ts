/**
 * The MCP servers of one conversation context: started together, reported together,
 * their tools offered as `<server>__<tool>`, closed together. A server that fails to
 * start is reported and left out; the others work.
 */
import type { HttpResolver } from './pinned-fetch.js';
import type { AnyTool } from '../tools/tool.js';
import type { McpServerConfig } from './mcp-config.js';
import { McpConnection, type McpServerState } from './mcp-connection.js';
import { MAX_TOOL_NAME_LENGTH, McpTool, mcpToolName } from './mcp-tool.js';

/** Bound on connect + tools/list when a server sets no `timeout`. */
export const DEFAULT_MCP_START_TIMEOUT_MS = 10_000; // 10 s
/** Bound on each tools/call when a server sets no `timeout` (Gemini CLI's default). */
export const DEFAULT_MCP_CALL_TIMEOUT_MS = 600_000; // 10 min

export interface McpManagerOptions {
  /** What relative config `cwd`s resolve against, normally the context's workspace. */
  cwd?: string;
  /** Where a stdio server whose config names no `cwd` starts (see McpConnectionOptions.defaultCwd). */
  defaultCwd?: string;
  /** Default 10 000 ms; a server's own `timeout` wins. */
  startTimeoutMs?: number;
  /** Default 600 000 ms; a server's own `timeout` wins. */
  callTimeoutMs?: number;
  /** Sent to servers in `initialize`. */
  clientInfo?: { name: string; version: string };
  /** Receives stdio servers' stderr (e.g. to log it); the tail is kept for error messages either way. */
  onStderr?: (serverName: string, chunk: string) => void;
  /** HTTP servers: check and resolve the URL once, and connect only to that address (see McpConnectionOptions). */
  resolveHttp?: HttpResolver;
}

/** One server as `status()` reports it. */
export interface McpServerStatus {
  name: string;
  transport: 'stdio' | 'http';
  /** `disconnected` before `start()`, after `close()`, or when a connected server went away (then with `error`). */
  status: McpServerState;
  error?: string;
  /** The server's own tool names (offered to the model as `<name>__<tool>`); empty unless it connected. */
  tools: string[];
}

/** Appends `_2`, `_3`, … (within the length limit) until the name is free. */
function uniqueName(wanted: string, taken: Set<string>): string {
  let name = wanted;
  for (let n = 2; taken.has(name); n++) {
    const suffix = `_${n}`;
    name = wanted.slice(0, MAX_TOOL_NAME_LENGTH - suffix.length) + suffix;
  }
  taken.add(name);
  return name;
}

/**
 * Owns one set of MCP clients. `start()` connects every server in parallel and
 * resolves when each is connected or failed (it never rejects); `tools()` offers the
 * tools of connected servers; `close()` MUST be called to end stdio children.
 */
export class McpManager {
  private readonly connections: McpConnection[];
  private readonly wrapped = new Map<McpConnection, McpTool[]>();
  private starting?: Promise<void>;

  constructor(servers: Record<string, McpServerConfig>, options: McpManagerOptions = {}) {
    const shared = {
      cwd: options.cwd,
      defaultCwd: options.defaultCwd,
      startTimeoutMs: options.startTimeoutMs ?? DEFAULT_MCP_START_TIMEOUT_MS,
      callTimeoutMs: options.callTimeoutMs ?? DEFAULT_MCP_CALL_TIMEOUT_MS,
      clientInfo: options.clientInfo ?? { name: 'devtool-a2a-server', version: '0.1.0' },
      onStderr: options.onStderr,
      resolveHttp: options.resolveHttp,
    };
    this.connections = Object.entries(servers).map(([name, config]) => new McpConnection(name, config, shared));
  }

  /** Connects all servers in parallel. Idempotent; never rejects. */
  start(): Promise<void> {
    this.starting ??= Promise.all(this.connections.map((c) => c.connect())).then(() => this.wrapTools());
    return this.starting;
  }

  /** Names are assigned in config order, so a clash is settled the same way every time. */
  private wrapTools(): void {
    const taken = new Set<string>();
    for (const conn of this.connections) {
      if (conn.state !== 'connected') continue;
      this.wrapped.set(
        conn,
        conn.definitions.map((def) => new McpTool(conn, def, uniqueName(mcpToolName(conn.serverName, def.name), taken))),
      );
    }
  }

  status(): McpServerStatus[] {
    return this.connections.map((c) => ({
      name: c.serverName,
      transport: c.transportKind,
      status: c.state,
      ...(c.error !== undefined ? { error: c.error } : {}),
      tools: c.state === 'connected' ? c.definitions.map((d) => d.name) : [],
    }));
  }

  /**
   * Tools of the servers connected now. A tool handed out earlier whose server has
   * since died stays callable, and its calls fail with `mcp_call_failed` naming the cause.
   */
  tools(): AnyTool[] {
    return this.connections.flatMap((c) => (c.state === 'connected' ? (this.wrapped.get(c) ?? []) : []));
  }

  /** Closes every client (stdio children are ended). Idempotent; safe during `start()`. */
  async close(): Promise<void> {
    await Promise.all(this.connections.map((c) => c.close()));
  }
}
