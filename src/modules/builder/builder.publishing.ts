import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Kysely } from 'kysely';
import type { AuthzService } from '../../adapters/authz/port.js';
import type { Database } from '../../db/database.js';
import type { PublishedChange, PublishedWorkflow, PublishedWorkflows } from '../../mcp/published.js';
import type { Caller } from '../../ports/caller.js';
import { subjectOf } from '../../ports/subjects.js';
import type { Workflow } from '../../../workflows/schema.js';
import type { z } from 'zod';
import type { Run } from './builder.schemas.js';

type RunView = z.output<typeof Run>;
/** Runs a workflow to its end or its first question (the run service, built after the catalog). */
type RunToEnd = (caller: Caller, workflowId: string, input: string, signal: AbortSignal) => Promise<RunView>;

/** The tool name a published workflow gets: readable, and unique by a piece of its id. */
export function toolNameFor(workflowId: string, name: string): string {
  const slug = name
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 40);
  return `workflow_${slug ? `${slug}_` : ''}${workflowId.replace(/-/g, '').slice(0, 8)}`;
}

/** How a published workflow is described to MCP clients. */
export function publishedEntry(workflowId: string, toolName: string, workflow: Workflow): PublishedWorkflow {
  return {
    workflowId,
    toolName,
    title: workflow.name,
    description:
      (workflow.description ? `${workflow.description} ` : '') +
      `Runs the workflow "${workflow.name}" on the input; a human step's question is answered with workflow_resume.`,
  };
}

/** A run as a tool result: the answer when it ended, the question when it waits, the error when it failed. */
export function runToolResult(run: RunView): CallToolResult {
  const structuredContent = { ...run };
  if (run.status === 'waiting')
    return {
      content: [
        {
          type: 'text',
          text:
            `The workflow is waiting at "${run.waiting_node}": ${run.question} ` +
            `Answer with workflow_resume (workflow_id ${run.workflow_id}, run_id ${run.run_id}).`,
        },
      ],
      structuredContent,
      isError: false,
    };
  if (run.status === 'completed')
    return { content: [{ type: 'text', text: run.output ?? '' }], structuredContent, isError: false };
  return {
    content: [{ type: 'text', text: `The run ${run.status}: ${run.error ?? 'no reason given'}` }],
    structuredContent,
    isError: true,
  };
}

/**
 * The published workflows of this instance, kept in memory (loaded at start, changed by publish, unpublish, save
 * and delete) so that every MCP server can offer them without a query; changes are told to the servers.
 */
export class PublishedCatalog implements PublishedWorkflows {
  readonly #entries = new Map<string, PublishedWorkflow>();
  readonly #listeners = new Set<(change: PublishedChange) => void>();
  #run: RunToEnd | undefined;

  constructor(private readonly deps: { db: Kysely<Database>; authz: AuthzService }) {}

  /** How the tools run a workflow (the run service is built after the catalog). */
  bind(run: RunToEnd): void {
    this.#run = run;
  }

  async load(definitionOf: (id: string, version: number) => Promise<Workflow>): Promise<void> {
    const rows = await this.deps.db
      .selectFrom('workflows')
      .select(['id', 'tool_name', 'current_version'])
      .where('tool_name', 'is not', null)
      .execute();
    for (const row of rows)
      this.put(publishedEntry(row.id, row.tool_name!, await definitionOf(row.id, row.current_version)));
  }

  put(entry: PublishedWorkflow): void {
    this.#entries.set(entry.workflowId, entry);
    this.#tell({ kind: 'published', workflow: entry });
  }

  remove(workflowId: string): void {
    const entry = this.#entries.get(workflowId);
    if (!entry) return;
    this.#entries.delete(workflowId);
    this.#tell({ kind: 'unpublished', toolName: entry.toolName });
  }

  list(): PublishedWorkflow[] {
    return [...this.#entries.values()];
  }

  async runnableBy(caller: Caller): Promise<ReadonlySet<string>> {
    if (this.#entries.size === 0) return new Set();
    const objects = await this.deps.authz.listObjects(subjectOf(caller), 'executor', 'workflow');
    return new Set(objects.map((object) => object.slice('workflow:'.length)));
  }

  async run(caller: Caller, workflowId: string, input: string, signal: AbortSignal): Promise<CallToolResult> {
    return runToolResult(await this.#run!(caller, workflowId, input, signal));
  }

  subscribe(listener: (change: PublishedChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #tell(change: PublishedChange): void {
    for (const listener of this.#listeners) listener(change);
  }
}
