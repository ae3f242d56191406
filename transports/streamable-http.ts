import { randomUUID } from 'node:crypto';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { Request, Response } from 'express';
import { z } from 'zod';
import { CommonErrorCode, ServiceUnavailableError } from '../src/errors.js';
import { callerOf } from '../src/http/authenticate.js';
import { type RouteGroup, defineRoute } from '../src/http/route.js';
import type { Lifecycle } from '../src/lifecycle.js';
import type { Logger } from '../src/logger.js';
import type { McpCore } from '../src/mcp/core.js';
import { BoundedEventStore } from '../src/mcp/event-store.js';
import { guardTransport } from '../src/mcp/guard.js';
import { rateHeaders } from '../src/mcp/policy.js';
import { authInfoFor } from '../src/mcp/server.js';
import { openStreamSlot } from './stream-slot.js';

interface Session {
  transport: StreamableHTTPServerTransport;
  server: McpServer;
  /** Only the caller who opened a session may use it. */
  callerId: string;
  lastSeen: number;
}

export interface StreamableHttpOptions {
  core: McpCore;
  lifecycle: Lifecycle;
  logger: Logger;
  idleMs: number;
  maxSessions: number;
  /** Answer every POST on its own (no session, no server-initiated stream): any instance serves any request. */
  stateless?: boolean;
}

/** The request as the SDK's transport reads it: with its caller's AuthInfo. */
const withAuth = (req: Request) => Object.assign(req, { auth: authInfoFor(callerOf(req)) });

function jsonRpcError(res: Response, status: number, code: number, message: string): void {
  res.status(status).json({ jsonrpc: '2.0', error: { code, message }, id: null });
}

const STATELESS_ONLY_POST = 'Method not allowed: this server is stateless (MCP_SESSION_MODE=stateless); use POST';

/**
 * Streamable HTTP (`POST|GET|DELETE /mcp`) through the SDK's transport: one server per session (`Mcp-Session-Id`),
 * resumable streams from a bounded event store, protocol version negotiation by the SDK (2024-11-05 and newer),
 * idle sessions reaped and the number of sessions capped.
 */
export class StreamableHttpSessions {
  readonly #sessions = new Map<string, Session>();
  readonly #events = new BoundedEventStore();
  readonly #reaper: NodeJS.Timeout;

  constructor(private readonly options: StreamableHttpOptions) {
    this.#reaper = setInterval(() => void this.reapIdle(), Math.min(60_000, Math.max(1_000, options.idleMs / 2)));
    this.#reaper.unref();
    options.lifecycle.onStop(() => void this.closeAll());
  }

  get size(): number {
    return this.#sessions.size;
  }

  /** Closes sessions unused for longer than the idle time; returns how many. */
  async reapIdle(now = Date.now()): Promise<number> {
    const idle = [...this.#sessions.entries()].filter(([, s]) => now - s.lastSeen > this.options.idleMs);
    await Promise.all(idle.map(([id]) => this.#close(id)));
    return idle.length;
  }

  async closeAll(): Promise<void> {
    clearInterval(this.#reaper);
    await Promise.all([...this.#sessions.keys()].map((id) => this.#close(id)));
  }

  async #close(id: string): Promise<void> {
    const session = this.#sessions.get(id);
    if (!session) return;
    this.#sessions.delete(id);
    await session.transport.close().catch(() => undefined);
    await session.server.close().catch(() => undefined);
  }

  /** The caller's session named by the request, or an answer saying there is none (404, as the protocol asks). */
  #sessionOf(req: Request, res: Response): Session | undefined {
    const id = req.get('Mcp-Session-Id');
    const session = id ? this.#sessions.get(id) : undefined;
    if (!id) jsonRpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
    else if (!session || session.callerId !== callerOf(req).subject)
      jsonRpcError(res, 404, -32001, 'Session not found');
    else {
      session.lastSeen = Date.now();
      return session;
    }
    return undefined;
  }

  async #open(req: Request, res: Response): Promise<void> {
    const caller = callerOf(req);
    if (this.#sessions.size >= this.options.maxSessions) await this.reapIdle(Date.now() + this.options.idleMs / 2);
    // A refusal of the service, not of the protocol: rendered like every other MCP route's, with Retry-After.
    if (this.#sessions.size >= this.options.maxSessions)
      throw new ServiceUnavailableError('Too many open sessions; try again later', {
        code: CommonErrorCode.ServiceUnavailable,
        headers: { 'Retry-After': '1' },
      });
    const server = this.options.core.createServer();
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: this.#events,
      onsessioninitialized: (id) => {
        this.#sessions.set(id, { transport, server, callerId: caller.subject, lastSeen: Date.now() });
      },
      onsessionclosed: (id) => {
        this.#sessions.delete(id);
        void server.close().catch(() => undefined);
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) this.#sessions.delete(transport.sessionId);
    };
    await this.#connect(server, transport);
    await transport.handleRequest(withAuth(req), res, req.body);
  }

  /** Connects a server to its transport; requests were counted per HTTP request, the guard adds per-method metrics. */
  async #connect(server: McpServer, transport: StreamableHTTPServerTransport): Promise<void> {
    await server.connect(transport);
    guardTransport(transport, {
      policy: this.options.core.policy,
      metrics: this.options.core.metrics,
      rateLimit: false,
    });
  }

  /**
   * Stateless: a server and a transport for this one request, closed with its response. Nothing outlives the
   * request, so whichever instance a load balancer picks can answer it.
   */
  async #answerAlone(req: Request, res: Response): Promise<void> {
    const server = this.options.core.createServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close().catch(() => undefined);
      void server.close().catch(() => undefined);
    });
    await this.#connect(server, transport);
    await transport.handleRequest(withAuth(req), res, req.body);
  }

