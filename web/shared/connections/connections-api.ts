import type { ApiClient } from '../api/api-client';

export const SCOPES = ['personal', 'shared'] as const;
export type ConnectionScope = (typeof SCOPES)[number];

export const TRANSPORTS = ['streamable_http', 'sse', 'stdio'] as const;
export type Transport = (typeof TRANSPORTS)[number];

export const AUTH_KINDS = ['none', 'bearer', 'header', 'oauth'] as const;
export type AuthKind = (typeof AUTH_KINDS)[number];

export const APPROVALS = ['destructive', 'writes', 'never'] as const;
/** Which of a connection's tools ask a person before they run. */
export type Approval = (typeof APPROVALS)[number];

/** A slug the service accepts; it prefixes the connection's tools (`<slug>__<tool>`). */
export const SLUG_PATTERN = '^[a-z][a-z0-9-]{0,23}$';

/** An upstream MCP server, as GET /api/v1/connections lists it. The secret itself never comes back. */
export interface Connection {
  id: string;
  name: string;
  slug: string;
  scope: ConnectionScope;
  owner_id: string | null;
  transport: Transport;
  url: string | null;
  command: string | null;
  auth: { kind: AuthKind; header_name: string | null; secret_set: boolean; scopes: string | null };
  gateway: boolean;
  approval: Approval;
  /** The caller's own account at the upstream (OAuth connections sign each person in separately). */
  account: { status: 'not_needed' | 'connected' | 'not_connected'; connected_at: string | null };
  can_edit: boolean;
  created_at: string;
  updated_at: string;
}

/**
 * What POST creates and PATCH changes. PATCH takes every field but `scope` and `transport` (settled at creation),
 * each optional; an absent secret keeps the old one.
 */
export interface ConnectionInput {
  name?: string;
  slug?: string;
  scope?: ConnectionScope;
  transport?: Transport;
  url?: string;
  command?: string;
  auth?: { kind: AuthKind; header_name?: string; secret?: string; scopes?: string };
  gateway?: boolean;
  approval?: Approval;
}

/** A command an administrator may run as a stdio connection. */
export interface AllowedCommand {
  name: string;
  description: string;
}

export type TestResult =
  | {
      ok: true;
      protocol_version: string;
      server: { name: string; version: string };
      tools: number;
      latency_ms: number;
    }
  | { ok: false; error: { code: string; message: string }; connect_url?: string };

/** The MCP tool annotations the page reads; others are kept as they came. */
export interface ToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
  [key: string]: unknown;
}

export interface ConnectionTool {
  /** As the agent sees it: `<slug>__<tool>`. */
  name: string;
  upstream_name: string;
  title: string | null;
  description: string;
  input_schema: Record<string, unknown>;
  annotations: ToolAnnotations;
  /** Held: the upstream changed the tool since it was approved, and it is not offered until approved again. */
  status: 'approved' | 'held';
  asks_first: boolean;
  /** The new definition awaiting approval (held tools); `description` and `input_schema` above are the approved one. */
  changed?: { description: string; input_schema: Record<string, unknown> } | null;
}

/** A call of a connected tool that waits for the person's approval (GET /api/v1/connections/approvals/{id}). */
export interface ToolCallApproval {
  approval_id: string;
  /** As the agent sees it: `<slug>__<tool>`. */
  tool: string;
  /** The name of the connection the tool comes from. */
  server: string;
  arguments: Record<string, unknown>;
}

const BASE = '/api/v1/connections';
const connectionPath = (id: string) => `${BASE}/${encodeURIComponent(id)}`;

/** The connections endpoints, over a client that carries the credentials. Both web apps use the same ones. */
export function createConnectionsApi(client: ApiClient) {
  return {
    list: (signal?: AbortSignal) => client.request<Connection[]>(BASE, { signal }),
    get: (id: string, signal?: AbortSignal) => client.request<Connection>(connectionPath(id), { signal }),
    commands: (signal?: AbortSignal) => client.request<AllowedCommand[]>(`${BASE}/commands`, { signal }),
    create: (input: ConnectionInput) => client.request<Connection>(BASE, { method: 'POST', body: input }),
    update: (id: string, input: ConnectionInput) =>
      client.request<Connection>(connectionPath(id), { method: 'PATCH', body: input }),
    remove: (id: string) => client.request<void>(connectionPath(id), { method: 'DELETE' }),

    test: (id: string) => client.request<TestResult>(`${connectionPath(id)}/test`, { method: 'POST' }),

    /** Where to send the browser to sign in at the upstream; it comes back to `returnTo` afterwards. */
    connectAccount: (id: string, returnTo: string) =>
      client.request<{ authorization_url: string }>(`${connectionPath(id)}/account`, {
        method: 'POST',
        body: { return_to: returnTo },
      }),
    disconnectAccount: (id: string) => client.request<void>(`${connectionPath(id)}/account`, { method: 'DELETE' }),

    tools: (id: string, signal?: AbortSignal) =>
      client.request<ConnectionTool[]>(`${connectionPath(id)}/tools`, { signal }),
    approveTool: (id: string, upstreamName: string) =>
      client.request<ConnectionTool>(`${connectionPath(id)}/tools/${encodeURIComponent(upstreamName)}/approve`, {
        method: 'POST',
      }),

    /** A call the agent made that waits for the caller's approval; 404 once it expired (or is not theirs). */
    approval: (approvalId: string, signal?: AbortSignal) =>
      client.request<ToolCallApproval>(`${BASE}/approvals/${encodeURIComponent(approvalId)}`, { signal }),
    /** Approved, the same call (same tool and arguments) by the caller runs once, within 15 minutes. */
    decideApproval: (approvalId: string, approve: boolean) =>
      client.request<ToolCallApproval & { approved: boolean }>(`${BASE}/approvals/${encodeURIComponent(approvalId)}`, {
        method: 'POST',
        body: { approve },
      }),
  };
}

export type ConnectionsApi = ReturnType<typeof createConnectionsApi>;
