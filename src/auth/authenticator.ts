/**
 * Authenticates a request from its headers: an API key (`Authorization: Bearer <key>` or
 * `X-API-Key: <key>`) or, when configured, an issuer-signed JWT as the bearer token.
 * Framework-free: the transport passes the headers and maps a failure to HTTP 401.
 *
 * Secrets never leave this module: keys are compared as sha256 digests in constant time,
 * and no message or code repeats the credential that was presented.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { ApiKeyEntry, AuthConfig } from './auth-config.js';
import { createJwtVerifier, looksLikeJwt } from './jwt-verifier.js';
import { authFailure, type AuthFailure, type AuthResult } from './principal.js';
import { securitySchemesV03, securitySchemesV1, type SecuritySchemesV03, type SecuritySchemesV1 } from './security-schemes.js';

export { hasRole, qualifiedId } from './principal.js';
export type { AuthResult } from './principal.js';
export type { SecuritySchemesV03, SecuritySchemesV1 } from './security-schemes.js';

export type RequestHeaders = Record<string, string | string[] | undefined>;

export interface AuthenticatorOptions {
  /** JWKS fetch timeout, ms. Default 5000. */
  fetchTimeoutMs?: number;
  /** Allowed clock skew for JWT exp/nbf, seconds. Default 30. */
  clockToleranceSec?: number;
  /** The realm in WWW-Authenticate challenges. Default `a2a`. */
  realm?: string;
}

/**
 * Contract: `authenticate` resolves for every credential problem (never throws for a bad or
 * missing credential); it rejects only on a programming error. It never logs.
 */
export interface Authenticator {
  authenticate(headers: RequestHeaders): Promise<AuthResult>;
  /** Card fields for A2A v1.0 (`@a2a-js/sdk` AgentCard shape). */
  securitySchemesV1(): SecuritySchemesV1;
  /** Card fields for A2A v0.3 (OpenAPI 3.0 Security Scheme Objects + `security`). */
  securitySchemesV03(): SecuritySchemesV03;
}

export const MISSING_CREDENTIALS_MESSAGE = 'Missing credentials: send Authorization: Bearer <api key or JWT> or X-API-Key';

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest();

type HeaderValue = { value?: string; multiple?: true };

/** Looks a header up case-insensitively; Node lower-cases names, other callers may not. */
function readHeader(headers: RequestHeaders, name: string): HeaderValue {
  let v = headers[name];
  if (v === undefined) {
    const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
    v = key === undefined ? undefined : headers[key];
  }
  if (Array.isArray(v)) return v.length > 1 ? { multiple: true } : { value: v[0] };
  return { value: v };
}

export function createAuthenticator(config: AuthConfig, opts: AuthenticatorOptions = {}): Authenticator {
  const realm = opts.realm ?? 'a2a';
  const keys: readonly ApiKeyEntry[] = config.apiKeys;
  const verifyJwt =
    config.jwt === undefined
      ? undefined
      : createJwtVerifier(config.jwt, {
          fetchTimeoutMs: opts.fetchTimeoutMs ?? 5000,
          clockToleranceSec: opts.clockToleranceSec ?? 30,
          realm,
        });
  const badRequest = (message: string) => authFailure('AGENT_ERR_AUTH_BAD_HEADER', message, realm, 'invalid_request');
  const badKey = (message: string) => authFailure('AGENT_ERR_AUTH_INVALID_KEY', message, realm, 'invalid_token');

  /** Compares against every key, with no early exit, so timing reveals neither match nor position. */
  function findKey(presented: string): ApiKeyEntry | undefined {
    const digest = sha256(presented);
    let found: ApiKeyEntry | undefined;
    for (const entry of keys) {
      if (timingSafeEqual(digest, entry.keyDigest) && found === undefined) found = entry;
    }
    return found;
  }

  function apiKey(presented: string): AuthResult | undefined {
    const entry = findKey(presented);
    return entry === undefined ? undefined : { ok: true, principal: { id: entry.principal, roles: [...entry.roles], via: 'api_key' } };
  }

  async function bearer(token: string): Promise<AuthResult> {
    const byKey = apiKey(token);
    if (byKey !== undefined) return byKey;
    if (verifyJwt !== undefined && looksLikeJwt(token)) return verifyJwt(token);
    if (keys.length === 0) return badKey('Invalid bearer token: not a JWT');
    return badKey('Invalid API key');
  }

  function parseAuthorization(value: string): { token: string } | AuthFailure {
    const [, scheme, token] = /^\s*(\S+)(?:\s+(.*?))?\s*$/.exec(value) ?? [];
    if (scheme === undefined) return badRequest('Authorization header is empty');
    if (scheme.toLowerCase() !== 'bearer') {
      const shown = /^[A-Za-z][A-Za-z0-9-]{0,19}$/.test(scheme) ? ` "${scheme}"` : '';
      return badRequest(`Unsupported Authorization scheme${shown}: send Authorization: Bearer <api key or JWT>`);
    }
    if (token === undefined || token === '') return badRequest('Authorization: Bearer has no token');
    return { token };
  }

  return {
    async authenticate(headers) {
      const authorization = readHeader(headers, 'authorization');
      if (authorization.multiple) return badRequest('Multiple Authorization headers');
      if (authorization.value !== undefined) {
        const parsed = parseAuthorization(authorization.value);
        return 'token' in parsed ? bearer(parsed.token) : parsed;
      }
      const xApiKey = readHeader(headers, 'x-api-key');
      if (xApiKey.multiple) return badRequest('Multiple X-API-Key headers');
      if (xApiKey.value !== undefined) {
        const key = xApiKey.value.trim();
        if (key === '') return badRequest('X-API-Key header is empty');
        if (keys.length === 0) return badKey('API keys are not accepted here: send Authorization: Bearer <JWT>');
        return apiKey(key) ?? badKey('Invalid API key');
      }
      return authFailure('AGENT_ERR_AUTH_MISSING', MISSING_CREDENTIALS_MESSAGE, realm);
    },
    securitySchemesV1: () => securitySchemesV1(config),
    securitySchemesV03: () => securitySchemesV03(config),
  };
}
