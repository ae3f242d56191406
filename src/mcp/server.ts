import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { ErrorCode, ListToolsRequestSchema, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { z } from 'zod';
import { CommonErrorCode, InternalError, UnauthorizedError, toAppError } from '../errors.js';
import { type Caller, CallerErrorCode } from '../ports/caller.js';
import { subjectOf } from '../ports/subjects.js';
import type { ConversationsService } from '../modules/conversations/index.js';
import { SERVICE_NAME, SERVICE_VERSION } from '../version.js';
import type { McpPolicy } from './policy.js';
import { type PublishedWorkflows, describePublished, registerPublishedWorkflows } from './published.js';
import { type ToolDefinition, type ToolExecutor, type ToolRefusal, objectSchema, refusalResult } from './tools.js';

export const SERVER_INFO = { name: SERVICE_NAME, version: SERVICE_VERSION, title: 'Agent Service' };

/** What every wire advertises (the spec's initialize response). */
export const SERVER_CAPABILITIES = {
  logging: {},
  tools: { listChanged: true },
  resources: { subscribe: false, listChanged: true },
  prompts: { listChanged: true },
};

const INSTRUCTIONS =
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
}

/** Building a server is dominated by a fresh Ajv instance; one shared validator makes it cheap. */
const validator = new AjvJsonSchemaValidator();

/** The caller travels with each request as AuthInfo (transports set it), so one server can serve many callers. */
export function authInfoFor(caller: Caller, token = ''): AuthInfo {
  return {
    token,
    clientId: caller.subject,
    scopes: [],
    ...(caller.expiresAt !== undefined && { expiresAt: caller.expiresAt }),
    extra: { caller },
  };
}

/** Who hears of the refused tool calls of an in-process request, by the request's AuthInfo. */
const refusalListeners = new WeakMap<AuthInfo, (refusal: ToolRefusal) => void>();

/**
 * AuthInfo for an in-process request (the REST-style endpoints) that renders a refused tool call itself: the
 * server tells `onRefusal` of it besides answering with the tool error, so nothing private goes in the answer.
 */
export function authInfoHearingRefusals(caller: Caller, onRefusal: (refusal: ToolRefusal) => void): AuthInfo {
  const authInfo = authInfoFor(caller);
  refusalListeners.set(authInfo, onRefusal);
  return authInfo;
}

function callerFrom(extra: { authInfo?: AuthInfo }, fallback: Caller | undefined): Caller | undefined {
  return (extra.authInfo?.extra?.caller as Caller | undefined) ?? fallback;
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
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: schema(tool.inputSchema),
    ...(tool.outputSchema && { outputSchema: schema(tool.outputSchema) }),
    annotations: { title: tool.title, ...tool.annotations },
  };
}

/**
 * The MCP core: one factory for the official SDK server that every wire adapts. Tools run through the executor
 * (and so through the policy point); `tools/list` shows each caller only the tools it may see.
 *
 * @param fallbackCaller who the requests are from when the transport carries no identity (stdio).
 */
export function createMcpServer(deps: McpServerDeps, fallbackCaller?: Caller): McpServer {
  const server = new McpServer(SERVER_INFO, {
    capabilities: SERVER_CAPABILITIES,
    instructions: INSTRUCTIONS,
    jsonSchemaValidator: validator,
  });
  const unauthenticated = { content: [{ type: 'text' as const, text: 'Authentication required' }], isError: true };

  for (const tool of deps.executor.tools) {
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        inputSchema: objectSchema(tool.inputSchema),
        ...(tool.outputSchema && { outputSchema: objectSchema(tool.outputSchema) }),
        annotations: tool.annotations,
      },
      async (args: unknown, extra) => {
        const caller = callerFrom(extra, fallbackCaller);
        if (!caller) return unauthenticated;
        const outcome = await deps.executor.run(tool, args, caller, {
          signal: extra.signal,
          log: (level, data) => server.sendLoggingMessage({ level, logger: tool.name, data }, extra.sessionId),
        });
        if (outcome.kind === 'completed') return outcome.result;
        if (extra.authInfo) refusalListeners.get(extra.authInfo)?.(outcome);
        return refusalResult(outcome);
      },
    );
  }
  // Replaces the SDK's list so that each caller sees only the tools it may use.
  server.server.setRequestHandler(ListToolsRequestSchema, async (_request, extra) => {
    const caller = callerFrom(extra, fallbackCaller);
    if (!caller) return { tools: [] };
    const visible = new Set(
      await deps.policy.visibleTools(
        caller,
        deps.executor.tools.map((t) => t.name),
      ),
    );
    const tools = deps.executor.tools.filter((t) => visible.has(t.name)).map(describeTool);
    if (!deps.published) return { tools };
    const runnable = await deps.published.runnableBy(caller);
    const published = deps.published.list().filter((w) => runnable.has(w.workflowId));
    return { tools: [...tools, ...published.map(describePublished)] };
  });
  if (deps.published)
    registerPublishedWorkflows(server, deps.published, (extra) =>
      callerFrom(extra as { authInfo?: AuthInfo }, fallbackCaller),
    );

  registerResources(server, deps, fallbackCaller);
  registerPrompts(server, deps, fallbackCaller);
  return server;
}

