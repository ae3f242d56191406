import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { randomUUID } from 'node:crypto';
import {
  ElicitResultSchema,
  ErrorCode,
  ListToolsRequestSchema,
  LoggingLevelSchema,
  McpError,
  type ServerCapabilities,
  UrlElicitationRequiredError,
} from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { z } from 'zod';
import type { Caller } from '../ports/caller.js';
import {
  CONVERSATION_RESOURCE,
  CatalogError,
  INSTRUCTIONS,
  type McpServerDeps,
  PROMPTS,
  SERVER_CAPABILITIES,
  SERVER_INFO,
  SERVER_INFO_RESOURCE,
  VIEW_RESOURCE,
  callTool,
  rendersViews,
  listTools,
  toolConfig,
} from './catalog.js';
import { APPROVAL_SCHEMA, callGatewayTool } from './connected.js';
import { VIEW_META } from './apps.js';
import { registerPublishedWorkflows } from './published.js';
import type { ToolRefusal } from './tools.js';

export { type McpServerDeps, NOT_FOUND_DATA, SERVER_CAPABILITIES, SERVER_INFO } from './catalog.js';

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

const callerOf = (extra: { authInfo?: AuthInfo }): Caller | undefined =>
  extra.authInfo?.extra?.caller as Caller | undefined;

/** The methods the registrations answer; the others (initialize, ping, logging/setLevel) are each session's own. */
const SHARED_METHODS = new Set([
  'tools/list',
  'tools/call',
  'prompts/list',
  'prompts/get',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'completion/complete',
]);

/** The answer of a server to a method it does not know, as the SDK words it (`Protocol._onrequest`). */
function methodNotFound(): Error {
  return Object.assign(new Error('Method not found'), { code: ErrorCode.MethodNotFound });
}

/** The SDK's logging levels by severity, as each of its servers builds them (`Server.LOG_LEVEL_SEVERITY`). */
const LOG_LEVEL_SEVERITY: ReadonlyMap<string, number> = new Map(
  LoggingLevelSchema.options.map((level, index) => [level, index]),
);

/** The session a shared handler serves, set on the request's `extra` by the session's own server. */
const SESSION = Symbol('mcp session');
type InSession = { [SESSION]?: Server };

/** What every session's server answers with: the handlers of one server holding every registration. */
interface SharedHandlers {
  handlers: Map<string, RequestHandler>;
  capabilities: ServerCapabilities;
}

const sharedByDeps = new WeakMap<McpServerDeps, SharedHandlers>();

/**
 * The MCP core: one factory for the official SDK server that every wire adapts, one per session or connection.
 * Tools run through the executor (and so through the policy point); `tools/list` shows each caller only the tools
 * it may see.
 *
 * The caller travels with each request (AuthInfo), so what answers requests is the same for every session: one
 * `McpServer` holds the registrations (and keeps them current as workflows are published), and each session gets a
 * bare SDK `Server` that answers with its handlers. A session costs the protocol state alone, not a copy of every
 * tool, prompt and resource registration (about a fifth of the memory).
 *
 * @param fallbackCaller who the requests are from when the transport carries no identity (stdio).
 */
export function createMcpServer(deps: McpServerDeps, fallbackCaller?: Caller): Server {
  let shared = sharedByDeps.get(deps);
  if (!shared) {
    shared = sharedHandlers(deps);
    sharedByDeps.set(deps, shared);
  }
  const server = new Server(SERVER_INFO, {
    capabilities: shared.capabilities,
    instructions: INSTRUCTIONS,
    jsonSchemaValidator: validator,
  });
  const fallback = fallbackCaller && authInfoFor(fallbackCaller);
  // The session's own handlers (initialize, logging/setLevel) answer bad params as such too.
  answerBadParamsAsInvalid(server);
  // The shared handlers are reached through the server's fallback rather than copied into its own table: one
  // closure per session instead of a table of them. Tool calls log through their session; a connection without
  // identity speaks for its one caller.
  server.fallbackRequestHandler = (request, extra) => {
    const handler = SHARED_METHODS.has(request.method) ? shared.handlers.get(request.method) : undefined;
    if (!handler) throw methodNotFound();
    const context = extra as { authInfo?: AuthInfo } & InSession;
    context[SESSION] = server;
    if (fallback) context.authInfo ??= fallback;
    return handler(request, context) as ReturnType<NonNullable<Server['fallbackRequestHandler']>>;
  };
  // A table the SDK builds per server and only ever reads: one for all.
  (server as unknown as { LOG_LEVEL_SEVERITY: unknown }).LOG_LEVEL_SEVERITY = LOG_LEVEL_SEVERITY;
  // The registrations follow the published workflows; each session tells its client that the list changed.
  const stopListening = deps.published?.subscribe(() => {
    if (server.transport) server.sendToolListChanged().catch(() => undefined);
  });
  if (stopListening) {
    const previous = server.onclose;
    server.onclose = () => {
      stopListening();
      previous?.();
    };
  }
  return server;
}

