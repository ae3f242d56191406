import type { Insertable, Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/database.js';
import type { RefreshTokensTable } from './auth.tables.js';

type Executor = Kysely<Database> | Transaction<Database>;

export async function insertRefreshToken(db: Executor, row: Insertable<RefreshTokensTable>): Promise<void> {
  await db.insertInto('refresh_tokens').values(row).execute();
}

/*
 * Refresh tokens belong to a user: statements that change or delete them by id or session name the user too. The
 * one lookup that does not is by the hash of the token presented, where the token itself is the proof.
 */

/** The token whose value hashes to `tokenHash`, whoever's it is (the refresh exchange). */
export function findRefreshToken(db: Executor, tokenHash: string) {
  return db.selectFrom('refresh_tokens').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

/** Marks the user's token used if nobody has yet; false when another exchange got there first. */
export async function markRefreshTokenUsed(db: Executor, userId: string, id: string, at: string): Promise<boolean> {
  const result = await db
    .updateTable('refresh_tokens')
    .set({ used_at: at })
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Deletes the tokens issued in one of the user's sessions. */
export async function deleteSessionTokens(db: Executor, userId: string, sessionId: string): Promise<void> {
  await db.deleteFrom('refresh_tokens').where('session_id', '=', sessionId).where('user_id', '=', userId).execute();
}

/** Every token of the user (deactivation, password change, erasure). */
export async function deleteUserTokens(db: Executor, userId: string): Promise<number> {
  const result = await db.deleteFrom('refresh_tokens').where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows);
}
