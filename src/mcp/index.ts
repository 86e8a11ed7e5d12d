/** MCP client layer: config parsing, the per-context manager, and MCP tools as `Tool`s. */
export { parseMcpServers, isStdioConfig, type McpStdioServerConfig } from './mcp-config.js';
export { McpManager } from './mcp-manager.js';
export { pinnedFetch, type HttpResolver } from './pinned-fetch.js';
export { McpTool, mcpToolName, mapCallToolResult, type McpToolTarget, type McpCallOptions } from './mcp-tool.js';
export { toGeminiParameters } from './mcp-schema.js';
