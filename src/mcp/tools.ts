import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { AuthzService } from '../adapters/authz/port.js';
import type { ToolSpec } from '../adapters/llm/port.js';
import type { WebSearch } from '../adapters/search/port.js';
import { type AppError, toAppError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { ChatTurnService } from '../modules/agent/index.js';
import type { WorkflowRuns } from '../modules/builder/index.js';
import type { Caller } from '../ports/caller.js';
import {
  AccountRequiredError,
  CONNECTED_SEPARATOR,
  type ConnectedTool,
  type ConnectedTools,
  NEEDS_META_KEY,
  type ToolNeeds,
} from '../ports/connected-tools.js';
import { subjectOf } from '../ports/subjects.js';
import type { PublishedWorkflows } from '../ports/published-workflows.js';
import type { ConversationsService } from '../modules/conversations/index.js';
import { type ToolUi, isAppOnly } from './apps.js';
import { PUBLISHED_INPUT, callPublished } from './published.js';
import type { McpMetrics } from './metrics.js';
import type { McpPolicy } from './policy.js';

export type LogLevel = 'debug' | 'info' | 'notice' | 'warning' | 'error' | 'critical' | 'alert' | 'emergency';

/** The services tools work with, shared by every call. */
export interface ToolServices {
  logger: Logger;
  authz: AuthzService;
  conversations: ConversationsService;
  search: WebSearch;
  /** Chat turns with the agent (the agent itself calls tools, so it is reached late-bound through this). */
  chat: ChatTurnService;
  /** Runs of builder workflows (whose agents call tools in turn, so reached late-bound through this). */
  workflows: Pick<WorkflowRuns, 'start' | 'resume' | 'complete' | 'watch' | 'cancelOwn'>;
}

/** What a tool handler receives besides its arguments. */
export interface ToolContext extends ToolServices {
  caller: Caller;
  /** The caller's authorization subject (`user:<id>` or `service_principal:<id>`). */
  subject: string;
  signal: AbortSignal;
  /** Sends an MCP log notification to the client, if its chosen level lets it through. */
  log: (level: LogLevel, data: unknown) => Promise<void>;
}

export interface ToolDefinition<Shape extends z.ZodRawShape = z.ZodRawShape> {
  name: string;
  title: string;
  description: string;
  inputSchema: Shape;
  outputSchema?: z.ZodRawShape;
  annotations: ToolAnnotations;
  /** Whether the agent may call it from its tool loop (not the tools that run the agent themselves). */
  forAgent: boolean;
  /** Whether a client that supports tasks (2026-07-28 Tasks extension) gets a task to poll rather than a wait. */
  longRunning?: boolean;
  /** MCP Apps: the view its results show in, and whether only a view may call it. */
  ui?: ToolUi;
  handler: (args: z.output<z.ZodObject<Shape>>, context: ToolContext) => Promise<CallToolResult>;
}

const NO_LOG: ToolContext['log'] = () => Promise.resolve();

/**
 * What one call's handler receives. A call without a signal of its own (a REST call) gets one only if its tool asks:
 * most never do, and an abort controller is among the dearer objects of a call.
 */
class CallContext implements ToolContext {
  readonly logger: ToolServices['logger'];
  readonly authz: ToolServices['authz'];
  readonly conversations: ToolServices['conversations'];
  readonly search: ToolServices['search'];
  readonly chat: ToolServices['chat'];
  readonly workflows: ToolServices['workflows'];
  readonly subject: string;
  readonly log: ToolContext['log'];
  #signal: AbortSignal | undefined;

  constructor(
    services: ToolServices,
    readonly caller: Caller,
    options: { signal?: AbortSignal; log?: ToolContext['log'] },
  ) {
    this.logger = services.logger;
    this.authz = services.authz;
    this.conversations = services.conversations;
    this.search = services.search;
    this.chat = services.chat;
    this.workflows = services.workflows;
    this.subject = subjectOf(caller);
    this.log = options.log ?? NO_LOG;
    this.#signal = options.signal;
  }

  get signal(): AbortSignal {
    return (this.#signal ??= new AbortController().signal);
  }
}

/** Identity function that keeps a tool's argument types tied to its schema. */
export function defineTool<Shape extends z.ZodRawShape>(tool: ToolDefinition<Shape>): ToolDefinition {
  return tool as unknown as ToolDefinition;
}

/**
 * A refused call: the caller may not call the tool (403), or not now (429: over its tool-call budget, or the
 * tool's own upstream limit), with Retry-After and the rate-limit headers. Each wire renders it: an HTTP 403/429
 * on the REST-style endpoints, a tool error (`isError`) on MCP. It never travels inside a tool result.
 */
export interface ToolRefusal {
  kind: 'refused';
  tool: string;
  /** 403 not permitted, 429 not now, 503 the decision could not be made (the authorization service is away). */
  status: 403 | 429 | 503;
  /** Why, with its code, message and headers. */
  error: AppError;
}

/** What running a tool comes to: its result (a tool error included), or a refusal of the call. */
export type ToolOutcome = { kind: 'completed'; result: CallToolResult } | ToolRefusal;

/** The id of a connected tool's authorization object (`tool:<id>`), as the policy point takes tool names. */
const objectIdOf = (tool: ConnectedTool): string => tool.object.slice('tool:'.length);

const objects = new WeakMap<z.ZodRawShape, z.ZodObject>();

/** A published workflow's arguments as the model is offered them. */
const PUBLISHED_PARAMETERS = (() => {
  const { $schema: _, ...schema } = z.toJSONSchema(PUBLISHED_INPUT, { io: 'input' }) as Record<string, unknown>;
  return schema;
})();

/**
 * A tool's argument shape as one object schema, built once. Every MCP session registers every tool, and the SDK
 * turns a bare shape into a new object schema at registration and again on every call: handing it (and every
 * other caller) the finished schema keeps both off the heap and off the hot path.
 */
export function objectSchema(shape: z.ZodRawShape): z.ZodObject {
  let schema = objects.get(shape);
  if (!schema) {
    schema = z.object(shape);
    objects.set(shape, schema);
  }
  return schema;
}

export function textResult(text: string, structured?: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text }], ...(structured && { structuredContent: structured }), isError: false };
}

