import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { z } from 'zod';
import type { AuthzService } from '../../adapters/authz/port.js';
import type { Database } from '../../db/database.js';
import type { Caller } from '../../ports/caller.js';
import type { ExportedWorkflow } from '../../ports/data-export.js';
import { subjectOf } from '../../ports/subjects.js';
import type { GeneratedCode } from '../../../workflows/codegen/index.js';
import { type WorkflowDiff, diffWorkflows } from '../../../workflows/diff.js';
import { type Workflow, type WorkflowDefinitionInput, normalizeWorkflow } from '../../../workflows/schema.js';
import { type ValidationReport, validateWorkflow } from '../../../workflows/validate.js';
import { invalidWorkflow, versionConflict, versionNotFound, workflowNotFound } from './builder.errors.js';
import type { ResourceEntry, ResourceLister, WorkflowTools } from './builder.ports.js';
import { type PublishedCatalog, publishedEntry, toolNameFor } from './builder.publishing.js';
import type * as schemas from './builder.schemas.js';
import {
  type Executor,
  type VersionRow,
  type WorkflowRow,
  appendVersion,
  deleteWorkflow,
  findVersion,
  findWorkflow,
  insertWorkflow,
  listVersions,
  listWorkflows,
  runIdsOf,
  setToolName,
  workflowIdsOwnedBy,
} from './builder.store.js';
import type { VersionSource } from './builder.tables.js';

export type WorkflowView = z.output<typeof schemas.Workflow>;
export type WorkflowSummaryView = z.output<typeof schemas.WorkflowSummary>;
export type VersionSummaryView = z.output<typeof schemas.VersionSummary>;
export type VersionView = z.output<typeof schemas.VersionDetail>;
type DefinitionInput = z.output<typeof WorkflowDefinitionInput>;

/** What a caller may do with a workflow, as relations of the authorization model's `workflow` type. */
export type WorkflowRelation = 'viewer' | 'editor' | 'executor' | 'owner';

export interface BuilderDeps {
  db: Kysely<Database>;
  authz: AuthzService;
  tools: WorkflowTools;
  resources: ResourceLister;
  now: () => Date;
  /** Forgets a run's checkpoints (when its workflow is deleted or its owner erased). */
  deleteThread: (threadId: string) => Promise<void>;
  /** The workflows published as MCP tools. */
  catalog: PublishedCatalog;
}

export const workflowObject = (id: string): string => `workflow:${id}`;
/** The checkpoint thread of a run. */
export const runThread = (runId: string): string => `workflow_run:${runId}`;

/**
 * Workflows and their versions. Every save is a new version and none is ever rewritten: a rollback saves the chosen
 * version's content as the next one. Access goes through authorization tuples on `workflow:<id>` (the creator is
 * `owner`); a workflow the caller may not see is as missing as one that never existed.
 */
export class BuilderService {
  constructor(private readonly deps: BuilderDeps) {}

  /** The validation report of a definition, with the tools checked against what the caller may call. */
  async validate(caller: Caller, workflow: Workflow): Promise<ValidationReport> {
    return validateWorkflow(workflow, { tools: await this.deps.tools.catalog(caller) });
  }

  async create(caller: Caller, input: DefinitionInput): Promise<WorkflowView> {
    const workflow = await this.#valid(caller, input);
    const subject = subjectOf(caller);
    const at = this.deps.now().toISOString();
    const row: WorkflowRow = {
      id: randomUUID(),
      owner: subject,
      name: workflow.name,
      current_version: 1,
      tool_name: null,
      created_at: at,
      updated_at: at,
    };
    const version = versionRow(row.id, 1, workflow, 'create', null, subject, at);
    await this.deps.db.transaction().execute((trx) => insertWorkflow(trx, row, version, workflow.tags));
    await this.deps.authz.write([{ user: subject, relation: 'owner', object: workflowObject(row.id) }]);
    return view(row, workflow);
  }

  async list(
    caller: Caller,
    query: { limit: number; offset: number; tag?: string | undefined },
  ): Promise<{ items: WorkflowSummaryView[]; total: number }> {
    const visible = await this.deps.authz.listObjects(subjectOf(caller), 'viewer', 'workflow');
    const ids = visible.map((object) => object.slice('workflow:'.length));
    const { rows, total } = await listWorkflows(this.deps.db, ids, query);
    const items = rows.map(({ definition, ...row }) => {
      const { nodes, edges, ...rest } = view(row, parseDefinition(definition));
      return { ...rest, node_count: nodes.length, edge_count: edges.length };
    });
    return { items, total };
  }

