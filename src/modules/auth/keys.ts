import type { webcrypto } from 'node:crypto';
import { type JWK, calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK } from 'jose';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.js';
import type { Logger } from '../../logger.js';
import { type KeyEncryption, isSealed } from './key-encryption.js';

type CryptoKey = webcrypto.CryptoKey;

/** Access tokens are signed with Ed25519: asymmetric (gateways verify with the public half) and fast to verify. */
export const SIGNING_ALG = 'EdDSA';

interface LoadedKey {
  kid: string;
  publicJwk: JWK;
  publicKey: CryptoKey;
  privateKey: CryptoKey;
  createdAt: string;
  retiredAt: string | null;
}

/** How often an instance looks for keys another instance (or `agent-service keys rotate`) added. */
const RELOAD_INTERVAL_MS = 60_000;
/** An unknown `kid` triggers a reload at most this often, so forged headers cannot hammer the database. */
const UNKNOWN_KID_RELOAD_MS = 10_000;

export interface KeyRingOptions {
  /** Encrypts the private keys at rest. */
  encryption: KeyEncryption;
  now?: () => Date;
  logger?: Logger;
}

/**
 * The signing keys, shared by every instance through the database. The newest unretired key signs; retired keys
 * keep verifying until every token they signed has expired, so rotation logs nobody out. Private keys are stored
 * encrypted (see key-encryption.ts).
 */
export class KeyRing {
  #keys: LoadedKey[] = [];
  #loadedAt = 0;
  #loading: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  private readonly encryption: KeyEncryption;
  private readonly now: () => Date;

  constructor(
    private readonly db: Kysely<Database>,
    /** How long a retired key must keep verifying: the access-token lifetime plus clock leeway. */
    private readonly verifyRetiredForMs: number,
    private readonly options: KeyRingOptions,
  ) {
    this.encryption = options.encryption;
    this.now = options.now ?? (() => new Date());
  }

  /**
   * Loads the keys, creating the first one if there is none, and keeps them fresh in the background. Keys stored
   * in plaintext by older versions are encrypted first. A key that does not decrypt (the wrong
   * KEY_ENCRYPTION_KEY) stops start-up with a KeyDecryptionError.
   */
  async start(): Promise<void> {
    await this.#sealPlaintextKeys();
    await this.#reload();
    if (this.#keys.length === 0) {
      await this.#insertNewKey();
      await this.#reload();
    }
    this.#timer = setInterval(() => void this.#reload().catch(() => undefined), RELOAD_INTERVAL_MS);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** The key new tokens are signed with. */
  signingKey(): { kid: string; privateKey: CryptoKey } {
    const active = this.#keys.find((k) => k.retiredAt === null) ?? this.#keys[0];
    if (!active) throw new Error('no signing key loaded');
    return { kid: active.kid, privateKey: active.privateKey };
  }

  /** The public key for a token's `kid`, reloading once if another instance may have added it. */
  async verificationKey(kid: string | undefined): Promise<CryptoKey | undefined> {
    if (!kid) return undefined;
    const known = this.#verifying().find((k) => k.kid === kid);
    if (known) return known.publicKey;
    if (Date.now() - this.#loadedAt > UNKNOWN_KID_RELOAD_MS) await this.#reload();
    return this.#verifying().find((k) => k.kid === kid)?.publicKey;
  }

  /** The JSON Web Key Set published at /.well-known/jwks.json. */
  jwks(): { keys: JWK[] } {
    return { keys: this.#verifying().map((k) => ({ ...k.publicJwk, kid: k.kid, alg: SIGNING_ALG, use: 'sig' })) };
  }

  /** Adds a key that signs from now on; the previous one keeps verifying until its tokens expire. */
  async rotate(): Promise<string> {
    const at = this.now().toISOString();
    const kid = await this.db.transaction().execute(async (trx) => {
      await trx.updateTable('signing_keys').set({ retired_at: at }).where('retired_at', 'is', null).execute();
      const created = await this.#insertNewKey(trx);
      // Keys retired long enough ago have no live tokens left.
      const cutoff = new Date(this.now().getTime() - this.verifyRetiredForMs).toISOString();
      await trx.deleteFrom('signing_keys').where('retired_at', '<', cutoff).execute();
      return created;
    });
    await this.#reload();
    return kid;
  }

  #verifying(): LoadedKey[] {
    const cutoff = this.now().getTime() - this.verifyRetiredForMs;
    return this.#keys.filter((k) => k.retiredAt === null || Date.parse(k.retiredAt) > cutoff);
  }

  async #insertNewKey(db: Pick<Kysely<Database>, 'insertInto'> = this.db): Promise<string> {
    const { publicKey, privateKey } = await generateKeyPair(SIGNING_ALG, { crv: 'Ed25519', extractable: true });
    const publicJwk = await exportJWK(publicKey);
    const kid = await calculateJwkThumbprint(publicJwk);
    await db
      .insertInto('signing_keys')
      .values({
        kid,
        alg: SIGNING_ALG,
        public_jwk: JSON.stringify(publicJwk),
        private_jwk: this.encryption.seal(kid, JSON.stringify(await exportJWK(privateKey))),
        created_at: this.now().toISOString(),
        retired_at: null,
      })
      .execute();
    return kid;
  }

  /** Re-writes encrypted every private key an older version stored in plaintext; each row once, by one instance. */
  async #sealPlaintextKeys(): Promise<void> {
    const rows = await this.db.selectFrom('signing_keys').select(['kid', 'private_jwk']).execute();
    let sealed = 0;
    for (const row of rows.filter((r) => !isSealed(r.private_jwk))) {
      const plaintext = this.encryption.open(row.kid, row.private_jwk);
      const result = await this.db
        .updateTable('signing_keys')
        .set({ private_jwk: this.encryption.seal(row.kid, plaintext) })
        .where('kid', '=', row.kid)
        .where('private_jwk', '=', row.private_jwk)
        .executeTakeFirst();
      sealed += Number(result.numUpdatedRows);
    }
    if (sealed > 0) this.options.logger?.info({ keys: sealed }, 'signing keys stored in plaintext are now encrypted');
  }

  #reload(): Promise<void> {
    this.#loading ??= (async () => {
      const rows = await this.db.selectFrom('signing_keys').selectAll().orderBy('created_at', 'desc').execute();
      this.#keys = await Promise.all(
        rows.map(async (row) => {
          const publicJwk = JSON.parse(row.public_jwk) as JWK;
          return {
            kid: row.kid,
            publicJwk,
            publicKey: (await importJWK(publicJwk, SIGNING_ALG)) as CryptoKey,
            privateKey: (await importJWK(
              JSON.parse(this.encryption.open(row.kid, row.private_jwk)) as JWK,
              SIGNING_ALG,
            )) as CryptoKey,
            createdAt: row.created_at,
            retiredAt: row.retired_at,
          };
        }),
      );
      this.#loadedAt = Date.now();
    })().finally(() => {
      this.#loading = undefined;
    });
    return this.#loading;
  }
}
