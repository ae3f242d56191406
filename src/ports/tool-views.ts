import type { AppError } from '../errors.js';
import type { Caller } from './caller.js';

/** A tool with an MCP App view, as a web host of this service (the playground) lists it for its user. */
export interface ToolViewEntry {
  tool: string;
  title: string;
  resource_uri: string;
  /** The workflow a published workflow's tool runs (null for the service's own tools). */
  workflow_id: string | null;
  /** The view's page under the host's listener, relative to its root (`views/workflow-run.html`). */
  page: string;
}

/** What a view's tool call came to: its MCP result, or the policy point's refusal (403, 429, 503). */
export type ViewCallOutcome = { kind: 'completed'; result: unknown } | { kind: 'refused'; error: AppError };

/**
 * The MCP App views as a web host of this service needs them: which of the caller's tools show in one, the calls a
 * view makes (only the tools views take part in, as the caller), and each view's page.
 */
export interface ToolViews {
  toolViews(caller: Caller): Promise<ToolViewEntry[]>;
  /** Undefined for a tool no view may call. */
  callFromView(caller: Caller, name: string, args: unknown, signal: AbortSignal): Promise<ViewCallOutcome | undefined>;
  viewPage(page: string): Promise<string | undefined>;
}
