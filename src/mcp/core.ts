import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Logger } from '../logger.js';
import type { Caller } from '../ports/caller.js';
import { DirectTransport } from './direct-transport.js';
import { guardTransport } from './guard.js';
import type { McpMetrics } from './metrics.js';
import type { McpPolicy } from './policy.js';
import { type McpServerDeps, authInfoFor, createMcpServer } from './server.js';

/**
 * The MCP core every wire adapts: servers for connection-based wires (one per session or connection), and one
 * shared server behind an in-process transport for the REST-style endpoints.
 */
export class McpCore {
  readonly #direct = new DirectTransport();
  #shared: Promise<McpServer> | undefined;

  constructor(readonly deps: { server: McpServerDeps; policy: McpPolicy; metrics: McpMetrics; logger: Logger }) {}

  get policy(): McpPolicy {
    return this.deps.policy;
  }

  get metrics(): McpMetrics {
    return this.deps.metrics;
  }

  /** A server for one session or connection. */
  createServer(fallbackCaller?: Caller): McpServer {
    return createMcpServer(this.deps.server, fallbackCaller);
  }

  /** One MCP request on the caller's behalf through the shared server (REST-style endpoints). */
  async request(caller: Caller, method: string, params?: Record<string, unknown>): Promise<unknown> {
    this.#shared ??= (async () => {
      const server = this.createServer();
      await server.connect(this.#direct);
      // The HTTP layer has already counted the request against the caller's budget.
      guardTransport(this.#direct, { policy: this.deps.policy, metrics: this.deps.metrics, rateLimit: false });
      return server;
    })();
    await this.#shared;
    return this.#direct.request(method, params, authInfoFor(caller));
  }

  async close(): Promise<void> {
    const shared = this.#shared;
    this.#shared = undefined;
    await (await shared)?.close();
  }
}
