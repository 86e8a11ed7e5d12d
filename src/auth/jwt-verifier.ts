/**
 * Verifies bearer JWTs against the issuer's remote JWKS (jose), and maps each jose failure
 * to a 401 whose message names the reason without echoing the token.
 */
import { createRemoteJWKSet, decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from 'jose';
import type { JwtConfig } from './auth-config.js';
import { authFailure, type AuthFailure, type AuthResult } from './principal.js';

export interface JwtVerifierOptions {
  /** JWKS fetch timeout, ms. */
  fetchTimeoutMs: number;
  /** Allowed clock skew for exp/nbf/iat, seconds. */
  clockToleranceSec: number;
  realm: string;
}

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** True when `token` is a compact JWS whose header decodes and names an `alg`. */
export function looksLikeJwt(token: string): boolean {
  if (!JWT_SHAPE.test(token)) return false;
  try {
    return typeof decodeProtectedHeader(token).alg === 'string';
  } catch {
    return false;
  }
}

/**
 * Reads a claim by name, then as a dotted path. The literal name wins so that namespaced
 * claims containing dots (`https://example.com/roles`) work too.
 */
export function claimAt(payload: JWTPayload, path: string): unknown {
  if (Object.hasOwn(payload, path)) return payload[path];
  let v: unknown = payload;
  for (const seg of path.split('.')) {
    if (typeof v !== 'object' || v === null || Array.isArray(v) || !Object.hasOwn(v, seg)) return undefined;
    v = (v as Record<string, unknown>)[seg];
  }
  return v;
}

/** Roles from an array of strings or an OAuth-style space-separated string (RFC 8693 §4.2 `scope`). */
export function rolesFrom(value: unknown): string[] | undefined {
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return value.split(/\s+/).filter((r) => r !== '');
  if (Array.isArray(value) && value.every((r) => typeof r === 'string')) return value.filter((r) => r !== '');
  return undefined;
}

export function createJwtVerifier(cfg: JwtConfig, o: JwtVerifierOptions): (token: string) => Promise<AuthResult> {
  const jwks = createRemoteJWKSet(new URL(cfg.jwksUrl), { timeoutDuration: o.fetchTimeoutMs });
  const audience = typeof cfg.audience === 'string' ? cfg.audience : [...cfg.audience];
  const invalid = (code: AuthFailure['code'], message: string) => authFailure(code, message, o.realm, 'invalid_token');

  return async (token) => {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, jwks, {
        issuer: cfg.issuer,
        audience,
        // A token without exp would be valid forever.
        requiredClaims: ['exp'],
        clockTolerance: o.clockToleranceSec,
      }));
    } catch (err) {
      return joseFailure(err, token, cfg, invalid);
    }
    const id = claimAt(payload, cfg.principalClaim);
    if (typeof id !== 'string' || id === '') {
      return invalid('AGENT_ERR_AUTH_JWT_CLAIM', `JWT has no "${cfg.principalClaim}" claim naming the principal`);
    }
    const roles = rolesFrom(claimAt(payload, cfg.rolesClaim));
    if (roles === undefined) {
      return invalid('AGENT_ERR_AUTH_JWT_CLAIM', `JWT claim "${cfg.rolesClaim}" must be an array of strings or a space-separated string`);
    }
    return { ok: true, principal: { id, roles, via: 'jwt', issuer: cfg.issuer } };
  };
}

/** Short, printable, and bounded: header values an attacker chose are not echoed in full. */
function safe(s: unknown): string {
  return String(s)
    .replace(/[^\x20-\x7e]/g, '?')
    .slice(0, 64);
}

function joseFailure(
  err: unknown,
  token: string,
  cfg: JwtConfig,
  invalid: (code: AuthFailure['code'], message: string) => AuthFailure,
): AuthFailure {
  if (err instanceof errors.JWTExpired) {
    const exp = typeof err.payload.exp === 'number' ? ` at ${new Date(err.payload.exp * 1000).toISOString()}` : '';
    return invalid('AGENT_ERR_AUTH_JWT_EXPIRED', `JWT expired${exp}`);
  }
  if (err instanceof errors.JWTClaimValidationFailed) return invalid('AGENT_ERR_AUTH_JWT_CLAIM', claimMessage(err, cfg));
  if (err instanceof errors.JWSSignatureVerificationFailed) {
    return invalid('AGENT_ERR_AUTH_JWT_SIGNATURE', 'JWT signature verification failed');
  }
  if (err instanceof errors.JWKSNoMatchingKey) {
    const kid = decodeProtectedHeader(token).kid;
    const which = kid === undefined ? 'JWT has no kid and no key' : `JWT key id (kid) "${safe(kid)}" is unknown: no key`;
    return invalid('AGENT_ERR_AUTH_JWT_KEY', `${which} in the issuer's JWKS matches it`);
  }
  if (err instanceof errors.JWKSMultipleMatchingKeys) {
    return invalid('AGENT_ERR_AUTH_JWT_KEY', "JWT header matches several keys in the issuer's JWKS (it needs a kid)");
  }
  if (err instanceof errors.JOSEAlgNotAllowed || err instanceof errors.JOSENotSupported) {
    return invalid('AGENT_ERR_AUTH_JWT_KEY', `JWT algorithm "${safe(decodeProtectedHeader(token).alg)}" is not accepted`);
  }
  if (err instanceof errors.JWTInvalid || err instanceof errors.JWSInvalid) {
    return invalid('AGENT_ERR_AUTH_JWT_MALFORMED', `Malformed JWT (${err.message})`);
  }
  if (err instanceof errors.JWKSTimeout) return unavailable('timed out', invalid);
  if (err instanceof errors.JWKSInvalid) return unavailable('returned an invalid key set', invalid);
  if (err instanceof errors.JOSEError) return unavailable(`failed: ${err.message}`, invalid);
  // fetch() rejects with TypeError('fetch failed', { cause }) on network errors.
  if (err instanceof TypeError && err.message === 'fetch failed') {
    const cause = (err.cause as NodeJS.ErrnoException | undefined)?.code;
    return unavailable(`failed${cause ? ` (${cause})` : ''}`, invalid);
  }
  throw err;
}

/**
 * The issuer's keys could not be read. Still a 401 (the token was not accepted), but the
 * message says the fault is on the server side so the client does not discard its token.
 */
function unavailable(what: string, invalid: (code: AuthFailure['code'], message: string) => AuthFailure): AuthFailure {
  return invalid('AGENT_ERR_AUTH_JWKS_UNAVAILABLE', `JWT could not be verified: fetching the issuer's JWKS ${what}`);
}

function claimMessage(err: InstanceType<typeof errors.JWTClaimValidationFailed>, cfg: JwtConfig): string {
  if (err.reason === 'missing') return `JWT has no "${err.claim}" claim`;
  switch (err.claim) {
    case 'iss':
      return `JWT issuer is wrong (expected "${cfg.issuer}")`;
    case 'aud':
      return `JWT audience is wrong (expected ${[cfg.audience]
        .flat()
        .map((a) => `"${a}"`)
        .join(' or ')})`;
    case 'nbf':
      return 'JWT is not valid yet (nbf is in the future)';
    default:
      return `JWT claim "${safe(err.claim)}" is invalid (${safe(err.reason)})`;
  }
}
