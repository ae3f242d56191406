import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Database } from '../../db/database.js';
import type { ConsentsTable, UserPreferencesTable } from './data-subject.tables.js';

type Executor = Kysely<Database> | Transaction<Database>;

export type ConsentRow = Selectable<ConsentsTable>;

/** Appends a decision after the user's latest; a concurrent append taking the same `seq` fails (unique key). */
export async function appendConsent(db: Executor, row: Omit<ConsentRow, 'seq'>): Promise<void> {
  const { last } = await db
    .selectFrom('consents')
    .select((eb) => eb.fn.max<number | null>('seq').as('last'))
    .where('user_id', '=', row.user_id)
    .executeTakeFirstOrThrow();
  await db
    .insertInto('consents')
    .values({ ...row, seq: Number(last ?? 0) + 1 })
    .execute();
}

/** Every decision of the user, oldest first. */
export function consentHistory(db: Executor, userId: string): Promise<ConsentRow[]> {
  return db.selectFrom('consents').selectAll().where('user_id', '=', userId).orderBy('seq').execute();
}

export async function deleteConsents(db: Executor, userId: string): Promise<number> {
  const result = await db.deleteFrom('consents').where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows);
}

export function findPreferences(db: Executor, userId: string): Promise<Selectable<UserPreferencesTable> | undefined> {
  return db.selectFrom('user_preferences').selectAll().where('user_id', '=', userId).executeTakeFirst();
}

export async function putPreferences(db: Executor, userId: string, preferences: string, at: string): Promise<void> {
  await db
    .insertInto('user_preferences')
    .values({ user_id: userId, preferences, updated_at: at })
    .onConflict((oc) => oc.column('user_id').doUpdateSet({ preferences, updated_at: at }))
    .execute();
}

export async function deletePreferences(db: Executor, userId: string): Promise<number> {
  const result = await db.deleteFrom('user_preferences').where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows);
}
