import type { Kysely } from 'kysely';

/**
 * MCP tasks (the 2026-07-28 Tasks extension): a long tool call a client polls for, answers questions of and
 * cancels, from any instance and across restarts. Each belongs to the subject that started it and expires.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('mcp_tasks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('tool', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('status_message', 'text')
    // JSON: the questions of an `input_required` task, by key.
    .addColumn('input_requests', 'text')
    // JSON: the tool result of a completed task, or the error of a failed one.
    .addColumn('result', 'text')
    .addColumn('error', 'text')
    // The workflow run a waiting task answers into.
    .addColumn('workflow_id', 'text')
    .addColumn('run_id', 'text')
    // The instance running it, and until when its claim holds unless renewed.
    .addColumn('runner', 'text')
    .addColumn('lease_until', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('mcp_tasks_owner').on('mcp_tasks').columns(['owner', 'created_at']).execute();
  await db.schema.createIndex('mcp_tasks_expires').on('mcp_tasks').column('expires_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('mcp_tasks').ifExists().execute();
}
