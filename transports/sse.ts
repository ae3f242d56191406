import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
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
import { openStreamSlot } from './stream-slot.js';

interface Connection {
  transport: SSEServerTransport;
  server: Server;
  callerId: string;
}

/**
 * The deprecated HTTP+SSE transport: `GET /sse` opens the event stream (the standard `endpoint` event, then the
 * spec's `connected` event) and `POST /messages?sessionId=…` carries the client's messages, answered on the stream.
 */
export class LegacySseConnections {
  readonly #connections = new Map<string, Connection>();

  constructor(private readonly deps: { core: McpCore; lifecycle: Lifecycle }) {}

  get size(): number {
    return this.#connections.size;
  }

  async #open(req: Request, res: Response): Promise<void> {
    const { core, lifecycle } = this.deps;
    const caller = callerOf(req);
    const transport = new SSEServerTransport('/messages', res);
    const server = core.createServer();
    const id = transport.sessionId;
    const connected: { guard?: TransportGuard } = {};
    const slot = openStreamSlot({ policy: core.policy, metrics: core.metrics, lifecycle }, caller, {
      server: 'sse',
      endsWith: res,
      // Requests in flight are answered first (at the drain's deadline, with the stopping error).
      onStop: () =>
        void (connected.guard?.settle(lifecycle.deadline) ?? Promise.resolve()).then(() => transport.close()),
      onRelease: () => {
        this.#connections.delete(id);
        void server.close().catch(() => undefined);
      },
    });
    this.#connections.set(id, { transport, server, callerId: caller.subject });
    transport.onclose = () => slot.release();
    await server.connect(transport);
    connected.guard = guardTransport(transport, { policy: core.policy, metrics: core.metrics, rateLimit: false });
    res.write(`event: connected\ndata: ${JSON.stringify({ session_id: id, server: SERVER_INFO })}\n\n`);
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
          handler: async ({ req, res }) => {
            await this.#open(req, res);
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
            // The SDK would answer a message it cannot read in plain text; refused here, it gets the MCP error body.
            if (!JSONRPCMessageSchema.safeParse(req.body).success)
              throw new BadRequestError('The body must be a JSON-RPC 2.0 message', {
                code: CommonErrorCode.BadRequest,
              });
            await connection.transport.handlePostMessage(
              Object.assign(req, { auth: authInfoFor(caller) }),
              res,
              req.body,
            );
          },
        }),
      ],
    };
    return [open, messages];
  }
}
