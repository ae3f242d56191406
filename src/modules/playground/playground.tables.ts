export interface PlaygroundSessionsTable {
  id: string;
  user_id: string;
  name: string;
  /** JSON object. */
  metadata: string;
  conversation_id: string | null;
  model: string | null;
  created_at: string;
  updated_at: string;
}

export interface PlaygroundMessagesTable {
  id: string;
  session_id: string;
  /** Order within the session, from 1. */
  seq: number;
  role: 'user' | 'assistant';
  content: string;
  /** JSON array of {id, name, args, result, is_error}. */
  tool_calls: string;
  tool_call_count: number;
  cancelled: number;
  error: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  latency_ms: number | null;
  created_at: string;
}

export interface PlaygroundSpansTable {
  span_id: string;
  trace_id: string;
  parent_span_id: string | null;
  session_id: string;
  operation: string;
  status: 'ok' | 'error' | 'unset';
  duration_ms: number;
  /** JSON object. */
  attributes: string;
  started_at: string;
}

export interface PlaygroundLogsTable {
  id: string;
  session_id: string;
  level: number;
  message: string;
  /** JSON object. */
  attributes: string;
  created_at: string;
  seq: number;
}
