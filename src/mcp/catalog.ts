import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { CommonErrorCode, InternalError, UnauthorizedError, toAppError } from '../errors.js';
import { type Caller, CallerErrorCode } from '../ports/caller.js';
import { subjectOf } from '../ports/subjects.js';
import type { PublishedWorkflows } from '../ports/published-workflows.js';
import type { ConversationsService } from '../modules/conversations/index.js';
import { SERVICE_NAME, SERVICE_VERSION } from '../version.js';
import {
  type AppViews,
  type ToolUi,
  type ToolView,
  VIEW_META,
  VIEW_RESOURCES,
  WORKFLOW_ID_META_KEY,
  announcesApps,
  isAppOnly,
} from './apps.js';
import type { McpPolicy } from './policy.js';
import { describePublished } from './published.js';
import { listGatewayTools } from './connected.js';
import { type LogLevel, type ToolDefinition, type ToolExecutor, objectSchema, refusalResult } from './tools.js';
import type { ToolOutcome, ToolRefusal } from './tools.js';

/**
 * What the service offers over MCP, whichever protocol revision a client speaks: its tools, resources and prompts,
 * each defined once here. The 2025-era server (`server.ts`, on `@modelcontextprotocol/sdk`) and the 2026-07-28
 * server (`modern.ts`, on `@modelcontextprotocol/server`) only register these on their SDK's server, so the two
 * eras cannot drift apart: the same executor (and so the same policy point, limits, metrics and audit) runs every
 * tool call.
 */

export const SERVER_INFO = { name: SERVICE_NAME, version: SERVICE_VERSION, title: 'Agent Service' };

/** What every wire advertises (the spec's initialize response). */
export const SERVER_CAPABILITIES = {
  logging: {},
  tools: { listChanged: true },
  resources: { subscribe: false, listChanged: true },
  prompts: { listChanged: true },
};

export const INSTRUCTIONS =
  'Agent Service: chat with an LLM agent (chat, agent_chat), search (search_web) and read your past conversations ' +
  '(conversation_get, conversation_search, and the conversation:// resources).';

export interface McpServerDeps {
  executor: ToolExecutor;
  policy: McpPolicy;
  conversations: ConversationsService;
  /** Server information resource contents (transports, provider names). */
  describe: () => Record<string, unknown>;
  /** Workflows published as tools of their own (the builder's; none without it). */
  published?: PublishedWorkflows;
  /** The MCP App views this server ships (none without them: tools then name no view). */
  views?: AppViews;
}

/**
 * A protocol-level error for the client (a resource that does not exist, an invalid prompt argument): each era
 * throws it as its SDK's own error type with this code, message and data.
 */
export class CatalogError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'CatalogError';
  }
}

/** The MCP specification's error codes used here and by tasks. */
export const RESOURCE_NOT_FOUND = -32002;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;

/** JSON-RPC error data of a prompt argument naming nothing the caller may see; REST-style callers get a 404. */
export const NOT_FOUND_DATA = { status: 404 } as const;

export const UNAUTHENTICATED_RESULT: CallToolResult = {
  content: [{ type: 'text', text: 'Authentication required' }],
  isError: true,
};

/**
 * A request without a caller: every transport sets one, so only a wiring mistake gets here. The SDK answers this,
 * like any error whose `code` is not a JSON-RPC number (an AppError's is a string), with -32603 and the message.
 */
export function unauthenticated(): UnauthorizedError {
  return new UnauthorizedError('Authentication required', { code: CallerErrorCode.InvalidToken });
}

/** A failure whose details stay here: the client reads "Internal error". */
function internal(cause: unknown): InternalError {
  return new InternalError('Internal error', { code: CommonErrorCode.Internal, cause });
}

const described = new WeakMap<ToolDefinition, Tool>();

/**
 * A tool as `tools/list` shows it: schemas from the same zod shapes that validate the arguments. Converting them
 * costs far more than the rest of a listing, and they never change, so each tool is described once.
 */