function sharedHandlers(deps: McpServerDeps): SharedHandlers {
  const registry = new McpServer(SERVER_INFO, {
    capabilities: SERVER_CAPABILITIES,
    instructions: INSTRUCTIONS,
    jsonSchemaValidator: validator,
  });
  for (const tool of deps.executor.tools) {
    registry.registerTool(tool.name, toolConfig(tool), (args: unknown, extra) =>
      callTool(deps, tool, args, callerOf(extra), {
        signal: extra.signal,
        apps: viewsFor(deps, extra),
        log: (level, data) =>
          (extra as InSession)[SESSION]?.sendLoggingMessage({ level, logger: tool.name, data }, extra.sessionId) ??
          Promise.resolve(),
        ...(extra.authInfo && { onRefusal: refusalListeners.get(extra.authInfo) }),
      }),
    );
  }
  // Replaces the SDK's list so that each caller sees only the tools it may use.
  registry.server.setRequestHandler(ListToolsRequestSchema, async (_request, extra) => ({
    tools: await listTools(deps, callerOf(extra), viewsFor(deps, extra)),
  }));
  if (deps.published)
    registerPublishedWorkflows(registry, deps.published, (extra) => callerOf(extra as { authInfo?: AuthInfo }));
  registerResources(registry, deps);
  registerPrompts(registry, deps);
  serveGatewayTools(registry, deps);
  answerBadParamsAsInvalid(registry.server);
  return { handlers: requestHandlersOf(registry.server), capabilities: capabilitiesOf(registry.server) };
}

/** Whether the session's client renders this server's MCP App views (it announced the extension at initialize). */
function viewsFor(deps: McpServerDeps, extra: unknown): boolean {
  return rendersViews(deps, (extra as InSession)[SESSION]?.getClientCapabilities());
}

/** The SDK keeps a server's request handlers in a private map: the one place to share or wrap them. */
function requestHandlersOf(server: Server): Map<string, RequestHandler> {
  return (server as unknown as { _requestHandlers: Map<string, RequestHandler> })._requestHandlers;
}

/** What a server advertises once everything is registered (the SDK adds what each registration needs). */
function capabilitiesOf(server: Server): ServerCapabilities {
  return (server as unknown as { getCapabilities(): ServerCapabilities }).getCapabilities();
}

/**
 * Calls of connected servers' tools (gateway mode) go to the executor before the SDK's own `tools/call`, which
 * knows only the tools registered on it. A tool that asks first is put to the client's user by elicitation; an
 * account the caller has not connected is a URL elicitation (`URLElicitationRequiredError`) naming where.
 */
function serveGatewayTools(server: McpServer, deps: McpServerDeps): void {
  const handlers = requestHandlersOf(server.server);
  const builtIn = handlers.get('tools/call')!;
  handlers.set('tools/call', async (request, extra) => {
    const { params } = request as { params?: { name?: unknown; arguments?: unknown } };
    const context = extra as RequestExtra;
    const result = await callGatewayTool(deps.executor, callerOf(context), params?.name, params?.arguments, {
      signal: context.signal,
      ask: async (message) => {
        const answer = await context
          .sendRequest(
            { method: 'elicitation/create', params: { mode: 'form', message, requestedSchema: APPROVAL_SCHEMA } },
            ElicitResultSchema,
            { timeout: 10 * 60_000 },
          )
          .catch(() => undefined);
        return answer?.action === 'accept' && answer.content?.approve === true;
      },
      accountRequired: (error) => {
        throw new UrlElicitationRequiredError(
          [{ mode: 'url', url: error.connectUrl, message: error.message, elicitationId: randomUUID() }],
          error.message,
        );
      },
    });
    return result ?? builtIn(request, extra);
  });
}

