import { z } from 'zod';
import { WebUiSettings } from '../../http/web-ui-settings.js';
import { HumanAnswer } from '../../../workflows/runtime.js';
import { ID_PATTERN, WorkflowDefinitionInput, WorkflowEdge, WorkflowNode } from '../../../workflows/schema.js';

/** The builder's request and response shapes (spec "Builder resources"; the fields it leaves open are ours). */

const timestamp = z.iso.datetime();

export const WorkflowId = z.string().min(1).max(64);
export const workflowParams = z.object({ workflow_id: WorkflowId });
export const versionParams = workflowParams.extend({ version: z.coerce.number().int().min(1) });
export const runParams = workflowParams.extend({ run_id: z.string().min(1).max(64) });

export const UpdateWorkflow = WorkflowDefinitionInput.extend({
  version: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe('The version this update was based on: when it is no longer current, 409 (If-Match works too)'),
}).meta({ id: 'UpdateWorkflow' });

/** What validate and generate need: a name is optional there. */
export const DraftWorkflow = WorkflowDefinitionInput.extend({
  name: z.string().trim().max(200).default('Untitled workflow'),
}).meta({ id: 'DraftWorkflow' });

export const GenerateRequest = DraftWorkflow.extend({
  options: z
    .object({
      language: z.enum(['python', 'typescript']).default('python'),
    })
    .loose()
    .default({ language: 'python' }),
}).meta({ id: 'GenerateWorkflowCode' });

export const GeneratedCode = z
  .object({
    language: z.enum(['python', 'typescript']),
    filename: z.string(),
    code: z.string(),
  })
  .meta({ id: 'GeneratedWorkflowCode' });

const definitionFields = {
  name: z.string(),
  description: z.string(),
  tags: z.array(z.string()),
  schema_version: z.number().int(),
};

export const WorkflowDefinition = z
  .object({ ...definitionFields, nodes: z.array(WorkflowNode), edges: z.array(WorkflowEdge) })
  .meta({ id: 'WorkflowDefinition' });

const workflowMeta = {
  workflow_id: z.string(),
  version: z.number().int().describe('The current version'),
  published: z.boolean().describe('Whether MCP clients see it as a tool of its own'),
  tool_name: z.string().nullable().describe('The MCP tool name while published'),
  created_at: timestamp,
  updated_at: timestamp,
};

export const Workflow = WorkflowDefinition.extend(workflowMeta).meta({ id: 'Workflow' });

export const WorkflowSummary = z
  .object({ ...definitionFields, ...workflowMeta, node_count: z.number().int(), edge_count: z.number().int() })
  .meta({ id: 'WorkflowSummary' });

export const ListWorkflowsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(20),
  offset: z.coerce.number().int().min(0).default(0),
  tag: z.string().min(1).max(50).optional(),
});

export const VersionSummary = z
  .object({
    version: z.number().int(),
    created_at: timestamp,
    source: z.enum(['create', 'update', 'rollback']),
    restored_from: z.number().int().nullable().describe('For a rollback: the version whose content it restored'),
    name: z.string(),
    node_count: z.number().int(),
    edge_count: z.number().int(),
  })
  .meta({ id: 'WorkflowVersionSummary' });

export const VersionDetail = VersionSummary.extend({ workflow: WorkflowDefinition }).meta({
  id: 'WorkflowVersion',
});

export const RollbackRequest = z
  .object({ version: z.number().int().min(1).describe('The version whose content becomes the new current version') })
  .meta({ id: 'RollbackWorkflow' });

export const DiffQuery = z.object({
  from: z.coerce.number().int().min(1),
  to: z.coerce.number().int().min(1).optional().describe('The current version when absent'),
});

export const Publication = z
  .object({ published: z.literal(true), tool_name: z.string() })
  .meta({ id: 'WorkflowPublication' });

export const ToolInfo = z
  .object({
    name: z.string(),
    description: z.string(),
    input_schema: z.record(z.string(), z.unknown()),
    server: z
      .object({
        id: z.string(),
        slug: z.string(),
        name: z.string(),
        transport: z.string(),
        url: z.string().nullable(),
      })
      .nullable()
      .describe("The connected MCP server the tool comes from; null for the service's own"),
    annotations: z.record(z.string(), z.unknown()).describe('MCP annotations: readOnlyHint, destructiveHint…'),
  })
  .meta({ id: 'BuilderTool' });

export const ResourceInfo = z
  .object({
    uri: z.string(),
    name: z.string(),
    description: z.string().optional(),
    mime_type: z.string().optional(),
  })
  .meta({ id: 'BuilderResource' });

export const RunStatus = z.enum(['running', 'waiting', 'completed', 'failed', 'cancelled']);

export const Run = z
  .object({
    run_id: z.string(),
    workflow_id: z.string(),
    version: z.number().int(),
    status: RunStatus,
    input: z.string(),
    output: z.string().nullable(),
    question: z.string().nullable().describe('While waiting: what the human node asks'),
    waiting_node: z.string().nullable(),
    path: z.array(z.string()).describe('The ids of the nodes that ran, in order'),
    error: z.string().nullable(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'WorkflowRun' });

/** An event as a run showed it (the run stream's events), with its place in the run and when it came. */
export const RecordedRunEvent = z
  .looseObject({
    type: z.enum([
      'run_started',
      'node_started',
      'node_finished',
      'token',
      'tool_call',
      'tool_result',
      'interrupt',
      'answer',
      'error',
      'end',
    ]),
    seq: z.number().int().min(1),
    at: timestamp,
  })
  .meta({ id: 'WorkflowRunEvent' });

export const RunRequest = z
  .object({
    input: z.string().max(20_000).default(''),
    vars: z.record(z.string().regex(ID_PATTERN), z.unknown()).optional().describe('Initial state values'),
  })
  .meta({ id: 'RunWorkflow' });

export const ResumeRequest = z
  .object({
    answer: HumanAnswer.describe(
      "The answer to the waiting human node's question: any text of at most 20,000 characters, the empty text " +
        'included. Anything else is a 400 and the run still waits.',
    ),
  })
  .meta({ id: 'ResumeWorkflowRun' });

export const BuilderConfig = WebUiSettings.meta({ id: 'BuilderConfig' });