function registerResources(server: McpServer, deps: McpServerDeps, fallbackCaller: Caller | undefined): void {
  server.registerResource(
    'server-info',
    'agent-service://server',
    {
      title: 'Server information',
      description: 'This server: version, capabilities, tools and transports',
      mimeType: 'application/json',
    },
    (uri) => ({
      contents: [
        {
          uri: uri.href,
          mimeType: 'application/json',
          text: JSON.stringify({ ...SERVER_INFO, capabilities: SERVER_CAPABILITIES, ...deps.describe() }, null, 2),
        },
      ],
    }),
  );

  server.registerResource(
    'conversation',
    new ResourceTemplate('conversation://{conversation_id}', {
      // Lists the caller's own conversations, most recent first.
      list: async (extra) => {
        const caller = callerFrom(extra, fallbackCaller);
        if (!caller) return { resources: [] };
        const conversations = await deps.conversations.list(subjectOf(caller), { offset: 0, limit: 100 });
        return {
          resources: conversations.map((c) => ({
            uri: `conversation://${c.id}`,
            name: c.title,
            description: `${c.messageCount} messages, last active ${c.updatedAt}`,
            mimeType: 'application/json',
          })),
        };
      },
    }),
    { title: 'Conversation', description: 'One of your conversations with its messages', mimeType: 'application/json' },
    async (uri, variables, extra) => {
      const caller = callerFrom(extra, fallbackCaller);
      const id = String(variables.conversation_id);
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
        return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(body, null, 2) }] };
      } catch (error) {
        const appError = toAppError(error);
        // What the caller may not see does not exist for them: the MCP "resource not found" error.
        if (appError.status === 404 || appError.status === 403) {
          throw new McpError(RESOURCE_NOT_FOUND, appError.message, { uri: uri.href });
        }
        throw appError.expose ? appError : internal(error);
      }
    },
  );
}

/**
 * A request without a caller: every transport sets one, so only a wiring mistake gets here. The SDK answers this,
 * like any error whose `code` is not a JSON-RPC number (an AppError's is a string), with -32603 and the message.
 */
function unauthenticated(): UnauthorizedError {
  return new UnauthorizedError('Authentication required', { code: CallerErrorCode.InvalidToken });
}

/** A failure whose details stay here: the client reads "Internal error". */
function internal(cause: unknown): InternalError {
  return new InternalError('Internal error', { code: CommonErrorCode.Internal, cause });
}

/** The MCP specification's error code for a resource that does not exist. */
const RESOURCE_NOT_FOUND = -32002;

/** JSON-RPC error data of a prompt argument naming nothing the caller may see; REST-style callers get a 404. */
export const NOT_FOUND_DATA = { status: 404 } as const;

/**
 * A prompt argument the caller got wrong (a conversation that does not exist or is not theirs) is invalid params,
 * -32602, not an internal error; anything else stays internal and keeps its details to itself.
 */
function promptArgumentError(thrown: unknown): McpError | InternalError {
  const error = toAppError(thrown);
  if (error.status >= 500 || !error.expose) return internal(thrown);
  return new McpError(ErrorCode.InvalidParams, error.message, error.status === 404 ? NOT_FOUND_DATA : undefined);
}

// Built once: every session registers the prompts.
const SUMMARIZE_ARGS = { conversation_id: z.string().min(1).max(64).describe('The conversation to summarize') };
const RESEARCH_ARGS = {
  topic: z.string().min(1).max(500).describe('What to research'),
  depth: z.enum(['brief', 'thorough']).optional().describe('brief (default) or thorough'),
};

function registerPrompts(server: McpServer, deps: McpServerDeps, fallbackCaller: Caller | undefined): void {
  server.registerPrompt(
    'summarize_conversation',
    {
      title: 'Summarize a conversation',
      description: 'A request to summarize one of your conversations, with its transcript',
      argsSchema: SUMMARIZE_ARGS,
    },
    async ({ conversation_id }, extra) => {
      const caller = callerFrom(extra, fallbackCaller);
      if (!caller) throw unauthenticated();
      const conversation = await deps.conversations
        .access(subjectOf(caller), conversation_id)
        .catch((error: unknown) => {
          throw promptArgumentError(error);
        });
      const transcript = (await deps.conversations.messages(conversation.id))
        .filter((m) => m.role === 'user' || m.role === 'assistant')
        .map((m) => `${m.role}: ${m.content}`)
        .join('\n');
      return {
        description: `Summarize "${conversation.title}"`,
        messages: [
          {
            role: 'user',
            content: {
              type: 'text',
              text: `Summarize this conversation in a few sentences, then list any open questions.\n\n${transcript}`,
            },
          },
        ],
      };
    },
  );

  server.registerPrompt(
    'research_topic',
    {
      title: 'Research a topic',
      description: 'Ask the agent to research a topic with its search tool and report with sources',
      argsSchema: RESEARCH_ARGS,
    },
    ({ topic, depth }) => ({
      description: `Research ${topic}`,
      messages: [
        {
          role: 'user',
          content: {
            type: 'text',
            text:
              `Research "${topic}" using search_web. ` +
              (depth === 'thorough'
                ? 'Search several angles, compare the sources and report in detail, citing every source.'
                : 'Give a brief answer in a few sentences and cite your sources.'),
          },
        },
      ],
    }),
  );
}
