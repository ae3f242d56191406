import type { ToolSpec } from '../../adapters/llm/port.js';
import type { Caller } from '../../ports/caller.js';
import type { ToolCatalog } from '../../../workflows/validate.js';

/** The MCP tools, as workflows see them: always as the caller, through the service's policy point. */
export interface WorkflowTools {
  /** Every tool the service has, and those the caller may call (what validation checks a workflow against). */
  catalog(caller: Caller): Promise<ToolCatalog>;
  /** The tools the caller may use in a workflow, with their input schemas. */
  list(caller: Caller): Promise<ToolSpec[]>;
  /** Calls a tool as the caller: its result as text, and whether it failed (a refusal is a failure too). */
  call(caller: Caller, name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<ToolCallResult>;
  /** Approves a call a connected tool asked a person about: the same call then runs once. */
  approve(caller: Caller, approvalId: string): Promise<void>;
}

export interface ToolCallResult {
  text: string;
  isError: boolean;
  /** The call waits for a person's approval (a connected tool that changes data), under this id. */
  approvalId?: string;
}

/** An MCP resource the caller can read. */
export interface ResourceEntry {
  uri: string;
  name: string;
  description?: string;
  mime_type?: string;
}

/** The MCP resources the caller can read (through the MCP core). */
export type ResourceLister = (caller: Caller) => Promise<ResourceEntry[]>;
