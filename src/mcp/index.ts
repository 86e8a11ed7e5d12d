/** MCP client layer: config parsing, the per-context manager, and MCP tools as `Tool`s. */
export {
  parseMcpServers,
  isStdioConfig,
  MCP_NAME_SEPARATOR,
  type McpServerConfig,
  type McpStdioServerConfig,
  type McpHttpServerConfig,
  type ParseMcpServersResult,
} from './mcp-config.js';
export {
  McpManager,
  DEFAULT_MCP_START_TIMEOUT_MS,
  DEFAULT_MCP_CALL_TIMEOUT_MS,
  type McpManagerOptions,
  type McpServerStatus,
} from './mcp-manager.js';
export type { McpServerState } from './mcp-connection.js';
export { pinnedFetch, type HttpResolver } from './pinned-fetch.js';
export { McpTool, mcpToolName, mapCallToolResult, MAX_TOOL_NAME_LENGTH, type McpToolTarget, type McpCallOptions } from './mcp-tool.js';
export { toGeminiParameters, type GeminiSchema } from './mcp-schema.js';
