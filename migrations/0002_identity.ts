import type { Kysely } from 'kysely';

/** Local users and groups, external identities linked to them, token signing keys and refresh tokens. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('users')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('username', 'text', (c) => c.notNull())
    // Lower-cased copies make uniqueness and login case-insensitive on both dialects.
    .addColumn('username_key', 'text', (c) => c.notNull().unique())
    .addColumn('email', 'text')
    .addColumn('email_key', 'text', (c) => c.unique())
    .addColumn('email_verified', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('name', 'text')
    .addColumn('roles', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('active', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('password_hash', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('last_login', 'text')
    .execute();

  await db.schema
    .createTable('groups')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('name_key', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('group_members')
    .addColumn('group_id', 'text', (c) => c.notNull().references('groups.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('group_members_pk', ['group_id', 'user_id'])
    .execute();
  await db.schema.createIndex('group_members_user').on('group_members').column('user_id').execute();

  await db.schema
    .createTable('user_identities')
    .addColumn('issuer', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('user_identities_pk', ['issuer', 'subject'])
    .execute();
  await db.schema.createIndex('user_identities_user').on('user_identities').column('user_id').execute();

  await db.schema
    .createTable('signing_keys')
    .addColumn('kid', 'text', (c) => c.primaryKey())
    .addColumn('alg', 'text', (c) => c.notNull())
    .addColumn('public_jwk', 'text', (c) => c.notNull())
    .addColumn('private_jwk', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('retired_at', 'text')
    .execute();

  await db.schema
    .createTable('refresh_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('session_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('used_at', 'text')
    .execute();
  await db.schema.createIndex('refresh_tokens_session').on('refresh_tokens').column('session_id').execute();
  await db.schema.createIndex('refresh_tokens_user').on('refresh_tokens').column('user_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['refresh_tokens', 'signing_keys', 'user_identities', 'group_members', 'groups', 'users']) {
    await db.schema.dropTable(table).execute();
  }
}
