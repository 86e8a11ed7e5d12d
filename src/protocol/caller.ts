/**
 * Who is calling: the authenticated principal, carried from the transport to the agent in
 * the SDK's ServerCallContext.user. Without authentication (local use) there is no caller
 * and no identity check applies.
 */
import type { ServerCallContext, User } from '@a2a-js/sdk/server';

export interface Caller {
  /** The principal's id, namespaced by its issuer: `key:<name>` (API key) or `jwt:<iss>:<sub>` (JWT). */
  id: string;
  roles: readonly string[];
}

/**
 * The caller id a stored owner stands for. Owners stored before ids were namespaced are bare
 * names; such an owner is the API key of that name (configured by the operator), never a JWT
 * subject — a JWT user loses access to what it owned before the change rather than anyone
 * gaining access to an API key's.
 */
export function ownerId(stored: string): string {
  return stored.startsWith('key:') || stored.startsWith('jwt:') ? stored : `key:${stored}`;
}

/** An authenticated SDK User that carries our Caller. */
export class CallerUser implements User {
  constructor(readonly caller: Caller) {}
  get isAuthenticated(): boolean {
    return true;
  }
  get userName(): string {
    return this.caller.id;
  }
}

/** The caller of a request, or undefined when authentication is off. */
export function callerOf(ctx: ServerCallContext | undefined): Caller | undefined {
  const user = ctx?.user;
  return user instanceof CallerUser ? user.caller : undefined;
}
