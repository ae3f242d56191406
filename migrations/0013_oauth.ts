import type { Kysely } from 'kysely';

/**
 * The MCP authorization server: registered clients, the grants users gave them, authorization codes and refresh
 * tokens. Secrets (codes, refresh tokens, client secrets) are stored as SHA-256 hashes only.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('oauth_clients')
    .addColumn('client_id', 'text', (c) => c.primaryKey())
    // The registration as the client sent it (RFC 7591 metadata), JSON.
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('secret_hash', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('oauth_clients_created').on('oauth_clients').column('created_at').execute();

  // One per approved authorization: the family of every token issued through it. Deleting it ends them all.
  await db.schema
    .createTable('oauth_grants')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('client_id', 'text', (c) => c.notNull().references('oauth_clients.client_id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('resource', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_used_at', 'text')
    .execute();
  await db.schema.createIndex('oauth_grants_user').on('oauth_grants').columns(['user_id', 'created_at']).execute();
  await db.schema.createIndex('oauth_grants_client').on('oauth_grants').column('client_id').execute();

  await db.schema
    .createTable('oauth_codes')
    .addColumn('code_hash', 'text', (c) => c.primaryKey())
    .addColumn('grant_id', 'text', (c) => c.notNull().references('oauth_grants.id').onDelete('cascade'))
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('redirect_uri', 'text', (c) => c.notNull())
    .addColumn('code_challenge', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    // Set when exchanged: a second exchange is an attack, and ends the grant.
    .addColumn('used_at', 'text')
    .execute();

  await db.schema
    .createTable('oauth_refresh_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('grant_id', 'text', (c) => c.notNull().references('oauth_grants.id').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    // Set when rotated: presenting it again is reuse, and ends the grant.
    .addColumn('used_at', 'text')
    .execute();
  await db.schema.createIndex('oauth_refresh_tokens_grant').on('oauth_refresh_tokens').column('grant_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['oauth_refresh_tokens', 'oauth_codes', 'oauth_grants', 'oauth_clients'])
    await db.schema.dropTable(table).ifExists().execute();
}
