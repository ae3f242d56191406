import type { Insertable, Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/database.js';
import type { RefreshTokensTable } from './auth.tables.js';

type Executor = Kysely<Database> | Transaction<Database>;

export async function insertRefreshToken(db: Executor, row: Insertable<RefreshTokensTable>): Promise<void> {
  await db.insertInto('refresh_tokens').values(row).execute();
}

export function findRefreshToken(db: Executor, tokenHash: string) {
  return db.selectFrom('refresh_tokens').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

/** Marks the token used if nobody has yet; false when another exchange got there first. */
export async function markRefreshTokenUsed(db: Executor, id: string, at: string): Promise<boolean> {
  const result = await db
    .updateTable('refresh_tokens')
    .set({ used_at: at })
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function deleteSessionTokens(db: Executor, sessionId: string): Promise<void> {
  await db.deleteFrom('refresh_tokens').where('session_id', '=', sessionId).execute();
}

export async function deleteUserTokens(db: Executor, userId: string): Promise<number> {
  const result = await db.deleteFrom('refresh_tokens').where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows);
}
