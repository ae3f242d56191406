export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** An MCP task (the Tasks extension): a tool call that outlives its request. */
export interface McpTasksTable {
  id: string;
  /** The subject that started it; for anyone else it does not exist. */
  owner: string;
  tool: string;
  status: TaskStatus;
  status_message: string | null;
  /** JSON: the questions an `input_required` task asks, by key (embedded `elicitation/create` requests). */
  input_requests: string | null;
  /** JSON: the tool result of a completed task. */
  result: string | null;
  /** JSON: `{ code, message }` of a failed task. */
  error: string | null;
  /** The workflow run a task waiting for an answer resumes. */
  workflow_id: string | null;
  run_id: string | null;
  /** The instance running it while it works; its claim lapses at `lease_until` unless renewed. */
  runner: string | null;
  lease_until: string | null;
  created_at: string;
  updated_at: string;
  expires_at: string;
}