  async get(caller: Caller, id: string): Promise<WorkflowView> {
    const row = await this.access(caller, id, 'viewer');
    return view(row, await this.#definition(row.id, row.current_version));
  }

  /**
   * Saves a new version. With `basedOn` (the body's `version` or If-Match), a workflow saved by someone else since
   * is a 409; without, the update applies to whatever is current (last write wins).
   */
  async update(caller: Caller, id: string, input: DefinitionInput, basedOn?: number): Promise<WorkflowView> {
    const row = await this.access(caller, id, 'editor');
    const workflow = await this.#valid(caller, input);
    return this.#save(caller, row, workflow, 'update', null, basedOn);
  }

  async remove(caller: Caller, id: string): Promise<void> {
    const row = await this.access(caller, id, 'owner');
    await this.#forget([row.id]);
  }

  async versions(caller: Caller, id: string): Promise<VersionSummaryView[]> {
    const row = await this.access(caller, id, 'viewer');
    return (await listVersions(this.deps.db, row.id)).map(versionSummary);
  }

  async version(caller: Caller, id: string, version: number): Promise<VersionView> {
    const row = await this.access(caller, id, 'viewer');
    const found = await findVersion(this.deps.db, row.id, version);
    if (!found) throw versionNotFound(id, version);
    return { ...versionSummary(found), workflow: parseDefinition(found.definition) };
  }

  /** The chosen version's content becomes a new current version; the history stays as it was. */
  async rollback(caller: Caller, id: string, version: number): Promise<WorkflowView> {
    const row = await this.access(caller, id, 'editor');
    const found = await findVersion(this.deps.db, row.id, version);
    if (!found) throw versionNotFound(id, version);
    return this.#save(caller, row, parseDefinition(found.definition), 'rollback', version);
  }

  async diff(
    caller: Caller,
    id: string,
    from: number,
    to?: number,
  ): Promise<WorkflowDiff & { from: number; to: number }> {
    const row = await this.access(caller, id, 'viewer');
    const target = to ?? row.current_version;
    const [before, after] = await Promise.all([this.#definition(row.id, from), this.#definition(row.id, target)]);
    return { from, to: target, ...diffWorkflows(before, after) };
  }

  /**
   * Source code for the workflow; an invalid one has none (400 with the report). The code calls the tools of
   * connected MCP servers through an MCP client, so it is told which of the caller's tools those are and where their
   * servers are served (`ToolSpec.server`); credentials are not part of a listing, and never reach the code.
   */
  async generate(
    caller: Caller,
    input: DefinitionInput,
    options: { language: 'python' | 'typescript'; name?: string },
  ): Promise<GeneratedCode> {
    const workflow = await this.#valid(caller, input);
    const tools = await this.deps.tools.list(caller);
    // The code generators are loaded with the first download: the service need not hold them until then.
    const { generateCode } = await import('../../../workflows/codegen/index.js');
    return generateCode(workflow, { language: options.language, name: options.name ?? workflow.name, tools });
  }

  tools(caller: Caller) {
    return this.deps.tools.list(caller);
  }

  resources(caller: Caller): Promise<ResourceEntry[]> {
    return this.deps.resources(caller);
  }

  /** The workflow if the caller holds `relation` on it; otherwise 404, as if it did not exist. */
  async access(caller: Caller, id: string, relation: WorkflowRelation): Promise<WorkflowRow> {
    const row = await findWorkflow(this.deps.db, id);
    if (!row || !(await this.deps.authz.check(subjectOf(caller), relation, workflowObject(id))))
      throw workflowNotFound(id);
    return row;
  }

  /** A version's content (runs compile the version they started on). */
  async definitionOf(workflowId: string, version: number): Promise<Workflow> {
    return this.#definition(workflowId, version);
  }

  /** Erasure, outside the database transaction: the checkpoints of every run of the workflows the user created. */
  async eraseCheckpointsOf(owner: string): Promise<number> {
    let count = 0;
    for (const id of await workflowIdsOwnedBy(this.deps.db, owner))
      for (const runId of await runIdsOf(this.deps.db, id)) {
        await this.deps.deleteThread(runThread(runId));
        count++;
      }
    return count;
  }

  /** Erasure, outside the database transaction: the authorization tuples on the workflows the user created. */
  async eraseTuplesOf(owner: string): Promise<number> {
    let count = 0;
    for (const id of await workflowIdsOwnedBy(this.deps.db, owner))
      count += await this.deps.authz.removeAllFor(workflowObject(id));
    return count;
  }

  /** Erasure, inside its transaction: the workflows the user created, with their versions and runs. */
  async eraseRowsOf(db: Executor, owner: string): Promise<number> {
    const ids = await workflowIdsOwnedBy(db, owner);
    for (const id of ids) {
      await deleteWorkflow(db, id);
      this.deps.catalog.remove(id);
    }
    return ids.length;
  }

  /** Offers the workflow to MCP clients as a tool of its own (to those who may run it). */
  async publish(caller: Caller, id: string): Promise<{ published: true; tool_name: string }> {
    const row = await this.access(caller, id, 'editor');
    const toolName = row.tool_name ?? toolNameFor(row.id, row.name);
    if (row.tool_name === null) await setToolName(this.deps.db, row.id, toolName);
    this.deps.catalog.put(publishedEntry(row.id, toolName, await this.#definition(row.id, row.current_version)));
    return { published: true, tool_name: toolName };
  }

  async unpublish(caller: Caller, id: string): Promise<void> {
    const row = await this.access(caller, id, 'editor');
    await setToolName(this.deps.db, row.id, null);
    this.deps.catalog.remove(row.id);
  }

  /** Export: the user's workflows with their current definition and how many versions each has. */
  async exportOf(owner: string): Promise<ExportedWorkflow[]> {
    const out: ExportedWorkflow[] = [];
    for (const id of await workflowIdsOwnedBy(this.deps.db, owner)) {
      const row = await findWorkflow(this.deps.db, id);
      if (!row) continue;
      const versions = await listVersions(this.deps.db, id);
      const { workflow_id, name, version, created_at, updated_at, nodes, edges } = view(
        row,
        await this.#definition(id, row.current_version),
      );
      out.push({ workflow_id, name, version, version_count: versions.length, created_at, updated_at, nodes, edges });
    }
    return out;
  }

  async #forget(ids: string[]): Promise<void> {
    for (const id of ids) {
      this.deps.catalog.remove(id);
      for (const runId of await runIdsOf(this.deps.db, id)) await this.deps.deleteThread(runThread(runId));
      await this.deps.authz.removeAllFor(workflowObject(id));
      await this.deps.db.transaction().execute((trx) => deleteWorkflow(trx, id));
    }
  }

  async #valid(caller: Caller, input: DefinitionInput): Promise<Workflow> {
    const workflow = normalizeWorkflow(input);
    const report = await this.validate(caller, workflow);
    if (!report.valid) throw invalidWorkflow(report);
    return workflow;
  }

  async #save(
    caller: Caller,
    row: WorkflowRow,
    workflow: Workflow,
    source: VersionSource,
    restoredFrom: number | null,
    basedOn?: number,
  ): Promise<WorkflowView> {
    const at = this.deps.now().toISOString();
    const expected = basedOn ?? row.current_version;
    if (basedOn !== undefined && basedOn !== row.current_version) throw versionConflict(row.current_version);
    const next = expected + 1;
    const version = versionRow(row.id, next, workflow, source, restoredFrom, subjectOf(caller), at);
    const saved = await this.deps.db
      .transaction()
      .execute((trx) => appendVersion(trx, version, workflow.name, workflow.tags, expected));
    if (!saved) {
      const current = (await findWorkflow(this.deps.db, row.id))?.current_version;
      // Deleted since it was read: there is nothing left to save to, and no version to retry on.
      if (current === undefined) throw workflowNotFound(row.id);
      // Without a base version, last write wins: a concurrent save only moves the base.
      if (basedOn === undefined)
        return this.#save(caller, { ...row, current_version: current }, workflow, source, restoredFrom);
      throw versionConflict(current);
    }
    if (row.tool_name !== null) this.deps.catalog.put(publishedEntry(row.id, row.tool_name, workflow));
    return view({ ...row, name: workflow.name, current_version: next, updated_at: at }, workflow);
  }

  async #definition(workflowId: string, version: number): Promise<Workflow> {
    const found = await findVersion(this.deps.db, workflowId, version);
    if (!found) throw versionNotFound(workflowId, version);
    return parseDefinition(found.definition);
  }
}

function versionRow(
  workflowId: string,
  version: number,
  workflow: Workflow,
  source: VersionSource,
  restoredFrom: number | null,
  createdBy: string,
  at: string,
): VersionRow {
  return {
    workflow_id: workflowId,
    version,
    definition: JSON.stringify(workflow),
    source,
    restored_from: restoredFrom,
    created_by: createdBy,
    created_at: at,
  };
}

/** Stored definitions were normalized when saved. */
const parseDefinition = (json: string): Workflow => JSON.parse(json) as Workflow;

function view(row: WorkflowRow, workflow: Workflow): WorkflowView {
  return {
    workflow_id: row.id,
    ...workflow,
    version: row.current_version,
    published: row.tool_name !== null,
    tool_name: row.tool_name,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function versionSummary(row: VersionRow): VersionSummaryView {
  const workflow = parseDefinition(row.definition);
  return {
    version: row.version,
    created_at: row.created_at,
    source: row.source,
    restored_from: row.restored_from,
    name: workflow.name,
    node_count: workflow.nodes.length,
    edge_count: workflow.edges.length,
  };
}