type RequestExtra = {
  authInfo?: AuthInfo;
  signal: AbortSignal;
  sendRequest: (
    request: { method: string; params: Record<string, unknown> },
    schema: typeof ElicitResultSchema,
    options: { timeout: number },
  ) => Promise<{ action: string; content?: Record<string, unknown> }>;
};

type RequestHandler = (request: unknown, extra: unknown) => Promise<unknown>;

/**
 * This SDK validates a request's params with its schema inside the handler it registers, and answers a failure
 * (a zod error, or `new URL` refusing a resource URI) as -32603 Internal error: the client's mistake reported as
 * the server's. JSON-RPC says -32602 Invalid params. Wraps every handler registered by now (all of them: the
 * factory registers everything up front) so that those two failures are answered as such; the SDK keeps its
 * handlers in a private map, the one place to reach them.
 */
function answerBadParamsAsInvalid(server: Server): void {
  const handlers = requestHandlersOf(server);
  for (const [method, handler] of handlers) {
    handlers.set(method, async (request, extra) => {
      try {
        return await handler(request, extra);
      } catch (error) {
        if (error instanceof Error && Array.isArray((error as { issues?: unknown }).issues))
          throw new McpError(ErrorCode.InvalidParams, `Invalid params: ${error.message}`);
        if ((error as { code?: unknown }).code === 'ERR_INVALID_URL')
          throw new McpError(ErrorCode.InvalidParams, 'Invalid params: the URI is not a valid URI');
        throw error;
      }
    });
  }
}

/** Catalog errors as this SDK's protocol errors (their code reaches the client). */
function asMcpError(error: unknown): unknown {
  return error instanceof CatalogError ? new McpError(error.code, error.message, error.data) : error;
}

function registerResources(server: McpServer, deps: McpServerDeps): void {
  const info = SERVER_INFO_RESOURCE;
  server.registerResource(info.name, info.uri, info.metadata, (uri) => info.read(deps, uri.href));
  if (deps.views) {
    for (const view of VIEW_RESOURCE.resources) {
      const { uri, name, page: _, ...metadata } = view;
      server.registerResource(name, uri, { ...metadata, _meta: VIEW_META }, (url) =>
        VIEW_RESOURCE.read(deps, url.href).catch((error: unknown) => {
          throw asMcpError(error);
        }),
      );
    }
    // The views are listed only to clients that render them.
    const handlers = requestHandlersOf(server.server);
    const list = handlers.get('resources/list')!;
    const viewUris = new Set<string>(VIEW_RESOURCE.resources.map((r) => r.uri));
    handlers.set('resources/list', async (request, extra) => {
      const listed = (await list(request, extra)) as { resources: { uri: string }[] };
      if (viewsFor(deps, extra)) return listed;
      return { ...listed, resources: listed.resources.filter((r) => !viewUris.has(r.uri)) };
    });
  }
  const conversation = CONVERSATION_RESOURCE;
  server.registerResource(
    conversation.name,
    new ResourceTemplate(conversation.template, { list: (extra) => conversation.list(deps, callerOf(extra)) }),
    conversation.metadata,
    (uri, variables, extra) =>
      conversation.read(deps, uri.href, String(variables.conversation_id), callerOf(extra)).catch((error: unknown) => {
        throw asMcpError(error);
      }),
  );
}

function registerPrompts(server: McpServer, deps: McpServerDeps): void {
  for (const prompt of PROMPTS) {
    const { title, description } = prompt;
    const argsSchema: z.ZodRawShape = prompt.argsSchema.shape;
    server.registerPrompt(prompt.name, { title, description, argsSchema }, (args, extra) =>
      prompt.get(deps, args, callerOf(extra)).catch((error: unknown) => {
        throw asMcpError(error);
      }),
    );
  }
}
