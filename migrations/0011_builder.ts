import type { Kysely } from 'kysely';

/** Workflows of the builder: each save a new version, never rewritten, and the runs of each version. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('workflows')
    .addColumn('id', 'text', (c) => c.primaryKey())
    // The authorization subject that created it (`user:<id>` or `service_principal:<id>`); access is by tuples.
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('current_version', 'integer', (c) => c.notNull())
    // The MCP tool name it is offered under while published (unique), or null.
    .addColumn('tool_name', 'text', (c) => c.unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('workflows_owner').on('workflows').columns(['owner', 'updated_at']).execute();

  // The current version's tags, for the list filter.
  await db.schema
    .createTable('workflow_tags')
    .addColumn('workflow_id', 'text', (c) => c.notNull().references('workflows.id').onDelete('cascade'))
    .addColumn('tag', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('workflow_tags_pk', ['workflow_id', 'tag'])
    .execute();
  await db.schema.createIndex('workflow_tags_tag').on('workflow_tags').columns(['tag']).execute();

  await db.schema
    .createTable('workflow_versions')
    .addColumn('workflow_id', 'text', (c) => c.notNull().references('workflows.id').onDelete('cascade'))
    .addColumn('version', 'integer', (c) => c.notNull())
    // JSON: the normalized workflow (name, description, tags, schema_version, nodes, edges).
    .addColumn('definition', 'text', (c) => c.notNull())
    // create | update | rollback
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('restored_from', 'integer')
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('workflow_versions_pk', ['workflow_id', 'version'])
    .execute();

  await db.schema
    .createTable('workflow_runs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workflow_id', 'text', (c) => c.notNull().references('workflows.id').onDelete('cascade'))
    .addColumn('version', 'integer', (c) => c.notNull())
    // Who started it: resuming and reading it is theirs.
    .addColumn('started_by', 'text', (c) => c.notNull())
    // running | waiting | completed | failed | cancelled
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('input', 'text', (c) => c.notNull())
    .addColumn('output', 'text')
    .addColumn('question', 'text')
    .addColumn('waiting_node', 'text')
    // JSON array of the node ids that ran, in order.
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('workflow_runs_workflow')
    .on('workflow_runs')
    .columns(['workflow_id', 'created_at'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('workflow_runs').execute();
  await db.schema.dropTable('workflow_versions').execute();
  await db.schema.dropTable('workflow_tags').execute();
  await db.schema.dropTable('workflows').execute();
}
