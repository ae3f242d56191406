import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { ConflictError, ForbiddenError } from '../errors.js';
import type { Caller } from './caller.js';

/** The server a connected tool comes from, as listings show it. */
export interface ConnectedServer {
  id: string;
  slug: string;
  name: string;
  transport: 'streamable_http' | 'sse' | 'stdio';
  /** Where it is served (HTTP transports); null for a stdio server. */
  url: string | null;
}

/**
 * A tool of a connected MCP server, as the service offers it beside its own: under a name that shows its server
 * (`<slug>__<tool>`), with the upstream's schemas and annotations as approved (pinned) for the connection.
 */
export interface ConnectedTool {
  name: string;
  upstreamName: string;
  title?: string;
  description: string;
  /** JSON Schema of the arguments (an object schema). */
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations: ToolAnnotations;
  server: ConnectedServer;
  /** The authorization object the policy point checks (`tool:<id>`), tied to its connection by a tuple. */
  object: string;
  /** Whether a human approves each call before it runs (destructive, or any write, per the connection's setting). */
  asksFirst: boolean;
}

/**
 * The tools of connected MCP servers, for the MCP core's executor (the policy point) to offer and run beside the
 * service's own. Implemented by the connections module.
 */
export interface ConnectedTools {
  /** The connected tools offered to the caller; `gateway` narrows them to the connections offered to MCP clients. */
  list(caller: Caller, options?: { gateway?: boolean }): Promise<ConnectedTool[]>;
  /** The offered tool of that name, if it is one. */
  find(caller: Caller, name: string, options?: { gateway?: boolean }): Promise<ConnectedTool | undefined>;
  /**
   * Calls the tool upstream for the caller, with the caller's own account where the connection needs one. Throws
   * `AccountRequiredError` when the caller has not connected that account.
   */
  call(
    caller: Caller,
    tool: ConnectedTool,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<CallToolResult>;
  /**
   * Whether a person approved this very call (the same caller, tool and arguments) and the approval is unused: it
   * is used up. Otherwise a request for approval is recorded, and its id answered.
   */
  approval(
    caller: Caller,
    tool: ConnectedTool,
    args: Record<string, unknown>,
  ): Promise<{ approved: true } | { approvalId: string }>;
}

/** Where a tool result says what the person must do before the call can succeed (`_meta` of the result). */
export const NEEDS_META_KEY = 'agent-service/needs';

/** What the person must do: approve the call, or connect their account at the tool's server. */
export type ToolNeeds =
  | { kind: 'approval'; approval_id: string; tool: string; arguments: Record<string, unknown> }
  | { kind: 'connect'; connection_id: string; connect_url: string; tool: string };

/** What a result says the person must do, if anything. */
export function needsOf(result: { _meta?: Record<string, unknown> }): ToolNeeds | undefined {
  return result._meta?.[NEEDS_META_KEY] as ToolNeeds | undefined;
}

/** Tool names of connected servers hold this between the server's slug and the tool: no built-in name does. */
export const CONNECTED_SEPARATOR = '__';

export const ConnectedToolErrorCode = {
  AccountRequired: 'CONNECTION_ACCOUNT_REQUIRED',
  ApprovalRequired: 'TOOL_APPROVAL_REQUIRED',
} as const;

/** The caller has not connected the account a tool's server needs: where to connect travels with it. */
export class AccountRequiredError extends ForbiddenError {
  constructor(
    readonly connection: ConnectedServer,
    readonly connectUrl: string,
  ) {
    super(`Connect your ${connection.name} account to use its tools: ${connectUrl}`, {
      code: ConnectedToolErrorCode.AccountRequired,
      extra: { connection_id: connection.id, connect_url: connectUrl },
    });
  }
}

/** A call that a human must approve first (a destructive tool, say), and has not. */
export class ApprovalRequiredError extends ConflictError {
  constructor(
    readonly tool: string,
    readonly question: string,
  ) {
    super(question, { code: ConnectedToolErrorCode.ApprovalRequired, extra: { tool } });
  }
}