  routes(): RouteGroup {
    const core = this.options.core;
    const admit = async (req: Request, res: Response) =>
      res.set(rateHeaders(await core.policy.admitRequest(callerOf(req))));
    return {
      prefix: '/mcp',
      area: 'mcp',
      routes: [
        defineRoute({
          method: 'post',
          path: '/',
          operationId: 'mcpStreamableHttpPost',
          summary: 'MCP over streamable HTTP: send JSON-RPC messages',
          description:
            'Start with an initialize request (no Mcp-Session-Id); the response carries the session id to send with ' +
            'every later request. Accept must list application/json and text/event-stream.',
          tags: ['MCP'],
          request: { body: z.unknown().describe('A JSON-RPC 2.0 message or batch') },
          responses: {
            200: { description: 'JSON-RPC response, as JSON or as an event stream', schema: z.unknown() },
            202: { description: 'Accepted (notifications and responses)' },
            400: {
              description: 'No session and not an initialize request, or an invalid message',
              schema: z.unknown(),
            },
            404: { description: 'Unknown or expired session', schema: z.unknown() },
            406: { description: 'Accept lacks application/json or text/event-stream', schema: z.unknown() },
            429: { description: 'Request budget exhausted' },
            503: { description: 'Too many open sessions', schema: z.unknown() },
          },
          handler: async ({ req, res }) => {
            await admit(req, res);
            if (this.options.stateless) {
              await this.#answerAlone(req, res);
              return;
            }
            if (!req.get('Mcp-Session-Id')) {
              if (!isInitializeRequest(req.body)) {
                jsonRpcError(res, 400, -32000, 'Bad Request: start the session with an initialize request');
                return;
              }
              await this.#open(req, res);
              return;
            }
            const session = this.#sessionOf(req, res);
            if (session) await session.transport.handleRequest(withAuth(req), res, req.body);
          },
        }),
        defineRoute({
          method: 'get',
          path: '/',
          operationId: 'mcpStreamableHttpGet',
          summary: 'MCP over streamable HTTP: the server-to-client event stream',
          description: 'Send Last-Event-ID to resume after a disconnection.',
          tags: ['MCP'],
          responses: {
            200: { description: 'text/event-stream', schema: z.string(), contentType: 'text/event-stream' },
            400: { description: 'No Mcp-Session-Id header', schema: z.unknown() },
            404: { description: 'Unknown or expired session', schema: z.unknown() },
            406: { description: 'Accept lacks text/event-stream', schema: z.unknown() },
            405: { description: 'The server is stateless: no server-initiated stream', schema: z.unknown() },
            409: { description: 'The session already has an open stream', schema: z.unknown() },
            429: { description: 'Too many concurrent streams' },
          },
          handler: async ({ req, res }) => {
            if (this.options.stateless) {
              res.set('Allow', 'POST');
              jsonRpcError(res, 405, -32000, STATELESS_ONLY_POST);
              return;
            }
            const session = this.#sessionOf(req, res);
            if (!session) return;
            const caller = callerOf(req);
            // Sessions, and so their streams, are closed on shutdown by closeAll.
            openStreamSlot({ policy: core.policy, metrics: core.metrics, lifecycle: this.options.lifecycle }, caller, {
              server: 'streamable_http',
              endsWith: res,
            });
            await session.transport.handleRequest(withAuth(req), res);
          },
        }),
        defineRoute({
          method: 'delete',
          path: '/',
          operationId: 'mcpStreamableHttpDelete',
          summary: 'MCP over streamable HTTP: end the session',
          tags: ['MCP'],
          responses: {
            200: { description: 'Session ended' },
            400: { description: 'No Mcp-Session-Id header', schema: z.unknown() },
            404: { description: 'Unknown session', schema: z.unknown() },
            405: { description: 'The server is stateless: there is no session to end', schema: z.unknown() },
          },
          handler: async ({ req, res }) => {
            if (this.options.stateless) {
              res.set('Allow', 'POST');
              jsonRpcError(res, 405, -32000, STATELESS_ONLY_POST);
              return;
            }
            const session = this.#sessionOf(req, res);
            if (session) await session.transport.handleRequest(withAuth(req), res);
          },
        }),
      ],
    };
  }
}
