/**
 * Reads the auth file (API keys and/or a JWT issuer) into a validated, defaulted, frozen
 * AuthConfig. Runs once at boot: a bad file throws AuthConfigError naming the file, the
 * field and what is accepted, and the process exits (a bad configuration stops the boot;
 * the server never starts half-configured).
 *
 * API keys are hashed (sha256) here and the plain keys are dropped, so the config object
 * can be logged or inspected without leaking a secret.
 */
import fs from 'node:fs';
import { createHash } from 'node:crypto';
import { isObject } from '../lib/is-object.js';

/** One accepted API key. Only its sha256 digest is kept. */
export interface ApiKeyEntry {
  /** sha256 of the key's UTF-8 bytes; compared in constant time. */
  readonly keyDigest: Buffer;
  readonly principal: string;
  readonly roles: readonly string[];
}

/** Bearer JWTs signed by an external issuer and checked against its JWKS. */
export interface JwtConfig {
  readonly issuer: string;
  readonly jwksUrl: string;
  /** Accepted `aud` values; a token matching any one passes (RFC 7519 §4.1.3). */
  readonly audience: string | readonly string[];
  /** Dotted path to the roles claim, e.g. `roles` or `realm_access.roles`. Default `roles`. */
  readonly rolesClaim: string;
  /** Dotted path to the principal id claim. Default `sub`. */
  readonly principalClaim: string;
}

export interface AuthConfig {
  /** Empty when only JWTs are accepted. */
  readonly apiKeys: readonly ApiKeyEntry[];
  readonly jwt?: JwtConfig;
  /** A principal holding any of these roles may approve tool calls. Default `['approver']`. */
  readonly approverRoles: readonly string[];
  /** Default `['admin']`. */
  readonly adminRoles: readonly string[];
}

export class AuthConfigError extends Error {
  readonly code = 'AGENT_ERR_AUTH_CONFIG_INVALID';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AuthConfigError';
  }
}

/** Shorter keys are guessable; 16 characters of a random alphabet is ~96 bits. */
export const MIN_API_KEY_LENGTH = 16;

const TOP_FIELDS = ['api_keys', 'jwt', 'approver_roles', 'admin_roles'];
const KEY_FIELDS = ['key', 'principal', 'roles'];
const JWT_FIELDS = ['issuer', 'jwks_url', 'audience', 'roles_claim', 'principal_claim'];
/** A claim path: dot-separated names, no empty segment. */
const CLAIM_PATH = /^[^.\s]+(\.[^.\s]+)*$/;
/** RFC 6750 b64token-ish: visible ASCII, no spaces, so it survives `Authorization: Bearer`. */
const KEY_CHARS = /^[\x21-\x7e]+$/;

type Json = Record<string, unknown>;

/** Reads and validates `file`. Throws AuthConfigError on the first problem. */
export function loadAuthConfig(file: string): Readonly<AuthConfig> {
  const fail = (message: string, cause?: unknown) => new AuthConfigError(`auth config ${file}: ${message}`, { cause });
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw fail(code === 'ENOENT' ? 'no such file' : `cannot be read (${code ?? String(err)})`, err);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw fail(`is not valid JSON (${(err as Error).message})`, err);
  }
  try {
    return parseAuthConfig(raw);
  } catch (err) {
    if (err instanceof AuthConfigError) throw fail(err.message);
    throw err;
  }
}

/** Validates an already-parsed auth config object (messages name the field, not the file). */
export function parseAuthConfig(raw: unknown): Readonly<AuthConfig> {
  if (!isObject(raw)) throw new AuthConfigError('must be a JSON object');
  checkFields(raw, TOP_FIELDS, 'the top level');
  const apiKeys = raw.api_keys === undefined ? [] : parseApiKeys(raw.api_keys);
  const jwt = raw.jwt === undefined ? undefined : parseJwt(raw.jwt);
  if (apiKeys.length === 0 && jwt === undefined) {
    throw new AuthConfigError('configures no credentials: give a non-empty api_keys array, a jwt object, or both');
  }
  return Object.freeze({
    apiKeys: Object.freeze(apiKeys),
    jwt,
    approverRoles: raw.approver_roles === undefined ? Object.freeze(['approver']) : roleList(raw.approver_roles, 'approver_roles'),
    adminRoles: raw.admin_roles === undefined ? Object.freeze(['admin']) : roleList(raw.admin_roles, 'admin_roles'),
  });
}

