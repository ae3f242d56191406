import { randomUUID } from 'node:crypto';
import {
  type AuthInfo,
  CLIENT_CAPABILITIES_META_KEY,
  type CacheHint,
  type CallToolResult,
  type InputRequiredResult,
  type JSONRPCMessage,
  type ListToolsResult,
  McpServer,
  ProtocolError,
  type RequestStateCodec,
  ResourceNotFoundError,
  ResourceTemplate,
  type ServerContext,
  type ServerOptions,
  type Transport,
  UrlElicitationRequiredError,
  createRequestStateCodec,
  inputRequired,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { Caller } from '../ports/caller.js';
import type { PublishedWorkflow } from '../ports/published-workflows.js';
import {
  CONVERSATION_RESOURCE,
  CatalogError,
  INSTRUCTIONS,
  INVALID_PARAMS,
  type McpServerDeps,
  PROMPTS,
  RESOURCE_NOT_FOUND,
  SERVER_CAPABILITIES,
  SERVER_INFO,
  SERVER_INFO_RESOURCE,
  VIEW_RESOURCE,
  admitTool,
  callTool,
  listTools,
  rendersViews,
  toolConfig,
  unauthenticated,
  viewOnlyRefusal,
} from './catalog.js';
import { VIEW_META } from './apps.js';
import { callGatewayTool } from './connected.js';
import { missingScope } from './policy.js';
import { PUBLISHED_ANNOTATIONS, PUBLISHED_INPUT, callPublished, publishedRefusal, waitingRun } from './published.js';
import { type McpTasks, type TaskView, questionRequest, readAnswer } from './tasks.js';
import type { ToolDefinition } from './tools.js';

/** The Tasks extension's identifier, in the server's capabilities and in a client's per-request ones. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/**
 * How long a client may reuse each list (the 2026-07-28 revision's `ttlMs`), and who may share it. The tool list
 * and the resource list depend on who asks (permissions, their conversations): private to the caller. Prompts,
 * templates and the server's description are the same for everyone. The tool list is kept short-lived, so a grant
 * or a revocation shows within a minute.
 */
export const CACHE_HINTS: Record<
  'tools/list' | 'prompts/list' | 'resources/list' | 'resources/templates/list' | 'server/discover',
  Required<CacheHint>
> = {
  'tools/list': { ttlMs: 60_000, cacheScope: 'private' },
  'resources/list': { ttlMs: 0, cacheScope: 'private' },
  'prompts/list': { ttlMs: 3_600_000, cacheScope: 'public' },
  'resources/templates/list': { ttlMs: 3_600_000, cacheScope: 'public' },
  'server/discover': { ttlMs: 3_600_000, cacheScope: 'public' },
};

/** The caller the wire authenticated, carried in the request's AuthInfo (as on the 2025-era servers). */
export function callerOfAuthInfo(authInfo: AuthInfo | undefined): Caller | undefined {
  return authInfo?.extra?.caller as Caller | undefined;
}

/** Catalog errors as this SDK's protocol errors, which encode them as the revision asks. */
function asProtocolError(error: unknown): unknown {
  if (!(error instanceof CatalogError)) return error;
  if (error.code === RESOURCE_NOT_FOUND)
    return new ResourceNotFoundError((error.data as { uri: string }).uri, error.message);
  return new ProtocolError(error.code, error.message, error.data);
}

const rethrown = (error: unknown): never => {
  throw asProtocolError(error);
};

/** What only the 2026-07-28 revision offers: tasks, and questions answered over several round trips. */
export interface ModernDeps {
  tasks?: McpTasks;
  /** Seals the run a question belongs to into the `requestState` the client echoes with its answer. */
  questions?: RequestStateCodec<RunQuestion>;
}

/**
 * What a question's `requestState` carries, and the key its answer comes under: the waiting run that asks (a human
 * step), or the workflow that needs something to start from (a published workflow called without input).
 */
export type RunQuestion = { question: string; key: string; workflowId: string } & (
  { kind: 'answer'; runId: string } | { kind: 'input' }
);

/** What a retry brings: the answer's outcome, the input the workflow may start from, or nothing (a first call). */
type Round = { result: CallToolResult | InputRequiredResult } | { input: string } | undefined;

/**
 * The codec of the questions' `requestState`: HMAC-sealed with the service's key, so that every instance can read
 * what another minted, valid for a day, and bound to the caller who was asked (nobody else can answer with it).
 */
export function questionCodec(key: Uint8Array): RequestStateCodec<RunQuestion> {
  return createRequestStateCodec<RunQuestion>({
    key,
    ttlSeconds: 24 * 60 * 60,
    bind: (ctx) => callerOfAuthInfo(ctx.http?.authInfo)?.subject ?? '',
  });
}

/** The capabilities the client declared on this request (every 2026-07-28 request carries its own). */
function declared(ctx: ServerContext): { extensions?: unknown; elicitation?: unknown } {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const capabilities = envelope?.[CLIENT_CAPABILITIES_META_KEY];
  return typeof capabilities === 'object' && capabilities !== null ? capabilities : {};
}

/** The client opted in to tasks on this request. */
function wantsTask(ctx: ServerContext): boolean {
  const { extensions } = declared(ctx);
  return typeof extensions === 'object' && extensions !== null && Object.hasOwn(extensions, TASKS_EXTENSION);
}

/** The client can put a form to its user (form elicitation: `{}` or one naming `form`). */
function asksForms(ctx: ServerContext): boolean {
  const { elicitation } = declared(ctx);
  if (typeof elicitation !== 'object' || elicitation === null) return false;
  const modes = Object.keys(elicitation);
  return modes.length === 0 || modes.includes('form');
}

/** A task as the reply to the `tools/call` that started it (the extension's CreateTaskResult). */
function taskCreated(task: TaskView): CallToolResult {
  const { inputRequests: _, result: __, error: ___, ...base } = task;
  return { resultType: 'task', ...base } as unknown as CallToolResult;
}

const TaskParams = z.object({ taskId: z.string().min(1).max(64) });

/** The caller of the request a handler serves, as the wire authenticated it: it comes with each request. */
const callerOf = (ctx: { http?: { authInfo?: AuthInfo } }): Caller | undefined => callerOfAuthInfo(ctx.http?.authInfo);

/** How a server of the revision describes itself; the same for every server, whoever it serves. */
function serverOptions(modern: ModernDeps): ServerOptions {
  return {
    capabilities: {
      ...SERVER_CAPABILITIES,
      // Updates of a resource are heard on `subscriptions/listen` (the 2025 era has no subscriptions here).
      resources: { ...SERVER_CAPABILITIES.resources, subscribe: true },
      ...(modern.tasks && { extensions: { [TASKS_EXTENSION]: {} } }),
    },
    instructions: INSTRUCTIONS,
    cacheHints: CACHE_HINTS,
    ...(modern.questions && { requestState: { verify: modern.questions.verify.bind(modern.questions) } }),
  };
}

/**
 * Registers the catalog on a server of the 2026-07-28 revision, on `@modelcontextprotocol/server`: the same
 * catalog as the 2025-era servers (tools through the same executor and policy point, the same resources and
 * prompts). Nothing here belongs to a caller: every handler reads who is asking from its own request, and what
 * that caller may see or call is decided then, by the policy point. So one server answers any caller, one request
 * after another, and a grant or a revocation counts from the next request. Nothing outlives a request either, so
 * any instance serves any modern request: tasks live in the database, and a question's run travels, sealed, in the
 * client's `requestState`.
 */
function serveCatalog(server: McpServer, deps: McpServerDeps, modern: ModernDeps): void {
  const { tasks } = modern;
  const rounds = questionRounds(deps, modern);

  for (const tool of deps.executor.tools) {
    // In a request, its log messages go to the client; a task's call was admitted before the task started.
    const run = (
      args: unknown,
      caller: Caller | undefined,
      signal: AbortSignal,
      how: { ctx?: ServerContext; admitted?: boolean; apps?: boolean },
    ) =>
      callTool(deps, tool, args, caller, {
        signal,
        log: (level, data) => how.ctx?.mcpReq.log(level, data, tool.name) ?? Promise.resolve(),
        admitted: how.admitted === true,
        apps: how.apps === true,
      });
    // A task's reply carries no structured content, which the SDK would refuse against the output schema: tools
    // that may answer with a task are registered without it (tools/list still shows it, from the catalog).
    const config = toolConfig(tool);
    const { outputSchema: _, ...withoutOutput } = config;
    server.registerTool(
      tool.name,
      {
        ...(tasks && tool.longRunning ? withoutOutput : config),
        // A token narrowed to reading is told, before the call, which scope to ask for (step-up: 403).
        scopeChallenge: ({ authInfo }) => {
          const caller = callerOfAuthInfo(authInfo);
          const scope = caller && missingScope(caller, { readOnly: tool.annotations.readOnlyHint === true });
          if (!scope || !caller) return undefined;
          return {
            scopes: [...new Set([...(caller.scopes ?? []), scope])] as [string, ...string[]],
            errorDescription: `calling ${tool.name} needs the ${scope} scope`,
          };
        },
      },
      async (args: unknown, ctx) => {
        const caller = callerOf(ctx);
        const round = await rounds.answered(ctx, caller, tool);
        if (round && 'result' in round) return round.result;
        // A call the policy point refuses is answered at once, as without a task; no task is started for it.
        const apps = rendersViews(deps, declared(ctx));
        if (tasks && caller && tool.longRunning && wantsTask(ctx))
          return (
            viewOnlyRefusal(tool, apps) ??
            (await admitTool(deps, tool, caller)) ??
            taskCreated(
              await tasks
                .start(caller, tool.name, (signal) => run(args, caller, signal, { admitted: true, apps }))
                .catch(rethrown),
            )
          );
        return rounds.ask(await run(args, caller, ctx.mcpReq.signal, { ctx, apps }), ctx, caller);
      },
    );
  }
  const published = deps.published;
  for (const workflow of published?.list() ?? []) {
    const run = (input: string, caller: Caller | undefined, signal: AbortSignal) =>
      callPublished(published!, workflow, input, caller, signal);
    server.registerTool(
      workflow.toolName,
      {
        title: workflow.title,
        description: workflow.description,
        inputSchema: PUBLISHED_INPUT,
        annotations: PUBLISHED_ANNOTATIONS,
      },
      async (args, ctx) => {
        const caller = callerOf(ctx);
        const round = await rounds.answered(ctx, caller, workflow);
        if (round && 'result' in round) return round.result;
        const input = round?.input ?? args.input;
        // Called with nothing to start from: the client's user is asked for it, when it can ask.
        const asked = input === '' && (await rounds.askInput(workflow, ctx, caller));
        if (asked) return asked;
        if (tasks && caller && wantsTask(ctx))
          return (
            (await publishedRefusal(published!, workflow, caller)) ??
            taskCreated(
              await tasks.start(caller, workflow.toolName, (signal) => run(input, caller, signal)).catch(rethrown),
            )
          );
        return rounds.ask(await run(input, caller, ctx.mcpReq.signal), ctx, caller);
      },
    );
  }
  // Each caller sees only the tools it may use, as on the 2025-era servers.
  // The descriptions are plain JSON Schema, the same for both SDKs; only their declared types differ.
  server.server.setRequestHandler('tools/list', async (_request, ctx) => ({
    tools: (await listTools(
      deps,
      callerOf(ctx),
      rendersViews(deps, declared(ctx)),
    )) as unknown as ListToolsResult['tools'],
  }));
  serveGatewayTools(server, deps);

  if (tasks) {
    const owner = (ctx: ServerContext) => callerOf(ctx) ?? rethrown(unauthenticated());
    server.server.setRequestHandler('tasks/get', { params: TaskParams }, ({ taskId }, ctx) =>
      tasks
        .get(owner(ctx), taskId)
        // A finished task's result is a complete tool result of the revision, discriminator included.
        .then((task): Record<string, unknown> => ({
          ...task,
          ...(task.result && { result: { ...task.result, resultType: 'complete' } }),
        }))
        .catch(rethrown),
    );
    // The SDK lifts a request's `inputResponses` out of its params, for every method: they are in the context.
    server.server.setRequestHandler('tasks/update', { params: TaskParams }, async ({ taskId }, ctx) => {
      const responses = ctx.mcpReq.inputResponses;
      if (!responses) throw new ProtocolError(INVALID_PARAMS, 'tasks/update needs inputResponses');
      await tasks.update(owner(ctx), taskId, responses).catch(rethrown);
      return {};
    });
    server.server.setRequestHandler('tasks/cancel', { params: TaskParams }, async ({ taskId }, ctx) => {
      await tasks.cancel(owner(ctx), taskId).catch(rethrown);
      return {};
    });
  }

  const info = SERVER_INFO_RESOURCE;
  server.registerResource(info.name, info.uri, info.metadata, (uri) => info.read(deps, uri.href));
  serveViews(server, deps);
  const conversation = CONVERSATION_RESOURCE;
  server.registerResource(
    conversation.name,
    new ResourceTemplate(conversation.template, { list: (ctx) => conversation.list(deps, callerOf(ctx)) }),
    conversation.metadata,
    (uri, variables, ctx) =>
      conversation.read(deps, uri.href, String(variables.conversation_id), callerOf(ctx)).catch(rethrown),
  );

  for (const prompt of PROMPTS) {
    const { title, description, argsSchema } = prompt;
    server.registerPrompt(prompt.name, { title, description, argsSchema }, (args, ctx) =>
      prompt.get(deps, args, callerOf(ctx)).catch(rethrown),
    );
  }
}

/** The MCP App views as resources, listed only to a request whose client renders them. */
function serveViews(server: McpServer, deps: McpServerDeps): void {
  if (!deps.views) return;
  for (const view of VIEW_RESOURCE.resources) {
    const { uri, name, page: _, ...metadata } = view;
    server.registerResource(name, uri, { ...metadata, _meta: VIEW_META }, (url) =>
      VIEW_RESOURCE.read(deps, url.href).catch(rethrown),
    );
  }
  const handlers = (server.server as unknown as { _requestHandlers: Map<string, ModernHandler> })._requestHandlers;
  const list = handlers.get('resources/list')!;
  const viewUris = new Set<string>(VIEW_RESOURCE.resources.map((r) => r.uri));
  handlers.set('resources/list', async (request, ctx) => {
    const listed = (await list(request, ctx)) as { resources: { uri: string }[] };
    if (rendersViews(deps, declared(ctx))) return listed;
    return { ...listed, resources: listed.resources.filter((r) => !viewUris.has(r.uri)) };
  });
}

/** A JSON-RPC response (a result or an error), told apart without validating the whole message. */
const isResponse = (message: JSONRPCMessage): boolean =>
  !('method' in message) && ('result' in message || 'error' in message);

/**
 * What a server remembers of the request it last answered, besides what the protocol layer forgets when the
 * request's transport closes: the client's identity, seeded from each request's envelope (the deprecated
 * `getClientCapabilities()` / `getClientVersion()`), only where the envelope carries it. Cleared between requests,
 * so a request that does not say who its client is reads nothing rather than the previous request's client.
 */
type ClientIdentity = { _clientCapabilities?: unknown; _clientVersion?: unknown };

/**
 * A server lent to one request at a time (`createMcpHandler` refuses one that is still serving another). It tells
 * the pool when it is free again: when its request's transport closes, or when the handler closes it without having
 * connected it (a `subscriptions/listen` request, a scope challenge, a refused `Mcp-Param-*` header), and whether a
 * handler of it may still be running.
 */
class LentServer extends McpServer {
  /** Lent to a request, not yet given back. */
  lent = false;
  /** The request was answered: its handler has finished, and nothing of it runs on. */
  #answered = false;

  constructor(
    readonly generation: number,
    private readonly giveBack: (server: LentServer, reusable: boolean) => void,
    options: ServerOptions,
  ) {
    super(SERVER_INFO, options);
    this.server.onclose = () => this.giveBack(this, this.#answered);
  }

  override async connect(transport: Transport): Promise<void> {
    this.#answered = false;
    // The protocol layer sends a request's response only once its handler is done; a request whose client went
    // away gets none, and its handler may still run, with the server's transport for its notifications. Such a
    // server is not lent again: a late notification could otherwise reach the next request on it.
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      if (isResponse(message)) this.#answered = true;
      return send(message, options);
    };
    await super.connect(transport);
  }

  override async close(): Promise<void> {
    // Never connected, so no transport closes and nothing ran: free at once.
    if (this.server.transport === undefined) this.giveBack(this, true);
    else await super.close();
  }
}

/** How many idle servers are kept by default: about as many as requests a busy instance has in flight at once. */
export const MODERN_SERVERS_KEPT = 64;

/**
 * The servers of the 2026-07-28 revision, reused from one request to the next instead of built for each: building
 * one registers every tool, resource and prompt, and converts each tool's input schema again for the transport's
 * header checks, which costs more than serving a `tools/call`. A server holds nothing of any caller's (see
 * `serveCatalog`), so one set serves every caller and the number kept does not grow with the number of callers:
 * at most `kept` idle servers are kept (the most recently used first), and any beyond are dropped. Each request
 * gets a server no other request is using; it comes back when its request ends, unless a handler of it may still
 * be running. What the servers register changes only when a workflow is published or withdrawn: then the servers
 * built before are dropped, as they come back.
 */
export class ModernServers {
  readonly #idle: LentServer[] = [];
  #generation = 0;
  #built = 0;
  #closed = false;

  constructor(
    private readonly deps: McpServerDeps,
    private readonly modern: ModernDeps,
    private readonly kept: number = MODERN_SERVERS_KEPT,
  ) {}

  /** A server for one request, no other request's meanwhile. */
  take(): McpServer {
    const server = this.#idle.pop() ?? this.#build();
    server.lent = true;
    return server;
  }

  /** The tools on offer changed: servers built until now offer what no longer is, and serve no more requests. */
  invalidate(): void {
    this.#generation += 1;
    this.#idle.length = 0;
  }

  /** Drops the idle servers; those still lent are dropped as they come back. */
  close(): void {
    this.#closed = true;
    this.#idle.length = 0;
  }

  /** How many servers wait for a request, and how many were built in all. */
  get stats(): { idle: number; built: number } {
    return { idle: this.#idle.length, built: this.#built };
  }

  #build(): LentServer {
    const server = new LentServer(
      this.#generation,
      (lent, reusable) => this.#giveBack(lent, reusable),
      serverOptions(this.modern),
    );
    serveCatalog(server, this.deps, this.modern);
    this.#built += 1;
    return server;
  }

  #giveBack(server: LentServer, reusable: boolean): void {
    if (!server.lent) return;
    server.lent = false;
    Object.assign(server.server as unknown as ClientIdentity, {
      _clientCapabilities: undefined,
      _clientVersion: undefined,
    });
    if (!reusable || this.#closed || server.generation !== this.#generation || this.#idle.length >= this.kept) return;
    this.#idle.push(server);
  }
}

type ModernHandler = (request: unknown, ctx: ServerContext) => Promise<unknown>;

/**
 * Calls of connected servers' tools (gateway mode) reach the executor before the SDK's own `tools/call`. A tool
 * that asks first is not run here (this revision's clients answer questions in a later request, which a call of an
 * upstream tool does not wait for); an account the caller has not connected is a URL elicitation naming where.
 * Which connected tools the caller may use is looked up on each call, so nothing of it is kept on the server.
 */
function serveGatewayTools(server: McpServer, deps: McpServerDeps): void {
  const handlers = (server.server as unknown as { _requestHandlers: Map<string, ModernHandler> })._requestHandlers;
  const builtIn = handlers.get('tools/call')!;
  handlers.set('tools/call', async (request, ctx) => {
    const { params } = request as { params?: { name?: unknown; arguments?: unknown } };
    const result = await callGatewayTool(deps.executor, callerOf(ctx), params?.name, params?.arguments, {
      signal: ctx.mcpReq.signal,
      ask: () => Promise.resolve(false),
      accountRequired: (error) => {
        throw new UrlElicitationRequiredError(
          [{ mode: 'url', url: error.connectUrl, message: error.message, elicitationId: randomUUID() }],
          error.message,
        );
      },
    });
    return result ?? builtIn(request, ctx);
  });
}

/**
 * A workflow that stops at a human node asks its question in the reply (`input_required`), when the client can put
 * a form to its user; the client calls the tool again with the answer, and the run goes on from its checkpoint, on
 * whichever instance the retry reaches. A published workflow called without input asks for it the same way.
 * Clients that cannot ask get the waiting run, which `workflow_resume` answers, as on the 2025-era wires.
 */
function questionRounds(deps: McpServerDeps, modern: ModernDeps) {
  const { questions } = modern;
  const { published } = deps;
  // Answers to `workflow_run` go through the policy point like any call of `workflow_resume`.
  const resumeTool = deps.executor.tools.find((t) => t.name === 'workflow_resume');

  const resume = async (
    via: ToolDefinition | PublishedWorkflow,
    caller: Caller,
    state: { workflowId: string; runId: string },
    answer: string,
    signal: AbortSignal,
  ): Promise<CallToolResult> => {
    if ('toolName' in via)
      return (
        (await publishedRefusal(published!, via, caller)) ??
        published!.resume(caller, state.workflowId, state.runId, answer, signal)
      );
    const args = { workflow_id: state.workflowId, run_id: state.runId, answer };
    return callTool(deps, resumeTool!, args, caller, { signal });
  };

  const ask = async (state: RunQuestion, ctx: ServerContext) =>
    inputRequired({
      inputRequests: { [state.key]: inputRequired.elicit(questionRequest(state.question).params) },
      requestState: await questions!.mint(state, ctx),
    });
  const keyFor = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

  const served = Boolean(questions && published && resumeTool);
  // Questions are for a caller the wire authenticated: the state is sealed to them.
  const enabled = (caller: Caller | undefined): caller is Caller => served && caller !== undefined;
  return {
    /** The tool's result, or its waiting run's question when the client can ask its user. */
    async ask(
      result: CallToolResult,
      ctx: ServerContext,
      caller: Caller | undefined,
    ): Promise<CallToolResult | InputRequiredResult> {
      // A host that renders the run view asks the question in it (and resumes with workflow_resume).
      const inForm = enabled(caller) && asksForms(ctx) && !rendersViews(deps, declared(ctx));
      const waiting = inForm ? waitingRun(result) : undefined;
      if (!waiting) return result;
      const { workflowId, runId, question } = waiting;
      return ask({ kind: 'answer', workflowId, runId, question, key: keyFor('answer') }, ctx);
    },

    /** Asks what a published workflow should start from, when the client can ask its user (else nothing). */
    async askInput(
      workflow: PublishedWorkflow,
      ctx: ServerContext,
      caller: Caller | undefined,
    ): Promise<InputRequiredResult | undefined> {
      if (!enabled(caller) || !asksForms(ctx)) return undefined;
      const question = `What should "${workflow.title}" start from?`;
      return ask({ kind: 'input', workflowId: workflow.workflowId, question, key: keyFor('input') }, ctx);
    },

    /** A retry carrying the answer to a question asked earlier (nothing for a first call). */
    async answered(
      ctx: ServerContext,
      caller: Caller | undefined,
      via: ToolDefinition | PublishedWorkflow,
    ): Promise<Round> {
      if (!enabled(caller)) return undefined;
      const state = ctx.mcpReq.requestState<RunQuestion>();
      if (!state || typeof state !== 'object') return undefined;
      // The state belongs to the call that asked: another workflow's tool does not take it.
      if ('toolName' in via && via.workflowId !== state.workflowId) return undefined;
      const response = readAnswer(ctx.mcpReq.inputResponses?.[state.key]);
      if (response.kind === 'invalid') return { result: await ask(state, ctx) };
      if (state.kind === 'input') {
        if (response.kind === 'answer') return { input: response.answer };
        return {
          result: { content: [{ type: 'text', text: 'Nothing was run: no input was given.' }], isError: false },
        };
      }
      if (response.kind === 'declined') {
        await published!.cancel(caller, state.workflowId, state.runId).catch(() => undefined);
        return {
          result: {
            content: [{ type: 'text', text: 'The question was declined, so the run was stopped.' }],
            structuredContent: { workflow_id: state.workflowId, run_id: state.runId, status: 'cancelled' },
            isError: false,
          },
        };
      }
      return {
        result: await this.ask(await resume(via, caller, state, response.answer, ctx.mcpReq.signal), ctx, caller),
      };
    },
  };
}
