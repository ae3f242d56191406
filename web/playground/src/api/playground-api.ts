import type { CallToolResult } from '@modelcontextprotocol/client';
import type { ApiClient } from '../../../shared/api/api-client';

/** GET /api/playground/config (open). */
export interface PlaygroundConfig {
  version: string;
  auth_mode: 'token' | 'session';
  sso: { enabled: boolean; login_url?: string };
  llm_provider: string;
  model: string;
}

export interface Session {
  session_id: string;
  name: string | null;
  user_id: string;
  created_at: string;
  updated_at: string;
  metadata: Record<string, unknown> | null;
  /** List items only. */
  message_count?: number;
}

export interface ToolCall {
  id: string;
  name: string;
  args: unknown;
  result?: unknown;
  is_error?: boolean;
}

export interface Message {
  id: string;
  role: 'user' | 'assistant';
  content: string;
  timestamp: string;
  tool_calls?: ToolCall[];
  cancelled?: boolean;
  /** Assistant messages: what the answer used (for a stopped one, until it stopped). */
  usage?: Usage;
}

export interface SessionDetail extends Session {
  messages: Message[];
  metadata: { model?: string; total_tokens?: number; [key: string]: unknown } | null;
}

export interface Usage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
}

export type SpanStatus = 'ok' | 'error' | 'unset';

export interface Span {
  trace_id: string;
  span_id: string;
  parent_span_id: string | null;
  operation: string;
  duration_ms: number;
  status: SpanStatus;
  attributes: Record<string, unknown>;
  /** ISO start time. */
  timestamp: string;
}

export const LOG_LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface LogEntry {
  timestamp: string;
  level: LogLevel;
  message: string;
  attributes: Record<string, unknown> | null;
}

export interface Metrics {
  session_id: string;
  message_count: number;
  total_tokens: number;
  average_latency_ms: number;
  error_count: number;
  tool_call_count: number;
}

/**
 * GET /api/playground/views: a tool the caller may call whose calls show in an MCP App view (a published workflow's
 * tool and the workflow run view).
 */
export interface ToolView {
  tool: string;
  resource_uri: string;
  /** The workflow the tool runs, which the view watches; null for a tool that runs none. */
  workflow_id: string | null;
  title: string;
  /** The view's page on the playground listener, relative to the playground's own address. */
  page: string;
}

export const SESSION_PAGE_SIZE = 50;

const sessionPath = (id: string) => `/api/playground/sessions/${encodeURIComponent(id)}`;

/** The playground's REST endpoints, over a client that carries the credentials. */
export function createPlaygroundApi(client: ApiClient) {
  return {
    config: (signal?: AbortSignal) => client.request<PlaygroundConfig>('/api/playground/config', { signal }),

    listSessions: (offset: number, signal?: AbortSignal) =>
      client.request<Session[]>('/api/playground/sessions', {
        query: { limit: SESSION_PAGE_SIZE, offset },
        signal,
      }),
    createSession: (name?: string) =>
      client.request<Session>('/api/playground/sessions', { method: 'POST', body: name ? { name } : {} }),
    renameSession: (id: string, name: string) =>
      client.request<Session>(sessionPath(id), { method: 'PATCH', body: { name } }),
    deleteSession: (id: string) => client.request<void>(sessionPath(id), { method: 'DELETE' }),
    getSession: (id: string, signal?: AbortSignal) => client.request<SessionDetail>(sessionPath(id), { signal }),
    /** Stops the turn running in the session, wherever it runs: its stream then ends with `end` marked cancelled. */
    cancelTurn: (id: string) => client.request<{ message: string }>(`${sessionPath(id)}/cancel`, { method: 'POST' }),

    traces: (sessionId: string, signal?: AbortSignal) =>
      client.request<Span[]>('/api/playground/observability/traces', {
        query: { session_id: sessionId, limit: 200 },
        signal,
      }),
    logs: (sessionId: string, level: LogLevel, signal?: AbortSignal) =>
      client.request<LogEntry[]>('/api/playground/observability/logs', {
        query: { session_id: sessionId, level },
        signal,
      }),
    metrics: (sessionId: string, signal?: AbortSignal) =>
      client.request<Metrics>('/api/playground/observability/metrics', { query: { session_id: sessionId }, signal }),

    views: (signal?: AbortSignal) => client.request<{ views: ToolView[] }>('/api/playground/views', { signal }),
    /** A tool call a view makes through the playground, as the signed-in person (404: no tool a view may call). */
    callViewTool: (name: string, args: Record<string, unknown>, signal?: AbortSignal) =>
      client.request<CallToolResult>('/api/playground/views/tools/call', {
        method: 'POST',
        body: { name, arguments: args },
        signal,
      }),
  };
}

export type PlaygroundApi = ReturnType<typeof createPlaygroundApi>;
