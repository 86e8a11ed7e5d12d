/**
 * Who is calling: the authenticated principal, carried from the transport to the agent in
 * the SDK's ServerCallContext.user. Without authentication (local use) there is no caller
 * and no identity check applies.
 */
import type { ServerCallContext, User } from '@a2a-js/sdk/server';

export interface Caller {
  /** The principal's id (API key owner or JWT subject). */
  id: string;
  roles: readonly string[];
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
