import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Request, Response } from 'express';
import { z } from 'zod';
import { BadRequestError, CommonErrorCode, NotFoundError } from '../src/errors.js';
import { callerOf } from '../src/http/authenticate.js';
import { type RouteGroup, defineRoute } from '../src/http/route.js';
import type { Lifecycle } from '../src/lifecycle.js';
import type { McpCore } from '../src/mcp/core.js';
import { type TransportGuard, guardTransport } from '../src/mcp/guard.js';
import { rateHeaders } from '../src/mcp/policy.js';
import { SERVER_INFO, authInfoFor } from '../src/mcp/server.js';
import { LegacySseTransport } from './legacy-sse-transport.js';
import { openStreamSlot } from './stream-slot.js';

interface Connection {
  transport: LegacySseTransport;
  /** The stream's MCP server, connected when the first message comes. */
  server?: Promise<{ server: Server; guard: TransportGuard }>;
  callerId: string;
}

/**
 * The deprecated HTTP+SSE transport: `GET /sse` opens the event stream (the standard `endpoint` event, then the
 * spec's `connected` event) and `POST /messages?sessionId=…` carries the client's messages, answered on the stream.
 * A stream's MCP server is built and connected on its first message: a stream that only waits holds none.
 */
export class LegacySseConnections {
  readonly #connections = new Map<string, Connection>();

  constructor(private readonly deps: { core: McpCore; lifecycle: Lifecycle }) {}

  get size(): number {
    return this.#connections.size;
  }

  /** How many open streams have their MCP server (have had a message). */
  get servers(): number {
    let count = 0;
    for (const connection of this.#connections.values()) if (connection.server) count += 1;
    return count;
  }

  #open(req: Request, res: Response): void {
    const { core, lifecycle } = this.deps;
    const caller = callerOf(req);
    const transport = new LegacySseTransport(res);
    const id = transport.sessionId;
    const connection: Connection = { transport, callerId: caller.subject };
    const slot = openStreamSlot({ policy: core.policy, metrics: core.metrics, lifecycle }, caller, {
      server: 'sse',
      onStop: () => void this.#windDown(connection).catch(() => undefined),
      onRelease: () => {
        this.#connections.delete(id);
        void connection.server?.then(({ server }) => server.close()).catch(() => undefined);
      },
    });
    this.#connections.set(id, connection);
    // The transport hears the client go (its response closing) and releases the slot.
    transport.onclose = () => slot.release();
    transport.open('/messages');
    transport.event('connected', { session_id: id, server: SERVER_INFO });
  }

  /** At shutdown: the requests in flight are answered first (at the drain's deadline, with the stopping error). */
  async #windDown(connection: Connection): Promise<void> {
    const served = await connection.server?.catch(() => undefined);
    await served?.guard.settle(this.deps.lifecycle.deadline);
    await connection.transport.close();
  }

  /** The stream's server, built and connected on the first message. */
  #serverOf(connection: Connection): Promise<{ server: Server; guard: TransportGuard }> {
    connection.server ??= (async () => {
      const { core } = this.deps;
      const server = core.createServer();
      await server.connect(connection.transport);
      const guard = guardTransport(connection.transport, {
        policy: core.policy,
        metrics: core.metrics,
        rateLimit: false,
      });
      return { server, guard };
    })();
    return connection.server;
  }

  routes(): RouteGroup[] {
    const { core } = this.deps;
    const open: RouteGroup = {
      prefix: '/sse',
      area: 'mcp',
      routes: [
        defineRoute({
          method: 'get',
          path: '/',
          operationId: 'mcpSseOpen',
          summary: 'Legacy MCP over SSE: open the event stream (deprecated: use streamable HTTP at /mcp)',
          tags: ['MCP'],
          deprecated: true,
          responses: {
            200: { description: 'text/event-stream', schema: z.string(), contentType: 'text/event-stream' },
            429: { description: 'Too many concurrent streams' },
          },
          handler: ({ req, res }) => {
            this.#open(req, res);
          },
        }),
      ],
    };
    const messages: RouteGroup = {
      prefix: '/messages',
      area: 'mcp',
      routes: [
        defineRoute({
          method: 'post',
          path: '/',
          operationId: 'mcpSseMessage',
          summary: 'Legacy MCP over SSE: send a JSON-RPC message (answered on the event stream)',
          tags: ['MCP'],
          deprecated: true,
          request: {
            query: z.object({ sessionId: z.string().min(1).max(64) }),
            body: z.unknown().describe('A JSON-RPC 2.0 message'),
          },
          responses: {
            202: { description: 'Accepted' },
            404: { description: 'Unknown session' },
            429: { description: 'Request budget exhausted' },
          },
          handler: async ({ query, req, res }) => {
            const caller = callerOf(req);
            const connection = this.#connections.get(query.sessionId);
            // Someone else's stream is reported as missing, like one that does not exist.
            if (!connection || connection.callerId !== caller.subject)
              throw new NotFoundError('Session not found', { code: CommonErrorCode.NotFound });
            res.set(rateHeaders(await core.policy.admitRequest(caller)));
            // A message that is not JSON-RPC is refused here, with the MCP error body.
            const message = JSONRPCMessageSchema.safeParse(req.body);
            if (!message.success)
              throw new BadRequestError('The body must be a JSON-RPC 2.0 message', {
                code: CommonErrorCode.BadRequest,
              });
            // The stream may have closed while the request was being admitted.
            if (this.#connections.get(query.sessionId) !== connection)
              throw new NotFoundError('Session not found', { code: CommonErrorCode.NotFound });
            await this.#serverOf(connection);
            connection.transport.deliver(message.data, {
              authInfo: authInfoFor(caller),
              requestInfo: { headers: req.headers },
            });
            res.status(202).end('Accepted');
          },
        }),
      ],
    };
    return [open, messages];
  }
}
