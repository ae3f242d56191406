import type { Insertable, Kysely, Transaction, Updateable } from 'kysely';
import type { Database } from '../../db/database.js';
import type { ApiKeysTable } from './api-keys.tables.js';

type Executor = Kysely<Database> | Transaction<Database>;

export function findKeyByHash(db: Executor, keyHash: string) {
  return db.selectFrom('api_keys').selectAll().where('key_hash', '=', keyHash).executeTakeFirst();
}

export function findKey(db: Executor, id: string) {
  return db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
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

export async function updateKey(db: Executor, id: string, changes: Updateable<ApiKeysTable>): Promise<void> {
  await db.updateTable('api_keys').set(changes).where('id', '=', id).execute();
}

/** Gives the key a new hash and the next generation if it is still at `generation`; false when it is not (or gone). */
export async function advanceGeneration(
  db: Executor,
  id: string,
  generation: number,
  keyHash: string,
): Promise<boolean> {
  const result = await db
    .updateTable('api_keys')
    .set({ key_hash: keyHash, generation: generation + 1 })
    .where('id', '=', id)
    .where('generation', '=', generation)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function deleteKey(db: Executor, id: string): Promise<boolean> {
  const result = await db.deleteFrom('api_keys').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

export async function deleteKeysOf(db: Executor, userId: string): Promise<number> {
  const result = await db.deleteFrom('api_keys').where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows);
}
