/**
 * One MCP server: its SDK client and transport, its lifecycle
 * (disconnected → connected | failed; connected → disconnected when it dies or is closed),
 * and the `tools/call` path its tools use. Failures are recorded, never thrown from `connect`.
 */
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { pinnedFetch, type HttpResolver } from './pinned-fetch.js';
import type { CallToolResult, ErrorCode, McpError, Tool as McpToolDefinition } from '@modelcontextprotocol/sdk/types.js';
import { isStdioConfig, type McpServerConfig } from './mcp-config.js';
import { loadMcpSdk, type McpSdk } from './mcp-sdk.js';
import type { McpCallOptions, McpToolTarget } from './mcp-tool.js';

export type McpServerState = 'connected' | 'failed' | 'disconnected';

/** What a connection needs besides its own config. */
export interface McpConnectionOptions {
  /** What a relative `cwd` in the config resolves against (the workspace). */
  cwd?: string;
  /**
   * Where a stdio server whose config names no `cwd` starts: a directory of the server's own,
   * outside every workspace. Not the workspace: a command there can plant what the server's
   * command resolves from its working directory (`npx` runs `node_modules/.bin` of it), and the
   * server runs unconfined. Absent: `cwd`.
   */
  defaultCwd?: string;
  /** connect + tools/list bound (ms) when the config sets no `timeout`. */
  startTimeoutMs: number;
  /** tools/call bound (ms) when the config sets no `timeout`. */
  callTimeoutMs: number;
  clientInfo: { name: string; version: string };
  onStderr?: (serverName: string, chunk: string) => void;
  /**
   * For HTTP servers: checks the URL and resolves its host once, before connecting; every
   * request then goes to that address (no second DNS answer is ever used). Absent: plain fetch.
   */
  resolveHttp?: HttpResolver;
}

/** How much stderr is kept, and how much of it goes into an error message. */
const STDERR_KEEP_CHARS = 8 * 1024;
const STDERR_REPORT_LINES = 10;
const STDERR_REPORT_CHARS = 1000;
/** tools/list pages followed before giving up (a server looping on cursors). */
const MAX_TOOL_PAGES = 100;
/** How long close() waits for an HTTP server to end its session. */
const TERMINATE_TIMEOUT_MS = 1000;

function reasonOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** An McpError with this code (McpError.code is a plain number; ErrorCode names the ones the SDK uses). */
function isMcpError(sdk: McpSdk, err: unknown, code: ErrorCode): err is McpError {
  return err instanceof sdk.McpError && err.code === (code as number);
}

/** The signal's reason as an Error: what abort() was given here, or the DOMException of AbortSignal.timeout. */
function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error(String(reason));
}

/** Rejects with the signal's reason as soon as it aborts, whatever `work` does. */
function raceAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * One server's client. `connect()` MUST be called at most once (later calls are no-ops);
 * `close()` MUST be called to end a stdio child. Internal to `mcp/`: the manager owns these.
 */
export class McpConnection implements McpToolTarget {
  readonly transportKind: 'stdio' | 'http';
  state: McpServerState = 'disconnected';
  error?: string;
  definitions: McpToolDefinition[] = [];
  private client?: Client;
  private transport?: Transport;
  /** Set by connect() before anything else uses it. */
  private sdk?: McpSdk;
  private started = false;
  private stderr = '';
  private closed = false;

  constructor(
    readonly serverName: string,
    private readonly config: McpServerConfig,
    private readonly options: McpConnectionOptions,
  ) {
    this.transportKind = isStdioConfig(config) ? 'stdio' : 'http';
  }

  private get startTimeoutMs(): number {
    return this.config.timeout ?? this.options.startTimeoutMs;
  }

  private get callTimeoutMs(): number {
    return this.config.timeout ?? this.options.callTimeoutMs;
  }

