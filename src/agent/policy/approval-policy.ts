/**
 * Which calls wait for a person, which answers they may give, and what an "always"
 * answer trusts from then on. The rule: reads run, anything with side effects waits for a person.
 *
 * - approval mode DEFAULT: reads run; edits, shell commands, MCP tools and anything else ask.
 *   AUTO_EDIT: file edits run too. YOLO: nothing asks (but see the two rules below).
 * - allowed_tools: a tool name runs without asking; `run_shell_command(git status)` lets
 *   lines run whose every command starts with the words `git status`, when shell-rules.ts
 *   finds the line coverable (plain words, catalogued options, no path out).
 * - Grants (`proceed_always…` answers) last for the rest of the context, its later tasks
 *   included: a tool; for shell, each command of the approved line by name (`echo a` trusts
 *   `echo b`, not `pwd`; git by subcommand: `git status` trusts `git status -s`, not
 *   `git push`), and only ever for lines the grant catalogue covers (grant-catalogue.ts); for
 *   MCP, one tool or the whole server.
 * - Edits of files that make tools run code (`.git/`, `.npmrc`, a `config` beside a `HEAD`, …:
 *   tool-config.ts) always ask, whatever the mode (YOLO included), allowed_tools or a grant says:
 *   what they plant runs later outside any sandbox (the developer's git, npm, editor).
 * - Unconfined: when shell commands run without the sandbox (scope.confined is not true), no
 *   shell-like call runs without a card — not by grant, prefix or mode, YOLO included — and no
 *   "always" is offered for one. The operator lifts this only with SHELL_UNCONFINED_AUTO_APPROVE.
 *
 * Every judgement that looks at the disk (a shell call's directory and the paths its line names,
 * an edit's target) answers with a promise: the paths are the model's, and are probed off the
 * event loop, afresh each time (on the disk as it is when the call is judged).
 */
import { ConfirmationOptionId } from '../../protocol/extension.js';
import type { AnyTool } from '../../tools/tool.js';
import type { ContextSettings } from '../task-store.js';
import type { OfferedOption } from '../wire/agent-events.js';
import { judgeLine, matchesPrefix } from './shell-rules.js';
import { writesToolConfig } from './tool-config.js';
import type { LineCoverage } from './shell-rules.js';

/** What a context's calls are judged by. */
export interface ApprovalScope {
  settings: ContextSettings;
  /** Grant keys from `proceed_always…` answers (see {@link grantsFor}). */
  trustedTools: Set<string>;
  /** Absolute real path of the context's workspace. */
  workspace: string;
  /**
   * Shell-like calls (tools with `commandLine`) may run without a card: true when the shell
   * sandbox is in force, or the operator accepted running them unconfined
   * (SHELL_UNCONFINED_AUTO_APPROVE). Absent or false: every shell-like call asks.
   */
  confined?: boolean;
}

/** Where a call's options and grants are judged: the workspace, and whether shell-like calls run confined. */
export type OptionScope = Pick<ApprovalScope, 'workspace' | 'confined'>;

/** A bare workspace path (older callers) knows nothing of the sandbox: judged as unconfined. */
const optionScope = (where: string | OptionScope): OptionScope => (typeof where === 'string' ? { workspace: where } : where);

const SHELL_PREFIX = /^([A-Za-z0-9_.-]+)\((.*)\)$/s;

/** The judged command line of a shell-like call; undefined when the tool is not a shell or the call has no line. */
async function coverageOf(tool: AnyTool, args: Record<string, unknown>, workspace: string): Promise<LineCoverage | undefined> {
  const line = await tool.commandLine?.(args, { workspace });
  if (line === undefined) return undefined;
  return judgeLine(line.command, { workspace, cwd: line.cwd, protectedPaths: line.protectedPaths });
}

/** The grant key for one command (name, or `git <subcommand>`) of a shell tool. */
export const shellGrant = (tool: string, key: string): string => `${tool}(${key})`;
/** The grant key for every tool of an MCP server. */
export const serverGrant = (server: string): string => `mcp_server:${server}`;

/** A shell call's line is judged once per decision (judging resolves paths on disk), and only if asked for. */
type LazyCoverage = () => Promise<LineCoverage | undefined>;

function lazyCoverage(tool: AnyTool, args: Record<string, unknown>, workspace: string): LazyCoverage {
  let judged: Promise<LineCoverage | undefined> | undefined;
  return () => (judged ??= coverageOf(tool, args, workspace));
}

