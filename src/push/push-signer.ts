/**
 * Signs push deliveries as short-lived JWTs so a receiver can check that a webhook call came
 * from this agent and carries exactly the body that was signed. The receiver fetches the
 * public keys from `jwks()` (served by the transport), verifies the signature, `exp`, and
 * compares `body_sha256` with the sha256 of the raw request body it received.
 *
 * Keys live in a SigningKeyStore (the database in production) so every instance and every
 * restart signs with the same published key.
 */
import { createHash, randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, SignJWT, type CryptoKey, type JWK } from 'jose';

export interface StoredSigningKey {
  /** RFC 7638 JWK thumbprint (sha256, base64url) of the public key. */
  kid: string;
  alg: string;
  privateJwk: Record<string, unknown>;
  publicJwk: Record<string, unknown>;
  createdAt: Date;
}

/**
 * Persistence for signing keys. Implementations MUST return every saved key from
 * `loadSigningKeys`, and SHOULD make `saveSigningKey` reject when it would create a second
 * key because another process saved one concurrently (e.g. an insert guarded by a unique
 * constraint); PushSigner then adopts the key that won.
 */
export interface SigningKeyStore {
  loadSigningKeys(): Promise<StoredSigningKey[]>;
  saveSigningKey(key: StoredSigningKey): Promise<void>;
}

export interface PushSignerOptions {
  alg?: 'ES256';
  /** `iss` claim; omitted when undefined. */
  issuer?: string;
  /** Token lifetime, seconds. Default 300. */
  ttlSeconds?: number;
}

export interface PushClaims {
  taskId: string;
  eventId: string | number;
  /** The exact bytes that will be sent as the request body (a string is hashed as UTF-8). */
  body: string | Uint8Array;
}

export class PushSignerError extends Error {
  readonly code = 'AGENT_ERR_PUSH_SIGNING_KEY';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PushSignerError';
  }
}

/** Private JWK members (RFC 7518 §6); stripped from anything published. */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

const newestFirst = (a: StoredSigningKey, b: StoredSigningKey) =>
  b.createdAt.getTime() - a.createdAt.getTime() || (a.kid < b.kid ? -1 : a.kid > b.kid ? 1 : 0);

export async function generateSigningKey(alg: 'ES256'): Promise<StoredSigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const privateJwk = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  return { kid, alg, privateJwk: { ...privateJwk }, publicJwk: { ...publicJwk }, createdAt: new Date() };
}

interface SignerState {
  key: CryptoKey;
  kid: string;
  alg: 'ES256';
  published: JWK[];
  issuer?: string;
  ttlSeconds: number;
}

export class PushSigner {
  private constructor(private readonly s: SignerState) {}

  /**
   * Loads the stored keys, generating and saving one when there is none, and signs with the
   * newest key of `alg`. After a save (won or lost) it re-reads the store, so processes
   * starting together converge on the same stored key instead of each using its own.
   */
  static async create(store: SigningKeyStore, opts: PushSignerOptions = {}): Promise<PushSigner> {
    const alg = opts.alg ?? 'ES256';
    const usable = (keys: StoredSigningKey[]) => keys.filter((k) => k.alg === alg).sort(newestFirst);
    let keys = await store.loadSigningKeys();
    let saveError: unknown;
    if (usable(keys).length === 0) {
      const fresh = await generateSigningKey(alg);
      try {
        await store.saveSigningKey(fresh);
      } catch (err) {
        saveError = err; // Possibly a concurrent create that saved first: re-read below.
      }
      keys = await store.loadSigningKeys();
    }
    const [current] = usable(keys);
    if (current === undefined) {
      throw new PushSignerError(
        saveError === undefined
          ? 'the signing key store did not return the key just saved'
          : `could not save a new ${alg} signing key: ${(saveError as Error).message}`,
        { cause: saveError },
      );
    }
    let key: CryptoKey;
    try {
      key = (await importJWK(current.privateJwk as JWK, alg)) as CryptoKey;
    } catch (err) {
      throw new PushSignerError(`stored signing key ${current.kid} cannot be imported: ${(err as Error).message}`, { cause: err });
    }
    return new PushSigner({
      key,
      kid: current.kid,
      alg,
      published: keys.sort(newestFirst).map(publicKeyOf),
      issuer: opts.issuer,
      ttlSeconds: opts.ttlSeconds ?? 300,
    });
  }

  /** The kid of the key `sign` uses. */
  get kid(): string {
    return this.s.kid;
  }

  /** Every stored public key (newest first), for the JWKS endpoint. Never includes private members. */
  jwks(): { keys: JWK[] } {
    return { keys: this.s.published.map((k) => ({ ...k })) };
  }

  async sign(claims: PushClaims): Promise<string> {
    const iat = Math.floor(Date.now() / 1000);
    const jwt = new SignJWT({
      task_id: claims.taskId,
      event_id: String(claims.eventId),
      body_sha256: createHash('sha256').update(claims.body).digest('hex'),
    })
      .setProtectedHeader({ alg: this.s.alg, kid: this.s.kid, typ: 'JWT' })
      .setIssuedAt(iat)
      .setExpirationTime(iat + this.s.ttlSeconds)
      .setJti(randomUUID());
    if (this.s.issuer !== undefined) jwt.setIssuer(this.s.issuer);
    return jwt.sign(this.s.key);
  }
}

function publicKeyOf(k: StoredSigningKey): JWK {
  const jwk: Record<string, unknown> = { ...k.publicJwk };
  for (const m of PRIVATE_MEMBERS) delete jwk[m];
  return { ...(jwk as JWK), kid: k.kid, alg: k.alg, use: 'sig' };
}

/** In-memory SigningKeyStore for tests and single-process runs. Rejects a duplicate kid. */
export class MemorySigningKeyStore implements SigningKeyStore {
  private readonly keys: StoredSigningKey[] = [];

  async loadSigningKeys(): Promise<StoredSigningKey[]> {
    return this.keys.map((k) => structuredClone(k));
  }

  async saveSigningKey(key: StoredSigningKey): Promise<void> {
    if (this.keys.some((k) => k.kid === key.kid)) throw new Error(`signing key ${key.kid} already exists`);
    this.keys.push(structuredClone(key));
  }
}
