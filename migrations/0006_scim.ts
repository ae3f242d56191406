import type { Kysely } from 'kysely';

/**
 * SCIM 2.0 provisioning (RFC 7643/7644). SCIM users are the local users of `users` and SCIM groups the groups of
 * `groups`; these tables hold what SCIM says about them beyond the columns those tables already have. Every row
 * goes with its user or group (ON DELETE CASCADE), so erasure and group deletion need not know about SCIM.
 *
 * Comparisons SCIM defines as case-insensitive (`caseExact: false`) and that filters must answer from an index
 * use lower-cased `*_key` columns written by the application (the same folding on SQLite and PostgreSQL).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // One row per user that SCIM has written: the User attributes `users` has no column for. The primary email
  // stays in users.email (it is the login email); its SCIM type, display and primary flag live here.
  await db.schema
    .createTable('scim_users')
    .addColumn('user_id', 'text', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    .addColumn('external_id', 'text')
    .addColumn('display_name', 'text')
    .addColumn('nick_name', 'text')
    .addColumn('profile_url', 'text')
    .addColumn('title', 'text')
    .addColumn('user_type', 'text')
    .addColumn('preferred_language', 'text')
    .addColumn('locale', 'text')
    .addColumn('timezone', 'text')
    .addColumn('given_name', 'text')
    .addColumn('family_name', 'text')
    .addColumn('middle_name', 'text')
    .addColumn('honorific_prefix', 'text')
    .addColumn('honorific_suffix', 'text')
    .addColumn('email_type', 'text')
    .addColumn('email_display', 'text')
    // null when the client did not say; 0/1 when it did (SCIM keeps "primary": false distinct from absent).
    .addColumn('email_primary', 'integer')
    .addColumn('employee_number', 'text')
    .addColumn('cost_center', 'text')
    .addColumn('organization', 'text')
    .addColumn('division', 'text')
    .addColumn('department', 'text')
    // Not a foreign key: identity providers may name a manager they provision later.
    .addColumn('manager_id', 'text')
    .execute();
  await db.schema.createIndex('scim_users_external_id').on('scim_users').column('external_id').execute();

  // The multi-valued User attributes of the value/display/type/primary shape (emails beyond the primary one,
  // phoneNumbers, ims, photos, entitlements, roles, x509Certificates): filters reach into them with
  // `id IN (SELECT user_id …)`, served by the (attribute, value_key) index.
  await db.schema
    .createTable('scim_user_values')
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('attribute', 'text', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('value_key', 'text', (c) => c.notNull())
    .addColumn('display', 'text')
    .addColumn('type', 'text')
    .addColumn('primary_flag', 'integer')
    .addPrimaryKeyConstraint('scim_user_values_pk', ['user_id', 'attribute', 'position'])
    .execute();
  await db.schema
    .createIndex('scim_user_values_lookup')
    .on('scim_user_values')
    .columns(['attribute', 'value_key'])
    .execute();

  await db.schema
    .createTable('scim_user_addresses')
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('formatted', 'text')
    .addColumn('street_address', 'text')
    .addColumn('locality', 'text')
    .addColumn('region', 'text')
    .addColumn('postal_code', 'text')
    .addColumn('country', 'text')
    .addColumn('type', 'text')
    .addColumn('primary_flag', 'integer')
    .addPrimaryKeyConstraint('scim_user_addresses_pk', ['user_id', 'position'])
    .execute();

  // A group with a row here is managed by SCIM: its displayName is kept as the client sent it (groups.name is
  // the path-like name derived from it), and single sign-on claims no longer change its members.
  await db.schema
    .createTable('scim_groups')
    .addColumn('group_id', 'text', (c) => c.primaryKey().references('groups.id').onDelete('cascade'))
    .addColumn('display_name', 'text', (c) => c.notNull())
    .addColumn('display_name_key', 'text', (c) => c.notNull().unique())
    .addColumn('external_id', 'text')
    .execute();
  await db.schema.createIndex('scim_groups_external_id').on('scim_groups').column('external_id').execute();

  // The authorization tuples a deactivation removed that reactivation cannot derive from the database (role and
  // group tuples are rebuilt from users.roles and group_members instead), kept until the user is reactivated.
  // Ownership of service principals is not kept: their ids are slugs another owner may take meanwhile.
  await db.schema
    .createTable('scim_suspended_tuples')
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('relation', 'text', (c) => c.notNull())
    .addColumn('object', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('scim_suspended_tuples_pk', ['user_id', 'relation', 'object'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of [
    'scim_suspended_tuples',
    'scim_groups',
    'scim_user_addresses',
    'scim_user_values',
    'scim_users',
  ]) {
    await db.schema.dropTable(table).execute();
  }
}