  private async makeTransport(sdk: McpSdk): Promise<Transport> {
    const { StdioClientTransport, StreamableHTTPClientTransport } = sdk;
    const config = this.config;
    if (!isStdioConfig(config)) {
      const requestInit = { headers: { ...config.headers } };
      if (this.options.resolveHttp === undefined) return new StreamableHTTPClientTransport(new URL(config.url), { requestInit });
      const resolved = await this.options.resolveHttp(config.url);
      if (!resolved.ok) throw new Error(resolved.message);
      return new StreamableHTTPClientTransport(new URL(config.url), { requestInit, fetch: pinnedFetch(resolved.address) });
    }
    const base = this.options.cwd;
    const cwd = config.cwd !== undefined ? path.resolve(base ?? '', config.cwd) : (this.options.defaultCwd ?? base);
    const transport = new StdioClientTransport({ command: config.command, args: config.args, env: config.env, cwd, stderr: 'pipe' });
    transport.stderr?.on('data', (chunk: Buffer | string) => {
      const text = chunk.toString();
      this.stderr = (this.stderr + text).slice(-STDERR_KEEP_CHARS);
      this.options.onStderr?.(this.serverName, text);
    });
    return transport;
  }

  /** The last lines the server wrote to stderr, or '' (stdio servers only). */
  stderrTail(): string {
    const lines = this.stderr.trimEnd().split('\n').slice(-STDERR_REPORT_LINES).join('\n');
    return lines.length > STDERR_REPORT_CHARS ? `…${lines.slice(-STDERR_REPORT_CHARS)}` : lines;
  }

  private withStderr(reason: string): string {
    const tail = this.stderrTail();
    return tail ? `${reason}; stderr: ${tail}` : reason;
  }

  private startTimeoutMessage(): string {
    return `timed out after ${this.startTimeoutMs} ms waiting for the server to connect and list its tools`;
  }

  private describeStartError(sdk: McpSdk, err: unknown): string {
    const code = (err as { code?: unknown } | null)?.code;
    if (code === 'ENOENT' && isStdioConfig(this.config)) {
      return `cannot run "${this.config.command}": command not found, or its working directory does not exist`;
    }
    if (isMcpError(sdk, err, sdk.ErrorCode.RequestTimeout)) return this.startTimeoutMessage();
    if (isMcpError(sdk, err, sdk.ErrorCode.ConnectionClosed)) {
      return 'the server closed the connection during startup (it probably exited)';
    }
    return this.describeHttpError(sdk, err) ?? reasonOf(err);
  }

