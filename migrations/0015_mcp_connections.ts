import type { Kysely } from 'kysely';

/**
 * Connected MCP servers: the service as an MCP client of other servers. A connection is shared (an
 * administrator's, `owner_id` null) or personal; its static secret and each user's OAuth tokens are sealed with the
 * key-encryption key. The tool definitions approved for a connection are pinned, so that a changed definition is
 * held until someone approves it. OAuth sign-ins in progress are kept here so that any instance takes the return.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('mcp_connections')
    .addColumn('id', 'text', (c) => c.primaryKey())
    // '' for a shared connection: the unique slug index then covers shared and personal alike.
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('slug', 'text', (c) => c.notNull())
    .addColumn('transport', 'text', (c) => c.notNull())
    .addColumn('url', 'text')
    .addColumn('command', 'text')
    .addColumn('auth_kind', 'text', (c) => c.notNull())
    .addColumn('header_name', 'text')
    .addColumn('secret', 'text')
    .addColumn('scopes', 'text')
    // JSON, sealed: the client this service registered at the upstream's authorization server.
    .addColumn('oauth_client', 'text')
    .addColumn('gateway', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('approval', 'text', (c) => c.notNull())
    // When the first listing of its tools was pinned (null: not yet).
    .addColumn('pinned_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('mcp_connections_owner_slug')
    .on('mcp_connections')
    .columns(['owner_id', 'slug'])
    .unique()
    .execute();

  await db.schema
    .createTable('mcp_connection_accounts')
    .addColumn('connection_id', 'text', (c) => c.notNull().references('mcp_connections.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull())
    // JSON, sealed: access token, refresh token, scope.
    .addColumn('tokens', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text')
    .addColumn('connected_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('mcp_connection_accounts_pk', ['connection_id', 'user_id'])
    .execute();
  await db.schema.createIndex('mcp_connection_accounts_user').on('mcp_connection_accounts').column('user_id').execute();

  await db.schema
    .createTable('mcp_connection_tools')
    .addColumn('connection_id', 'text', (c) => c.notNull().references('mcp_connections.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    // JSON: the approved definition (description, schemas, annotations) and its digest; null until approved.
    .addColumn('definition', 'text')
    .addColumn('digest', 'text')
    // JSON: a definition the upstream now shows that differs from the approved one, held until approved.
    .addColumn('pending', 'text')
    .addColumn('pending_digest', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('mcp_connection_tools_pk', ['connection_id', 'name'])
    .execute();

  await db.schema
    .createTable('mcp_connection_sign_ins')
    .addColumn('state', 'text', (c) => c.primaryKey())
    .addColumn('connection_id', 'text', (c) => c.notNull().references('mcp_connections.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull())
    // Sealed: the PKCE verifier.
    .addColumn('verifier', 'text', (c) => c.notNull())
    .addColumn('return_to', 'text')
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['mcp_connection_sign_ins', 'mcp_connection_tools', 'mcp_connection_accounts', 'mcp_connections'])
    await db.schema.dropTable(table).ifExists().execute();
}
