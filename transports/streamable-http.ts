import { randomUUID } from 'node:crypto';
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
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
import { type TransportGuard, guardTransport } from '../src/mcp/guard.js';
import type { McpSessionDirectory, SessionRecord } from '../src/mcp/session-directory.js';
import { MAX_MESSAGE_DEPTH, nestsWithin, surelyLegacy } from '../src/mcp/messages.js';
import { rateHeaders } from '../src/mcp/policy.js';
import { authInfoFor } from '../src/mcp/server.js';
import { jsonRpcError, withAuth } from './mcp-http.js';
import type { ModernHttp } from './modern-http.js';
import { type NodeStreamableHttpOptions, NodeStreamableHttpTransport } from './node-streamable-transport.js';
import { openStreamSlot } from './stream-slot.js';

/** Either streamable-HTTP transport: the service's own on Node's HTTP objects, or the SDK's web-standard one. */
type HttpTransport = NodeStreamableHttpTransport | StreamableHTTPServerTransport;

interface Session {
  transport: HttpTransport;
  server: Server;
  /** Lets the session's requests in flight be answered before it closes at shutdown. */
  guard: TransportGuard;
  /** Who opened it (only they may use it) and how: what other instances need to continue it. */
  record: SessionRecord;
  lastSeen: number;
  /** When the shared directory last extended the session's life. */
  lastRecorded: number;
}

export interface StreamableHttpOptions {
  core: McpCore;
  lifecycle: Lifecycle;
  logger: Logger;
  idleMs: number;
  maxSessions: number;
  /** Answer every POST on its own (no session, no server-initiated stream): any instance serves any request. */
  stateless?: boolean;
  /**
   * Which transport carries 2025-era sessions: `native` (default) on Node's request and response, or `sdk`, the
   * SDK's own, which converts each request to a web `Request` and back.
   */
  transport?: 'native' | 'sdk';
  /** The protected-resource metadata URL, named in the 2026-07-28 era's scope challenges (403 step-up). */
  resourceMetadataUrl?: string;
  /**
   * The sessions every instance can see (shared through Redis): a session opened elsewhere is continued here, and
   * one ended anywhere is closed here. Without it, a session lives and dies with the instance that opened it.
   */
  directory?: McpSessionDirectory;
}

const STATELESS_ONLY_POST = 'Method not allowed: this server is stateless (MCP_SESSION_MODE=stateless); use POST';

/**
 * Streamable HTTP (`POST|GET|DELETE /mcp`) through the SDK's transport: one server per session (`Mcp-Session-Id`),
 * streams resumable within their own session from a bounded event store, protocol version negotiation by the SDK
 * (2024-11-05 and newer), idle sessions reaped and the number of sessions capped.
 */
export class StreamableHttpSessions {
  readonly #sessions = new Map<string, Session>();
  readonly #events = new BoundedEventStore();
  /** Sessions being taken over from another instance, so that concurrent requests rebuild each one once. */
  readonly #restoring = new Map<string, Promise<Session | undefined>>();
  readonly #reaper: NodeJS.Timeout;
  readonly #stopListening: () => void;
  /** The 2026-07-28 revision (`./modern-http.ts`), loaded with its SDK package on the first request it may take. */
  #modern: Promise<ModernHttp> | undefined;
  /** The SDK's transport class, loaded on first use when `transport` is `sdk`. */
  #sdkTransport: Promise<typeof StreamableHTTPServerTransport> | undefined;

  constructor(private readonly options: StreamableHttpOptions) {
    this.#reaper = setInterval(() => void this.reapIdle(), Math.min(60_000, Math.max(1_000, options.idleMs / 2)));
    this.#reaper.unref();
    this.#stopListening = options.directory?.onEnded((id) => void this.#close(id)) ?? (() => undefined);
    options.lifecycle.onStop(() => void this.closeAll());
  }

  get size(): number {
    return this.#sessions.size;
  }

  /** How many events the open sessions' streams keep for resumption. */
  get storedEvents(): number {
    return this.#events.size;
  }

