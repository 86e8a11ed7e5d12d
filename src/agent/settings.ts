/**
 * AgentSettings (RFC §3.2 "Initialization & Configuration"): read from the first
 * message's metadata under the extension URI, and checked against the filesystem.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Message } from '@a2a-js/sdk';
import type { DevtoolSchema } from '../protocol/devtool-schema.js';
import { invalidParams } from '../protocol/errors.js';
import { DEVTOOL_EXTENSION_URI } from '../protocol/extension.js';

const AT = `message.metadata["${DEVTOOL_EXTENSION_URI}"]`;

/** The workspace a new context works in: AgentSettings.workspace_path, else the default. */
export function resolveWorkspace(message: Message, schema: DevtoolSchema, fallback: string): string {
  const raw = message.metadata?.[DEVTOOL_EXTENSION_URI];
  if (raw === undefined) return fallback;
  const parsed = schema.parseAgentSettings(raw, AT);
  if (!parsed.ok) throw invalidParams(parsed.message);
  const wanted = parsed.value.workspace_path;
  if (wanted === undefined || wanted === '') return fallback;
  if (!path.isAbsolute(wanted)) throw invalidParams(`${AT}.workspace_path must be an absolute path, got "${wanted}"`);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(wanted);
  } catch {
    throw invalidParams(`${AT}.workspace_path "${wanted}" does not exist on the server`);
  }
  if (!stat.isDirectory()) throw invalidParams(`${AT}.workspace_path "${wanted}" is not a directory`);
  return fs.realpathSync(wanted);
}

/** Later messages of a context may repeat the settings, but may not move the workspace. */
export function checkSameWorkspace(message: Message, schema: DevtoolSchema, current: string): void {
  if (message.metadata?.[DEVTOOL_EXTENSION_URI] === undefined) return;
  const wanted = resolveWorkspace(message, schema, current);
  if (wanted !== current) {
    throw invalidParams(`${AT}.workspace_path cannot change within a context (it is ${current}); start a new context`);
  }
}
