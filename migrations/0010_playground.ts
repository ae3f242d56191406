import type { Kysely } from 'kysely';

/** Playground sessions, their transcripts, and the spans and log records of their turns. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('playground_sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    // JSON object given by the client.
    .addColumn('metadata', 'text', (c) => c.notNull())
    // The agent conversation the session's turns continue (its checkpoints); set by the first turn.
    .addColumn('conversation_id', 'text')
    .addColumn('model', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('playground_sessions_user')
    .on('playground_sessions')
    .columns(['user_id', 'updated_at'])
    .execute();

  await db.schema
    .createTable('playground_messages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('session_id', 'text', (c) => c.notNull().references('playground_sessions.id').onDelete('cascade'))
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    // JSON array of {id, name, args, result, is_error} (assistant messages).
    .addColumn('tool_calls', 'text', (c) => c.notNull())
    .addColumn('tool_call_count', 'integer', (c) => c.notNull().defaultTo(0))
    // 0/1: the turn was stopped (the client left, or cancelled) before it finished; the content is what came.
    .addColumn('cancelled', 'integer', (c) => c.notNull().defaultTo(0))
    // The code of the error that ended the turn, if one did.
    .addColumn('error', 'text')
    .addColumn('prompt_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('completion_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('latency_ms', 'integer')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('playground_messages_session_seq', ['session_id', 'seq'])
    .execute();

  await db.schema
    .createTable('playground_spans')
    .addColumn('span_id', 'text', (c) => c.primaryKey())
    .addColumn('trace_id', 'text', (c) => c.notNull())
    .addColumn('parent_span_id', 'text')
    .addColumn('session_id', 'text', (c) => c.notNull().references('playground_sessions.id').onDelete('cascade'))
    .addColumn('operation', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    // JSON object of the span's attributes.
    .addColumn('attributes', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('playground_spans_session')
    .on('playground_spans')
    .columns(['session_id', 'started_at'])
    .execute();

  await db.schema
    .createTable('playground_logs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('session_id', 'text', (c) => c.notNull().references('playground_sessions.id').onDelete('cascade'))
    // 10 DEBUG, 20 INFO, 30 WARN, 40 ERROR: filtered by minimum level.
    .addColumn('level', 'integer', (c) => c.notNull())
    .addColumn('message', 'text', (c) => c.notNull())
    .addColumn('attributes', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('playground_logs_session').on('playground_logs').columns(['session_id', 'seq']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('playground_logs').execute();
  await db.schema.dropTable('playground_spans').execute();
  await db.schema.dropTable('playground_messages').execute();
  await db.schema.dropTable('playground_sessions').execute();
}
