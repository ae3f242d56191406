import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Database } from '../../db/database.js';
import type {
  RunStatus,
  WorkflowRunEventsTable,
  WorkflowRunsTable,
  WorkflowVersionsTable,
  WorkflowsTable,
} from './builder.tables.js';

export type Executor = Kysely<Database> | Transaction<Database>;
export type WorkflowRow = Selectable<WorkflowsTable>;
export type VersionRow = Selectable<WorkflowVersionsTable>;
export type RunRow = Selectable<WorkflowRunsTable>;
export type RunEventRow = Selectable<WorkflowRunEventsTable>;
/** A run as every write on it names it: by its id and its workflow. */
export type RunKey = Pick<RunRow, 'id' | 'workflow_id'>;

/*
 * Who may reach a workflow is decided by relationship tuples (owner, editors, viewers, executors, groups), which no
 * statement can join, so the service admits a caller to a workflow first (`BuilderService.access`). What hangs off
 * a workflow — its versions, tags and runs — is then reached only through that workflow: every statement on them
 * names the workflow id, never a version or run id alone. Statements by `owner` are the user's erasure and export.
 */

/** A workflow by id; whether the caller may see it is the service's check (`access`), on the tuples. */
export function findWorkflow(db: Executor, id: string): Promise<WorkflowRow | undefined> {
  return db.selectFrom('workflows').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertWorkflow(db: Executor, row: WorkflowRow, version: VersionRow, tags: string[]) {
  await db.insertInto('workflows').values(row).execute();
  await db.insertInto('workflow_versions').values(version).execute();
  await replaceTags(db, row.id, tags);
}

/** Adds the next version and makes it current; false when `expected` is no longer the current version. */
export async function appendVersion(
  db: Executor,
  version: VersionRow,
  name: string,
  tags: string[],
  expected: number,
): Promise<boolean> {
  const updated = await db
    .updateTable('workflows')
    .set({ current_version: version.version, name, updated_at: version.created_at })
    .where('id', '=', version.workflow_id)
    .where('current_version', '=', expected)
    .executeTakeFirst();
  if (Number(updated.numUpdatedRows) !== 1) return false;
  await db.insertInto('workflow_versions').values(version).execute();
  await replaceTags(db, version.workflow_id, tags);
  return true;
}

async function replaceTags(db: Executor, workflowId: string, tags: string[]): Promise<void> {
  await db.deleteFrom('workflow_tags').where('workflow_id', '=', workflowId).execute();
  if (tags.length > 0)
    await db
      .insertInto('workflow_tags')
      .values(tags.map((tag) => ({ workflow_id: workflowId, tag })))
      .execute();
}

export function findVersion(db: Executor, workflowId: string, version: number): Promise<VersionRow | undefined> {
  return db
    .selectFrom('workflow_versions')
    .selectAll()
    .where('workflow_id', '=', workflowId)
    .where('version', '=', version)
    .executeTakeFirst();
}

export function listVersions(db: Executor, workflowId: string): Promise<VersionRow[]> {
  return db
    .selectFrom('workflow_versions')
    .selectAll()
    .where('workflow_id', '=', workflowId)
    .orderBy('version', 'desc')
    .execute();
}

/** Workflows among `ids` (those the caller may see), most recently saved first, with their current definition. */
export async function listWorkflows(
  db: Executor,
  ids: string[],
  options: { limit: number; offset: number; tag?: string | undefined },
): Promise<{ rows: (WorkflowRow & { definition: string })[]; total: number }> {
  if (ids.length === 0) return { rows: [], total: 0 };
  let query = db
    .selectFrom('workflows as w')
    .innerJoin('workflow_versions as v', (join) =>
      join.onRef('v.workflow_id', '=', 'w.id').onRef('v.version', '=', 'w.current_version'),
    )
    .where('w.id', 'in', ids);
  if (options.tag !== undefined) {
    const tag = options.tag;
    query = query.where((eb) =>
      eb.exists(
        eb
          .selectFrom('workflow_tags as t')
          .select('t.tag')
          .whereRef('t.workflow_id', '=', 'w.id')
          .where('t.tag', '=', tag),
      ),
    );
  }
  const [rows, count] = await Promise.all([
    query
      .selectAll('w')
      .select('v.definition')
      .orderBy('w.updated_at', 'desc')
      .orderBy('w.id')
      .limit(options.limit)
      .offset(options.offset)
      .execute(),
    query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

/**
 * Deletes the workflow's row first, so that a deletion locks the row before its versions and tags, in the order a
 * save (appendVersion) does: the other way round, a save holding the row and a deletion holding its tags would wait
 * on each other (a deadlock on PostgreSQL). The foreign keys cascade to the rest; the deletes after are for a
 * database that does not enforce them.
 */
export async function deleteWorkflow(db: Executor, id: string): Promise<void> {
  // Keyed by workflow alone by design: the service deletes only a workflow `access` admitted as owner.
  await db.deleteFrom('workflows').where('id', '=', id).execute();
  await db
    .deleteFrom('workflow_run_events')
    .where('run_id', 'in', db.selectFrom('workflow_runs').select('id').where('workflow_id', '=', id))
    .execute();
  await db.deleteFrom('workflow_runs').where('workflow_id', '=', id).execute();
  await db.deleteFrom('workflow_versions').where('workflow_id', '=', id).execute();
  await db.deleteFrom('workflow_tags').where('workflow_id', '=', id).execute();
}

/** Publishes the workflow under `toolName`, or withdraws it (null): a workflow `access` admitted as editor. */
export async function setToolName(db: Executor, id: string, toolName: string | null): Promise<void> {
  await db.updateTable('workflows').set({ tool_name: toolName }).where('id', '=', id).execute();
}

/** The workflows the user created (their erasure and export). */
export function workflowIdsOwnedBy(db: Executor, owner: string): Promise<string[]> {
  return db
    .selectFrom('workflows')
    .select('id')
    .where('owner', '=', owner)
    .execute()
    .then((rows) => rows.map((r) => r.id));
}

export function runIdsOf(db: Executor, workflowId: string): Promise<string[]> {
  return db
    .selectFrom('workflow_runs')
    .select('id')
    .where('workflow_id', '=', workflowId)
    .execute()
    .then((rows) => rows.map((r) => r.id));
}

export async function insertRun(db: Executor, row: RunRow): Promise<void> {
  await db.insertInto('workflow_runs').values(row).execute();
}

export function findRun(db: Executor, workflowId: string, runId: string): Promise<RunRow | undefined> {
  return db
    .selectFrom('workflow_runs')
    .selectAll()
    .where('id', '=', runId)
    .where('workflow_id', '=', workflowId)
    .executeTakeFirst();
}

export function listRuns(db: Executor, workflowId: string, limit: number): Promise<RunRow[]> {
  return db
    .selectFrom('workflow_runs')
    .selectAll()
    .where('workflow_id', '=', workflowId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** Changes a run of the workflow. */
export async function updateRun(
  db: Executor,
  run: RunKey,
  changes: Partial<Omit<RunRow, 'id' | 'workflow_id' | 'version' | 'started_by' | 'created_at'>>,
): Promise<void> {
  await db
    .updateTable('workflow_runs')
    .set(changes)
    .where('id', '=', run.id)
    .where('workflow_id', '=', run.workflow_id)
    .execute();
}

/**
 * Moves a run of the workflow from one status to another, only if it is still in the first (and, given
 * `startedBy`, only a run they started): false when someone else got there (or it is no such run).
 */
export async function claimRun(
  db: Executor,
  run: RunKey,
  from: RunStatus,
  to: RunStatus,
  at: string,
  startedBy?: string,
): Promise<boolean> {
  let claim = db
    .updateTable('workflow_runs')
    .set({ status: to, updated_at: at })
    .where('id', '=', run.id)
    .where('workflow_id', '=', run.workflow_id)
    .where('status', '=', from);
  if (startedBy !== undefined) claim = claim.where('started_by', '=', startedBy);
  const result = await claim.executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** The newest run of the workflow that the subject started: a run view's guess before the tool result names it. */
export function newestRunStartedBy(
  db: Executor,
  startedBy: string,
  workflowId: string,
  since: string,
): Promise<RunRow | undefined> {
  return db
    .selectFrom('workflow_runs')
    .selectAll()
    .where('started_by', '=', startedBy)
    .where('workflow_id', '=', workflowId)
    .where('created_at', '>=', since)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** A run of the workflow that the subject started (a run view reaches only its caller's own runs). */
export function findRunStartedBy(
  db: Executor,
  startedBy: string,
  workflowId: string,
  runId: string,
): Promise<RunRow | undefined> {
  return db
    .selectFrom('workflow_runs')
    .selectAll()
    .where('id', '=', runId)
    .where('workflow_id', '=', workflowId)
    .where('started_by', '=', startedBy)
    .executeTakeFirst();
}

/** The last place taken in a run's events (0 for none): a resume numbers its events on from there. */
export async function lastEventSeq(db: Executor, run: RunKey): Promise<number> {
  const row = await db
    .selectFrom('workflow_run_events')
    .select((eb) => eb.fn.max('seq').as('seq'))
    .where('run_id', '=', run.id)
    .where('run_id', 'in', db.selectFrom('workflow_runs').select('id').where('workflow_id', '=', run.workflow_id))
    .executeTakeFirst();
  return Number(row?.seq ?? 0);
}

export async function insertRunEvents(db: Executor, rows: RunEventRow[]): Promise<void> {
  if (rows.length > 0) await db.insertInto('workflow_run_events').values(rows).execute();
}

/**
 * A run's events after `after`, in order: the run reached through its workflow, and, for a caller who may see only
 * the runs they started (a run view), through them too.
 */
export function runEventsAfter(
  db: Executor,
  run: RunKey & { started_by?: string },
  after: number,
  limit: number,
): Promise<RunEventRow[]> {
  let runs = db.selectFrom('workflow_runs').select('id').where('id', '=', run.id);
  runs = runs.where('workflow_id', '=', run.workflow_id);
  if (run.started_by !== undefined) runs = runs.where('started_by', '=', run.started_by);
  return db
    .selectFrom('workflow_run_events')
    .selectAll()
    .where('run_id', '=', run.id)
    .where('run_id', 'in', runs)
    .where('seq', '>', after)
    .orderBy('seq')
    .limit(limit)
    .execute();
}

/** Erasure: the events of the runs the subject started (on anyone's workflow: their inputs and answers). */
export async function deleteRunEventsStartedBy(db: Executor, startedBy: string): Promise<number> {
  const result = await db
    .deleteFrom('workflow_run_events')
    .where('run_id', 'in', db.selectFrom('workflow_runs').select('id').where('started_by', '=', startedBy))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
