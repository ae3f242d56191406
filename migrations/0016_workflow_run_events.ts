import type { Kysely } from 'kysely';

/**
 * What each workflow run showed as it went (node starts and ends, streamed text, tool calls and results, its
 * question, its end), in order, so that a run can be watched from another request (an MCP App view polls it) and
 * reopened later with everything it showed live. Streamed text is kept in pieces of a node's consecutive tokens.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('workflow_run_events')
    .addColumn('run_id', 'text', (c) => c.notNull().references('workflow_runs.id').onDelete('cascade'))
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('at', 'text', (c) => c.notNull())
    // JSON: the event as the run stream sends it.
    .addColumn('event', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('workflow_run_events_pk', ['run_id', 'seq'])
    .execute();
  // A view looks for the caller's newest run of a workflow before its tool result names the run.
  await db.schema
    .createIndex('workflow_runs_started_by')
    .on('workflow_runs')
    .columns(['started_by', 'workflow_id', 'created_at'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('workflow_runs_started_by').ifExists().execute();
  await db.schema.dropTable('workflow_run_events').ifExists().execute();
}