/** Every result says whether the call failed: the spec's tool call result has `isError` as a boolean, always. */
function withIsError(result: CallToolResult): CallToolResult {
  return { ...result, isError: result.isError === true };
}

/** A tool error: the call failed in an expected way, and the message says how. */
export function errorResult(error: AppError, traceId?: string): CallToolResult {
  const hidden = error.status === 503 ? 'A service this call needs is unavailable; retry shortly' : 'Internal error';
  const message = error.expose ? error.message : `${hidden}${traceId ? ` (trace_id ${traceId})` : ''}`;
  return { content: [{ type: 'text', text: message }], isError: true };
}

/** A refusal as MCP reports it: a tool error whose message says why. */
export function refusalResult(refusal: ToolRefusal): CallToolResult {
  return errorResult(refusal.error);
}

/**
 * A call that failed: refused when the answer is "not permitted" or "not now" (403, 429: the policy point's, or a
 * tool's own, such as the model provider's rate limit), otherwise a tool error.
 */
function outcomeOf(tool: ToolDefinition, error: AppError): ToolOutcome {
  if (error.status === 403 || error.status === 429)
    return { kind: 'refused', tool: tool.name, status: error.status, error };
  return { kind: 'completed', result: errorResult(error) };
}

/**
 * Runs tools for every wire and for the agent, always through the policy point: the caller must hold `executor`
 * on the tool, the call counts against the caller's budget, and failures become tool errors that never carry
 * internals. Metrics count every outcome.
 */
export class ToolExecutor {
  readonly #tools = new Map<string, ToolDefinition>();
  /** Each tool's parameters as JSON Schema, computed once: the conversion is costly and the schemas are fixed. */
  readonly #parameters = new Map<string, Record<string, unknown>>();

  constructor(
    private readonly deps: {
      services: ToolServices;
      policy: McpPolicy;
      metrics: McpMetrics;
      /** The tools of connected MCP servers, offered beside the service's own. */
      connected?: ConnectedTools;
      /** Workflows published as tools, which the agent may run (not a workflow's own agents: runs do not nest). */
      published?: PublishedWorkflows;
    },
    tools: ToolDefinition[],
  ) {
    for (const tool of tools) this.#tools.set(tool.name, tool);
  }

