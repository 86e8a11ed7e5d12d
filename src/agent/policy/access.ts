/**
 * Who may do what, once authentication is on:
 * - a conversation and its tasks belong to the principal that started them: only it may
 *   send to them, read them, resubscribe, cancel or register push callbacks;
 * - authorizing a side-effecting call (any answer but `cancel`) needs an approver role;
 *   so does anything that would skip approvals (approval_mode AUTO_EDIT/YOLO,
 *   allowed_tools) or start programs (mcp_servers);
 * - `audit/list` needs an admin role (admins read the record, not other principals' tasks).
 * Without authentication (local use) every check passes.
 */
import { ownerId } from '../../protocol/caller.js';
import type { Caller } from '../../protocol/caller.js';
import { forbidden } from '../../protocol/errors.js';
import type { RequestedSettings } from './settings.js';

export interface AccessRules {
  /** False when the server runs without authentication. */
  enabled: boolean;
  approverRoles: readonly string[];
  adminRoles: readonly string[];
}

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

  checkAdmin(caller: Caller | undefined, what: string): void {
    if (!this.isAdmin(caller)) throw forbidden(`${what} needs role ${this.rules.adminRoles.join(' or ')}`);
  }
}
