import type { Insertable, Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/database.js';
import { prepared } from '../../db/prepared.js';
import type { ApiKeysTable } from './api-keys.tables.js';

type Executor = Kysely<Database> | Transaction<Database>;

/*
 * A key belongs to a user: every statement that reads, changes or deletes one by its id also names its user, so
 * another user's key is as missing as one that never existed and a miss changes nothing. The exceptions are named:
 * finding a key by the hash of the secret presented (the secret is the proof), and recording that use.
 */

/** The key whose secret hashes to `keyHash`, whoever owns it: authentication, where the secret is the proof. */
export async function findKeyByHash(db: Executor, keyHash: string) {
  return (await keyByHash(db, keyHash))[0];
}

const keyByHash = prepared((db: Kysely<Database>, keyHash: string) =>
  db.selectFrom('api_keys').selectAll().where('key_hash', '=', keyHash),
);

/** The user's key; undefined when there is none or it is another user's. */
export function findKey(db: Executor, userId: string, id: string) {
  return db.selectFrom('api_keys').selectAll().where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
}

export function listKeys(db: Executor, userId: string, { includeExpiredAfter }: { includeExpiredAfter?: string } = {}) {
  let query = db.selectFrom('api_keys').selectAll().where('user_id', '=', userId);
  if (includeExpiredAfter !== undefined) query = query.where('expires_at', '>', includeExpiredAfter);
  return query.orderBy('created_at').orderBy('id').execute();
}

export async function countLiveKeys(db: Executor, userId: string, now: string): Promise<number> {
  const { n } = await db
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('user_id', '=', userId)
    .where('expires_at', '>', now)
    .executeTakeFirstOrThrow();
  return Number(n);
}

export async function insertKey(db: Executor, row: Insertable<ApiKeysTable>): Promise<void> {
  await db.insertInto('api_keys').values(row).execute();
}

/**
 * Records when a key was last used. Unscoped by design: it follows `findKeyByHash`, for the key whose secret was
 * just presented, and changes nothing but the time of use.
 */
export async function recordKeyUse(db: Executor, id: string, at: string): Promise<void> {
  await db.updateTable('api_keys').set({ last_used: at }).where('id', '=', id).execute();
}

/**
 * Gives the user's key a new hash and the next generation if it is still at `generation`; false when it is not (or
 * gone, or another user's).
 */
export async function advanceGeneration(
  db: Executor,
  userId: string,
  id: string,
  generation: number,
  keyHash: string,
): Promise<boolean> {
  const result = await db
    .updateTable('api_keys')
    .set({ key_hash: keyHash, generation: generation + 1 })
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('generation', '=', generation)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Deletes the user's key; false when there is none or it is another user's (and then nothing was deleted). */
export async function deleteKey(db: Executor, userId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('api_keys').where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

/** Erasure (by user id, on the erasure's transaction): every key of the user. */
export async function deleteKeysOf(db: Executor, userId: string): Promise<number> {
  const result = await db.deleteFrom('api_keys').where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows);
}
