/**
 * `/extensions` and `/extensions list`: the gemini-cli extensions this server loaded from its
 * EXTENSIONS_DIR at start. The legacy dialect answers as gemini-cli's a2a-server does,
 * `{name: "extensions list", data: [extension, …]}` (or `data: "No extensions installed."`), for
 * both names; the RFC dialect's command answers with text. Unlike the original, the values of
 * an MCP server's `env` and `headers` are not shown (they hold tokens), their names are; nor are
 * the user and password of a URL (an install `source` cloned with a token, a server's URL).
 */
import { REDACTED } from '../../lib/redact.js';

/** One loaded extension, as the commands show it. */
export interface ExtensionInfo {
  name: string;
  version: string;
  path: string;
  /** Absolute paths of the context files in use. */
  contextFiles: string[];
  mcpServers?: Record<string, Record<string, unknown>>;
  excludeTools?: string[];
  installMetadata?: Record<string, unknown>;
}

export const EXTENSIONS_COMMAND = { name: 'extensions', description: 'Manage extensions.' };
export const EXTENSIONS_LIST_COMMAND = { name: 'list', description: 'Lists all installed extensions.' };
export const NO_EXTENSIONS = 'No extensions installed.';

const hideValues = (map: unknown) =>
  typeof map === 'object' && map !== null ? Object.fromEntries(Object.keys(map).map((k) => [k, REDACTED])) : map;

/** A URL's user and password (`https://x-access-token:ghp_…@github.com/…`), replaced; anything else as written. */
const hideUrlCredentials = (value: unknown): unknown =>
  typeof value === 'string'
    ? value.replace(
        /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^/?#@]*)@/,
        (_m, scheme: string, userinfo: string) =>
          `${scheme}${userinfo
            .split(':')
            .map(() => REDACTED)
            .join(':')}@`,
      )
    : Array.isArray(value)
      ? value.map(hideUrlCredentials)
      : value;

const hideInValues = (map: Record<string, unknown>) => Object.fromEntries(Object.entries(map).map(([k, v]) => [k, hideUrlCredentials(v)]));

/** A server entry without its secrets' values. */
function shownServer(config: Record<string, unknown>): Record<string, unknown> {
  return {
    ...hideInValues(config),
    ...(config.env !== undefined ? { env: hideValues(config.env) } : {}),
    ...(config.headers !== undefined ? { headers: hideValues(config.headers) } : {}),
  };
}

/** gemini-cli's GeminiCLIExtension fields, as its a2a-server lists them. */
function listed(ext: ExtensionInfo): Record<string, unknown> {
  return {
    name: ext.name,
    version: ext.version,
    path: ext.path,
    contextFiles: ext.contextFiles,
    ...(ext.installMetadata !== undefined ? { installMetadata: hideInValues(ext.installMetadata) } : {}),
    ...(ext.mcpServers !== undefined
      ? { mcpServers: Object.fromEntries(Object.entries(ext.mcpServers).map(([k, v]) => [k, shownServer(v)])) }
      : {}),
    ...(ext.excludeTools !== undefined ? { excludeTools: ext.excludeTools } : {}),
    isActive: true,
  };
}

/** The legacy `/executeCommand` answer for `extensions` and `extensions list`. */
export function extensionsAnswer(extensions: readonly ExtensionInfo[]): { name: string; data: unknown } {
  return { name: 'extensions list', data: extensions.length > 0 ? extensions.map(listed) : NO_EXTENSIONS };
}

/** The RFC command's text: one block per extension. */
export function extensionsText(extensions: readonly ExtensionInfo[], dir: string | undefined): string {
  if (extensions.length === 0) {
    return dir === undefined ? `${NO_EXTENSIONS} (EXTENSIONS_DIR=off)` : `${NO_EXTENSIONS} (EXTENSIONS_DIR: ${dir})`;
  }
  const blocks = extensions.map((ext) => {
    const lines = [`- ${ext.name} (${ext.version})`, `  Path: ${ext.path}`];
    if (ext.contextFiles.length > 0) lines.push(`  Context files: ${ext.contextFiles.join(', ')}`);
    const servers = Object.keys(ext.mcpServers ?? {});
    if (servers.length > 0) lines.push(`  MCP servers: ${servers.join(', ')}`);
    if ((ext.excludeTools ?? []).length > 0) lines.push(`  Excluded tools: ${(ext.excludeTools ?? []).join(', ')}`);
    return lines.join('\n');
  });
  return `Extensions (${dir ?? 'EXTENSIONS_DIR'}):\n${blocks.join('\n')}`;
}