  /** Closes sessions unused for longer than the idle time; returns how many. */
  async reapIdle(now = Date.now()): Promise<number> {
    const idle = [...this.#sessions.entries()].filter(([, s]) => now - s.lastSeen > this.options.idleMs);
    await Promise.all(idle.map(([id]) => this.#close(id)));
    return idle.length;
  }

  /** Closes this instance's sessions; in the shared directory they live on, for other instances to continue. */
  async closeAll(): Promise<void> {
    clearInterval(this.#reaper);
    this.#stopListening();
    const modern = await this.#modern?.catch(() => undefined);
    await modern?.close();
    // A request in flight is answered first (at the drain's deadline, with the stopping error), never cut off.
    const { deadline } = this.options.lifecycle;
    await Promise.all([...this.#sessions.values()].map((session) => session.guard.settle(deadline)));
    await Promise.all([...this.#sessions.keys()].map((id) => this.#close(id)));
  }

  /** A transport of the configured kind. */
  async #newTransport(options: NodeStreamableHttpOptions): Promise<HttpTransport> {
    if (this.options.transport !== 'sdk') return new NodeStreamableHttpTransport(options);
    this.#sdkTransport ??= import('@modelcontextprotocol/sdk/server/streamableHttp.js').then(
      (sdk) => sdk.StreamableHTTPServerTransport,
    );
    return new (await this.#sdkTransport)(options);
  }

  #modernHttp(): Promise<ModernHttp> {
    const { core, logger, resourceMetadataUrl } = this.options;
    this.#modern ??= import('./modern-http.js').then((leg) =>
      leg.ModernHttp.create({ core, logger, ...(resourceMetadataUrl !== undefined && { resourceMetadataUrl }) }),
    );
    return this.#modern;
  }

  async #close(id: string): Promise<void> {
    const session = this.#sessions.get(id);
    if (!session) return;
    this.#sessions.delete(id);
    await session.transport.close().catch(() => undefined);
    await session.server.close().catch(() => undefined);
  }

  /**
   * The caller's session named by the request, or an answer saying there is none (404, as the protocol asks). A
   * session this instance does not hold is taken over from the shared directory when another instance opened it.
   */
  async #sessionOf(req: Request, res: Response): Promise<Session | undefined> {
    const id = req.get('Mcp-Session-Id');
    if (!id) {
      jsonRpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
      return undefined;
    }
    const caller = callerOf(req).subject;
    const session = this.#sessions.get(id) ?? (await this.#takeOver(id, req));
    if (!session || session.record.caller !== caller) {
      jsonRpcError(res, 404, -32001, 'Session not found');
      return undefined;
    }
    const now = Date.now();
    session.lastSeen = now;
    // The shared record is extended a few times per idle period, not on every request.
    if (this.options.directory && now - session.lastRecorded > Math.min(60_000, this.options.idleMs / 4)) {
      session.lastRecorded = now;
      this.#share(id, session.record);
    }
    return session;
  }

  /** Records a session in the shared directory; without it the session still works here, so a failure is logged. */
  #share(id: string, record: SessionRecord): void {
    this.options.directory?.record(id, record).catch((err: unknown) => {
      this.options.logger.warn({ err, session: id }, 'MCP session not shared with other instances');
    });
  }

  #takeOver(id: string, req: Request): Promise<Session | undefined> {
    const directory = this.options.directory;
    if (!directory) return Promise.resolve(undefined);
    let restoring = this.#restoring.get(id);
    if (!restoring) {
      restoring = (async () => {
        const record = await directory.find(id);
        if (!record || record.caller !== callerOf(req).subject) return undefined;
        return this.#restore(id, record, req);
      })().finally(() => this.#restoring.delete(id));
      this.#restoring.set(id, restoring);
    }
    return restoring;
  }

  /** Refuses a new session when this instance holds as many as it may, after reaping the longest idle. */
  async #makeRoom(): Promise<void> {
    if (this.#sessions.size >= this.options.maxSessions) await this.reapIdle(Date.now() + this.options.idleMs / 2);
    // A refusal of the service, not of the protocol: rendered like every other MCP route's, with Retry-After.
    if (this.#sessions.size >= this.options.maxSessions)
      throw new ServiceUnavailableError('Too many open sessions; try again later', {
        code: CommonErrorCode.ServiceUnavailable,
        headers: { 'Retry-After': '1' },
      });
  }

  /**
   * A transport for a session of this instance; `id` is the session's id when it continues one opened elsewhere.
   * Its events are kept for the session and its caller alone, and forgotten when it closes.
   */
  async #transport(
    server: Server,
    caller: string,
    onInitialised: (id: string) => void,
    id: string = randomUUID(),
  ): Promise<HttpTransport> {
    const events = this.#events.forSession(caller, id);
    const transport = await this.#newTransport({
      sessionIdGenerator: () => id,
      eventStore: events,
      onsessioninitialized: onInitialised,
      onsessionclosed: (closed) => {
        this.#sessions.delete(closed);
        void server.close().catch(() => undefined);
        // Ended by its client (DELETE): ended on every instance.
        this.options.directory?.end(closed).catch((err: unknown) => {
          this.options.logger.warn({ err, session: closed }, 'MCP session end not shared with other instances');
        });
      },
    });
    transport.onclose = () => {
      events.drop();
      if (transport.sessionId) this.#sessions.delete(transport.sessionId);
    };
    return transport;
  }

