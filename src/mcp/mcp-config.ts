/**
 * MCP server configuration, shaped like Gemini CLI's `mcpServers` setting:
 * a map from server name to either a stdio command or a streamable HTTP URL.
 * Parsing is strict and pure: every message names the offending path.
 */
import { isObject } from '../lib/is-object.js';

/** A server started as a child process and spoken to over stdin/stdout. */
export interface McpStdioServerConfig {
  command: string;
  args?: string[];
  /** Added to the SDK's safe default environment (HOME, PATH, SHELL, TERM, USER, LOGNAME). */
  env?: Record<string, string>;
  /** Working directory; a relative path is resolved against the manager's default cwd (the workspace). */
  cwd?: string;
  /** Milliseconds; bounds connect + tools/list, and each tools/call. */
  timeout?: number;
}

/** A server reached over MCP streamable HTTP (Gemini CLI's `httpUrl`; `url` is accepted as the same). */
export interface McpHttpServerConfig {
  url: string;
  /** Sent with every request, e.g. `Authorization`. */
  headers?: Record<string, string>;
  /** Milliseconds; bounds connect + tools/list, and each tools/call. */
  timeout?: number;
}

export type McpServerConfig = McpStdioServerConfig | McpHttpServerConfig;

/** Separates server and tool in the names offered to the model (`github__create_issue`). */
export const MCP_NAME_SEPARATOR = '__';

const SERVER_NAME = /^[A-Za-z0-9_-]+$/;
const STDIO_KEYS = ['command', 'args', 'env', 'cwd'];
const HTTP_KEYS = ['url', 'httpUrl', 'http_url', 'headers'];
const KNOWN_KEYS = new Set([...STDIO_KEYS, ...HTTP_KEYS, 'timeout']);

export type ParseMcpServersResult = { ok: true; value: Record<string, McpServerConfig> } | { ok: false; message: string };

/** True for stdio configs (those with a `command`). */
export function isStdioConfig(config: McpServerConfig): config is McpStdioServerConfig {
  return 'command' in config;
}

class ParseError extends Error {}

/** `a.b` for identifier-like keys, `a["b c"]` otherwise. */
function child(at: string, key: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$-]*$/.test(key) ? `${at}.${key}` : `${at}[${JSON.stringify(key)}]`;
}

function stringMap(v: unknown, at: string): Record<string, string> {
  if (!isObject(v)) throw new ParseError(`${at} must be an object whose values are strings`);
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(v)) {
    if (typeof val !== 'string') throw new ParseError(`${child(at, k)} must be a string`);
    out[k] = val;
  }
  return out;
}

function nonEmptyString(v: unknown, at: string): string {
  if (typeof v !== 'string' || v.trim() === '') throw new ParseError(`${at} must be a non-empty string`);
  return v;
}

function parseUrl(v: unknown, at: string): string {
  const text = nonEmptyString(v, at);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ParseError(`${at} must be an absolute http:// or https:// URL, got "${text}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ParseError(`${at} must be an http:// or https:// URL, got "${text}"`);
  }
  return text;
}

function parseTimeout(v: unknown, at: string): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
    throw new ParseError(`${at} must be a positive number of milliseconds`);
  }
  return v;
}

/** Picks `url`, `httpUrl` or `http_url` (at most one may be set); undefined when none is. */
function urlKey(entry: Record<string, unknown>, at: string): string | undefined {
  const set = ['url', 'httpUrl', 'http_url'].filter((k) => entry[k] !== undefined);
  if (set.length > 1) throw new ParseError(`${at} must set only one of ${set.join(', ')}`);
  return set[0];
}

function parseStdio(entry: Record<string, unknown>, at: string, timeout: number | undefined): McpStdioServerConfig {
  const bad = HTTP_KEYS.find((k) => entry[k] !== undefined);
  if (bad) throw new ParseError(`${child(at, bad)} is only for HTTP servers; ${at} sets command, so it is a stdio server`);
  const config: McpStdioServerConfig = { command: nonEmptyString(entry.command, `${at}.command`) };
  if (entry.args !== undefined) {
    if (!Array.isArray(entry.args)) throw new ParseError(`${at}.args must be an array of strings`);
    const i = entry.args.findIndex((a) => typeof a !== 'string');
    if (i >= 0) throw new ParseError(`${at}.args[${i}] must be a string`);
    config.args = [...(entry.args as string[])];
  }
  if (entry.env !== undefined) config.env = stringMap(entry.env, `${at}.env`);
  if (entry.cwd !== undefined) config.cwd = nonEmptyString(entry.cwd, `${at}.cwd`);
  if (timeout !== undefined) config.timeout = timeout;
  return config;
}

function parseHttp(entry: Record<string, unknown>, at: string, key: string, timeout: number | undefined): McpHttpServerConfig {
  const bad = STDIO_KEYS.find((k) => entry[k] !== undefined);
  if (bad) throw new ParseError(`${child(at, bad)} is only for stdio servers; ${at} sets ${key}, so it is an HTTP server`);
  const config: McpHttpServerConfig = { url: parseUrl(entry[key], `${at}.${key}`) };
  if (entry.headers !== undefined) config.headers = stringMap(entry.headers, `${at}.headers`);
  if (timeout !== undefined) config.timeout = timeout;
  return config;
}

function parseServer(name: string, raw: unknown, at: string): McpServerConfig {
  if (!SERVER_NAME.test(name)) {
    throw new ParseError(`${child(at, name)}: server name "${name}" may only contain letters, digits, "_" and "-"`);
  }
  const here = `${at}.${name}`;
  if (name.includes(MCP_NAME_SEPARATOR)) {
    throw new ParseError(`${here}: server name "${name}" must not contain "${MCP_NAME_SEPARATOR}" (it separates server and tool names)`);
  }
  if (!isObject(raw)) throw new ParseError(`${here} must be an object with either command or url`);
  const unknown = Object.keys(raw).find((k) => !KNOWN_KEYS.has(k));
  if (unknown !== undefined) {
    throw new ParseError(`${child(here, unknown)} is not supported (known keys: command, args, env, cwd, url, httpUrl, headers, timeout)`);
  }
  const key = urlKey(raw, here);
  const hasCommand = raw.command !== undefined;
  if (hasCommand && key) throw new ParseError(`${here} must set exactly one of command and ${key}, not both`);
  if (!hasCommand && !key) throw new ParseError(`${here} must set either command (stdio server) or url/httpUrl (HTTP server)`);
  const timeout = parseTimeout(raw.timeout, `${here}.timeout`);
  return key ? parseHttp(raw, here, key, timeout) : parseStdio(raw, here, timeout);
}

/**
 * Parses an `mcpServers` map. `at` names the map in messages, e.g. `mcp_servers`
 * gives `mcp_servers.github.command must be a non-empty string`. Unknown keys are
 * refused rather than ignored, so a typo never silently drops a setting.
 */
export function parseMcpServers(raw: unknown, at: string): ParseMcpServersResult {
  if (!isObject(raw)) return { ok: false, message: `${at} must be an object mapping server names to server configs` };
  const value: Record<string, McpServerConfig> = {};
  try {
    for (const [name, entry] of Object.entries(raw)) value[name] = parseServer(name, entry, at);
  } catch (err) {
    if (err instanceof ParseError) return { ok: false, message: err.message };
    throw err;
  }
  return { ok: true, value };
}
