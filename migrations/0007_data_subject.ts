import type { Kysely } from 'kysely';

/**
 * Data-subject rights: every consent decision (a history, never overwritten) and each user's preferences.
 * Rows go with the user (erasure deletes them explicitly; the foreign keys are a safety net).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('consents')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    // Orders a user's decisions: timestamps can tie, and the latest decision per type is the one in force.
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('consent_type', 'text', (c) => c.notNull())
    .addColumn('granted', 'integer', (c) => c.notNull())
    .addColumn('ip_address', 'text')
    .addColumn('user_agent', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('consents_user_seq', ['user_id', 'seq'])
    .execute();

  await db.schema
    .createTable('user_preferences')
    .addColumn('user_id', 'text', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    // A JSON object chosen by the user.
    .addColumn('preferences', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('user_preferences').execute();
  await db.schema.dropTable('consents').execute();
}
