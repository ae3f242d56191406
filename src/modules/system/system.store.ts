import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/database.js';

type Executor = Kysely<Database> | Transaction<Database>;

export async function getSetting(db: Executor, key: string): Promise<string | undefined> {
  const row = await db.selectFrom('system_settings').select('value').where('key', '=', key).executeTakeFirst();
  return row?.value;
}

export async function putSetting(db: Executor, key: string, value: string, now = new Date()): Promise<void> {
  await db
    .insertInto('system_settings')
    .values({ key, value, updated_at: now.toISOString() })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value, updated_at: now.toISOString() }))
    .execute();
}

/** Inserts the value only if the key is absent, and returns whichever value is stored afterwards. */
export async function putSettingIfAbsent(db: Executor, key: string, value: string, now = new Date()): Promise<string> {
  await db
    .insertInto('system_settings')
    .values({ key, value, updated_at: now.toISOString() })
    .onConflict((oc) => oc.column('key').doNothing())
    .execute();
  return (await getSetting(db, key)) ?? value;
}
