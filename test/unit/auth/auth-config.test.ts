/**
 * loadAuthConfig(file): defaults, one AuthConfigError per problem naming the field, keys
 * kept only as digests, and a frozen result.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { AuthConfigError, loadAuthConfig } from '../../../src/auth/auth-config.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const KEY_A = 'alice-key-0123456789abcdef';
const KEY_B = 'bob-key-0123456789abcdef';
const JWT = { issuer: 'https://idp.example', jwks_url: 'https://idp.example/jwks.json', audience: 'a2a' };

function write(t: Test, content: unknown): string {
  const dir = t.testdir({ 'auth.json': typeof content === 'string' ? content : JSON.stringify(content) });
  return path.join(dir, 'auth.json');
}

function refuses(t: Test, content: unknown, expected: string | RegExp): void {
  const file = write(t, content);
  t.throws(() => loadAuthConfig(file), { name: 'AuthConfigError', code: 'AGENT_ERR_AUTH_CONFIG_INVALID' });
  try {
    loadAuthConfig(file);
  } catch (err) {
    t.ok(err instanceof AuthConfigError);
    t.match((err as Error).message, file, 'names the file');
    t.match((err as Error).message, expected);
  }
}

t.test('api keys with defaults', async (t) => {
  const c = loadAuthConfig(
    write(t, {
      api_keys: [
        { key: KEY_A, principal: 'alice', roles: ['approver'] },
        { key: KEY_B, principal: 'bob' },
      ],
    }),
  );
  t.equal(c.apiKeys.length, 2);
  t.equal(c.apiKeys[0].principal, 'alice');
  t.same(c.apiKeys[0].roles, ['approver']);
  t.same(c.apiKeys[1].roles, [], 'roles default to []');
  t.same(c.apiKeys[0].keyDigest, createHash('sha256').update(KEY_A).digest(), 'the key is kept as its sha256');
  t.notOk(JSON.stringify(c).includes(KEY_A), 'the plain key is not in the config');
  t.equal(c.jwt, undefined);
  t.same(c.approverRoles, ['approver']);
  t.same(c.adminRoles, ['admin']);
  t.ok(Object.isFrozen(c) && Object.isFrozen(c.apiKeys) && Object.isFrozen(c.apiKeys[0]), 'frozen');
});

t.test('jwt only, with overrides', async (t) => {
  const c = loadAuthConfig(
    write(t, { jwt: { ...JWT, roles_claim: 'realm_access.roles', principal_claim: 'email' }, approver_roles: ['ops'], admin_roles: [] }),
  );
  t.same(c.apiKeys, []);
  t.same(c.jwt, { issuer: JWT.issuer, jwksUrl: JWT.jwks_url, audience: 'a2a', rolesClaim: 'realm_access.roles', principalClaim: 'email' });
  t.same(c.approverRoles, ['ops']);
  t.same(c.adminRoles, []);
  const d = loadAuthConfig(write(t, { jwt: { ...JWT, audience: ['a', 'b'] } }));
  t.same(d.jwt?.audience, ['a', 'b']);
  t.equal(d.jwt?.rolesClaim, 'roles', 'roles_claim defaults to roles');
  t.equal(d.jwt?.principalClaim, 'sub', 'principal_claim defaults to sub');
});

t.test('file problems', async (t) => {
  const dir = t.testdir({});
  t.throws(() => loadAuthConfig(path.join(dir, 'nope.json')), { name: 'AuthConfigError', message: /nope\.json: no such file/ });
  refuses(t, '{ "api_keys": [', /is not valid JSON/);
  refuses(t, '[]', /must be a JSON object/);
});

t.test('needs at least one kind of credential', async (t) => {
  refuses(t, {}, /configures no credentials/);
  refuses(t, { api_keys: [] }, /configures no credentials/);
});

t.test('field errors name the field', async (t) => {
  const ok = { key: KEY_A, principal: 'alice' };
  refuses(t, { api_key: [ok] }, /unknown field "api_key" in the top level/);
  refuses(t, { api_keys: {} }, /api_keys must be an array/);
  refuses(t, { api_keys: [ok, 'x'] }, /api_keys\[1\] must be an object/);
  refuses(t, { api_keys: [ok, { key: '', principal: 'b' }] }, 'api_keys[1].key must be a non-empty string');
  refuses(t, { api_keys: [ok, { key: 42, principal: 'b' }] }, 'api_keys[1].key must be a non-empty string');
  refuses(
    t,
    { api_keys: [{ key: 'short-key', principal: 'a' }] },
    /api_keys\[0\]\.key is too short \(9 characters; at least 16 required\)/,
  );
  refuses(t, { api_keys: [{ key: 'has a space in the key!!', principal: 'a' }] }, /api_keys\[0\]\.key must be visible ASCII/);
  refuses(t, { api_keys: [ok, { key: KEY_A, principal: 'b' }] }, /api_keys\[1\]\.key duplicates api_keys\[0\]\.key/);
  refuses(t, { api_keys: [{ key: KEY_A }] }, /api_keys\[0\]\.principal must be a non-empty string/);
  refuses(t, { api_keys: [{ ...ok, roles: 'approver' }] }, /api_keys\[0\]\.roles must be an array/);
  refuses(t, { api_keys: [{ ...ok, roles: ['ok', ''] }] }, /api_keys\[0\]\.roles\[1\] must be a non-empty string/);
  refuses(t, { api_keys: [{ ...ok, role: [] }] }, /unknown field "role" in api_keys\[0\]/);
  refuses(t, { api_keys: [ok], approver_roles: 'approver' }, /approver_roles must be an array/);
  refuses(t, { api_keys: [ok], admin_roles: [1] }, /admin_roles\[0\] must be a non-empty string/);
});

t.test('short or bad keys are never echoed', async (t) => {
  const file = write(t, { api_keys: [{ key: 'sekrit-short', principal: 'a' }] });
  t.throws(() => loadAuthConfig(file));
  try {
    loadAuthConfig(file);
  } catch (err) {
    t.notMatch((err as Error).message, 'sekrit');
  }
});

t.test('jwt errors', async (t) => {
  refuses(t, { jwt: 'x' }, /jwt must be an object/);
  refuses(t, { jwt: { ...JWT, issuer: undefined } }, /jwt\.issuer must be a non-empty string/);
  refuses(
    t,
    { jwt: { ...JWT, jwks_url: 'ftp://idp.example/jwks' } },
    /jwt\.jwks_url="ftp:\/\/idp\.example\/jwks" must be an http:\/\/ or https:\/\/ URL/,
  );
  refuses(t, { jwt: { ...JWT, jwks_url: 'not a url' } }, /jwt\.jwks_url="not a url" must be an http/);
  refuses(t, { jwt: { ...JWT, audience: [] } }, /jwt\.audience must be a non-empty string or a non-empty array/);
  refuses(t, { jwt: { ...JWT, audience: ['a', 3] } }, /jwt\.audience\[1\] must be a non-empty string/);
  refuses(t, { jwt: { ...JWT, roles_claim: 'a..b' } }, /jwt\.roles_claim="a\.\.b" must be a claim name or dotted path/);
  refuses(t, { jwt: { ...JWT, principal_claim: '' } }, /jwt\.principal_claim must be a non-empty string/);
  refuses(t, { jwt: { ...JWT, jwks: 'x' } }, /unknown field "jwks" in jwt/);
});