function checkFields(obj: Json, allowed: string[], where: string): void {
  const unknown = Object.keys(obj).filter((k) => !allowed.includes(k));
  if (unknown.length > 0) {
    throw new AuthConfigError(`unknown field "${unknown[0]}" in ${where} (expected ${allowed.join(', ')})`);
  }
}

function nonEmptyString(v: unknown, name: string): string {
  if (typeof v !== 'string' || v.trim() === '') throw new AuthConfigError(`${name} must be a non-empty string`);
  return v;
}

function roleList(v: unknown, name: string): readonly string[] {
  if (!Array.isArray(v)) throw new AuthConfigError(`${name} must be an array of role names`);
  return Object.freeze(v.map((r, i) => nonEmptyString(r, `${name}[${i}]`)));
}

function parseApiKeys(v: unknown): ApiKeyEntry[] {
  if (!Array.isArray(v)) throw new AuthConfigError('api_keys must be an array of { key, principal, roles? }');
  const seen = new Map<string, number>();
  return v.map((entry, i) => {
    const at = `api_keys[${i}]`;
    if (!isObject(entry)) throw new AuthConfigError(`${at} must be an object { key, principal, roles? }`);
    checkFields(entry, KEY_FIELDS, at);
    const key = nonEmptyString(entry.key, `${at}.key`);
    // Never echo the key itself: the message goes to logs.
    if (key.length < MIN_API_KEY_LENGTH) {
      throw new AuthConfigError(`${at}.key is too short (${key.length} characters; at least ${MIN_API_KEY_LENGTH} required)`);
    }
    if (!KEY_CHARS.test(key)) throw new AuthConfigError(`${at}.key must be visible ASCII characters without spaces`);
    const first = seen.get(key);
    if (first !== undefined) throw new AuthConfigError(`${at}.key duplicates api_keys[${first}].key`);
    seen.set(key, i);
    return Object.freeze({
      keyDigest: createHash('sha256').update(key, 'utf8').digest(),
      principal: nonEmptyString(entry.principal, `${at}.principal`),
      roles: entry.roles === undefined ? Object.freeze([]) : roleList(entry.roles, `${at}.roles`),
    });
  });
}

function claimPath(v: unknown, name: string, fallback: string): string {
  if (v === undefined) return fallback;
  const path = nonEmptyString(v, name);
  if (!CLAIM_PATH.test(path)) throw new AuthConfigError(`${name}="${path}" must be a claim name or dotted path (e.g. realm_access.roles)`);
  return path;
}

function parseJwt(v: unknown): JwtConfig {
  if (!isObject(v)) throw new AuthConfigError('jwt must be an object { issuer, jwks_url, audience, roles_claim?, principal_claim? }');
  checkFields(v, JWT_FIELDS, 'jwt');
  const issuer = nonEmptyString(v.issuer, 'jwt.issuer');
  const jwksUrl = nonEmptyString(v.jwks_url, 'jwt.jwks_url');
  let url: URL | undefined;
  try {
    url = new URL(jwksUrl);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
    throw new AuthConfigError(`jwt.jwks_url="${jwksUrl}" must be an http:// or https:// URL`);
  }
  let audience: string | readonly string[];
  if (Array.isArray(v.audience)) {
    if (v.audience.length === 0) throw new AuthConfigError('jwt.audience must be a non-empty string or a non-empty array of strings');
    audience = Object.freeze(v.audience.map((a, i) => nonEmptyString(a, `jwt.audience[${i}]`)));
  } else {
    audience = nonEmptyString(v.audience, 'jwt.audience');
  }
  return Object.freeze({
    issuer,
    jwksUrl: url.href,
    audience,
    rolesClaim: claimPath(v.roles_claim, 'jwt.roles_claim', 'roles'),
    principalClaim: claimPath(v.principal_claim, 'jwt.principal_claim', 'sub'),
  });
}
