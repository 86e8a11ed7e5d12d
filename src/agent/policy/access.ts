/**
 * Who may do what, once authentication is on:
 * - a conversation and its tasks belong to the principal that started them: only it may
 *   send to them, read them, resubscribe, cancel or register push callbacks;
 * - authorizing a side-effecting call (any answer but `cancel`) needs an approver role;
 *   so does anything that would skip approvals (approval_mode AUTO_EDIT/YOLO,
 *   allowed_tools) or start programs (mcp_servers);
 * - `audit/list` needs an admin role (admins read the record, not other principals' tasks);
 * - with WORKSPACE_SHARING=owner (the default), a workspace belongs to the principal that first
 *   opened a context on it: no other principal may open it, a directory inside it or one that
 *   contains it. The default workspace (WORKSPACE_DIR) is everyone's, so no principal can own a
 *   directory overlapping it. (The claims themselves are the store's: TaskStore.claimWorkspace.)
 * Without authentication (local use) every check passes.
 */
import path from 'node:path';
import { ownerId } from '../../protocol/caller.js';
import type { Caller } from '../../protocol/caller.js';
import { forbidden } from '../../protocol/errors.js';
import type { RequestedSettings } from './settings.js';

export interface AccessRules {
  /** False when the server runs without authentication. */
  enabled: boolean;
  approverRoles: readonly string[];
  adminRoles: readonly string[];
  /** WORKSPACE_SHARING: `owner` (the default) gives each workspace to the principal that first opens it; `shared` lets everyone open every one. */
  workspaceSharing?: 'owner' | 'shared';
}

const inside = (child: string, parent: string) =>
  child === parent || child.startsWith(parent.endsWith(path.sep) ? parent : parent + path.sep);

/** Two directories overlap when one is the other or lies inside it. */
export const overlaps = (a: string, b: string): boolean => inside(a, b) || inside(b, a);

const SHARING_HINT = 'to let every principal open every workspace, the operator sets WORKSPACE_SHARING=shared';

export const OPEN_ACCESS: AccessRules = Object.freeze({ enabled: false, approverRoles: [], adminRoles: [] });

const hasAny = (caller: Caller | undefined, roles: readonly string[]) =>
  caller !== undefined && caller.roles.some((r) => roles.includes(r));

export class Access {
  constructor(readonly rules: AccessRules = OPEN_ACCESS) {}

  get enabled(): boolean {
    return this.rules.enabled;
  }

  /** The principal to record as owner of something the caller creates. */
  ownerFor(caller: Caller | undefined): string | undefined {
    return this.enabled ? caller?.id : undefined;
  }

  isAdmin(caller: Caller | undefined): boolean {
    return !this.enabled || hasAny(caller, this.rules.adminRoles);
  }

  canApprove(caller: Caller | undefined): boolean {
    return !this.enabled || hasAny(caller, this.rules.approverRoles);
  }

  /** True when the caller is the owner (or auth is off). */
  isOwner(caller: Caller | undefined, owner: string | undefined): boolean {
    return !this.enabled || (caller !== undefined && owner !== undefined && caller.id === ownerId(owner));
  }

  /** Throws forbidden unless the caller owns `what`: only the principal that started a task or context may use it. */
  checkOwner(caller: Caller | undefined, owner: string | undefined, what: string): void {
    if (this.isOwner(caller, owner)) return;
    throw forbidden(
      `${what} belongs to ${owner === undefined ? 'no principal (it was created without authentication)' : 'another principal'}; ${caller?.id ?? 'the caller'} may not use it`,
    );
  }

  /** Settings that skip approvals or start programs need an approver. */
  checkSettings(caller: Caller | undefined, requested: RequestedSettings | undefined): void {
    if (requested === undefined || this.canApprove(caller)) return;
    const s = requested.settings;
    const risky: string[] = [];
    if (s.approvalMode === 'AUTO_EDIT' || s.approvalMode === 'YOLO') risky.push(`approval_mode ${s.approvalMode}`);
    if ((s.allowedTools ?? []).length > 0) risky.push('allowed_tools');
    if (s.mcpServers !== undefined && Object.keys(s.mcpServers).length > 0) risky.push('mcp_servers');
    if (risky.length > 0) {
      throw forbidden(
        `${risky.join(', ')} would let tools run without approval; only a principal with role ${this.rules.approverRoles.join(' or ')} may set it`,
      );
    }
  }

  /** True when workspaces belong to principals: authentication on and WORKSPACE_SHARING=owner. */
  get ownsWorkspaces(): boolean {
    return this.enabled && this.rules.workspaceSharing !== 'shared';
  }

  /** The refusal of `workspace`: it overlaps `conflict`, which another principal opened first. */
  workspaceTaken(caller: Caller | undefined, workspace: string, conflict: string): Error {
    const where = conflict === workspace ? '' : `, which overlaps ${conflict}`;
    return forbidden(
      `workspace ${workspace}${where} belongs to another principal (workspaces belong to the principal that first opens them: WORKSPACE_SHARING=owner); ` +
        `${caller?.id ?? 'the caller'} may not use it. Choose a directory of your own under WORKSPACE_ROOTS, outside any other principal's; ${SHARING_HINT}`,
    );
  }

  /** The refusal of `workspace`: it overlaps the default workspace, which every principal shares. */
  workspaceSharedDefault(workspace: string, defaultWorkspace: string): Error {
    const how = inside(workspace, defaultWorkspace) ? 'lies inside' : 'contains';
    return forbidden(
      `workspace ${workspace} ${how} the default workspace ${defaultWorkspace} (WORKSPACE_DIR), which every principal shares, ` +
        `so it cannot be anyone's own (WORKSPACE_SHARING=owner). Name no workspace to use the shared one, or choose a directory outside WORKSPACE_DIR ` +
        `(the operator sets WORKSPACE_ROOTS to a directory beside it); ${SHARING_HINT}`,
    );
  }

  checkAdmin(caller: Caller | undefined, what: string): void {
    if (!this.isAdmin(caller)) throw forbidden(`${what} needs role ${this.rules.adminRoles.join(' or ')}`);
  }
}
