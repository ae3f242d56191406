export type ConnectionTransport = 'streamable_http' | 'sse' | 'stdio';
export type ConnectionAuthKind = 'none' | 'bearer' | 'header' | 'oauth';
/** Which of a connection's tools ask a human before they run. */
export type ConnectionApproval = 'destructive' | 'writes' | 'never';

/** A connected MCP server. */
export interface McpConnectionsTable {
  id: string;
  /** The user whose personal connection it is; '' for a shared one (an administrator's, offered to others). */
  owner_id: string;
  name: string;
  /** What its tools' names start with (`<slug>__<tool>`): unique among shared connections and each user's own. */
  slug: string;
  transport: ConnectionTransport;
  url: string | null;
  /** A stdio server: the name of a command the configuration allows. */
  command: string | null;
  auth_kind: ConnectionAuthKind;
  header_name: string | null;
  /** Sealed: the static bearer token or header value. Never returned. */
  secret: string | null;
  /** OAuth scopes to ask for, space-separated. */
  scopes: string | null;
  /** Sealed JSON: the OAuth client registered for this connection at the upstream's authorization server. */
  oauth_client: string | null;
  /** 1: its tools are offered to the service's own MCP clients too. */
  gateway: number;
  approval: ConnectionApproval;
  pinned_at: string | null;
  created_at: string;
  updated_at: string;
}

/** A user's account at an OAuth-protected connection: their own tokens, sealed. */
export interface McpConnectionAccountsTable {
  connection_id: string;
  user_id: string;
  tokens: string;
  expires_at: string | null;
  connected_at: string;
  updated_at: string;
}

/** A tool's approved definition, and a changed one held until approved. */
export interface McpConnectionToolsTable {
  connection_id: string;
  name: string;
  definition: string | null;
  digest: string | null;
  pending: string | null;
  pending_digest: string | null;
  updated_at: string;
}

/** An OAuth sign-in on its way through the upstream's authorization server. */
export interface McpConnectionSignInsTable {
  state: string;
  connection_id: string;
  user_id: string;
  verifier: string;
  return_to: string | null;
  expires_at: string;
}
