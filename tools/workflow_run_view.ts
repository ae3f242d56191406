import { z } from 'zod';
import { type ToolContext, defineTool, textResult } from '../src/mcp/tools.js';

/** Called by the run view only: a model is never offered these. */
const VIEW_ONLY = { visibility: ['app' as const] };

/** What a run view reads as the run goes: the run, what it showed since its last read, and the workflow's graph. */
export const workflowRunView = defineTool({
  name: 'workflow_run_view',
  title: 'Watch a workflow run',
  description:
    'For the workflow run view: one of your runs of a workflow (the one named, or your newest since a time) with ' +
    'the events it showed after a place, and the graph on the first read.',
  inputSchema: {
    workflow_id: z.string().min(1).max(64).describe('The workflow of the run'),
    run_id: z.string().min(1).max(64).optional().describe('The run; without it, your newest run since `since`'),
    since: z.iso.datetime().optional().describe('Without run_id: runs started at or after this time (a minute ago)'),
    after: z.number().int().min(0).default(0).describe('The last event already read (0: from the start)'),
  },
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  forAgent: false,
  ui: VIEW_ONLY,
  handler: async ({ workflow_id, run_id, since, after }, context: ToolContext) => {
    const watch = await context.workflows.watch(context.caller, {
      workflowId: workflow_id,
      runId: run_id,
      since,
      after,
    });
    const summary = watch.run ? `Run ${watch.run.run_id}: ${watch.run.status}` : 'No run yet';
    return textResult(summary, { ...watch });
  },
});

/** Stops one of the caller's runs that waits for an answer, from its view. */
export const workflowRunCancel = defineTool({
  name: 'workflow_run_cancel',
  title: 'Stop a waiting workflow run',
  description: 'For the workflow run view: stop a run that waits for an answer; its question is not answered.',
  inputSchema: {
    workflow_id: z.string().min(1).max(64).describe('The workflow of the run'),
    run_id: z.string().min(1).max(64).describe('The waiting run'),
  },
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  forAgent: false,
  ui: VIEW_ONLY,
  handler: async ({ workflow_id, run_id }, context: ToolContext) => {
    // Only a run the caller started: the claim itself names them as its starter.
    const run = await context.workflows.cancelOwn(context.caller, workflow_id, run_id);
    return textResult(`Run ${run.run_id}: ${run.status}`, { ...run });
  },
});
