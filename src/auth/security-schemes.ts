/**
 * The agent card's security declaration for an AuthConfig, in both card dialects:
 *
 * - v1.0 (`@a2a-js/sdk` AgentCard): `securitySchemes: { [name]: SecurityScheme }` where a
 *   SecurityScheme is a ts-proto oneof (`{ scheme: { $case: 'apiKeySecurityScheme', value } }`),
 *   and `securityRequirements: [{ schemes: { [name]: { list: scopes } } }]`.
 *   `AgentCard.toJSON` renders it as `{ apiKeySecurityScheme: { location, name } }`.
 * - v0.3 (OpenAPI 3.0 Security Scheme Object): `securitySchemes: { [name]: { type: 'apiKey',
 *   in: 'header', name } | { type: 'http', scheme: 'bearer', bearerFormat? } }` and
 *   `security: [{ [name]: scopes }]`.
 *
 * Requirements are alternatives (OpenAPI: the array is OR, keys within one entry are AND),
 * so each scheme gets its own entry.
 */
import type { SecurityRequirement, SecurityScheme } from '@a2a-js/sdk';
import type { AuthConfig } from './auth-config.js';

/** The API key in the X-API-Key header. */
export const API_KEY_HEADER_SCHEME = 'apiKey';
/** The API key as `Authorization: Bearer <key>`. */
export const API_KEY_BEARER_SCHEME = 'apiKeyBearer';
/** An issuer-signed JWT as `Authorization: Bearer <jwt>`. */
export const JWT_BEARER_SCHEME = 'jwt';
export const API_KEY_HEADER = 'X-API-Key';

/** v1.0 card fields, ready to spread into the SDK's AgentCard. */
export interface SecuritySchemesV1 {
  securitySchemes: { [name: string]: SecurityScheme };
  securityRequirements: SecurityRequirement[];
}

export type SecuritySchemeV03 =
  | { type: 'apiKey'; in: 'header' | 'query' | 'cookie'; name: string; description?: string }
  | { type: 'http'; scheme: string; bearerFormat?: string; description?: string };

/** v0.3 card fields (JSON), ready to spread into the v0.3 card. */
export interface SecuritySchemesV03 {
  securitySchemes: { [name: string]: SecuritySchemeV03 };
  security: Array<{ [name: string]: string[] }>;
}

interface Declared {
  name: string;
  v03: SecuritySchemeV03;
}

function declared(config: AuthConfig): Declared[] {
  const out: Declared[] = [];
  if (config.apiKeys.length > 0) {
    out.push(
      { name: API_KEY_HEADER_SCHEME, v03: { type: 'apiKey', in: 'header', name: API_KEY_HEADER, description: 'API key' } },
      { name: API_KEY_BEARER_SCHEME, v03: { type: 'http', scheme: 'bearer', description: 'API key as a bearer token' } },
    );
  }
  if (config.jwt !== undefined) {
    out.push({
      name: JWT_BEARER_SCHEME,
      v03: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'JWT from the configured issuer' },
    });
  }
  return out;
}

function toV1(s: SecuritySchemeV03): SecurityScheme {
  const description = s.description ?? '';
  if (s.type === 'apiKey') {
    return { scheme: { $case: 'apiKeySecurityScheme', value: { description, location: s.in, name: s.name } } };
  }
  return { scheme: { $case: 'httpAuthSecurityScheme', value: { description, scheme: s.scheme, bearerFormat: s.bearerFormat ?? '' } } };
}

export function securitySchemesV1(config: AuthConfig): SecuritySchemesV1 {
  const all = declared(config);
  return {
    securitySchemes: Object.fromEntries(all.map((d) => [d.name, toV1(d.v03)])),
    securityRequirements: all.map((d) => ({ schemes: { [d.name]: { list: [] } } })),
  };
}

export function securitySchemesV03(config: AuthConfig): SecuritySchemesV03 {
  const all = declared(config);
  return {
    securitySchemes: Object.fromEntries(all.map((d) => [d.name, { ...d.v03 }])),
    security: all.map((d) => ({ [d.name]: [] })),
  };
}
