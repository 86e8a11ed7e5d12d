/**
 * The agent card's security declaration in both dialects: the SDK's v1.0 AgentCard fields
 * (checked through the SDK's own JSON codec) and v0.3 OpenAPI-style objects.
 */
import t from 'tap';
import { SecurityRequirement, SecurityScheme } from '@a2a-js/sdk';
import { parseAuthConfig } from '../../../src/auth/auth-config.js';
import { createAuthenticator } from '../../../src/auth/authenticator.js';

const KEYS = { api_keys: [{ key: 'alice-key-0123456789abcdef', principal: 'alice' }] };
const JWT = { jwt: { issuer: 'https://idp.test', jwks_url: 'https://idp.test/jwks', audience: 'a2a' } };

t.test('api keys and jwt: v1.0', async (t) => {
  const v1 = createAuthenticator(parseAuthConfig({ ...KEYS, ...JWT })).securitySchemesV1();
  t.same(Object.keys(v1.securitySchemes), ['apiKey', 'apiKeyBearer', 'jwt']);
  t.same(v1.securitySchemes.apiKey, {
    scheme: { $case: 'apiKeySecurityScheme', value: { description: 'API key', location: 'header', name: 'X-API-Key' } },
  });
  const json = Object.fromEntries(Object.entries(v1.securitySchemes).map(([k, v]) => [k, SecurityScheme.toJSON(v)]));
  t.same(json, {
    apiKey: { apiKeySecurityScheme: { description: 'API key', location: 'header', name: 'X-API-Key' } },
    apiKeyBearer: { httpAuthSecurityScheme: { description: 'API key as a bearer token', scheme: 'bearer' } },
    jwt: { httpAuthSecurityScheme: { description: 'JWT from the configured issuer', scheme: 'bearer', bearerFormat: 'JWT' } },
  });
  t.same(
    v1.securityRequirements.map((r) => SecurityRequirement.toJSON(r)),
    [
      // proto3 JSON drops the empty scope list: `{ list: [] }` renders as `{}`.
      { schemes: { apiKey: {} } },
      { schemes: { apiKeyBearer: {} } },
      { schemes: { jwt: {} } },
    ],
    'one alternative per scheme',
  );
  t.same(v1.securityRequirements[0], { schemes: { apiKey: { list: [] } } });
});

t.test('api keys and jwt: v0.3', async (t) => {
  t.same(createAuthenticator(parseAuthConfig({ ...KEYS, ...JWT })).securitySchemesV03(), {
    securitySchemes: {
      apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'API key' },
      apiKeyBearer: { type: 'http', scheme: 'bearer', description: 'API key as a bearer token' },
      jwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'JWT from the configured issuer' },
    },
    security: [{ apiKey: [] }, { apiKeyBearer: [] }, { jwt: [] }],
  });
});

t.test('one kind only', async (t) => {
  const keysOnly = createAuthenticator(parseAuthConfig(KEYS));
  t.same(Object.keys(keysOnly.securitySchemesV03().securitySchemes), ['apiKey', 'apiKeyBearer']);
  t.same(keysOnly.securitySchemesV1().securityRequirements.length, 2);
  const jwtOnly = createAuthenticator(parseAuthConfig(JWT));
  t.same(jwtOnly.securitySchemesV03().security, [{ jwt: [] }]);
  t.same(Object.keys(jwtOnly.securitySchemesV1().securitySchemes), ['jwt']);
  t.notMatch(JSON.stringify(keysOnly.securitySchemesV03()), 'alice-key', 'no secret in the card');
});
