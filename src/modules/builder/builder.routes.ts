import { z } from 'zod';
import { BadRequestError, CommonErrorCode } from '../../errors.js';
import { callerOf } from '../../http/authenticate.js';
import { Reply, type RouteGroup, defineRoute } from '../../http/route.js';
import { webUiSettingsRoute } from '../../http/web-ui-settings.js';
import { WorkflowDiffSchema } from '../../../workflows/diff.js';
import { ValidationReportSchema } from '../../../workflows/validate.js';
import { normalizeWorkflow } from '../../../workflows/schema.js';
import type { WorkflowRuns } from './builder.runs.js';
import {
  BuilderConfig,
  DiffQuery,
  DraftWorkflow,
  GenerateRequest,
  GeneratedCode,
  ListWorkflowsQuery,
  Publication,
  ResourceInfo,
  RollbackRequest,
  RecordedRunEvent,
  Run,
  ToolInfo,
  UpdateWorkflow,
  VersionDetail,
  VersionSummary,
  Workflow,
  WorkflowSummary,
  runParams,
  versionParams,
  workflowParams,
} from './builder.schemas.js';
import { WorkflowDefinitionInput } from '../../../workflows/schema.js';
import type { BuilderService } from './builder.service.js';

const TAGS = ['Builder'];
const NOT_FOUND = { description: 'No such workflow (or version) of yours' };
const INVALID = {
  description: 'Invalid definition: `code` WORKFLOW_INVALID and the `validation` report, naming each node and edge',
};

export interface BuilderRouteDeps {
  builder: BuilderService;
  runs: WorkflowRuns;
  /** What the web UI needs to know before anyone signs in, given the origin it is served from. */
  config: (origin: string) => z.output<typeof BuilderConfig>;
}

/** `If-Match: "3"` (or `W/"3"`, or `3`): the version an update was based on. */
function ifMatchVersion(header: string | undefined): number | undefined {
  if (header === undefined || header.trim() === '*') return undefined;
  const match = /^\s*(?:W\/)?"?(\d{1,9})"?\s*$/.exec(header);
  if (!match) throw new BadRequestError('If-Match must name a version: "3"', { code: CommonErrorCode.BadRequest });
  return Number(match[1]);
}

