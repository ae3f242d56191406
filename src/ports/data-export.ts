/*
 * The data-export port (right of access and portability): every module that keeps personal data contributes the
 * section of the export that shows it; the data-subject module assembles the export.
 */

export interface ExportedSession {
  session_id: string;
  created_at: string;
  last_accessed: string;
  ip_address: string | null;
}

export interface ExportedConversation {
  conversation_id: string;
  created_at: string;
  message_count: number;
  last_message_at: string | null;
}

export interface ExportedAuditEvent {
  event_id: string;
  event_type: string;
  timestamp: string;
  ip_address: string | null;
}

/** A playground session with its transcript, and the spans and log records of its turns. */
export interface ExportedPlaygroundSession {
  session_id: string;
  name: string;
  created_at: string;
  updated_at: string;
  metadata: Record<string, unknown>;
  messages: object[];
  traces: object[];
  logs: object[];
}

/** A workflow the user created: its current definition, and how many versions it has. */
export interface ExportedWorkflow {
  workflow_id: string;
  name: string;
  version: number;
  version_count: number;
  created_at: string;
  updated_at: string;
  nodes: object[];
  edges: object[];
}

/** An MCP client the user authorised, and what it may do. */
export interface ExportedOAuthGrant {
  grant_id: string;
  client_id: string;
  client_name: string;
  client_uri: string | null;
  redirect_uris: string[];
  scope: string;
  resource: string;
  created_at: string;
  last_used_at: string | null;
}

/** An MCP task the user started: what it ran, how it stands, and what it answered. */
export interface ExportedMcpTask {
  task_id: string;
  tool: string;
  status: 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';
  status_message: string | null;
  created_at: string;
  updated_at: string;
  expires_at: string;
  result: object | null;
  error: object | null;
}

/** A connected MCP server of the user's, or their account at a shared one: never a secret or a token. */
export interface ExportedConnection {
  connection_id: string;
  name: string;
  scope: 'personal' | 'shared';
  transport: string;
  url: string | null;
  auth_kind: string;
  created_at: string | null;
  account_connected_at: string | null;
}

/** The export's sections that other modules contribute, by name. */
export interface ExportSections {
  sessions: ExportedSession[];
  conversations: ExportedConversation[];
  playground_sessions: ExportedPlaygroundSession[];
  workflows: ExportedWorkflow[];
  oauth_grants: ExportedOAuthGrant[];
  mcp_tasks: ExportedMcpTask[];
  mcp_connections: ExportedConnection[];
  audit_log: ExportedAuditEvent[];
}

/** A module's section of a user's data export. */
export type ExportPart = {
  [K in keyof ExportSections]: { readonly section: K; collect(userId: string): Promise<ExportSections[K]> };
}[keyof ExportSections];
