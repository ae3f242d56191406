import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { McpServer as ModernMcpServer, RequestStateCodec } from '@modelcontextprotocol/server';
import type { Broadcast } from '../adapters/broadcast/port.js';
import type { Logger } from '../logger.js';
import type { Caller } from '../ports/caller.js';
import { DirectTransport } from './direct-transport.js';
import { guardTransport } from './guard.js';
import type { McpMetrics } from './metrics.js';
import type * as Modern from './modern.js';
import type { ModernDeps, ModernServers, RunQuestion } from './modern.js';
import type { McpTasks } from './tasks.js';
import { type ToolView, VIEW_RESOURCES } from './apps.js';
import { CatalogError, callFromView, callOwnTool, readableResource, toolViews } from './catalog.js';
import { BadRequestError, CommonErrorCode } from '../errors.js';
import type { McpPolicy } from './policy.js';
import { type McpServerDeps, authInfoFor, authInfoHearingRefusals, createMcpServer } from './server.js';
import type { ToolOutcome, ToolRefusal } from './tools.js';

const RESOURCE_UPDATES = 'mcp-resource-updated';
/** How many resources one listening client may follow. */
const MAX_RESOURCE_SUBSCRIPTIONS = 100;

/**
 * The MCP core every wire adapts: servers for connection-based wires (one per session or connection), and one
 * shared server behind an in-process transport for the REST-style endpoints.
 */
export class McpCore {
  readonly #direct = new DirectTransport();
  #shared: Promise<Server> | undefined;
  #questions: RequestStateCodec<RunQuestion> | undefined;
  #modernServers: ModernServers | undefined;
  #modernModule: typeof Modern | undefined;
  #stopInvalidating: (() => void) | undefined;

  constructor(
    readonly deps: {
      server: McpServerDeps;
      policy: McpPolicy;
      metrics: McpMetrics;
      logger: Logger;
      /** Tasks for the 2026-07-28 revision's clients that opt in to them. */
      tasks?: McpTasks;
      /** The key that seals questions' `requestState` (the same on every instance). */
      requestStateKey?: () => Uint8Array;
      /** Carries resource updates to every instance, where clients listen for them. */
      broadcast?: Broadcast;
      /** How many idle servers of the 2026-07-28 revision are kept for the next requests. */
      modernServersKept?: number;
    },
  ) {}

  get policy(): McpPolicy {
    return this.deps.policy;
  }

  get metrics(): McpMetrics {
    return this.deps.metrics;
  }

  /** A server for one session or connection. */
  createServer(fallbackCaller?: Caller): Server {
    return createMcpServer(this.deps.server, fallbackCaller);
  }

  /**
   * A server of the 2026-07-28 revision for one request, lent until the request ends. It is not built for the
   * caller: each request brings its caller to the handlers, which ask the policy point then, so the same servers
   * answer every caller and the caller the wire names here is not needed.
   */
  createModernServer(_caller?: Caller): ModernMcpServer {
    return this.#modernPool().take();
  }

  /**
   * Loads the 2026-07-28 revision's servers, and with them its SDK package (some 7 MB of heap), on the first request
   * of that revision: an instance that only 2025-era clients use never holds them. Call before `createModernServer`.
   */
  async loadModern(): Promise<void> {
    this.#modernModule ??= await import('./modern.js');
  }

  /** How many servers of the 2026-07-28 revision wait for a request, and how many were built in all. */
  get modernServers(): { idle: number; built: number } {
    return this.#modernServers?.stats ?? { idle: 0, built: 0 };
  }

  /**
   * Built on the first modern request (the published workflows are reachable from then on). What the servers
   * register changes only with the tools on offer; who may see or call what is decided per request, and the
   * connected servers' tools are looked up per call, so neither a tuple nor a connection changes a server.
   */
  #modernPool(): ModernServers {
    if (!this.#modernServers) {
      const modern = this.#modernModule;
      if (!modern) throw new Error('The 2026-07-28 revision is not loaded: await loadModern() first');
      const servers = new modern.ModernServers(this.deps.server, this.#modern(modern), this.deps.modernServersKept);
      this.#stopInvalidating = this.onToolsChanged(() => servers.invalidate());
      this.#modernServers = servers;
    }
    return this.#modernServers;
  }

