import { randomUUID } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { Broadcast } from '../../adapters/broadcast/port.js';
import type { Db } from '../../db/create-db.js';
import type { Database } from '../../db/database.js';
import { BadRequestError, CommonErrorCode, NotFoundError, UnauthorizedError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import type { AuditRecorder } from '../../ports/audit.js';
import { RecentReads, SharedForgetting } from '../../ports/recent-reads.js';
import type { ClientInfo } from '../../ports/caller.js';
import { type Caller, CallerErrorCode, userCaller } from '../../ports/caller.js';
import { base62 } from '../auth/index.js';
import { type TokenService, hashSecret } from '../auth/index.js';
import type { User, UsersService } from '../users/index.js';
import * as store from './api-keys.store.js';

export const MAX_KEYS_PER_USER = 5;
export const DEFAULT_EXPIRES_DAYS = 365;
export const MAX_EXPIRES_DAYS = 730;
const KEY_PREFIX = 'ak_live_';
/** Token families of API keys: `apikey:<key_id>:<generation>`. */
export const API_KEY_TOKEN_FAMILY = 'apikey';
/** `last_used` is written at most this often per key, so a busy key does not write on every request. */
const LAST_USED_EVERY_MS = 60_000;
/**
 * How long a key read from the database, with its owner, vouches for later requests that present it: a client's
 * burst costs one read, not two statements a request. Rotating or deleting a key, and ending all of its owner's
 * sessions (deactivation, erasure), forget it at once on this instance and, through the broadcast, on the others;
 * should a broadcast be lost, this is how long another instance may still accept it. A change of the owner's roles
 * takes effect within it.
 */
const KEY_CACHE_MS = 1_000;
const KEY_CACHE_LIMIT = 10_000;
/** Where instances tell each other of keys to forget: `key:<id>` or `user:<id>` (all of the user's). */
const KEYS_CHANGED_CHANNEL = 'api-keys-changed';

export interface ApiKeyInfo {
  key_id: string;
  name: string;
  created: string;
  expires_at: string;
  last_used: string | null;
}

type KeyRow = NonNullable<Awaited<ReturnType<typeof store.findKey>>>;
/** A key as resolved, with its owner. */
interface ResolvedKey {
  row: KeyRow;
  user: User;
  expiresAt: number;
}

const toInfo = (row: KeyRow): ApiKeyInfo => ({
  key_id: row.id,
  name: row.name,
  created: row.created_at,
  expires_at: row.expires_at,
  last_used: row.last_used,
});

/** Long-lived per-user API keys: shown once, stored as hashes, found by hash through a unique index. */
export class ApiKeysService {
  private readonly now: () => Date;
  /** Keys resolved within the last KEY_CACHE_MS, by the hash of their secret. */
  readonly #resolved = new RecentReads<ResolvedKey>(KEY_CACHE_MS, KEY_CACHE_LIMIT);
  /** Changed keys, told to every instance: `key:<id>` or `user:<id>` (all of the user's). */
  readonly #changes = new SharedForgetting<`key:${string}` | `user:${string}`>(
    KEYS_CHANGED_CHANNEL,
    (message) => this.#forget(message),
    (err) => this.deps.logger.warn({ err }, 'changed API key not broadcast; other instances forget it within a second'),
  );

  constructor(
    private readonly deps: {
      db: Db;
      users: UsersService;
      tokens: TokenService;
      audit: AuditRecorder;
      logger: Logger;
      now?: () => Date;
    },
  ) {
    this.now = deps.now ?? (() => new Date());
  }

  /**
   * Tells the other instances of each key rotated or deleted here, and forgets the keys they change, through
   * `broadcast`. Without it, a change made on another instance takes effect here within KEY_CACHE_MS. Returns the
   * stop.
   */
  shareForgetting(broadcast: Broadcast): () => void {
    return this.#changes.share(broadcast);
  }

  /** Forgets every key of the user this instance remembers (their sessions all ended). */
  forgetUser(userId: string): void {
    this.#forget(`user:${userId}`);
  }

  async create(
    userId: string,
    input: { name: string; expiresDays: number },
    client: ClientInfo,
  ): Promise<ApiKeyInfo & { api_key: string }> {
    const { db } = this.deps;
    const now = this.now();
    const key = `${KEY_PREFIX}${base62(48)}`;
    const row: KeyRow = {
      id: randomUUID(),
      user_id: userId,
      name: input.name,
      key_hash: hashSecret(key),
      generation: 1,
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + input.expiresDays * 86_400_000).toISOString(),
      last_used: null,
    };
    await db.kysely.transaction().execute(async (trx) => {
      // Concurrent creations for one user must not both slip under the limit: PostgreSQL locks the user's row;
      // SQLite already runs one write transaction at a time.
      if (db.dialect === 'postgres')
        await trx.selectFrom('users').select('id').where('id', '=', userId).forUpdate().execute();
      if ((await store.countLiveKeys(trx, userId, now.toISOString())) >= MAX_KEYS_PER_USER) {
        throw new BadRequestError(`API key limit reached: at most ${MAX_KEYS_PER_USER} per user`, {
          code: CommonErrorCode.Validation,
        });
      }
      await store.insertKey(trx, row);
    });
    await this.#audit('api_key.created', userId, row.id, client);
    return { ...toInfo(row), api_key: key };
  }

  async list(userId: string, includeExpired: boolean): Promise<ApiKeyInfo[]> {
    const rows = await store.listKeys(
      this.deps.db.kysely,
      userId,
      includeExpired ? {} : { includeExpiredAfter: this.now().toISOString() },
    );
    return rows.map(toInfo);
  }

  /** A new value under the same key_id; the old value, and tokens exchanged for it, stop working at once. */
  async rotate(userId: string, keyId: string, client: ClientInfo): Promise<{ key_id: string; new_api_key: string }> {
    const key = `${KEY_PREFIX}${base62(48)}`;
    const row = await this.#advance(userId, keyId, hashSecret(key));
    await this.#changes.tell(`key:${row.id}`);
    await this.#audit('api_key.rotated', userId, row.id, client, row.generation + 1);
    return { key_id: row.id, new_api_key: key };
  }

  /** Another user's key is reported as missing: its existence is not theirs to learn. */
  async delete(userId: string, keyId: string, client: ClientInfo): Promise<void> {
    if (!(await store.deleteKey(this.deps.db.kysely, userId, keyId))) throw keyNotFound();
    await this.#changes.tell(`key:${keyId}`);
    await this.#audit('api_key.deleted', userId, keyId, client);
  }

  /** Erasure: deletes every key of the user through `db` (the erasure's transaction); returns how many. */
  async deleteAllOf(userId: string, db: Kysely<Database> | Transaction<Database>): Promise<number> {
    const deleted = await store.deleteKeysOf(db, userId);
    await this.#changes.tell(`user:${userId}`);
    return deleted;
  }

  /** The caller an `X-API-Key` stands for: the key's owner, with the owner's permissions. */
  async authenticate(key: string): Promise<Caller> {
    const { user } = await this.#resolve(key);
    return userCaller(user, { via: 'api_key' });
  }

  /** The gateway exchange: a short-lived access token for a valid key. */
  async exchange(
    key: string,
  ): Promise<{ access_token: string; expires_in: number; user_id: string; username: string }> {
    const { row, user } = await this.#resolve(key);
    const issued = await this.deps.tokens.issue({
      sub: user.id,
      username: user.username,
      roles: user.roles,
      kind: 'user',
      sid: `${API_KEY_TOKEN_FAMILY}:${row.id}:${row.generation}`,
    });
    return { access_token: issued.token, expires_in: issued.expiresIn, user_id: user.id, username: user.username };
  }

  /** Whether a token exchanged for a key is still good: the key exists, is unexpired and was not rotated since. */
  async isLive(sid: string, subject: string): Promise<boolean> {
    const [, keyId, generation] = sid.split(':');
    if (!keyId || !generation) return false;
    const row = await store.findKey(this.deps.db.kysely, subject, keyId);
    return (
      row !== undefined && row.generation === Number(generation) && Date.parse(row.expires_at) > this.now().getTime()
    );
  }

  async #resolve(key: string): Promise<{ row: KeyRow; user: User }> {
    if (!key.startsWith(KEY_PREFIX) || key.length > 200)
      throw new UnauthorizedError('Invalid API key', { code: CallerErrorCode.InvalidToken });
    const keyHash = hashSecret(key);
    const now = this.now().getTime();
    const resolved = await this.#resolved.through(keyHash, now, () => this.#read(keyHash));
    const { row, user, expiresAt } = resolved;
    if (expiresAt <= now) {
      throw new UnauthorizedError('API key has expired', {
        code: CallerErrorCode.InvalidToken,
        expiredAt: row.expires_at,
      });
    }
    if (!user.active) throw new UnauthorizedError('Invalid API key', { code: CallerErrorCode.InvalidToken });
    if (row.last_used === null || now - Date.parse(row.last_used) >= LAST_USED_EVERY_MS) {
      const at = new Date(now).toISOString();
      // The remembered key shows the use too, so the requests of the next second do not write it again.
      resolved.row = { ...row, last_used: at };
      await store.recordKeyUse(this.deps.db.kysely, row.id, at);
    }
    return resolved;
  }

  /** The key and its owner from the database. */
  async #read(keyHash: string): Promise<ResolvedKey> {
    const row = await store.findKeyByHash(this.deps.db.kysely, keyHash);
    const user = row && (await this.deps.users.get(row.user_id));
    if (!row || !user) throw new UnauthorizedError('Invalid API key', { code: CallerErrorCode.InvalidToken });
    return { row, user, expiresAt: Date.parse(row.expires_at) };
  }

  #forget(message: string): void {
    const column = message.startsWith('key:') ? 'id' : message.startsWith('user:') ? 'user_id' : undefined;
    const id = message.slice(message.indexOf(':') + 1);
    if (column) this.#resolved.forget(({ row }) => row[column] === id);
  }

  /** `generation`: the one a rotation moved the key to. */
  #audit(
    type: 'api_key.created' | 'api_key.rotated' | 'api_key.deleted',
    userId: string,
    keyId: string,
    client: ClientInfo,
    generation?: number,
  ): Promise<void> {
    return this.deps.audit.record({
      type,
      actorId: userId,
      ipAddress: client.ip,
      userAgent: client.userAgent,
      details: { key_id: keyId, ...(generation !== undefined && { generation }) },
    });
  }

  /**
   * Moves the key to its next generation under `keyHash`, answering the row as it was just before. Two rotations
   * that read the same generation must not both write the next one: the later would overwrite the earlier's value
   * without a new generation, so tokens exchanged for the lost value would stay live. The write therefore applies
   * only while the generation is still the one read; a rotation that finds it moved reads the key again and goes
   * after the other (or finds it deleted: 404). Each retry means another rotation got through, so this ends.
   */
  async #advance(userId: string, keyId: string, keyHash: string): Promise<KeyRow> {
    for (;;) {
      const row = await this.#owned(userId, keyId);
      if (await store.advanceGeneration(this.deps.db.kysely, userId, row.id, row.generation, keyHash)) return row;
    }
  }

  /** Another user's key is reported as missing: its existence is not theirs to learn. */
  async #owned(userId: string, keyId: string): Promise<KeyRow> {
    const row = await store.findKey(this.deps.db.kysely, userId, keyId);
    if (!row) throw keyNotFound();
    return row;
  }
}

const keyNotFound = () => new NotFoundError('API key not found', { code: CommonErrorCode.NotFound });
