import type { Kysely } from 'kysely';

/** Relationship tuples of the embedded authorization evaluator, API keys and service principals. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('relation_tuples')
    .addColumn('object_type', 'text', (c) => c.notNull())
    .addColumn('object_id', 'text', (c) => c.notNull())
    .addColumn('relation', 'text', (c) => c.notNull())
    .addColumn('subject_type', 'text', (c) => c.notNull())
    .addColumn('subject_id', 'text', (c) => c.notNull())
    // '' for a plain subject, the relation of a userset (group:eng#member) otherwise: NULL cannot be in a key.
    .addColumn('subject_relation', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('relation_tuples_pk', [
      'object_type',
      'object_id',
      'relation',
      'subject_type',
      'subject_id',
      'subject_relation',
    ])
    .execute();
  await db.schema
    .createIndex('relation_tuples_subject')
    .on('relation_tuples')
    .columns(['subject_type', 'subject_id', 'subject_relation'])
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    // Bumped on rotation: access tokens exchanged for the old value name the old generation and stop working.
    .addColumn('generation', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('last_used', 'text')
    .execute();
  await db.schema.createIndex('api_keys_user').on('api_keys').column('user_id').execute();

  await db.schema
    .createTable('service_principals')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('authentication_mode', 'text', (c) => c.notNull())
    .addColumn('owner_user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('associated_user_id', 'text', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('inherit_permissions', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('secret_generation', 'integer', (c) => c.notNull().defaultTo(1))
    // During a rotation's grace period the previous secret still works until this time.
    .addColumn('previous_secret_hash', 'text')
    .addColumn('previous_secret_expires_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('service_principals_owner').on('service_principals').column('owner_user_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['service_principals', 'api_keys', 'relation_tuples']) await db.schema.dropTable(table).execute();
}