function describeTool(tool: ToolDefinition): Tool {
  const known = described.get(tool);
  if (known) return known;
  const schema = (shape: z.ZodRawShape) => {
    const { $schema: _, ...json } = z.toJSONSchema(objectSchema(shape), { io: 'input' }) as Record<string, unknown>;
    return json as Tool['inputSchema'];
  };
  const listed: Tool = {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: schema(tool.inputSchema),
    ...(tool.outputSchema && { outputSchema: schema(tool.outputSchema) }),
    annotations: { title: tool.title, ...tool.annotations },
  };
  described.set(tool, listed);
  return listed;
}

/** What both SDKs register a tool with: its description and the schemas that validate it. */
export function toolConfig(tool: ToolDefinition) {
  return {
    title: tool.title,
    description: tool.description,
    inputSchema: objectSchema(tool.inputSchema),
    ...(tool.outputSchema && { outputSchema: objectSchema(tool.outputSchema) }),
    annotations: tool.annotations,
  };
}

/**
 * The tools this caller may see: the service's own, then the published workflows it may run, then the tools of
 * connected servers offered to MCP clients.
 */
export async function listTools(deps: McpServerDeps, caller: Caller | undefined, apps = false): Promise<Tool[]> {
  if (!caller) return [];
  const offered = apps ? deps.executor.tools : deps.executor.tools.filter((t) => !isAppOnly(t.ui));
  const visible = new Set(
    await deps.policy.visibleTools(
      caller,
      offered.map((t) => t.name),
    ),
  );
  const tools = offered.filter((t) => visible.has(t.name)).map(apps ? describeForApps : describeTool);
  const connected = await listGatewayTools(deps.executor, caller);
  if (!deps.published) return [...tools, ...connected];
  const runnable = await deps.published.runnableBy(caller);
  const published = deps.published.list().filter((w) => runnable.has(w.workflowId));
  return [...tools, ...published.map((w) => describePublished(w, apps)), ...connected];
}

/** Whether a client with these capabilities gets this server's MCP App views (the server ships them, it renders them). */
export const rendersViews = (deps: McpServerDeps, capabilities: unknown): boolean =>
  deps.views !== undefined && announcesApps(capabilities);

const describedForApps = new WeakMap<ToolDefinition, Tool>();

/** A tool as a host that renders views sees it: with its view and who may call it (`_meta.ui`). */
function describeForApps(tool: ToolDefinition): Tool {
  if (!tool.ui) return describeTool(tool);
  let listed = describedForApps.get(tool);
  if (!listed) {
    listed = { ...describeTool(tool), _meta: { ui: tool.ui } };
    describedForApps.set(tool, listed);
  }
  return listed;
}

/** The answer for a tool the client cannot call: one only views call, from a client that renders none. */
export function viewOnlyRefusal(tool: ToolDefinition, apps: boolean): CallToolResult | undefined {
  if (apps || !isAppOnly(tool.ui)) return undefined;
  return { content: [{ type: 'text', text: `Tool ${tool.name} not found` }], isError: true };
}

/**
 * Runs one of the service's tools for the caller through the executor (the policy point). A refused call is a
 * tool error; `onRefusal` hears of it besides, for wires that render refusals themselves.
 */
export async function callTool(
  deps: McpServerDeps,
  tool: ToolDefinition,
  args: unknown,
  caller: Caller | undefined,
  context: {
    /** The request's; a call without one (REST) gets one of its own if its tool asks (see `ToolExecutor.run`). */
    signal?: AbortSignal;
    /** Where the tool's log notifications go; nowhere without one. */
    log?: (level: LogLevel, data: unknown) => Promise<void>;
    onRefusal?: (refusal: ToolRefusal) => void;
    /** The policy point already let this call through (`admitTool`). */
    admitted?: boolean;
    /** The client renders MCP App views (and so may call the tools only views call). */
    apps?: boolean;
  },
): Promise<CallToolResult> {
  if (!caller) return UNAUTHENTICATED_RESULT;
  const viewOnly = viewOnlyRefusal(tool, context.apps === true);
  if (viewOnly) return viewOnly;
  const options = { ...(context.signal && { signal: context.signal }), ...(context.log && { log: context.log }) };
  const outcome = context.admitted
    ? await deps.executor.runAdmitted(tool, args, caller, options)
    : await deps.executor.run(tool, args, caller, options);
  return resultOf(outcome, context.onRefusal);
}