  /** HTTP status and network failures (fetch's bare "fetch failed" hides the cause). */
  private describeHttpError(sdk: McpSdk, err: unknown): string | undefined {
    if (isStdioConfig(this.config)) return undefined;
    // The status only: the response body is the remote server's, and may hold what it should not show.
    if (err instanceof sdk.StreamableHTTPError && err.code !== undefined && err.code > 0) return `the server answered HTTP ${err.code}`;
    const cause = (err as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
    if (cause) return `cannot reach ${this.config.url}: ${String(cause.message || cause.code)}`;
    return undefined;
  }

  /** Connects and lists tools within the start timeout. Never throws: failure is `state: 'failed'` + `error`. */
  async connect(): Promise<void> {
    if (this.closed || this.started) return;
    this.started = true;
    const sdk = await loadMcpSdk();
    this.sdk = sdk;
    if (this.closed) return;
    const client = new sdk.Client(this.options.clientInfo, { capabilities: {} });
    this.client = client;
    const ms = this.startTimeoutMs;
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new Error(this.startTimeoutMessage())), ms);
    try {
      this.transport = await raceAbort(this.makeTransport(sdk), deadline.signal);
      await raceAbort(client.connect(this.transport, { signal: deadline.signal, timeout: ms }), deadline.signal);
      this.definitions = await raceAbort(this.listAllTools(client, deadline.signal, ms), deadline.signal);
      if (this.closed) throw new Error('closed while starting');
      this.state = 'connected';
      client.onclose = () => this.onClosed();
    } catch (err) {
      // Let the child's last stderr chunks arrive before quoting them.
      await new Promise((resolve) => setImmediate(resolve));
      this.definitions = [];
      await this.abandon(sdk, client);
      if (this.closed) return; // close() during start: stays 'disconnected', not a failure
      this.state = 'failed';
      this.error = this.withStderr(this.describeStartError(sdk, err));
    } finally {
      clearTimeout(timer);
    }
  }

  /** Closes a client that failed to start; a stdio child gets SIGTERM at once rather than after the SDK's 2 s grace. */
  private async abandon(sdk: McpSdk, client: Client): Promise<void> {
    const pid = this.transport instanceof sdk.StdioClientTransport ? this.transport.pid : null;
    const closing = client.close().catch(() => undefined);
    if (pid !== null) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
    await closing;
  }

  private async listAllTools(client: Client, signal: AbortSignal, timeout: number): Promise<McpToolDefinition[]> {
    const all: McpToolDefinition[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_TOOL_PAGES; page++) {
      const result = await client.listTools(cursor === undefined ? undefined : { cursor }, { signal, timeout });
      all.push(...result.tools);
      cursor = result.nextCursor;
      if (!cursor) break;
    }
    return all;
  }

  /** The server went away on its own (crash, exit, closed stdout). */
  private onClosed(): void {
    if (this.closed || this.state !== 'connected') return;
    this.state = 'disconnected';
    this.error = this.withStderr('the server closed the connection (it may have exited)');
  }

  private unavailable(): Error {
    if (this.closed) return new Error(`MCP server "${this.serverName}" has been shut down`);
    if (this.state === 'failed') return new Error(`MCP server "${this.serverName}" failed to start: ${this.error}`);
    if (this.state === 'disconnected' && this.error) return new Error(`MCP server "${this.serverName}" is disconnected: ${this.error}`);
    return new Error(`MCP server "${this.serverName}" is not started`);
  }

  async callTool(toolName: string, args: Record<string, unknown>, options: McpCallOptions): Promise<CallToolResult> {
    const client = this.client;
    const sdk = this.sdk;
    if (this.state !== 'connected' || !client || !sdk || this.closed) throw this.unavailable();
    const timeout = this.callTimeoutMs;
    // The SDK never removes its abort listener from the signal it is given; a per-call
    // signal keeps a long task's signal from collecting one listener per call.
    const perCall = new AbortController();
    const forward = () => perCall.abort(options.signal.reason);
    if (options.signal.aborted) forward();
    options.signal.addEventListener('abort', forward, { once: true });
    try {
      const result = await client.callTool({ name: toolName, arguments: args }, undefined, {
        signal: perCall.signal,
        timeout,
        onprogress: options.onProgress,
        resetTimeoutOnProgress: options.onProgress !== undefined,
      });
      return result as CallToolResult;
    } catch (err) {
      if (this.state !== 'connected' || this.closed) throw this.unavailable();
      if (isMcpError(sdk, err, sdk.ErrorCode.RequestTimeout)) throw new Error(`no answer within ${timeout} ms`, { cause: err });
      const http = this.describeHttpError(sdk, err);
      throw http !== undefined ? new Error(http, { cause: err }) : err;
    } finally {
      options.signal.removeEventListener('abort', forward);
    }
  }

  /** Closes the client: ends a stdio child (stdin end → SIGTERM → SIGKILL) or an HTTP session. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const wasConnected = this.state === 'connected';
    if (this.state !== 'failed') this.state = 'disconnected'; // a start failure stays on record
    const transport = this.transport;
    if (wasConnected && this.sdk && transport instanceof this.sdk.StreamableHTTPClientTransport && transport.sessionId) {
      // Best effort DELETE of the session (MCP streamable HTTP §session management), bounded.
      await raceAbort(transport.terminateSession(), AbortSignal.timeout(TERMINATE_TIMEOUT_MS)).catch(() => undefined);
    }
    await this.client?.close().catch(() => undefined);
  }
}