  get tools(): ToolDefinition[] {
    return [...this.#tools.values()];
  }

  get(name: string): ToolDefinition | undefined {
    return this.#tools.get(name);
  }

  /**
   * The tools the caller may see, as the model sees them (for the agent's tool loop and the builder): the service's
   * own, then those of the connected servers the caller may use.
   */
  async specsFor(caller: Caller, filter: (tool: ToolDefinition) => boolean = (t) => t.forAgent): Promise<ToolSpec[]> {
    // A tool only views call is never offered to a model, whatever the filter.
    const candidates = this.tools.filter((t) => filter(t) && !isAppOnly(t.ui));
    const visible = new Set(
      await this.deps.policy.visibleTools(
        caller,
        candidates.map((t) => t.name),
      ),
    );
    const own = candidates
      .filter((t) => visible.has(t.name))
      .map((t) => ({ name: t.name, description: t.description, parameters: this.#parametersOf(t) }));
    const connected = (await this.connectedFor(caller)).map((t) => ({
      name: t.name,
      description: `${t.description}\n(A tool of the connected server ${t.server.name}.)`,
      parameters: t.inputSchema,
      server: t.server,
      upstreamName: t.upstreamName,
      annotations: t.annotations,
    }));
    return [...own, ...connected];
  }

  /**
   * The tools the agent offers its model: those of `specsFor`, and the published workflows the caller may run
   * (a workflow's own agents get `specsFor` alone, so runs never nest).
   */
  async agentSpecsFor(caller: Caller): Promise<ToolSpec[]> {
    const specs = await this.specsFor(caller);
    const { published } = this.deps;
    if (!published || published.list().length === 0) return specs;
    const runnable = await published.runnableBy(caller);
    const workflows = published.list().filter((w) => runnable.has(w.workflowId));
    return [
      ...specs,
      ...workflows.map((w) => ({ name: w.toolName, description: w.description, parameters: PUBLISHED_PARAMETERS })),
    ];
  }

  /**
   * The connected servers' tools the caller may see (`viewer` on each tool's object at the policy point);
   * `gateway` narrows them to those offered to MCP clients. None when no server is connected, or when listing fails.
   */
  async connectedFor(caller: Caller, options: { gateway?: boolean } = {}): Promise<ConnectedTool[]> {
    if (!this.deps.connected) return [];
    const tools = await this.deps.connected.list(caller, options).catch((error: unknown) => {
      this.deps.services.logger.warn({ err: error }, 'listing connected tools failed');
      return [];
    });
    if (tools.length === 0) return tools;
    const visible = new Set(await this.deps.policy.visibleTools(caller, tools.map(objectIdOf)));
    return tools.filter((t) => visible.has(objectIdOf(t)));
  }

  /** The connected tool of that name the caller may use, if it is one. */
  async findConnected(caller: Caller, name: string, options: { gateway?: boolean } = {}) {
    if (!this.deps.connected || !name.includes(CONNECTED_SEPARATOR) || this.#tools.has(name)) return undefined;
    return this.deps.connected.find(caller, name, options);
  }

  /**
   * Runs a connected tool for the caller through the policy point (`executor` on its object, the caller's budget,
   * a token narrowed to `mcp:read` only for read-only tools). A tool that asks first runs once `approved` (asked
   * on the wire), or when a person approved this very call beforehand; otherwise an approval is requested and the
   * result says so (`_meta` needs).
   * An account the caller has not connected throws `AccountRequiredError`, for each wire to render.
   */
  async runConnected(
    tool: ConnectedTool,
    args: unknown,
    caller: Caller,
    options: { signal?: AbortSignal; approved?: boolean } = {},
  ): Promise<ToolOutcome> {
    const { policy, metrics } = this.deps;
    try {
      await policy.admitToolCall(caller, objectIdOf(tool), { readOnly: tool.annotations.readOnlyHint === true });
    } catch (thrown) {
      const error = toAppError(thrown);
      metrics.toolCalls.inc({ tool: tool.name, status: error.status === 403 ? 'denied' : 'rate_limited' });
      if (error.status === 403 || error.status === 429 || error.status === 503)
        return { kind: 'refused', tool: tool.name, status: error.status, error };
      return { kind: 'completed', result: errorResult(error) };
    }
    const argsOf = args && typeof args === 'object' && !Array.isArray(args) ? (args as Record<string, unknown>) : {};
    if (tool.asksFirst && !options.approved) {
      const approval = await this.deps.connected!.approval(caller, tool, argsOf);
      if ('approvalId' in approval) {
        metrics.toolCalls.inc({ tool: tool.name, status: 'denied' });
        const needs: ToolNeeds = {
          kind: 'approval',
          approval_id: approval.approvalId,
          tool: tool.name,
          arguments: argsOf,
        };
        return {
          kind: 'completed',
          result: {
            content: [
              {
                type: 'text',
                text:
                  `${tool.name} changes data at ${tool.server.name}: a person must approve each call. Approval ` +
                  `${approval.approvalId} was requested; once it is approved, the same call runs.`,
              },
            ],
            isError: true,
            _meta: { [NEEDS_META_KEY]: needs },
          },
        };
      }
    }
    const result = await this.deps.connected!.call(
      caller,
      tool,
      argsOf,
      options.signal ?? new AbortController().signal,
    );
    metrics.toolCalls.inc({ tool: tool.name, status: result.isError ? 'error' : 'success' });
    return { kind: 'completed', result: withIsError(result) };
  }

  #parametersOf(tool: ToolDefinition): Record<string, unknown> {
    let parameters = this.#parameters.get(tool.name);
    if (!parameters) {
      const { $schema: _, ...schema } = z.toJSONSchema(objectSchema(tool.inputSchema), { io: 'input' }) as Record<
        string,
        unknown
      >;
      parameters = schema;
      this.#parameters.set(tool.name, parameters);
    }
    return parameters;
  }

  /** Validates raw arguments (from the model, say) and runs the tool; a refusal is a tool error the model reads. */
  async execute(
    name: string,
    args: unknown,
    caller: Caller,
    options: { signal?: AbortSignal; log?: ToolContext['log'] } = {},
  ): Promise<CallToolResult> {
    const tool = this.#tools.get(name);
    // A tool only views call is no tool of the model's, whatever it asks for.
    if (tool && isAppOnly(tool.ui)) return { content: [{ type: 'text', text: `Unknown tool ${name}` }], isError: true };
    const workflow = tool ? undefined : this.deps.published?.list().find((w) => w.toolName === name);
    if (workflow) {
      const parsed = PUBLISHED_INPUT.safeParse(args ?? {});
      if (!parsed.success) return { content: [{ type: 'text', text: `Invalid arguments for ${name}` }], isError: true };
      const signal = options.signal ?? new AbortController().signal;
      return callPublished(this.deps.published!, workflow, parsed.data.input, caller, signal);
    }
    if (!tool) {
      const connected = await this.findConnected(caller, name);
      if (!connected) return { content: [{ type: 'text', text: `Unknown tool ${name}` }], isError: true };
      try {
        const outcome = await this.runConnected(connected, args, caller, options);
        return outcome.kind === 'refused' ? refusalResult(outcome) : outcome.result;
      } catch (error) {
        // Where to connect, for the model to pass on to the person.
        if (error instanceof AccountRequiredError) {
          const needs: ToolNeeds = {
            kind: 'connect',
            connection_id: error.connection.id,
            connect_url: error.connectUrl,
            tool: name,
          };
          return {
            content: [{ type: 'text', text: error.message }],
            isError: true,
            _meta: { [NEEDS_META_KEY]: needs },
          };
        }
        throw error;
      }
    }
    const parsed = objectSchema(tool.inputSchema).safeParse(args ?? {});
    if (!parsed.success) {
      const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'arguments'}: ${i.message}`).join('; ');
      return { content: [{ type: 'text', text: `Invalid arguments for ${name}: ${problems}` }], isError: true };
    }
    const outcome = await this.run(tool, parsed.data, caller, options);
    return outcome.kind === 'refused' ? refusalResult(outcome) : outcome.result;
  }

  /**
   * Runs a tool whose arguments were already validated (the MCP server validates with the same schema). A call
   * the policy point refuses is reported as such, for the wire to render; the tool's own failures are results.
   */
  async run(
    tool: ToolDefinition,
    args: unknown,
    caller: Caller,
    options: { signal?: AbortSignal; log?: ToolContext['log'] } = {},
  ): Promise<ToolOutcome> {
    return (await this.admit(tool, caller)) ?? this.runAdmitted(tool, args, caller, options);
  }

  /**
   * The policy point's decision on a call, before it runs (a task is started only for an admitted call): nothing
   * when it may go on, else what `run` answers for it. An admitted call counts against the caller's budget.
   */
  async admit(tool: ToolDefinition, caller: Caller): Promise<ToolOutcome | undefined> {
    const { policy, metrics } = this.deps;
    try {
      await policy.admitToolCall(caller, tool.name, { readOnly: tool.annotations?.readOnlyHint === true });
      return undefined;
    } catch (thrown) {
      const error = toAppError(thrown);
      const status = error.status === 403 ? 'denied' : error.status === 429 ? 'rate_limited' : 'unavailable';
      metrics.toolCalls.inc({ tool: tool.name, status });
      // The policy point could not decide (its store or the authorization service is away): a refusal, not a result.
      if (error.status === 503) return { kind: 'refused', tool: tool.name, status: 503, error };
      return outcomeOf(tool, error);
    }
  }

  /** Runs a call `admit` let through. */
  async runAdmitted(
    tool: ToolDefinition,
    args: unknown,
    caller: Caller,
    options: { signal?: AbortSignal; log?: ToolContext['log'] } = {},
  ): Promise<ToolOutcome> {
    const { services, metrics } = this.deps;
    const context = new CallContext(services, caller, options);
    try {
      const result = withIsError(await tool.handler(args as never, context));
      metrics.toolCalls.inc({ tool: tool.name, status: result.isError ? 'error' : 'success' });
      return { kind: 'completed', result };
    } catch (thrown) {
      const error = toAppError(thrown);
      metrics.toolCalls.inc({ tool: tool.name, status: 'error' });
      if (error.status >= 500) services.logger.error({ err: error.cause ?? error, tool: tool.name }, 'tool failed');
      return outcomeOf(tool, error);
    }
  }
}
