import type { Kysely } from 'kysely';

/** Conversations with the agent and their messages. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('conversations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    // The authorization subject that owns it: user:<id> or service_principal:<id>.
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('message_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('prompt_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('completion_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('last_message_at', 'text')
    .execute();
  await db.schema.createIndex('conversations_owner').on('conversations').columns(['owner', 'updated_at']).execute();

  await db.schema
    .createTable('messages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('conversation_id', 'text', (c) => c.notNull().references('conversations.id').onDelete('cascade'))
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    // Lower-cased copy that searches match against on both dialects.
    .addColumn('content_key', 'text', (c) => c.notNull())
    .addColumn('tool_calls', 'text')
    .addColumn('tool_call_id', 'text')
    .addColumn('name', 'text')
    .addColumn('prompt_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('completion_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('messages_conversation_seq', ['conversation_id', 'seq'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('messages').execute();
  await db.schema.dropTable('conversations').execute();
}
