/**
 * createAuthenticator: API keys in both headers, header errors, and JWTs verified against a
 * real JWKS served over HTTP on an ephemeral port (expired, wrong issuer/audience, bad
 * signature, unknown kid, roles claims). No failure repeats the credential.
 */
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWTPayload } from 'jose';
import { parseAuthConfig } from '../../../src/auth/auth-config.js';
import { createAuthenticator, hasRole, MISSING_CREDENTIALS_MESSAGE, type AuthResult } from '../../../src/auth/authenticator.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const KEY_A = 'alice-key-0123456789abcdef';
const KEY_B = 'bob-key-0123456789abcdef';
const ISS = 'https://idp.test';
const AUD = 'a2a-agent';

const signing = await generateKeyPair('ES256');
const other = await generateKeyPair('ES256');
const jwk = { ...(await exportJWK(signing.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
let jwksHits = 0;
const server = http.createServer((req, res) => {
  if (req.url === '/jwks.json') {
    jwksHits++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
  } else {
    res.writeHead(404).end();
  }
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
const JWKS_URL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`;

const now = () => Math.floor(Date.now() / 1000);

interface TokenOptions {
  key?: CryptoKeyLike;
  kid?: string;
  iss?: string;
  aud?: string;
  exp?: number | null;
}
type CryptoKeyLike = typeof signing.privateKey;

function token(claims: JWTPayload, o: TokenOptions = {}): Promise<string> {
  const jwt = new SignJWT({ sub: 'carol', ...claims })
    .setProtectedHeader({ alg: 'ES256', kid: o.kid ?? 'k1' })
    .setIssuedAt()
    .setIssuer(o.iss ?? ISS)
    .setAudience(o.aud ?? AUD);
  if (o.exp !== null) jwt.setExpirationTime(o.exp ?? now() + 300);
  return jwt.sign(o.key ?? signing.privateKey);
}

const keysConfig = {
  api_keys: [
    { key: KEY_A, principal: 'alice', roles: ['approver'] },
    { key: KEY_B, principal: 'bob' },
  ],
};
const jwtConfig = (extra: Record<string, unknown> = {}) => ({ jwt: { issuer: ISS, jwks_url: JWKS_URL, audience: AUD, ...extra } });

function failed(t: Test, r: AuthResult, code: string, message: string | RegExp, secret?: string): void {
  t.equal(r.ok, false, `refused: ${code}`);
  if (r.ok) return;
  t.equal(r.status, 401);
  t.equal(r.code, code);
  t.match(r.message, message);
  t.match(r.wwwAuthenticate, /^Bearer realm="a2a"/);
  if (secret !== undefined) {
    t.notOk(r.message.includes(secret) || r.wwwAuthenticate.includes(secret), 'the credential is not echoed');
  }
}

t.test('API keys', async (t) => {
  const auth = createAuthenticator(parseAuthConfig(keysConfig));
  t.same(await auth.authenticate({ authorization: `Bearer ${KEY_A}` }), {
    ok: true,
    principal: { id: 'alice', roles: ['approver'], via: 'api_key' },
  });
  t.same(await auth.authenticate({ 'x-api-key': KEY_B }), { ok: true, principal: { id: 'bob', roles: [], via: 'api_key' } });
  t.same(
    await auth.authenticate({ 'X-API-Key': KEY_B }),
    { ok: true, principal: { id: 'bob', roles: [], via: 'api_key' } },
    'any header case',
  );
  t.same(await auth.authenticate({ authorization: `bearer   ${KEY_A}  ` }), {
    ok: true,
    principal: { id: 'alice', roles: ['approver'], via: 'api_key' },
  });
  t.same(await auth.authenticate({ 'x-api-key': [KEY_A] }), { ok: true, principal: { id: 'alice', roles: ['approver'], via: 'api_key' } });

  const wrong = 'wrong-key-0123456789abcdef';
  failed(t, await auth.authenticate({ authorization: `Bearer ${wrong}` }), 'AGENT_ERR_AUTH_INVALID_KEY', /^Invalid API key$/, wrong);
  failed(t, await auth.authenticate({ 'x-api-key': wrong }), 'AGENT_ERR_AUTH_INVALID_KEY', /^Invalid API key$/, wrong);
  failed(t, await auth.authenticate({ 'x-api-key': KEY_A.slice(0, -1) }), 'AGENT_ERR_AUTH_INVALID_KEY', /^Invalid API key$/);
  const bad = await auth.authenticate({ 'x-api-key': wrong });
  t.match(!bad.ok && bad.wwwAuthenticate, 'error="invalid_token", error_description="Invalid API key"');
  const jwtLike = await token({});
  failed(t, await auth.authenticate({ authorization: `Bearer ${jwtLike}` }), 'AGENT_ERR_AUTH_INVALID_KEY', /^Invalid API key$/, jwtLike);
});

t.test('missing and malformed headers', async (t) => {
  const auth = createAuthenticator(parseAuthConfig(keysConfig));
  const missing = await auth.authenticate({});
  failed(t, missing, 'AGENT_ERR_AUTH_MISSING', MISSING_CREDENTIALS_MESSAGE);
  t.equal(!missing.ok && missing.message, 'Missing credentials: send Authorization: Bearer <api key or JWT> or X-API-Key');
  t.equal(!missing.ok && missing.wwwAuthenticate, 'Bearer realm="a2a"', 'no error code when no credentials were sent (RFC 6750 §3.1)');
  failed(t, await auth.authenticate({ authorization: undefined }), 'AGENT_ERR_AUTH_MISSING', MISSING_CREDENTIALS_MESSAGE);
  failed(
    t,
    await auth.authenticate({ authorization: 'Basic YWxpY2U6cHc=' }),
    'AGENT_ERR_AUTH_BAD_HEADER',
    /Unsupported Authorization scheme "Basic"/,
    'YWxpY2U6cHc=',
  );
  failed(t, await auth.authenticate({ authorization: 'Bearer' }), 'AGENT_ERR_AUTH_BAD_HEADER', 'Authorization: Bearer has no token');
  failed(t, await auth.authenticate({ authorization: '   ' }), 'AGENT_ERR_AUTH_BAD_HEADER', 'Authorization header is empty');
  failed(t, await auth.authenticate({ 'x-api-key': ' ' }), 'AGENT_ERR_AUTH_BAD_HEADER', 'X-API-Key header is empty');
  failed(t, await auth.authenticate({ 'x-api-key': [KEY_A, KEY_B] }), 'AGENT_ERR_AUTH_BAD_HEADER', 'Multiple X-API-Key headers', KEY_A);
  failed(
    t,
    await auth.authenticate({ authorization: [`Bearer ${KEY_A}`, 'x'] }),
    'AGENT_ERR_AUTH_BAD_HEADER',
    'Multiple Authorization headers',
  );
  failed(
    t,
    await auth.authenticate({ authorization: 'Basic x', 'x-api-key': KEY_A }),
    'AGENT_ERR_AUTH_BAD_HEADER',
    /Unsupported/,
    // Authorization wins when both are sent: no silent fallback to the other credential.
  );
  const r = await auth.authenticate({ authorization: 'Weird"\\ x' });
  t.notMatch(!r.ok && r.message, 'Weird', 'an odd scheme name is not echoed');
});

t.test('JWT verification against a served JWKS', async (t) => {
  const auth = createAuthenticator(parseAuthConfig({ ...keysConfig, ...jwtConfig() }), { fetchTimeoutMs: 2000 });
  t.same(await auth.authenticate({ authorization: `Bearer ${await token({ roles: ['approver', 'admin'] })}` }), {
    ok: true,
    principal: { id: 'carol', roles: ['approver', 'admin'], via: 'jwt', issuer: ISS },
  });
  t.ok(jwksHits >= 1, 'the JWKS was fetched over HTTP');
  t.same(
    await auth.authenticate({ authorization: `Bearer ${await token({ roles: 'approver  admin ' })}` }),
    {
      ok: true,
      principal: { id: 'carol', roles: ['approver', 'admin'], via: 'jwt', issuer: ISS },
    },
    'a space-separated roles string',
  );
  t.same(
    await auth.authenticate({ authorization: `Bearer ${await token({})}` }),
    { ok: true, principal: { id: 'carol', roles: [], via: 'jwt', issuer: ISS } },
    'no roles claim: no roles',
  );
  t.same(
    await auth.authenticate({ authorization: `Bearer ${KEY_A}` }),
    { ok: true, principal: { id: 'alice', roles: ['approver'], via: 'api_key' } },
    'API keys still work alongside',
  );
  failed(
    t,
    await auth.authenticate({ authorization: 'Bearer not-a-key-and-not-a-jwt' }),
    'AGENT_ERR_AUTH_INVALID_KEY',
    /^Invalid API key$/,
  );

  const expired = await token({}, { exp: now() - 3600 });
  failed(
    t,
    await auth.authenticate({ authorization: `Bearer ${expired}` }),
    'AGENT_ERR_AUTH_JWT_EXPIRED',
    /^JWT expired at \d{4}-/,
    expired,
  );
  const wrongAud = await token({}, { aud: 'someone-else' });
  failed(
    t,
    await auth.authenticate({ authorization: `Bearer ${wrongAud}` }),
    'AGENT_ERR_AUTH_JWT_CLAIM',
    'JWT audience is wrong (expected "a2a-agent")',
    wrongAud,
  );
  const wrongIss = await token({}, { iss: 'https://evil.test' });
  failed(
    t,
    await auth.authenticate({ authorization: `Bearer ${wrongIss}` }),
    'AGENT_ERR_AUTH_JWT_CLAIM',
    'JWT issuer is wrong (expected "https://idp.test")',
    wrongIss,
  );
  const forged = await token({}, { key: other.privateKey });
  failed(
    t,
    await auth.authenticate({ authorization: `Bearer ${forged}` }),
    'AGENT_ERR_AUTH_JWT_SIGNATURE',
    'JWT signature verification failed',
    forged,
  );
  const unknownKid = await token({}, { kid: 'rotated-away', key: other.privateKey });
  failed(
    t,
    await auth.authenticate({ authorization: `Bearer ${unknownKid}` }),
    'AGENT_ERR_AUTH_JWT_KEY',
    /kid\) "rotated-away" is unknown/,
    unknownKid,
  );
  const noExp = await token({}, { exp: null });
  failed(t, await auth.authenticate({ authorization: `Bearer ${noExp}` }), 'AGENT_ERR_AUTH_JWT_CLAIM', 'JWT has no "exp" claim');
  const noSub = await token({ sub: undefined });
  failed(
    t,
    await auth.authenticate({ authorization: `Bearer ${noSub}` }),
    'AGENT_ERR_AUTH_JWT_CLAIM',
    'JWT has no "sub" claim naming the principal',
  );
  const badRoles = await token({ roles: 7 });
  failed(
    t,
    await auth.authenticate({ authorization: `Bearer ${badRoles}` }),
    'AGENT_ERR_AUTH_JWT_CLAIM',
    /claim "roles" must be an array of strings/,
  );
  const notYet = await token({ nbf: now() + 3600 });
  failed(t, await auth.authenticate({ authorization: `Bearer ${notYet}` }), 'AGENT_ERR_AUTH_JWT_CLAIM', /not valid yet/);
  const r = await auth.authenticate({ authorization: `Bearer ${expired}` });
  t.match(!r.ok && r.wwwAuthenticate, /error="invalid_token", error_description="JWT expired at /);
});

t.test('nested and custom claims', async (t) => {
  const nested = createAuthenticator(parseAuthConfig(jwtConfig({ roles_claim: 'realm_access.roles', principal_claim: 'email' })));
  const tok = await token({ email: 'carol@example.test', realm_access: { roles: ['approver'] } });
  t.same(await nested.authenticate({ authorization: `Bearer ${tok}` }), {
    ok: true,
    principal: { id: 'carol@example.test', roles: ['approver'], via: 'jwt', issuer: ISS },
  });
  t.same(
    await nested.authenticate({ authorization: `Bearer ${await token({ email: 'c@x', realm_access: 'approver' })}` }),
    { ok: true, principal: { id: 'c@x', roles: [], via: 'jwt', issuer: ISS } },
    'a missing path segment: no roles',
  );

  const namespaced = createAuthenticator(parseAuthConfig(jwtConfig({ roles_claim: 'https://example.test/roles' })));
  t.same(
    await namespaced.authenticate({ authorization: `Bearer ${await token({ 'https://example.test/roles': 'admin' })}` }),
    { ok: true, principal: { id: 'carol', roles: ['admin'], via: 'jwt', issuer: ISS } },
    'a claim name containing dots is read literally',
  );
});

t.test('JWT only', async (t) => {
  const auth = createAuthenticator(parseAuthConfig(jwtConfig()));
  failed(
    t,
    await auth.authenticate({ authorization: 'Bearer opaque-token-value' }),
    'AGENT_ERR_AUTH_INVALID_KEY',
    'Invalid bearer token: not a JWT',
    'opaque-token-value',
  );
  failed(t, await auth.authenticate({ 'x-api-key': KEY_A }), 'AGENT_ERR_AUTH_INVALID_KEY', /API keys are not accepted here/, KEY_A);
});

t.test('JWKS unreachable', async (t) => {
  const closed = http.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const auth = createAuthenticator(
    parseAuthConfig({ jwt: { issuer: ISS, jwks_url: `http://127.0.0.1:${port}/jwks.json`, audience: AUD } }),
    { fetchTimeoutMs: 1000 },
  );
  failed(
    t,
    await auth.authenticate({ authorization: `Bearer ${await token({})}` }),
    'AGENT_ERR_AUTH_JWKS_UNAVAILABLE',
    /JWT could not be verified: fetching the issuer's JWKS failed/,
  );

  const notFound = createAuthenticator(parseAuthConfig(jwtConfig({ jwks_url: JWKS_URL.replace('jwks.json', 'missing') })));
  failed(
    t,
    await notFound.authenticate({ authorization: `Bearer ${await token({})}` }),
    'AGENT_ERR_AUTH_JWKS_UNAVAILABLE',
    /Expected 200 OK/,
  );
});

t.test('hasRole', async (t) => {
  const p = { id: 'a', roles: ['approver'], via: 'api_key' as const };
  t.ok(hasRole(p, ['admin', 'approver']));
  t.notOk(hasRole(p, ['admin']));
  t.notOk(hasRole(p, []), 'an empty list grants nothing');
});