  #modern(modern: typeof Modern): ModernDeps {
    const { tasks, requestStateKey } = this.deps;
    if (requestStateKey) this.#questions ??= modern.questionCodec(requestStateKey());
    return { ...(tasks && { tasks }), ...(this.#questions && { questions: this.#questions }) };
  }

  /** Calls `listener` whenever the tools on offer change (a workflow published or withdrawn); returns the stop. */
  onToolsChanged(listener: () => void): () => void {
    return this.deps.server.published?.subscribe(listener) ?? (() => undefined);
  }

  /** Tells every instance's listening clients that a resource changed (a conversation got messages). */
  resourceUpdated(uri: string): void {
    this.deps.broadcast?.publish(RESOURCE_UPDATES, uri).catch((err: unknown) => {
      this.deps.logger.warn({ err }, 'resource update not broadcast');
    });
  }

  /** Calls `listener` with the URI of each resource updated on any instance; returns the stop. */
  onResourceUpdated(listener: (uri: string) => void): () => void {
    return this.deps.broadcast?.subscribe(RESOURCE_UPDATES, listener) ?? (() => undefined);
  }

  /**
   * Of the resources a client asks to hear the updates of, the first the caller may not read (it does not exist for
   * them), or nothing. Updates carry no content, but who is active in which conversation is the owner's business.
   */
  async unreadableResource(caller: Caller, uris: unknown[]): Promise<string | undefined> {
    if (uris.length > MAX_RESOURCE_SUBSCRIPTIONS) return String(uris[MAX_RESOURCE_SUBSCRIPTIONS]);
    for (const uri of uris) {
      if (typeof uri !== 'string' || !(await readableResource(this.deps.server, uri, caller))) return String(uri);
    }
    return undefined;
  }

  /** One MCP request on the caller's behalf through the shared server (REST-style endpoints). */
  request(caller: Caller, method: string, params?: Record<string, unknown>): Promise<unknown> {
    return this.#request(method, params, authInfoFor(caller));
  }

  /**
   * One `tools/call` (REST-style endpoints): its result, or the refusal of the call, which those endpoints render as
   * an HTTP status rather than as the tool error MCP clients get. The service's own tools run straight through the
   * catalog (`callOwnTool`); what only the SDK's handler answers goes through the shared server.
   */
  async callTool(caller: Caller, params: Record<string, unknown>): Promise<ToolOutcome> {
    const own = await callOwnTool(this.deps.server, caller, params.name, params.arguments);
    if (own) {
      // Answered as the shared server would have: a result, which its guard counts as a successful request.
      this.deps.metrics.messages.inc({ method: 'tools/call', status: 'success' });
      return own;
    }
    const heard: { refusal?: ToolRefusal } = {};
    const result = await this.#request(
      'tools/call',
      params,
      authInfoHearingRefusals(caller, (refusal) => (heard.refusal = refusal)),
    );
    return heard.refusal ?? { kind: 'completed', result: result as CallToolResult };
  }

  /** The tools the caller may use that show in a view (for the playground, a host of them). */
  toolViews(caller: Caller): Promise<ToolView[]> {
    return toolViews(this.deps.server, caller);
  }

  /**
   * A call from a view the playground renders: its result or its refusal; undefined for a tool no view may call.
   * Arguments that do not fit the tool are a 400.
   */
  async callFromView(
    caller: Caller,
    name: string,
    args: unknown,
    signal: AbortSignal,
  ): Promise<ToolOutcome | undefined> {
    const heard: { refusal?: ToolRefusal } = {};
    try {
      const result = await callFromView(this.deps.server, caller, name, args, {
        signal,
        onRefusal: (refusal) => (heard.refusal = refusal),
      });
      if (!result) return undefined;
      return heard.refusal ?? { kind: 'completed', result };
    } catch (error) {
      if (error instanceof CatalogError) throw new BadRequestError(error.message, { code: CommonErrorCode.Validation });
      throw error;
    }
  }

  /** A view's page by its place under a web host (`views/workflow-run.html`): its HTML, if it is one. */
  async viewPage(page: string): Promise<string | undefined> {
    const view = VIEW_RESOURCES.find((r) => r.page === page);
    return view && this.deps.server.views?.html(view.uri);
  }

  async #request(method: string, params: Record<string, unknown> | undefined, authInfo: AuthInfo): Promise<unknown> {
    this.#shared ??= (async () => {
      const server = this.createServer();
      await server.connect(this.#direct);
      // The HTTP layer has already counted the request against the caller's budget.
      guardTransport(this.#direct, { policy: this.deps.policy, metrics: this.deps.metrics, rateLimit: false });
      return server;
    })();
    await this.#shared;
    return this.#direct.request(method, params, authInfo);
  }

  async close(): Promise<void> {
    this.#stopInvalidating?.();
    this.#modernServers?.close();
    const shared = this.#shared;
    this.#shared = undefined;
    await (await shared)?.close();
  }
}