/**
 * Asks the policy point before a call that will run later (a task): nothing when it may run (then `callTool` with
 * `admitted`), else the result the refused call answers with.
 */
export async function admitTool(
  deps: McpServerDeps,
  tool: ToolDefinition,
  caller: Caller,
): Promise<CallToolResult | undefined> {
  const refused = await deps.executor.admit(tool, caller);
  return refused && resultOf(refused);
}

function resultOf(outcome: ToolOutcome, onRefusal?: (refusal: ToolRefusal) => void): CallToolResult {
  if (outcome.kind === 'completed') return outcome.result;
  onRefusal?.(outcome);
  return refusalResult(outcome);
}

/** The `agent-service://server` resource: this server, its version, capabilities, tools and transports. */
export const SERVER_INFO_RESOURCE = {
  name: 'server-info',
  uri: 'agent-service://server',
  metadata: {
    title: 'Server information',
    description: 'This server: version, capabilities, tools and transports',
    mimeType: 'application/json',
  },
  read(deps: McpServerDeps, uri: string) {
    const info = { ...SERVER_INFO, capabilities: SERVER_CAPABILITIES, ...deps.describe() };
    return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(info, null, 2) }] };
  },
};

/** The URI of a conversation as an MCP resource. */
export const conversationUri = (id: string): string => `conversation://${id}`;

/** The `conversation://{conversation_id}` resources: the caller's own conversations. */
export const CONVERSATION_RESOURCE = {
  name: 'conversation',
  template: 'conversation://{conversation_id}',
  metadata: {
    title: 'Conversation',
    description: 'One of your conversations with its messages',
    mimeType: 'application/json',
  },

  /** The caller's conversations, most recent first. */
  async list(deps: McpServerDeps, caller: Caller | undefined) {
    if (!caller) return { resources: [] };
    const conversations = await deps.conversations.list(subjectOf(caller), { offset: 0, limit: 100 });
    return {
      resources: conversations.map((c) => ({
        uri: conversationUri(c.id),
        name: c.title,
        description: `${c.messageCount} messages, last active ${c.updatedAt}`,
        mimeType: 'application/json',
      })),
    };
  },

  /** The conversation a `conversation://` URI names, if it is one. */
  idOf(uri: string): string | undefined {
    const match = /^conversation:\/\/([^/?#]{1,64})$/.exec(uri);
    return match?.[1];
  },

  async read(deps: McpServerDeps, uri: string, id: string, caller: Caller | undefined) {
    if (!caller) throw unauthenticated();
    try {
      const conversation = await deps.conversations.access(subjectOf(caller), id);
      const messages = await deps.conversations.messages(id);
      const body = {
        conversation_id: conversation.id,
        title: conversation.title,
        created_at: conversation.createdAt,
        messages: messages.map((m) => ({ role: m.role, content: m.content, timestamp: m.createdAt })),
      };
      return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(body, null, 2) }] };
    } catch (error) {
      const appError = toAppError(error);
      // What the caller may not see does not exist for them: the MCP "resource not found" error.
      if (appError.status === 404 || appError.status === 403) {
        throw new CatalogError(RESOURCE_NOT_FOUND, appError.message, { uri });
      }
      throw appError.expose ? appError : internal(error);
    }
  },
};

