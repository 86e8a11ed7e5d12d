/**
 * PushSigner: a signed delivery verifies against the published JWKS (as a receiver would,
 * with jose createLocalJWKSet) and binds the exact body bytes; keys persist in the store,
 * and concurrent creates converge on one stored key.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import { calculateJwkThumbprint, createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import {
  generateSigningKey,
  MemorySigningKeyStore,
  PushSigner,
  PushSignerError,
  type SigningKeyStore,
  type StoredSigningKey,
} from '../../../src/push/push-signer.js';

const sha256hex = (b: string | Uint8Array) => createHash('sha256').update(b).digest('hex');

t.test('round trip: a receiver verifies the token and the body hash', async (t) => {
  const signer = await PushSigner.create(new MemorySigningKeyStore(), { issuer: 'https://agent.test' });
  const body = JSON.stringify({ statusUpdate: { taskId: 't-1', status: { state: 'TASK_STATE_COMPLETED' } }, note: 'héllo' });
  const token = await signer.sign({ taskId: 't-1', eventId: 42, body });

  const header = decodeProtectedHeader(token);
  t.same(header, { alg: 'ES256', kid: signer.kid, typ: 'JWT' });
  const { payload } = await jwtVerify(token, createLocalJWKSet(signer.jwks()), { issuer: 'https://agent.test', typ: 'JWT' });
  t.equal(payload.task_id, 't-1');
  t.equal(payload.event_id, '42', 'event_id is a string');
  t.equal(payload.body_sha256, sha256hex(Buffer.from(body, 'utf8')), 'sha256 of the exact UTF-8 body bytes');
  t.equal((payload.exp ?? 0) - (payload.iat ?? 0), 300, 'expires 5 minutes after issue');
  t.ok(Math.abs((payload.iat ?? 0) - Date.now() / 1000) < 5, 'iat is now');
  t.type(payload.jti, 'string');

  const again = await signer.sign({ taskId: 't-1', eventId: 42, body });
  const { payload: p2 } = await jwtVerify(again, createLocalJWKSet(signer.jwks()));
  t.not(p2.jti, payload.jti, 'jti is fresh per token');

  const bytes = new Uint8Array([0, 1, 2, 255]);
  const { payload: p3 } = await jwtVerify(
    await signer.sign({ taskId: 't', eventId: 'e-7', body: bytes }),
    createLocalJWKSet(signer.jwks()),
  );
  t.equal(p3.body_sha256, sha256hex(bytes), 'binary bodies are hashed as given');
  t.equal(p3.event_id, 'e-7');
  t.equal(p3.iss, 'https://agent.test');

  t.not(payload.body_sha256, sha256hex(`${body} `), 'a changed body no longer matches');
});

t.test('jwks shape: public members only, with kid, alg and use', async (t) => {
  const signer = await PushSigner.create(new MemorySigningKeyStore());
  const { keys } = signer.jwks();
  t.equal(keys.length, 1);
  const [k] = keys;
  t.same(Object.keys(k).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
  t.match(k, { kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig', kid: signer.kid });
  t.equal(k.d, undefined, 'no private key in the JWKS');
  t.equal(await calculateJwkThumbprint(k), signer.kid, 'kid is the RFC 7638 thumbprint');
  const { payload } = await jwtVerify(await signer.sign({ taskId: 't', eventId: 1, body: '' }), createLocalJWKSet(signer.jwks()));
  t.equal(payload.iss, undefined, 'no issuer unless configured');
  signer.jwks().keys[0].kid = 'mutated';
  t.equal(signer.jwks().keys[0].kid, signer.kid, 'callers get copies');
});

t.test('persistence: a second create() reuses the stored key', async (t) => {
  const store = new MemorySigningKeyStore();
  const first = await PushSigner.create(store);
  const stored = await store.loadSigningKeys();
  t.equal(stored.length, 1);
  t.equal(stored[0].kid, first.kid);
  t.equal(stored[0].alg, 'ES256');
  t.type(stored[0].privateJwk.d, 'string', 'the store holds the private key');
  t.ok(stored[0].createdAt instanceof Date);

  const second = await PushSigner.create(store);
  t.equal(second.kid, first.kid, 'same kid after a restart');
  t.equal((await store.loadSigningKeys()).length, 1, 'no new key generated');
  const token = await second.sign({ taskId: 't', eventId: 1, body: '{}' });
  await t.resolves(jwtVerify(token, createLocalJWKSet(first.jwks())), "the first instance's JWKS verifies the second's tokens");
});

t.test('several stored keys: sign with the newest, publish all', async (t) => {
  const store = new MemorySigningKeyStore();
  const old = { ...(await generateSigningKey('ES256')), createdAt: new Date('2024-01-01T00:00:00Z') };
  const newer = { ...(await generateSigningKey('ES256')), createdAt: new Date('2025-01-01T00:00:00Z') };
  await store.saveSigningKey(old);
  await store.saveSigningKey(newer);
  const signer = await PushSigner.create(store);
  t.equal(signer.kid, newer.kid);
  t.same(
    signer.jwks().keys.map((k) => k.kid),
    [newer.kid, old.kid],
    'newest first; old keys stay verifiable',
  );
});

/** A store where another process wins the race: its save lands first and ours is refused. */
class RacingStore implements SigningKeyStore {
  loads = 0;
  constructor(
    private readonly winner: StoredSigningKey,
    private readonly saved: StoredSigningKey[] = [],
  ) {}
  async loadSigningKeys() {
    this.loads++;
    return this.saved.map((k) => ({ ...k }));
  }
  async saveSigningKey(): Promise<void> {
    this.saved.push(this.winner);
    throw new Error('duplicate key value violates unique constraint "push_signing_keys_single"');
  }
}

t.test('concurrent create: a lost save adopts the winning key', async (t) => {
  const winner = await generateSigningKey('ES256');
  const store = new RacingStore(winner);
  const signer = await PushSigner.create(store);
  t.equal(signer.kid, winner.kid, 'uses the key the other process saved');
  t.equal(store.loads, 2, 'reloaded after the failed save');
  t.same(
    signer.jwks().keys.map((k) => k.kid),
    [winner.kid],
  );
});

t.test('store failures are reported', async (t) => {
  const broken: SigningKeyStore = {
    loadSigningKeys: async () => [],
    saveSigningKey: async () => {
      throw new Error('database is read-only');
    },
  };
  await t.rejects(PushSigner.create(broken), {
    name: 'PushSignerError',
    code: 'AGENT_ERR_PUSH_SIGNING_KEY',
    message: /could not save a new ES256 signing key: database is read-only/,
  });
  const forgetful: SigningKeyStore = { loadSigningKeys: async () => [], saveSigningKey: async () => undefined };
  await t.rejects(PushSigner.create(forgetful), PushSignerError);
  const corrupt = new MemorySigningKeyStore();
  const good = await generateSigningKey('ES256');
  await corrupt.saveSigningKey({ ...good, privateJwk: { kty: 'EC', crv: 'P-256' } });
  await t.rejects(PushSigner.create(corrupt), {
    name: 'PushSignerError',
    message: new RegExp(`stored signing key ${good.kid} cannot be imported`),
  });
});

t.test('MemorySigningKeyStore refuses a duplicate kid and returns copies', async (t) => {
  const store = new MemorySigningKeyStore();
  const key = await generateSigningKey('ES256');
  await store.saveSigningKey(key);
  await t.rejects(store.saveSigningKey(key), /already exists/);
  (await store.loadSigningKeys())[0].kid = 'changed';
  t.equal((await store.loadSigningKeys())[0].kid, key.kid);
});