async function allowedByList(tool: AnyTool, scope: ApprovalScope, coverageNow: LazyCoverage): Promise<boolean> {
  for (const entry of scope.settings.allowedTools ?? []) {
    if (entry === tool.name) return true;
    const m = SHELL_PREFIX.exec(entry);
    if (m === null || m[1] !== tool.name || tool.commandLine === undefined) continue;
    const prefix = (m[2] ?? '').trim();
    if (prefix === '') continue;
    const coverage = await coverageNow();
    if (coverage?.coverable === true && matchesPrefix(coverage.commands, prefix)) return true;
  }
  return false;
}

async function trusted(tool: AnyTool, scope: ApprovalScope, coverageNow: LazyCoverage): Promise<boolean> {
  const grants = scope.trustedTools;
  if (grants.has(tool.name)) return true;
  if (tool.mcp !== undefined && grants.has(serverGrant(tool.mcp.serverName))) return true;
  if (tool.commandLine !== undefined) {
    const coverage = await coverageNow();
    if (coverage?.coverable !== true || !coverage.alwaysOffered) return false;
    return coverage.grantKeys.every((k) => grants.has(shellGrant(tool.name, k)));
  }
  return false;
}

/** An edit only a person approves, in every mode: one that writes a file making tools run code. */
async function editsToolConfig(tool: AnyTool, args: Record<string, unknown>, workspace: string): Promise<boolean> {
  const given = tool.editedPath?.(args);
  if (given === undefined) return false;
  return writesToolConfig(workspace, given);
}

/** Why a call runs without asking, or undefined when it must wait for a person. */
export async function autoApproval(tool: AnyTool, args: Record<string, unknown>, scope: ApprovalScope): Promise<string | undefined> {
  if (tool.kind === 'read') return 'read-only';
  // Without the sandbox nothing confines a command: only a person's yes runs one.
  if (tool.commandLine !== undefined && scope.confined !== true) return undefined;
  // A file that makes tools run code is written only after a person's yes, in every mode: what it
  // plants would run later, unconfined (the developer's git, npm, editor), so no mode covers it.
  if (await editsToolConfig(tool, args, scope.workspace)) return undefined;
  const mode = scope.settings.approvalMode ?? 'DEFAULT';
  if (mode === 'YOLO') return 'approval mode YOLO';
  if (mode === 'AUTO_EDIT' && tool.kind === 'edit') return 'approval mode AUTO_EDIT';
  const coverageNow = lazyCoverage(tool, args, scope.workspace);
  if (await allowedByList(tool, scope, coverageNow)) return 'allowed_tools';
  if (await trusted(tool, scope, coverageNow)) return 'allowed always in this conversation';
  return undefined;
}

/** Decides whether a call of `tool` with `args` must be confirmed. */
export async function needsApproval(tool: AnyTool, args: Record<string, unknown>, scope: ApprovalScope): Promise<boolean> {
  return (await autoApproval(tool, args, scope)) === undefined;
}

/** The options offered for a call (RFC §3.2 ConfirmationOption). */
export async function optionsFor(tool: AnyTool, args: Record<string, unknown>, where: string | OptionScope): Promise<OfferedOption[]> {
  const { workspace, confined } = optionScope(where);
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
    // Only a line a grant could cover later is offered "always" (shell-rules.ts says which), and only where it would run confined.
    const coverage = confined === true ? await coverageOf(tool, args, workspace) : undefined;
    if (coverage?.coverable === true && coverage.alwaysOffered) {
      const list = coverage.grantKeys.map((r) => `"${r}"`).join(', ');
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
export async function grantsFor(
  tool: AnyTool,
  args: Record<string, unknown>,
  option: string,
  where: string | OptionScope,
): Promise<string[]> {
  const { workspace, confined } = optionScope(where);
  if (option === ConfirmationOptionId.proceedAlwaysServer && tool.mcp !== undefined) return [serverGrant(tool.mcp.serverName)];
  if (option === ConfirmationOptionId.proceedAlwaysTool) return [tool.name];
  if (option !== ConfirmationOptionId.proceedAlways) return [];
  if (tool.commandLine !== undefined) {
    if (confined !== true) return [];
    const coverage = await coverageOf(tool, args, workspace);
    return coverage?.coverable === true && coverage.alwaysOffered ? coverage.grantKeys.map((k) => shellGrant(tool.name, k)) : [];
  }
  return [tool.name];
}

/** True for answers that run the call. */
export function approves(option: string): boolean {
  return option !== ConfirmationOptionId.cancel;
}
