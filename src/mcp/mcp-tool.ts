/**
 * One tool of an MCP server, wrapped as our `Tool`: offered to the model as
 * `<server>__<tool>`, validated lightly (the server validates fully), and run
 * through `tools/call`. Results and failures become `ToolResult`s; nothing throws.
 */
import type { CallToolResult, Progress, Tool as McpToolDefinition } from '@modelcontextprotocol/sdk/types.js';
import type { McpOrigin, Tool, ToolContext, ToolError, ToolParameterSchema, ToolProposal, ToolResult } from '../tools/tool.js';
import { MCP_NAME_SEPARATOR } from './mcp-config.js';
import { toGeminiParameters } from './mcp-schema.js';

/** Gemini function names: letters, digits, `_`, `.`, `-`; at most 64 characters; starting with a letter or `_`. */
export const MAX_TOOL_NAME_LENGTH = 64;

/** Options of one `tools/call`. */
export interface McpCallOptions {
  /** Aborting cancels the request (the SDK sends `notifications/cancelled`). */
  signal: AbortSignal;
  /** Progress notifications of this call, when the caller wants them. */
  onProgress?: (progress: Progress) => void;
}

/**
 * The server side of an `McpTool`: one connected server. `callTool` MUST reject
 * (never hang) when the server is gone, the call times out or the signal aborts,
 * with a message a person can act on.
 */
export interface McpToolTarget {
  readonly serverName: string;
  callTool(toolName: string, args: Record<string, unknown>, options: McpCallOptions): Promise<CallToolResult>;
}

/** `<server>__<tool>`, with disallowed characters replaced by `_` and long names cut in the middle. */
export function mcpToolName(serverName: string, toolName: string): string {
  let name = `${serverName}${MCP_NAME_SEPARATOR}${toolName}`.replace(/[^A-Za-z0-9_.-]/g, '_');
  if (!/^[A-Za-z_]/.test(name)) name = `_${name}`;
  if (name.length > MAX_TOOL_NAME_LENGTH) {
    // Keep both ends: the server prefix and the distinctive tail of the tool name.
    const head = 30;
    name = `${name.slice(0, head)}___${name.slice(name.length - (MAX_TOOL_NAME_LENGTH - head - 3))}`;
  }
  return name;
}

function fail(type: string, message: string): { isError: true; error: ToolError } {
  return { isError: true, error: { type, message } };
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function describeBinary(kind: string, mimeType: unknown, data: unknown): string {
  const size = typeof data === 'string' ? Buffer.byteLength(data, 'base64') : 0;
  return `[${typeof mimeType === 'string' ? mimeType : kind}, ${size} bytes]`;
}

/** One content block as text: text as is, binaries summarised. */
function contentText(block: Record<string, unknown>): string {
  switch (block.type) {
    case 'text':
      return typeof block.text === 'string' ? block.text : '';
    case 'image':
    case 'audio':
      return describeBinary(block.type, block.mimeType, block.data);
    case 'resource_link':
      return `[resource link: ${String(block.name ?? block.uri)} <${String(block.uri)}>]`;
    case 'resource': {
      const r = (block.resource ?? {}) as Record<string, unknown>;
      if (typeof r.text === 'string') return r.text;
      return `[resource ${String(r.uri)}, ${describeBinary('binary', r.mimeType, r.blob).slice(1, -1)}]`;
    }
    default:
      return `[${String(block.type)} content]`;
  }
}

/**
 * Maps a `tools/call` result: text blocks joined with newlines (binaries summarised,
 * e.g. `[image/png, 1234 bytes]`); `structuredContent` is shown structured; `isError`
 * becomes an `mcp_tool_error` whose message is the text the server sent.
 */
export function mapCallToolResult(result: CallToolResult | Record<string, unknown>, label: string): ToolResult {
  if (!Array.isArray(result.content) && 'toolResult' in result) {
    // Pre-2024-11-05 servers answer with `toolResult` instead of content blocks.
    const text = JSON.stringify(result.toolResult) ?? '';
    return { llmContent: text, display: { type: 'text', text } };
  }
  const blocks = (Array.isArray(result.content) ? result.content : []) as Array<Record<string, unknown>>;
  const structured = result.structuredContent;
  const hasStructured = typeof structured === 'object' && structured !== null && !Array.isArray(structured);
  let text = blocks.map(contentText).join('\n');
  if (result.isError === true) {
    return {
      isError: true,
      error: { type: 'mcp_tool_error', message: text || `${label} reported an error without a message` },
      llmContent: text,
    };
  }
  if (text === '' && hasStructured) text = JSON.stringify(structured);
  if (hasStructured) return { llmContent: text, display: { type: 'structured', data: structured as Record<string, unknown> } };
  return { llmContent: text, display: { type: 'text', text } };
}

function progressText(p: Progress): string {
  const amount = p.total !== undefined ? `${p.progress}/${p.total}` : `${p.progress}`;
  return p.message ? `${p.message} (${amount})` : `Progress: ${amount}`;
}

/** An MCP server's tool as a `Tool`: kind `other`, so it waits for approval by default. */
export class McpTool implements Tool<Record<string, unknown>> {
  readonly name: string;
  readonly description: string;
  readonly parameters: ToolParameterSchema;
  readonly kind = 'other' as const;
  readonly mcp: McpOrigin;
  private readonly label: string;

  /** `name` defaults to {@link mcpToolName}; the manager passes a de-duplicated one. */
  constructor(
    private readonly target: McpToolTarget,
    definition: McpToolDefinition,
    name?: string,
  ) {
    this.mcp = { serverName: target.serverName, toolName: definition.name };
    this.name = name ?? mcpToolName(target.serverName, definition.name);
    this.label = `MCP tool "${definition.name}" of server "${target.serverName}"`;
    this.description = definition.description || definition.title || `Tool "${definition.name}" of the MCP server "${target.serverName}".`;
    this.parameters = toGeminiParameters(definition.inputSchema);
  }

  validate(args: Record<string, unknown>): { ok: true; args: Record<string, unknown> } | { ok: false; error: ToolError } {
    if (typeof args !== 'object' || args === null || Array.isArray(args)) {
      return { ok: false, error: { type: 'invalid_argument', message: `The arguments of ${this.name} must be an object` } };
    }
    const missing = (this.parameters.required ?? []).find((key) => args[key] === undefined);
    if (missing !== undefined) {
      return { ok: false, error: { type: 'invalid_argument', message: `Missing required argument "${missing}" for ${this.name}` } };
    }
    return { ok: true, args };
  }

  describe(): string {
    return `${this.mcp.serverName}: ${this.mcp.toolName}`;
  }

  async propose(): Promise<ToolProposal> {
    return { type: 'mcp', serverName: this.mcp.serverName, toolName: this.mcp.toolName };
  }

  async run(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolResult> {
    if (ctx.signal.aborted) return fail('cancelled', `Call to ${this.label} was cancelled before it started`);
    const onLiveOutput = ctx.onLiveOutput;
    try {
      const result = await this.target.callTool(this.mcp.toolName, args, {
        signal: ctx.signal,
        onProgress: onLiveOutput ? (p) => onLiveOutput(progressText(p)) : undefined,
      });
      return mapCallToolResult(result, this.label);
    } catch (err) {
      if (ctx.signal.aborted) return fail('cancelled', `Call to ${this.label} was cancelled`);
      return fail('mcp_call_failed', `Call to ${this.label} failed: ${errorMessage(err)}`);
    }
  }
}
