import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Caller } from '../ports/caller.js';
import { AccountRequiredError, CONNECTED_SEPARATOR, type ConnectedTool } from '../ports/connected-tools.js';
import { type ToolExecutor, refusalResult } from './tools.js';

/*
 * Gateway mode: the tools of the shared connections an administrator offers to MCP clients, listed and called on
 * every wire beside the service's own, through the same policy point, each call with the caller's own account.
 */

/** A connected tool as `tools/list` shows it. */
export function describeConnected(tool: ConnectedTool): Tool {
  return {
    name: tool.name,
    ...(tool.title !== undefined && { title: tool.title }),
    description: tool.description,
    inputSchema: tool.inputSchema as Tool['inputSchema'],
    ...(tool.outputSchema !== undefined && { outputSchema: tool.outputSchema as Tool['outputSchema'] }),
    annotations: tool.annotations,
  };
}

/** The gateway tools the caller may see. */
export async function listGatewayTools(executor: ToolExecutor, caller: Caller | undefined): Promise<Tool[]> {
  if (!caller) return [];
  return (await executor.connectedFor(caller, { gateway: true })).map(describeConnected);
}

/** How a wire asks its client's user to approve a call, and tells them where to connect an account. */
export interface GatewayCallContext {
  signal: AbortSignal;
  /** Asks the person at the client; false when the client cannot ask or they decline. */
  ask: (message: string) => Promise<boolean>;
  /** What the wire throws for an account the caller has not connected (a URL elicitation). */
  accountRequired: (error: AccountRequiredError) => never;
}

/**
 * Runs a gateway tool if `name` is one the caller may use; undefined when it is not (the wire then answers as for
 * any unknown tool). A tool that asks first runs once the person approves it.
 */
export async function callGatewayTool(
  executor: ToolExecutor,
  caller: Caller | undefined,
  name: unknown,
  args: unknown,
  context: GatewayCallContext,
): Promise<CallToolResult | undefined> {
  if (!caller || typeof name !== 'string' || !name.includes(CONNECTED_SEPARATOR)) return undefined;
  const tool = await executor.findConnected(caller, name, { gateway: true });
  if (!tool) return undefined;
  const approved =
    !tool.asksFirst ||
    (await context.ask(
      `Allow ${tool.name} (${tool.server.name}) to run with ${JSON.stringify(args ?? {}).slice(0, 500)}?`,
    ));
  try {
    const outcome = await executor.runConnected(tool, args, caller, { signal: context.signal, approved });
    return outcome.kind === 'refused' ? refusalResult(outcome) : outcome.result;
  } catch (error) {
    if (error instanceof AccountRequiredError) context.accountRequired(error);
    throw error;
  }
}

/** The schema of the approval question: one yes/no field. */
export const APPROVAL_SCHEMA = {
  type: 'object' as const,
  properties: { approve: { type: 'boolean' as const, title: 'Approve this call', default: false } },
  required: ['approve'],
};
