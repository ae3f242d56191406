import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { Caller } from '../ports/caller.js';
import type { PublishedWorkflow, PublishedWorkflows } from '../ports/published-workflows.js';
import { RUN_VIEW_URI, WORKFLOW_ID_META_KEY } from './apps.js';

/** A run that stopped at a human node, as a workflow tool's result shows it. */
export interface WaitingRun {
  workflowId: string;
  runId: string;
  question: string;
}

/** The run a workflow tool's result is waiting in, if it stopped at a question. */
export function waitingRun(result: { structuredContent?: unknown }): WaitingRun | undefined {
  const run = result.structuredContent as
    { status?: unknown; workflow_id?: unknown; run_id?: unknown; question?: unknown } | undefined;
  if (run?.status !== 'waiting') return undefined;
  const { workflow_id, run_id, question } = run;
  if (typeof workflow_id !== 'string' || typeof run_id !== 'string' || typeof question !== 'string') return undefined;
  return { workflowId: workflow_id, runId: run_id, question };
}

/** The arguments of every published workflow's tool. */
export const PUBLISHED_INPUT = z.object({
  input: z.string().max(20_000).default('').describe('What the run starts from (its first message)'),
});
const INPUT_SCHEMA = (() => {
  const { $schema: _, ...schema } = z.toJSONSchema(PUBLISHED_INPUT, { io: 'input' }) as Record<string, unknown>;
  return schema as Tool['inputSchema'];
})();
export const PUBLISHED_ANNOTATIONS = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: true,
};

/**
 * A published workflow as `tools/list` shows it; to a host that renders views, with the run view and the workflow
 * it runs (which the view watches).
 */
export function describePublished(workflow: PublishedWorkflow, apps = false): Tool {
  return {
    name: workflow.toolName,
    title: workflow.title,
    description: workflow.description,
    inputSchema: INPUT_SCHEMA,
    annotations: { title: workflow.title, ...PUBLISHED_ANNOTATIONS },
    ...(apps && { _meta: { ui: { resourceUri: RUN_VIEW_URI }, [WORKFLOW_ID_META_KEY]: workflow.workflowId } }),
  };
}

const notFound = (name: string): CallToolResult => ({
  content: [{ type: 'text', text: `Tool ${name} not found` }],
  isError: true,
});

/** Why the caller may not run a published workflow (the answer for a tool that does not exist), or nothing. */
export async function publishedRefusal(
  published: PublishedWorkflows,
  workflow: PublishedWorkflow,
  caller: Caller | undefined,
): Promise<CallToolResult | undefined> {
  if (!caller || !(await published.runnableBy(caller)).has(workflow.workflowId)) return notFound(workflow.toolName);
  return undefined;
}

/** Runs a published workflow for the caller; someone who may not run it is answered as for a tool that does not exist. */
export async function callPublished(
  published: PublishedWorkflows,
  workflow: PublishedWorkflow,
  input: string,
  caller: Caller | undefined,
  signal: AbortSignal,
): Promise<CallToolResult> {
  return (
    (await publishedRefusal(published, workflow, caller)) ?? published.run(caller!, workflow.workflowId, input, signal)
  );
}

/**
 * Offers every published workflow on this server as a tool, and keeps the offer current while the server is open.
 * A call from someone who may not run the workflow is answered as for a tool that does not exist.
 */
export function registerPublishedWorkflows(
  server: McpServer,
  published: PublishedWorkflows,
  callerOf: (extra: { authInfo?: unknown }) => Caller | undefined,
): void {
  const registered = new Map<string, RegisteredTool>();
  const register = (workflow: PublishedWorkflow) => {
    registered.get(workflow.toolName)?.remove();
    const tool = server.registerTool(
      workflow.toolName,
      {
        title: workflow.title,
        description: workflow.description,
        inputSchema: PUBLISHED_INPUT,
        annotations: PUBLISHED_ANNOTATIONS,
      },
      ({ input }, extra) => callPublished(published, workflow, input, callerOf(extra), extra.signal),
    );
    registered.set(workflow.toolName, tool);
  };
  for (const workflow of published.list()) register(workflow);
  const unsubscribe = published.subscribe((change) => {
    if (change.kind === 'published') register(change.workflow);
    else {
      registered.get(change.toolName)?.remove();
      registered.delete(change.toolName);
    }
  });
  const previous = server.server.onclose;
  server.server.onclose = () => {
    unsubscribe();
    previous?.();
  };
}