/** Workflows, their versions and diffs, validation, code generation and the tools a workflow may use. */
export function builderRoutes({ builder, runs, config }: BuilderRouteDeps): RouteGroup {
  return {
    prefix: '/api/builder',
    area: 'envelope',
    tags: TAGS,
    routes: [
      webUiSettingsRoute({ operationId: 'getBuilderConfig', schema: BuilderConfig, settings: config }),
      defineRoute({
        method: 'post',
        path: '/workflows',
        operationId: 'createWorkflow',
        summary: 'Create a workflow (version 1)',
        request: { body: WorkflowDefinitionInput },
        responses: { 201: { description: 'Created', schema: Workflow }, 400: INVALID },
        handler: async ({ body, req }) => new Reply(201, await builder.create(callerOf(req), body)),
      }),
      defineRoute({
        method: 'get',
        path: '/workflows',
        operationId: 'listWorkflows',
        summary: 'Your workflows, most recently saved first',
        description: 'The total across pages is in the X-Total-Count header.',
        request: { query: ListWorkflowsQuery },
        responses: {
          200: { description: 'Workflows (without their nodes and edges)', schema: z.array(WorkflowSummary) },
        },
        handler: async ({ query, req }) => {
          const { items, total } = await builder.list(callerOf(req), query);
          return new Reply(200, items, { 'X-Total-Count': String(total) });
        },
      }),
      defineRoute({
        method: 'get',
        path: '/workflows/:workflow_id',
        operationId: 'getWorkflow',
        summary: 'A workflow at its current version',
        request: { params: workflowParams },
        responses: { 200: { description: 'The workflow', schema: Workflow }, 404: NOT_FOUND },
        handler: async ({ params, req, res }) => {
          const workflow = await builder.get(callerOf(req), params.workflow_id);
          res.set('ETag', `"${workflow.version}"`);
          return workflow;
        },
      }),
      defineRoute({
        method: 'put',
        path: '/workflows/:workflow_id',
        operationId: 'updateWorkflow',
        summary: 'Save a new version of a workflow',
        description:
          'Each save is a new version. With `version` (or If-Match) naming the version the edit was based on, a ' +
          'workflow saved by someone else since is refused with 409; without, the save applies to the current version.',
        request: { params: workflowParams, body: UpdateWorkflow },
        responses: {
          200: { description: 'The workflow at its new version', schema: Workflow },
          400: INVALID,
          404: NOT_FOUND,
          409: { description: 'Based on a version that is no longer current (`current_version` says which is)' },
        },
        handler: async ({ params, body, req, res }) => {
          const { version, ...definition } = body;
          const basedOn = version ?? ifMatchVersion(req.get('if-match'));
          const workflow = await builder.update(callerOf(req), params.workflow_id, definition, basedOn);
          res.set('ETag', `"${workflow.version}"`);
          return workflow;
        },
      }),
      defineRoute({
        method: 'delete',
        path: '/workflows/:workflow_id',
        operationId: 'deleteWorkflow',
        summary: 'Delete a workflow with its versions and runs',
        request: { params: workflowParams },
        responses: { 204: { description: 'Deleted' }, 404: NOT_FOUND },
        handler: async ({ params, req }) => {
          await builder.remove(callerOf(req), params.workflow_id);
          return new Reply(204);
        },
      }),
      defineRoute({
        method: 'get',
        path: '/workflows/:workflow_id/versions',
        operationId: 'listWorkflowVersions',
        summary: 'Version history, newest first',
        request: { params: workflowParams },
        responses: { 200: { description: 'Versions', schema: z.array(VersionSummary) }, 404: NOT_FOUND },
        handler: ({ params, req }) => builder.versions(callerOf(req), params.workflow_id),
      }),
      defineRoute({
        method: 'get',
        path: '/workflows/:workflow_id/versions/:version',
        operationId: 'getWorkflowVersion',
        summary: 'One version with its content',
        request: { params: versionParams },
        responses: { 200: { description: 'The version', schema: VersionDetail }, 404: NOT_FOUND },
        handler: ({ params, req }) => builder.version(callerOf(req), params.workflow_id, params.version),
      }),
      defineRoute({
        method: 'post',
        path: '/workflows/:workflow_id/rollback',
        operationId: 'rollbackWorkflow',
        summary: "Make an earlier version's content the new current version",
        description: 'The history is never rewritten: the restored content is saved as the next version.',
        request: { params: workflowParams, body: RollbackRequest },
        responses: { 200: { description: 'The workflow at its new version', schema: Workflow }, 404: NOT_FOUND },
        handler: ({ params, body, req }) => builder.rollback(callerOf(req), params.workflow_id, body.version),
      }),
      defineRoute({
        method: 'get',
        path: '/workflows/:workflow_id/diff',
        operationId: 'diffWorkflowVersions',
        summary: 'What changed between two versions, node by node and field by field',
        request: { params: workflowParams, query: DiffQuery },
        responses: {
          200: {
            description: 'The structural diff',
            schema: WorkflowDiffSchema.and(z.object({ from: z.number().int(), to: z.number().int() })),
          },
          404: NOT_FOUND,
        },
        handler: ({ params, query, req }) => builder.diff(callerOf(req), params.workflow_id, query.from, query.to),
      }),
      defineRoute({
        method: 'post',
        path: '/workflows/:workflow_id/publish',
        operationId: 'publishWorkflow',
        summary: 'Offer the workflow to MCP clients as a tool of its own',
        description:
          'Everyone who may run the workflow sees the tool in tools/list (on every open connection at once); its ' +
          'one argument is `input`. A run that waits for a human answers its question, resumed with workflow_resume.',
        request: { params: workflowParams },
        responses: { 200: { description: 'Published', schema: Publication }, 404: NOT_FOUND },
        handler: ({ params, req }) => builder.publish(callerOf(req), params.workflow_id),
      }),
      defineRoute({
        method: 'delete',
        path: '/workflows/:workflow_id/publish',
        operationId: 'unpublishWorkflow',
        summary: 'Stop offering the workflow as an MCP tool',
        request: { params: workflowParams },
        responses: { 204: { description: 'No longer published' }, 404: NOT_FOUND },
        handler: async ({ params, req }) => {
          await builder.unpublish(callerOf(req), params.workflow_id);
          return new Reply(204);
        },
      }),
      defineRoute({
        method: 'get',
        path: '/workflows/:workflow_id/runs',
        operationId: 'listWorkflowRuns',
        summary: 'Runs of a workflow, newest first',
        request: {
          params: workflowParams,
          query: z.object({ limit: z.coerce.number().int().min(1).max(200).default(50) }),
        },
        responses: { 200: { description: 'Runs', schema: z.array(Run) }, 404: NOT_FOUND },
        handler: ({ params, query, req }) => runs.list(callerOf(req), params.workflow_id, query.limit),
      }),
      defineRoute({
        method: 'get',
        path: '/workflows/:workflow_id/runs/:run_id',
        operationId: 'getWorkflowRun',
        summary: 'One run',
        request: { params: runParams },
        responses: { 200: { description: 'The run', schema: Run }, 404: { description: 'No such run' } },
        handler: ({ params, req }) => runs.get(callerOf(req), params.workflow_id, params.run_id),
      }),
      defineRoute({
        method: 'get',
        path: '/workflows/:workflow_id/runs/:run_id/events',
        operationId: 'listWorkflowRunEvents',
        summary: "What a run showed as it went, in order (a node's streamed text in pieces)",
        request: { params: runParams },
        responses: {
          200: { description: 'The events', schema: z.array(RecordedRunEvent) },
          404: { description: 'No such run' },
        },
        handler: ({ params, req }) => runs.events(callerOf(req), params.workflow_id, params.run_id),
      }),
      defineRoute({
        method: 'post',
        path: '/validate',
        operationId: 'validateWorkflow',
        summary: 'Validate a workflow without saving it',
        description: 'Always 200 for a well-formed body: `valid` says whether it may be saved; warnings never block.',
        request: { body: DraftWorkflow },
        responses: { 200: { description: 'The validation report', schema: ValidationReportSchema } },
        handler: ({ body, req }) => builder.validate(callerOf(req), normalizeWorkflow(body)),
      }),
      defineRoute({
        method: 'post',
        path: '/generate',
        operationId: 'generateWorkflowCode',
        summary: 'Source code for a workflow: Python (LangGraph) or TypeScript (LangGraph.js)',
        description:
          'The code builds the same graph the service runs: the same node names and routing. It declares a small ' +
          'runtime interface (the model and the tools) for you to implement. Tools of connected MCP servers ' +
          '(`<slug>__<tool>`) are called through the MCP client of the language, each server reached at the URL in ' +
          '`MCP_SERVER_<SLUG>_URL` (default: its URL now) with the bearer token in `MCP_SERVER_<SLUG>_TOKEN`; no ' +
          'credential is written into the code.',
        request: { body: GenerateRequest },
        responses: { 200: { description: 'The source', schema: GeneratedCode }, 400: INVALID },
        handler: ({ body, req }) => {
          const { options, ...definition } = body;
          return builder.generate(callerOf(req), definition, { language: options.language, name: definition.name });
        },
      }),
      defineRoute({
        method: 'get',
        path: '/tools',
        operationId: 'listBuilderTools',
        summary: 'The MCP tools you may use in workflows',
        responses: { 200: { description: 'Tools', schema: z.array(ToolInfo) } },
        handler: async ({ req }) =>
          (await builder.tools(callerOf(req))).map((t) => ({
            name: t.name,
            description: t.description,
            input_schema: t.parameters,
            server: t.server ?? null,
            annotations: t.annotations ?? {},
          })),
      }),
      defineRoute({
        method: 'get',
        path: '/resources',
        operationId: 'listBuilderResources',
        summary: 'The MCP resources you may read',
        responses: { 200: { description: 'Resources', schema: z.array(ResourceInfo) } },
        handler: ({ req }) => builder.resources(callerOf(req)),
      }),
    ],
  };
}
