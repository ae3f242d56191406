import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Caller } from './caller.js';

/** A workflow offered as an MCP tool of its own. */
export interface PublishedWorkflow {
  workflowId: string;
  toolName: string;
  title: string;
  description: string;
}

export type PublishedChange =
  { kind: 'published'; workflow: PublishedWorkflow } | { kind: 'unpublished'; toolName: string };

/**
 * The builder's published workflows, as the MCP core needs them: what is published now, who may run which, and a
 * run as a tool result. Changes are heard so that every open server offers a workflow from the moment it is
 * published, and no longer once it is not.
 */
export interface PublishedWorkflows {
  list(): PublishedWorkflow[];
  /** The ids of the workflows the caller may run. */
  runnableBy(caller: Caller): Promise<ReadonlySet<string>>;
  run(caller: Caller, workflowId: string, input: string, signal: AbortSignal): Promise<CallToolResult>;
  /** Answers the question a waiting run asks, and runs it on to its end or its next question. */
  resume(
    caller: Caller,
    workflowId: string,
    runId: string,
    answer: string,
    signal: AbortSignal,
  ): Promise<CallToolResult>;
  /** Stops a waiting run for good (its question will not be answered). */
  cancel(caller: Caller, workflowId: string, runId: string): Promise<void>;
  subscribe(listener: (change: PublishedChange) => void): () => void;
}
