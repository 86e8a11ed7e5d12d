/**
 * Who made a request, and the result of trying to find out. Plain data: the transport turns
 * a failure into an HTTP 401 with the given WWW-Authenticate header (RFC 9110 §11.6.1).
 */

export interface Principal {
  /** The API key's configured principal, or the JWT's principal claim (default `sub`). */
  id: string;
  roles: string[];
  via: 'api_key' | 'jwt';
  /** The JWT's `iss` (verified against the configured issuer). */
  issuer?: string;
}

/**
 * The principal's id as the server keeps it (owners of contexts, tasks and push configs; the
 * audit log): namespaced by where it came from — `key:<name>` for an API key, `jwt:<iss>:<sub>`
 * for a JWT — so a JWT whose `sub` equals an API key's principal name is someone else.
 */
export function qualifiedId(p: Principal): string {
  return p.via === 'api_key' ? `key:${p.id}` : `jwt:${p.issuer ?? ''}:${p.id}`;
}

/**
 * Stable reason for a failed authentication, for logs and tests. Never includes the
 * credential itself.
 */
export type AuthFailureCode =
  | 'AGENT_ERR_AUTH_MISSING'
  | 'AGENT_ERR_AUTH_BAD_HEADER'
  | 'AGENT_ERR_AUTH_INVALID_KEY'
  | 'AGENT_ERR_AUTH_JWT_MALFORMED'
  | 'AGENT_ERR_AUTH_JWT_EXPIRED'
  | 'AGENT_ERR_AUTH_JWT_CLAIM'
  | 'AGENT_ERR_AUTH_JWT_SIGNATURE'
  | 'AGENT_ERR_AUTH_JWT_KEY'
  | 'AGENT_ERR_AUTH_JWKS_UNAVAILABLE';

export interface AuthFailure {
  ok: false;
  status: 401;
  code: AuthFailureCode;
  /** Safe to send to the client and to log: names the reason, never echoes the credential. */
  message: string;
  /** Value for the WWW-Authenticate response header (RFC 6750 §3). */
  wwwAuthenticate: string;
}

export type AuthResult = { ok: true; principal: Principal } | AuthFailure;

/** True when the principal holds at least one of `roles` (an empty list grants nothing). */
export function hasRole(principal: Principal, roles: readonly string[]): boolean {
  return roles.some((r) => principal.roles.includes(r));
}

/** A quoted-string for a challenge parameter: no quotes, backslashes or control characters. */
function quoted(s: string): string {
  return `"${s.replace(/["\\]/g, "'").replace(/[^\x20-\x7e]/g, ' ')}"`;
}

/**
 * Builds a failure with its RFC 6750 §3 challenge. A request with no credentials gets a bare
 * `Bearer realm=…` (§3.1: no error code); a bad credential gets `error="invalid_token"`.
 */
export function authFailure(
  code: AuthFailureCode,
  message: string,
  realm: string,
  bearerError?: 'invalid_token' | 'invalid_request',
): AuthFailure {
  const params = [`realm=${quoted(realm)}`];
  if (bearerError !== undefined) params.push(`error="${bearerError}"`, `error_description=${quoted(message)}`);
  return { ok: false, status: 401, code, message, wwwAuthenticate: `Bearer ${params.join(', ')}` };
}
