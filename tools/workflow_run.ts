import { z } from 'zod';
import { runToolResult } from '../src/modules/builder/index.js';
import { RUN_VIEW_URI } from '../src/mcp/apps.js';
import { type ToolContext, defineTool } from '../src/mcp/tools.js';
import { HumanAnswer } from '../workflows/runtime.js';

/** Runs one of the caller's builder workflows, to its end or its first human question. */
export const workflowRun = defineTool({
  name: 'workflow_run',
  title: 'Run a workflow',
  description:
    'Run a workflow from the builder (one you may run) on an input. Answers its output, or the question a human ' +
    'step asks, which workflow_resume answers.',
  inputSchema: {
    workflow_id: z.string().min(1).max(64).describe('The workflow to run'),
    input: z.string().max(20_000).default('').describe('What the run starts from (the first user message)'),
  },
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  // A workflow's agents call tools themselves; letting the agent start workflows would nest runs without bound.
  forAgent: false,
  longRunning: true,
  ui: { resourceUri: RUN_VIEW_URI },
  handler: async ({ workflow_id, input }, context: ToolContext) => {
    const handle = await context.workflows.start(context.caller, workflow_id, { input });
    return runToolResult(await context.workflows.complete(handle, context.signal));
  },
});

/** Answers the question a waiting run asks, and lets it go on. */
export const workflowResume = defineTool({
  name: 'workflow_resume',
  title: 'Answer a waiting workflow',
  description: 'Answer the question a waiting workflow run asks (see workflow_run), and let the run go on.',
  inputSchema: {
    workflow_id: z.string().min(1).max(64).describe('The workflow of the run'),
    run_id: z.string().min(1).max(64).describe('The waiting run'),
    answer: HumanAnswer.describe('The answer to its question: any text up to 20,000 characters, empty included'),
  },
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  forAgent: false,
  longRunning: true,
  ui: { resourceUri: RUN_VIEW_URI },
  handler: async ({ workflow_id, run_id, answer }, context: ToolContext) => {
    const handle = await context.workflows.resume(context.caller, workflow_id, run_id, answer);
    return runToolResult(await context.workflows.complete(handle, context.signal));
  },
});