  /**
   * Continues here a session another instance opened: a server of this instance's is initialised as the client
   * initialised the original, by playing the recorded initialize request through the SDK's transport in an
   * exchange that never reaches the network. The client sees one session, whichever instance answers.
   */
  async #restore(id: string, record: SessionRecord, req: Request): Promise<Session | undefined> {
    await this.#makeRoom();
    const server = this.options.core.createServer();
    const transport = await this.#transport(server, record.caller, () => undefined, id);
    await server.connect(transport);
    if (!(await replayInitialize(transport, record.initialize, authInfoFor(callerOf(req))))) {
      await transport.close().catch(() => undefined);
      await server.close().catch(() => undefined);
      return undefined;
    }
    const guard = this.#guard(transport);
    const now = Date.now();
    const session: Session = { transport, server, guard, record, lastSeen: now, lastRecorded: now };
    this.#sessions.set(id, session);
    this.options.logger.debug({ session: id }, 'MCP session continued from another instance');
    return session;
  }

  async #open(req: Request, res: Response): Promise<void> {
    await this.#makeRoom();
    const record: SessionRecord = {
      caller: callerOf(req).subject,
      initialize: (req.body as { params: unknown }).params,
    };
    const server = this.options.core.createServer();
    // The session is recorded while its initialize request is handled, after the guard is in place.
    const connected: { guard?: TransportGuard } = {};
    const transport = await this.#transport(server, record.caller, (id) => {
      const now = Date.now();
      this.#sessions.set(id, { transport, server, guard: connected.guard!, record, lastSeen: now, lastRecorded: now });
      this.#share(id, record);
    });
    connected.guard = await this.#connect(server, transport);
    await transport.handleRequest(withAuth(req), res, req.body);
  }

  /**
   * The 2026-07-28 revision's answerer when a POST speaks it, as the SDK's own entry would route it. The common
   * 2025-era message is told apart without loading the revision's SDK package; any other is classified by it.
   */
  async #modernFor(req: Request): Promise<ModernHttp | undefined> {
    const body: unknown = req.body;
    // No JSON body (express parsed none): the SDK routes it to the 2025 era, which answers it.
    if (body === undefined || surelyLegacy(req.get('mcp-protocol-version'), body)) return undefined;
    const modern = await this.#modernHttp();
    return modern.isModern(req) ? modern : undefined;
  }

  /** Connects a server to its transport and guards it. */
  async #connect(server: Server, transport: HttpTransport): Promise<TransportGuard> {
    await server.connect(transport);
    return this.#guard(transport);
  }

  /** Requests were counted per HTTP request; the guard adds per-method metrics. */
  #guard(transport: HttpTransport): TransportGuard {
    return guardTransport(transport, {
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
    const transport = await this.#newTransport({ sessionIdGenerator: undefined });
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
          request: {
            body: z
              .unknown()
              .refine(
                (body) => nestsWithin(body, MAX_MESSAGE_DEPTH),
                `A message may nest at most ${MAX_MESSAGE_DEPTH} deep`,
              )
              .describe('A JSON-RPC 2.0 message or batch'),
          },
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
            const modern = await this.#modernFor(req);
            if (modern) {
              await modern.answer(req, res);
              return;
            }
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
            const session = await this.#sessionOf(req, res);
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
            const session = await this.#sessionOf(req, res);
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
            const session = await this.#sessionOf(req, res);
            if (session) await session.transport.handleRequest(withAuth(req), res);
          },
        }),
      ],
    };
  }
}

/**
 * Plays an initialize request through a fresh transport without a network: a request and a response of Node's own
 * that no socket carries, since the SDK offers no other way to set up a session it did not open. True when the
 * server accepted it.
 */
async function replayInitialize(
  transport: HttpTransport,
  params: unknown,
  auth: ReturnType<typeof authInfoFor>,
): Promise<boolean> {
  const socket = new Socket();
  try {
    const req = Object.assign(new IncomingMessage(socket), { auth });
    const headers = {
      host: 'localhost',
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
    };
    req.method = 'POST';
    req.url = '/mcp';
    req.headers = headers;
    req.rawHeaders = Object.entries(headers).flat();
    req.push(null);
    const res = new ServerResponse(req);
    await transport.handleRequest(req, res, { jsonrpc: '2.0', id: 0, method: 'initialize', params });
    return res.statusCode === 200;
  } finally {
    socket.destroy();
  }
}
