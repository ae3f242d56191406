import type { ApiClient } from '../../../shared/api/api-client';
import { ApiError, apiErrorFrom } from '../../../shared/api/api-error';

/** GET /api/builder/config (open). */
export interface BuilderConfig {
  version: string;
  auth_mode: 'token' | 'session';
  sso: { enabled: boolean; login_url?: string };
  llm_provider: string;
  model: string;
}

export const NODE_TYPES = ['start', 'agent', 'router', 'tool', 'human', 'end'] as const;
export type NodeType = (typeof NODE_TYPES)[number];

/** Ids the service accepts for nodes and edges (they also become names in generated code). */
export const ID_PATTERN = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

/**
 * What a node may carry. Every type reads `label`; the others belong to one type each (agent: system_prompt,
 * model, tools; tool: tool, args; human: question). Unknown fields are kept as they came.
 */
export interface NodeData {
  label?: string;
  system_prompt?: string;
  /** Older exports name the system prompt this. */
  prompt?: string;
  model?: string;
  tools?: string[];
  tool?: string;
  args?: Record<string, unknown>;
  question?: string;
  [key: string]: unknown;
}

export interface WorkflowNode {
  id: string;
  type: NodeType;
  position?: { x: number; y: number };
  data: NodeData;
}

export interface WorkflowEdge {
  id: string;
  source: string;
  target: string;
  label?: string;
  data?: { condition?: string; [key: string]: unknown };
}

/** The interchange format: what the canvas saves, what import and export carry. */
export interface WorkflowDefinition {
  name: string;
  description?: string;
  tags?: string[];
  schema_version?: 1;
  nodes: WorkflowNode[];
  edges: WorkflowEdge[];
}

export interface Workflow extends WorkflowDefinition {
  workflow_id: string;
  version: number;
  created_at: string;
  updated_at: string;
  published: boolean;
  tool_name: string | null;
  description: string;
  tags: string[];
}

/** A list item: the workflow without its graph, with the number of nodes. */
export type WorkflowSummary = Omit<Workflow, 'nodes' | 'edges'> & { node_count: number };

export interface Issue {
  code: string;
  message: string;
  severity: 'error' | 'warning';
  node_id?: string;
  edge_id?: string;
  field?: string;
}

export interface ValidationReport {
  valid: boolean;
  errors: Issue[];
  warnings: Issue[];
}

export interface VersionSummary {
  version: number;
  created_at: string;
  source: 'create' | 'update' | 'rollback';
  restored_from: number | null;
  name: string;
  node_count: number;
  edge_count: number;
}

export interface VersionDetail extends VersionSummary {
  workflow: WorkflowDefinition;
}

export interface FieldChange {
  path: string;
  before: unknown;
  after: unknown;
}

export interface GraphDiff<T> {
  added: T[];
  removed: T[];
  changed: { id: string; changes: FieldChange[] }[];
}

export interface WorkflowDiff {
  from: number;
  to: number;
  fields: FieldChange[];
  nodes: GraphDiff<WorkflowNode>;
  edges: GraphDiff<WorkflowEdge>;
  /** Only positions moved. */
  layout_only: boolean;
  unchanged: boolean;
}

export type RunStatus = 'running' | 'waiting' | 'completed' | 'failed' | 'cancelled';

export interface Run {
  run_id: string;
  workflow_id: string;
  version: number;
  status: RunStatus;
  input: string;
  output: string | null;
  question: string | null;
  waiting_node: string | null;
  path: string[];
  error: string | null;
  created_at: string;
  updated_at: string;
}

/** An MCP tool an agent may be allowed, or a tool node may call. */
export interface ToolInfo {
  name: string;
  description: string;
  input_schema: unknown;
}

export type CodeLanguage = 'python' | 'typescript';

export interface GeneratedCode {
  language: CodeLanguage;
  filename: string;
  code: string;
}

/**
 * A 400 that carries the service's validation report (saving or generating an invalid workflow), so the editor
 * can show the issues where they are.
 */
export class WorkflowInvalidError extends ApiError {
  constructor(
    message: string,
    readonly report: ValidationReport,
  ) {
    super(message, 400, 'WORKFLOW_INVALID');
  }
}