/**
 * Whether the caller may read the resource a URI names (so as to hear of its updates): the server information, or a
 * conversation the caller may see. Anything else does not exist for them.
 */
export async function readableResource(deps: McpServerDeps, uri: string, caller: Caller): Promise<boolean> {
  if (uri === SERVER_INFO_RESOURCE.uri) return true;
  const id = CONVERSATION_RESOURCE.idOf(uri);
  if (id === undefined) return false;
  return deps.conversations.access(subjectOf(caller), id).then(
    () => true,
    (error: unknown) => {
      const status = toAppError(error).status;
      if (status === 404 || status === 403) return false;
      throw error;
    },
  );
}

/**
 * A prompt argument the caller got wrong (a conversation that does not exist or is not theirs) is invalid params,
 * -32602, not an internal error; anything else stays internal and keeps its details to itself.
 */
function promptArgumentError(thrown: unknown): CatalogError | InternalError {
  const error = toAppError(thrown);
  if (error.status >= 500 || !error.expose) return internal(thrown);
  return new CatalogError(INVALID_PARAMS, error.message, error.status === 404 ? NOT_FOUND_DATA : undefined);
}

export type PromptResult = {
  description: string;
  messages: { role: 'user'; content: { type: 'text'; text: string } }[];
};

const userText = (description: string, text: string): PromptResult => ({
  description,
  messages: [{ role: 'user', content: { type: 'text', text } }],
});

/** Built once: every server registers the prompts. */
const SUMMARIZE_ARGS = z.object({
  conversation_id: z.string().min(1).max(64).describe('The conversation to summarize'),
});
const RESEARCH_ARGS = z.object({
  topic: z.string().min(1).max(500).describe('What to research'),
  depth: z.enum(['brief', 'thorough']).optional().describe('brief (default) or thorough'),
});

/** A prompt, defined once for every era: arguments validated by `argsSchema`, then `get` builds the messages. */
export interface PromptDefinition {
  name: string;
  title: string;
  description: string;
  argsSchema: z.ZodObject;
  get(deps: McpServerDeps, args: unknown, caller: Caller | undefined): Promise<PromptResult>;
}

/** Keeps a prompt's `get` typed by its own schema. */
function definePrompt<S extends z.ZodObject>(prompt: {
  name: string;
  title: string;
  description: string;
  argsSchema: S;
  get(deps: McpServerDeps, args: z.output<S>, caller: Caller | undefined): Promise<PromptResult>;
}): PromptDefinition {
  return prompt;
}

export const PROMPTS: PromptDefinition[] = [
  definePrompt({
    name: 'summarize_conversation',
    title: 'Summarize a conversation',
    description: 'A request to summarize one of your conversations, with its transcript',
    argsSchema: SUMMARIZE_ARGS,
    async get(deps, args, caller) {
      if (!caller) throw unauthenticated();
      const conversation = await deps.conversations
        .access(subjectOf(caller), args.conversation_id)
        .catch((error: unknown) => {
          throw promptArgumentError(error);
        });
      const transcript = (await deps.conversations.messages(conversation.id))
        .filter((m) => m.role === 'user' || m.role === 'assistant')
        .map((m) => `${m.role}: ${m.content}`)
        .join('\n');
      return userText(
        `Summarize "${conversation.title}"`,
        `Summarize this conversation in a few sentences, then list any open questions.\n\n${transcript}`,
      );
    },
  }),
  definePrompt({
    name: 'research_topic',
    title: 'Research a topic',
    description: 'Ask the agent to research a topic with its search tool and report with sources',
    argsSchema: RESEARCH_ARGS,
    get(_deps, args) {
      return Promise.resolve(
        userText(
          `Research ${args.topic}`,
          `Research "${args.topic}" using search_web. ` +
            (args.depth === 'thorough'
              ? 'Search several angles, compare the sources and report in detail, citing every source.'
              : 'Give a brief answer in a few sentences and cite your sources.'),
        ),
      );
    },
  }),
];

