export interface WorkflowsTable {
  id: string;
  /** The authorization subject that created it. */
  owner: string;
  name: string;
  current_version: number;
  /** The MCP tool name while published, else null. */
  tool_name: string | null;
  created_at: string;
  updated_at: string;
}

export interface WorkflowTagsTable {
  workflow_id: string;
  tag: string;
}

export type VersionSource = 'create' | 'update' | 'rollback';

export interface WorkflowVersionsTable {
  workflow_id: string;
  version: number;
  /** JSON: the normalized workflow. */
  definition: string;
  source: VersionSource;
  restored_from: number | null;
  created_by: string;
  created_at: string;
}

export type RunStatus = 'running' | 'waiting' | 'completed' | 'failed' | 'cancelled';

export interface WorkflowRunsTable {
  id: string;
  workflow_id: string;
  version: number;
  started_by: string;
  status: RunStatus;
  input: string;
  output: string | null;
  question: string | null;
  waiting_node: string | null;
  /** JSON array of node ids. */
  path: string;
  error: string | null;
  created_at: string;
  updated_at: string;
}

export interface WorkflowRunEventsTable {
  run_id: string;
  /** The event's place in its run, from 1, across the run's resumes. */
  seq: number;
  at: string;
  /** JSON: the event as the run stream sends it. */
  event: string;
}