/** A 409 on save: someone saved a newer version since this one was loaded. */
export class VersionConflictError extends ApiError {
  constructor(
    message: string,
    readonly currentVersion: number | undefined,
  ) {
    super(message, 409, 'WORKFLOW_VERSION_CONFLICT');
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isReport(value: unknown): value is ValidationReport {
  return isRecord(value) && Array.isArray(value.errors) && Array.isArray(value.warnings);
}

/**
 * Reads a failed answer into the error the editor acts on: a validation report (400), a version conflict (409),
 * or the shared ApiError for everything else.
 */
export async function builderErrorFrom(response: Response): Promise<ApiError> {
  if (response.status !== 400 && response.status !== 409) return apiErrorFrom(response);
  const text = await response.text().catch(() => '');
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  const message = isRecord(body) && typeof body.message === 'string' ? body.message : undefined;
  if (response.status === 400 && isRecord(body) && isReport(body.validation)) {
    return new WorkflowInvalidError(message ?? 'The workflow has problems to fix first.', body.validation);
  }
  if (response.status === 409) {
    const current = isRecord(body) && typeof body.current_version === 'number' ? body.current_version : undefined;
    return new VersionConflictError(message ?? 'Someone saved a newer version of this workflow.', current);
  }
  // The body was read above, so rebuild a response for the shared reader.
  return apiErrorFrom(new Response(text, { status: response.status, headers: response.headers }));
}

export const WORKFLOW_PAGE_SIZE = 20;

const BASE = '/api/builder';
const workflowPath = (id: string) => `${BASE}/workflows/${encodeURIComponent(id)}`;

/** The builder's REST endpoints over a client that carries the credentials. */
export function createBuilderApi(client: ApiClient) {
  /** A JSON request whose 400 and 409 answers become the editor's own errors. */
  async function send<T>(path: string, method: 'POST' | 'PUT', body: unknown, signal?: AbortSignal): Promise<T> {
    const response = await client.fetch(client.url(path), {
      method,
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify(body),
      signal,
    });
    if (!response.ok) throw await builderErrorFrom(response);
    return (await response.json()) as T;
  }

  return {
    config: (signal?: AbortSignal) => client.request<BuilderConfig>(`${BASE}/config`, { signal }),

    /** One page of workflows, newest first, and how many there are in all. */
    async listWorkflows(
      offset: number,
      tag: string | undefined,
      signal?: AbortSignal,
    ): Promise<{ items: WorkflowSummary[]; total: number }> {
      const response = await client.fetch(
        client.url(`${BASE}/workflows`, { limit: WORKFLOW_PAGE_SIZE, offset, tag: tag || undefined }),
        { headers: { Accept: 'application/json' }, signal },
      );
      if (!response.ok) throw await apiErrorFrom(response);
      const items = (await response.json()) as WorkflowSummary[];
      const total = Number(response.headers.get('X-Total-Count'));
      return { items, total: Number.isFinite(total) && total >= items.length + offset ? total : offset + items.length };
    },
    getWorkflow: (id: string, signal?: AbortSignal) => client.request<Workflow>(workflowPath(id), { signal }),
    createWorkflow: (definition: WorkflowDefinition) => send<Workflow>(`${BASE}/workflows`, 'POST', definition),
    /** `version` is the one the edit started from; a newer one on the server answers 409. */
    updateWorkflow: (id: string, definition: WorkflowDefinition, version?: number) =>
      send<Workflow>(workflowPath(id), 'PUT', version === undefined ? definition : { ...definition, version }),
    deleteWorkflow: (id: string) => client.request<void>(workflowPath(id), { method: 'DELETE' }),

    versions: (id: string, signal?: AbortSignal) =>
      client.request<VersionSummary[]>(`${workflowPath(id)}/versions`, { signal }),
    version: (id: string, version: number, signal?: AbortSignal) =>
      client.request<VersionDetail>(`${workflowPath(id)}/versions/${version}`, { signal }),
    diff: (id: string, from: number, to: number, signal?: AbortSignal) =>
      client.request<WorkflowDiff>(`${workflowPath(id)}/diff`, { query: { from, to }, signal }),
    rollback: (id: string, version: number) =>
      client.request<Workflow>(`${workflowPath(id)}/rollback`, { method: 'POST', body: { version } }),

    validate: (definition: WorkflowDefinition, signal?: AbortSignal) =>
      send<ValidationReport>(`${BASE}/validate`, 'POST', definition, signal),
    generate: (definition: WorkflowDefinition, language: CodeLanguage, signal?: AbortSignal) =>
      send<GeneratedCode>(
        `${BASE}/generate`,
        'POST',
        { name: definition.name, nodes: definition.nodes, edges: definition.edges, options: { language } },
        signal,
      ),

    tools: (signal?: AbortSignal) => client.request<ToolInfo[]>(`${BASE}/tools`, { signal }),

    runs: (id: string, signal?: AbortSignal) => client.request<Run[]>(`${workflowPath(id)}/runs`, { signal }),
    run: (id: string, runId: string, signal?: AbortSignal) =>
      client.request<Run>(`${workflowPath(id)}/runs/${encodeURIComponent(runId)}`, { signal }),
    /**
     * What a run showed, as the stream's events each with its `at` (read them with `toRunEvents`). A 404 when the
     * service kept no events for the run, or does not keep them at all.
     */
    runEvents: (id: string, runId: string, signal?: AbortSignal) =>
      client.request<unknown>(`${workflowPath(id)}/runs/${encodeURIComponent(runId)}/events`, { signal }),

    publish: (id: string) =>
      client.request<{ published: true; tool_name: string }>(`${workflowPath(id)}/publish`, { method: 'POST' }),
    unpublish: (id: string) => client.request<void>(`${workflowPath(id)}/publish`, { method: 'DELETE' }),
  };
}

export type BuilderApi = ReturnType<typeof createBuilderApi>;

/** The path of a workflow's streamed run, and of the resumption of one of its runs. */
export const runPaths = {
  start: (id: string) => `${workflowPath(id)}/run`,
  resume: (id: string, runId: string) => `${workflowPath(id)}/runs/${encodeURIComponent(runId)}/resume`,
};