/**
 * The MCP App views as resources: listed to hosts that render views (`resources/list` adds them), read by anyone
 * who names one (the HTML is the same for everyone and holds nothing of anyone's).
 */
export const VIEW_RESOURCE = {
  resources: VIEW_RESOURCES,
  listed(deps: McpServerDeps, apps: boolean) {
    return apps && deps.views ? VIEW_RESOURCES : [];
  },
  async read(deps: McpServerDeps, uri: string) {
    const html = await deps.views?.html(uri);
    if (html === undefined) throw new CatalogError(RESOURCE_NOT_FOUND, `Resource ${uri} not found`, { uri });
    const { mimeType } = VIEW_RESOURCES.find((r) => r.uri === uri) ?? VIEW_RESOURCES[0];
    return { contents: [{ uri, mimeType, text: html, _meta: VIEW_META }] };
  },
};

/** The tools the caller may use that show in a view, for a web host of this service (the playground) to render. */
export async function toolViews(deps: McpServerDeps, caller: Caller): Promise<ToolView[]> {
  if (!deps.views) return [];
  const tools = await listTools(deps, caller, true);
  return tools.flatMap((tool) => {
    const meta = tool._meta as { ui?: ToolUi; [WORKFLOW_ID_META_KEY]?: string } | undefined;
    const view = VIEW_RESOURCES.find((r) => r.uri === meta?.ui?.resourceUri);
    if (!view) return [];
    const workflowId = meta?.[WORKFLOW_ID_META_KEY];
    return [
      {
        tool: tool.name,
        title: tool.title ?? tool.name,
        resource_uri: view.uri,
        workflow_id: typeof workflowId === 'string' ? workflowId : null,
        page: view.page,
      },
    ];
  });
}

/**
 * A call of one of the service's own tools from the REST-style endpoint, run as the SDK's `tools/call` handler runs
 * it (the arguments validated with the tool's schema, then `callTool`, for a client that renders no views) but
 * without the round trip through the SDK's protocol layer: its JSON-RPC framing, abort controller and message
 * checks cost a REST call about a fifth of its time. Undefined where the SDK's handler must answer: a name that is
 * not one of the service's own tools (a published workflow, a connected server's tool, none), arguments that do not
 * fit (the SDK words that error), or a tool whose results the SDK checks against an output schema.
 */
export async function callOwnTool(
  deps: McpServerDeps,
  caller: Caller,
  name: unknown,
  args: unknown,
): Promise<ToolOutcome | undefined> {
  const tool = typeof name === 'string' ? deps.executor.get(name) : undefined;
  if (!tool || tool.outputSchema) return undefined;
  const parsed = objectSchema(tool.inputSchema).safeParse(args ?? {});
  if (!parsed.success) return undefined;
  let refusal: ToolRefusal | undefined;
  const result = await callTool(deps, tool, parsed.data, caller, { onRefusal: (refused) => (refusal = refused) });
  return refusal ?? { kind: 'completed', result };
}

/**
 * A tool call from a view a web host of this service renders (the playground): only the tools that take part in
 * views (`ui`), through the same executor, policy point, limits and audit as any call, as the caller. Undefined
 * for a tool a view may not call; a refused call is told to `onRefusal` besides its tool error.
 */
export async function callFromView(
  deps: McpServerDeps,
  caller: Caller,
  name: string,
  args: unknown,
  context: { signal: AbortSignal; onRefusal: (refusal: ToolRefusal) => void },
): Promise<CallToolResult | undefined> {
  const tool = deps.executor.get(name);
  if (!tool?.ui || !deps.views) return undefined;
  const parsed = objectSchema(tool.inputSchema).safeParse(args ?? {});
  if (!parsed.success) throw new CatalogError(INVALID_PARAMS, `Invalid arguments for ${name}`);
  return callTool(deps, tool, parsed.data, caller, { ...context, apps: true });
}
