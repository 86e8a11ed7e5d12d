/**
 * AgentSettings (RFC §3.2 "Initialization & Configuration", plus this server's extension
 * fields approval_mode, allowed_tools and mcp_servers): read from a message's metadata
 * under the extension URI, checked against the filesystem and the MCP layer before
 * anything is stored. The first message of a context sets them; a later message may
 * change the approval mode, the allowed tools and the MCP servers, never the workspace.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { DevtoolSchema } from '../../protocol/devtool-schema.js';
import { invalidParams } from '../../protocol/errors.js';
import { DEVTOOL_EXTENSION_URI } from '../../protocol/extension.js';
import type { ContextSettings } from '../task-store.js';

export const SETTINGS_AT = `message.metadata["${DEVTOOL_EXTENSION_URI}"]`;

/** What one message asks for; only the fields it set. */
export interface RequestedSettings {
  /** Absolute real path, checked to be a directory. */
  workspace?: string;
  settings: ContextSettings;
}

/** Where a client may put a workspace. */
export interface WorkspacePolicy {
  /** Workspaces must lie inside one of these (real paths); undefined = anywhere. */
  roots?: readonly string[];
  /** The server's own files (data directory, auth and settings files): no workspace may contain them. */
  protectedPaths?: readonly string[];
}

const inside = (child: string, parent: string) =>
  child === parent || child.startsWith(parent.endsWith(path.sep) ? parent : parent + path.sep);

/** Reads AgentSettings from `metadata` (undefined when it carries none). Throws invalidParams. */
export function readSettings(
  metadata: Record<string, unknown> | undefined,
  schema: DevtoolSchema,
  checkServers: (servers: NonNullable<ContextSettings['mcpServers']>, at: string) => string | undefined,
  at = SETTINGS_AT,
  policy: WorkspacePolicy = {},
): RequestedSettings | undefined {
  const raw = metadata?.[DEVTOOL_EXTENSION_URI];
  if (raw === undefined) return undefined;
  const parsed = schema.parseAgentSettings(raw, at);
  if (!parsed.ok) throw invalidParams(parsed.message);
  const v = parsed.value;
  const out: RequestedSettings = { settings: {} };
  if (v.workspace_path !== undefined) out.workspace = allowedWorkspace(v.workspace_path, `${at}.workspace_path`, policy);
  if (v.approval_mode !== undefined) out.settings.approvalMode = v.approval_mode;
  if (v.allowed_tools !== undefined) out.settings.allowedTools = v.allowed_tools;
  if (v.mcp_servers !== undefined) {
    const bad = checkServers(v.mcp_servers, `${at}.mcp_servers`);
    if (bad !== undefined) throw invalidParams(bad);
    out.settings.mcpServers = v.mcp_servers;
  }
  return out;
}

function checkWorkspace(wanted: string, at: string): string {
  if (!path.isAbsolute(wanted)) throw invalidParams(`${at} must be an absolute path, got "${wanted}"`);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(wanted);
  } catch {
    throw invalidParams(`${at} "${wanted}" does not exist on the server`);
  }
  if (!stat.isDirectory()) throw invalidParams(`${at} "${wanted}" is not a directory`);
  return fs.realpathSync(wanted);
}

/** The real path of a requested workspace, checked against the filesystem and the policy. Throws invalidParams. */
function allowedWorkspace(wanted: string, at: string, policy: WorkspacePolicy): string {
  const ws = checkWorkspace(wanted, at);
  if (policy.roots !== undefined && !policy.roots.some((root) => inside(ws, root))) {
    throw invalidParams(`${at} "${wanted}" is outside the allowed workspace roots (${policy.roots.join(', ')}; WORKSPACE_ROOTS)`);
  }
  const own = (policy.protectedPaths ?? []).find((p) => inside(p, ws));
  if (own !== undefined) throw invalidParams(`${at} "${wanted}" contains the server's own files (${own}); choose a project directory`);
  return ws;
}

export const LEGACY_SETTINGS_AT = 'message.metadata.coderAgent';

/** The legacy dialect's settings object (`kind: "agent-settings"`), when `value` is one. */
export function isLegacySettings(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'agent-settings';
}

/**
 * The legacy dialect's settings (`coderAgent: {kind: "agent-settings", workspacePath, autoExecute?}`,
 * in message metadata or a POST /tasks body): the workspace, checked as the RFC's is; `autoExecute`
 * runs every call without asking (approval mode YOLO). Undefined when `raw` is not such an object.
 */
export function readLegacySettings(raw: unknown, at = LEGACY_SETTINGS_AT, policy: WorkspacePolicy = {}): RequestedSettings | undefined {
  if (!isLegacySettings(raw)) return undefined;
  const out: RequestedSettings = { settings: {} };
  const { workspacePath, autoExecute } = raw;
  if (workspacePath !== undefined && workspacePath !== '') {
    if (typeof workspacePath !== 'string') throw invalidParams(`${at}.workspacePath must be a string`);
    out.workspace = allowedWorkspace(workspacePath, `${at}.workspacePath`, policy);
  }
  if (autoExecute !== undefined && typeof autoExecute !== 'boolean') throw invalidParams(`${at}.autoExecute must be a boolean`);
  if (autoExecute === true) out.settings.approvalMode = 'YOLO';
  return out;
}

/** A later message may repeat the workspace but not move it. Throws invalidParams. */
export function checkSameWorkspace(requested: RequestedSettings | undefined, current: string, at = SETTINGS_AT): void {
  if (requested?.workspace !== undefined && requested.workspace !== current) {
    throw invalidParams(`${at}.workspace_path cannot change within a context (it is ${current}); start a new context`);
  }
}

/** The context's settings after a message that set `requested` (undefined when nothing changes). */
export function mergeSettings(current: ContextSettings, requested: RequestedSettings | undefined): ContextSettings | undefined {
  if (requested === undefined) return undefined;
  const next = { ...current, ...requested.settings };
  return JSON.stringify(next) === JSON.stringify(current) ? undefined : next;
}
