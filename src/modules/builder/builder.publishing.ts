import { randomUUID } from 'node:crypto';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Kysely } from 'kysely';
import type { AuthzService } from '../../adapters/authz/port.js';
import type { Broadcast } from '../../adapters/broadcast/port.js';
import type { Logger } from '../../logger.js';
import type { Database } from '../../db/database.js';
import type { PublishedChange, PublishedWorkflow, PublishedWorkflows } from '../../ports/published-workflows.js';
import type { Caller } from '../../ports/caller.js';
import { subjectOf } from '../../ports/subjects.js';
import type { Workflow } from '../../../workflows/schema.js';
import type { z } from 'zod';
import type { Run } from './builder.schemas.js';

type RunView = z.output<typeof Run>;
/** How the tools run workflows: to their end or their first question, answered, or stopped while waiting. */
interface PublishedRuns {
  run(caller: Caller, workflowId: string, input: string, signal: AbortSignal): Promise<RunView>;
  resume(caller: Caller, workflowId: string, runId: string, answer: string, signal: AbortSignal): Promise<RunView>;
  cancel(caller: Caller, workflowId: string, runId: string): Promise<unknown>;
}

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

/** Tells the other instances that a workflow's publication changed; each reads it again from the database. */
const CHANGED_CHANNEL = 'builder-published';

type DefinitionOf = (id: string, version: number) => Promise<Workflow>;

/**
 * The published workflows, kept in memory on every instance (loaded at start, changed by publish, unpublish, save
 * and delete) so that every MCP server can offer them without a query; changes are told to the servers, here and,
 * through the broadcast, on every other instance.
 */
export class PublishedCatalog implements PublishedWorkflows {
  readonly #entries = new Map<string, PublishedWorkflow>();
  readonly #listeners = new Set<(change: PublishedChange) => void>();
  /** This instance, in what it broadcasts: its own messages it has already applied. */
  readonly #origin = randomUUID();
  #runs: PublishedRuns | undefined;
  #definitionOf: DefinitionOf | undefined;
  #stopListening: (() => void) | undefined;

  constructor(
    private readonly deps: { db: Kysely<Database>; authz: AuthzService; broadcast?: Broadcast; logger?: Logger },
  ) {}

  /** How the tools run a workflow (the run service is built after the catalog). */
  bind(runs: PublishedRuns): void {
    this.#runs = runs;
  }

  async load(definitionOf: DefinitionOf): Promise<void> {
    this.#definitionOf = definitionOf;
    this.#stopListening = this.deps.broadcast?.subscribe(CHANGED_CHANNEL, (message) => {
      const { origin, workflowId } = JSON.parse(message) as { origin: string; workflowId: string };
      if (origin === this.#origin) return;
      this.#refresh(workflowId).catch((err: unknown) =>
        this.deps.logger?.warn({ err, workflow: workflowId }, 'published workflow not refreshed'),
      );
    });
    const rows = await this.deps.db
      .selectFrom('workflows')
      .select(['id', 'tool_name', 'current_version'])
      .where('tool_name', 'is not', null)
      .execute();
    for (const row of rows)
      this.#set(publishedEntry(row.id, row.tool_name!, await definitionOf(row.id, row.current_version)));
  }

  stop(): void {
    this.#stopListening?.();
  }

  /** Offers (or describes anew) a workflow, here and on every instance. */
  put(entry: PublishedWorkflow): void {
    this.#set(entry);
    this.#announce(entry.workflowId);
  }

  /** Withdraws a workflow, here and on every instance. */
  remove(workflowId: string): void {
    this.#delete(workflowId);
    this.#announce(workflowId);
  }

  #set(entry: PublishedWorkflow): void {
    this.#entries.set(entry.workflowId, entry);
    this.#tell({ kind: 'published', workflow: entry });
  }

  #delete(workflowId: string): void {
    const entry = this.#entries.get(workflowId);
    if (!entry) return;
    this.#entries.delete(workflowId);
    this.#tell({ kind: 'unpublished', toolName: entry.toolName });
  }

  #announce(workflowId: string): void {
    this.deps.broadcast
      ?.publish(CHANGED_CHANNEL, JSON.stringify({ origin: this.#origin, workflowId }))
      .catch((err: unknown) => this.deps.logger?.warn({ err, workflow: workflowId }, 'publication not broadcast'));
  }

  /** Reads a workflow's publication from the database after another instance changed it. */
  async #refresh(workflowId: string): Promise<void> {
    const row = await this.deps.db
      .selectFrom('workflows')
      .select(['id', 'tool_name', 'current_version'])
      .where('id', '=', workflowId)
      .executeTakeFirst();
    if (!row || row.tool_name === null || !this.#definitionOf) {
      this.#delete(workflowId);
      return;
    }
    this.#set(publishedEntry(row.id, row.tool_name, await this.#definitionOf(row.id, row.current_version)));
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
    return runToolResult(await this.#runs!.run(caller, workflowId, input, signal));
  }

  async resume(
    caller: Caller,
    workflowId: string,
    runId: string,
    answer: string,
    signal: AbortSignal,
  ): Promise<CallToolResult> {
    return runToolResult(await this.#runs!.resume(caller, workflowId, runId, answer, signal));
  }

  async cancel(caller: Caller, workflowId: string, runId: string): Promise<void> {
    await this.#runs!.cancel(caller, workflowId, runId);
  }

  subscribe(listener: (change: PublishedChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #tell(change: PublishedChange): void {
    for (const listener of this.#listeners) listener(change);
  }
}
