/**
 * Which calls wait for a person, which answers they may give, and what an "always"
 * answer trusts from then on. The rule: reads run, anything with side effects waits for a person.
 *
 * - approval mode DEFAULT: reads run; edits, shell commands, MCP tools and anything else ask.
 *   AUTO_EDIT: file edits run too. YOLO: nothing asks.
 * - allowed_tools: a tool name runs without asking; `run_shell_command(git status)` lets
 *   commands whose every part starts with `git status` run (not with an output redirection).
 * - Grants (`proceed_always…` answers) last for the rest of the context, its later tasks
 *   included: a tool; for shell, each root command of the approved line (`echo a` trusts
 *   `echo b`, not `pwd`); for MCP, one tool or the whole server.
 */
import { ConfirmationOptionId } from '../../protocol/extension.js';
import { matchesCommandPrefix, reachesOutside, redirectsOutput, rootCommands } from '../../tools/index.js';
import type { AnyTool } from '../../tools/tool.js';
import type { ContextSettings } from '../task-store.js';
import type { OfferedOption } from '../wire/agent-events.js';

export type ApprovalMode = NonNullable<ContextSettings['approvalMode']>;

/** What a context's calls are judged by. */
export interface ApprovalScope {
  settings: ContextSettings;
  /** Grant keys from `proceed_always…` answers (see {@link grantsFor}). */
  trustedTools: Set<string>;
}

const SHELL_PREFIX = /^([A-Za-z0-9_.-]+)\((.*)\)$/s;

/** The command line of a shell-like call, or undefined (not a shell tool, or no command yet). */
function lineOf(tool: AnyTool, args: Record<string, unknown>): string | undefined {
  const line = tool.commandLine?.(args);
  return typeof line === 'string' ? line : undefined;
}

/**
 * Lines a grant or an allowed_tools prefix may cover: readable roots (no substitutions,
 * compound commands or exotic quoting), no output redirection, no path outside the workspace
 * tree. Anything else asks every time.
 */
function coverable(line: string): boolean {
  return rootCommands(line) !== undefined && !redirectsOutput(line) && !reachesOutside(line);
}

/** The grant key for one root command of a shell tool. */
export const shellGrant = (tool: string, root: string): string => `${tool}(${root})`;
/** The grant key for every tool of an MCP server. */
export const serverGrant = (server: string): string => `mcp_server:${server}`;

function allowedByList(tool: AnyTool, args: Record<string, unknown>, allowed: readonly string[]): boolean {
  for (const entry of allowed) {
    if (entry === tool.name) return true;
    const m = SHELL_PREFIX.exec(entry);
    const line = lineOf(tool, args);
    if (m === null || m[1] !== tool.name || line === undefined) continue;
    const prefix = (m[2] ?? '').trim();
    if (prefix !== '' && coverable(line) && matchesCommandPrefix(line, prefix)) return true;
  }
  return false;
}

function trusted(tool: AnyTool, args: Record<string, unknown>, grants: ReadonlySet<string>): boolean {
  if (grants.has(tool.name)) return true;
  if (tool.mcp !== undefined && grants.has(serverGrant(tool.mcp.serverName))) return true;
  if (tool.commandLine !== undefined) {
    const line = lineOf(tool, args);
    if (line === undefined || !coverable(line)) return false;
    const roots = rootCommands(line) ?? [];
    return roots.length > 0 && roots.every((r) => grants.has(shellGrant(tool.name, r)));
  }
  return false;
}

/** Why a call runs without asking, or undefined when it must wait for a person. */
export function autoApproval(tool: AnyTool, args: Record<string, unknown>, scope: ApprovalScope): string | undefined {
  if (tool.kind === 'read') return 'read-only';
  const mode = scope.settings.approvalMode ?? 'DEFAULT';
  if (mode === 'YOLO') return 'approval mode YOLO';
  if (mode === 'AUTO_EDIT' && tool.kind === 'edit') return 'approval mode AUTO_EDIT';
  if (allowedByList(tool, args, scope.settings.allowedTools ?? [])) return 'allowed_tools';
  if (trusted(tool, args, scope.trustedTools)) return 'allowed always in this conversation';
  return undefined;
}

/** Decides whether a call of `tool` with `args` must be confirmed. */
export function needsApproval(tool: AnyTool, args: Record<string, unknown>, scope: ApprovalScope): boolean {
  return autoApproval(tool, args, scope) === undefined;
}

/** The options offered for a call (RFC §3.2 ConfirmationOption). */
export function optionsFor(tool: AnyTool, args: Record<string, unknown>): OfferedOption[] {
  const options: OfferedOption[] = [{ id: ConfirmationOptionId.proceedOnce, name: 'Allow once' }];
  if (tool.mcp !== undefined) {
    const { serverName, toolName } = tool.mcp;
    options.push(
      {
        id: ConfirmationOptionId.proceedAlwaysTool,
        name: `Always allow ${toolName}`,
        description: `Run ${serverName}'s ${toolName} without asking for the rest of this conversation`,
      },
      {
        id: ConfirmationOptionId.proceedAlwaysServer,
        name: `Always allow ${serverName}`,
        description: `Run every tool of MCP server ${serverName} without asking for the rest of this conversation`,
      },
    );
  } else if (tool.commandLine !== undefined) {
    const line = lineOf(tool, args);
    const roots = line === undefined || !coverable(line) ? undefined : rootCommands(line);
    // A line with command substitution cannot be trusted by its roots: offer no "always".
    if (roots !== undefined && roots.length > 0) {
      const list = [...new Set(roots)].map((r) => `"${r}"`).join(', ');
      options.push({
        id: ConfirmationOptionId.proceedAlways,
        name: 'Allow always',
        description: `Run ${list} commands without asking for the rest of this conversation`,
      });
    }
  } else {
    options.push({
      id: ConfirmationOptionId.proceedAlways,
      name: 'Allow always',
      description: `Run ${tool.name} without asking for the rest of this conversation`,
    });
  }
  if (tool.withModifiedContent !== undefined) {
    options.push({
      id: ConfirmationOptionId.modifyWithEditor,
      name: 'Modify',
      description: 'Write your edited content instead (send it in file_details.new_content)',
    });
  }
  options.push({ id: ConfirmationOptionId.cancel, name: 'Reject' });
  return options;
}

/** The grant keys an answer adds to the context (empty for one-off answers). */
export function grantsFor(tool: AnyTool, args: Record<string, unknown>, option: string): string[] {
  if (option === ConfirmationOptionId.proceedAlwaysServer && tool.mcp !== undefined) return [serverGrant(tool.mcp.serverName)];
  if (option === ConfirmationOptionId.proceedAlwaysTool) return [tool.name];
  if (option !== ConfirmationOptionId.proceedAlways) return [];
  if (tool.commandLine !== undefined) {
    const line = lineOf(tool, args);
    const roots = line === undefined || !coverable(line) ? [] : (rootCommands(line) ?? []);
    return [...new Set(roots)].map((r) => shellGrant(tool.name, r));
  }
  return [tool.name];
}

/** True for answers that run the call. */
export function approves(option: string): boolean {
  return option !== ConfirmationOptionId.cancel;
}
