import type { Request, Response } from 'express';
import { z } from 'zod';
import { BadRequestError, CommonErrorCode, ForbiddenError, NotFoundError } from '../src/errors.js';
import { callerOf } from '../src/http/authenticate.js';
import { mcpErrorCode } from '../src/http/render-errors.js';
import { type RouteDefinition, type RouteGroup, defineRoute } from '../src/http/route.js';
import { type Lifecycle, isServiceStopping } from '../src/lifecycle.js';
import type { McpCore } from '../src/mcp/core.js';
import { JsonRpcError } from '../src/mcp/direct-transport.js';
import { rateHeaders } from '../src/mcp/policy.js';
import { NOT_FOUND_DATA, SERVER_CAPABILITIES, SERVER_INFO } from '../src/mcp/server.js';
import type { ChatTurnRequest, ChatTurnService } from '../src/modules/agent/index.js';
import type { Caller } from '../src/ports/caller.js';
import { ConnectedToolErrorCode } from '../src/ports/connected-tools.js';
import { openStreamSlot } from './stream-slot.js';

/**
 * The spec's REST-style MCP endpoints (`POST /mcp/<method>`, `/mcp/message`) and the transport-level ones
 * (`POST /message`, `GET /tools`, `GET /resources`, `GET /`). Each is a thin adapter: it admits the request at the
 * policy point and hands it to the shared MCP server, or, for messages, to the chat-turn service.
 */

export interface RestDeps {
  core: McpCore;
  chat: ChatTurnService;
  lifecycle: Lifecycle;
}

const TAGS = ['MCP'];
const PROTOCOL_VERSION = '2024-11-05';

/** The `{method, params}` envelope the spec shows for each REST-style call; `method`, if sent, must match. */
function envelope(method: string, params: z.ZodType = z.record(z.string(), z.unknown()).optional()) {
  return z.object({
    jsonrpc: z.literal('2.0').optional(),
    id: z.unknown().optional(),
    method: z.literal(method).optional(),
    params,
  });
}

const MessageRequest = z
  .object({
    query: z.string().min(1).max(32_000).describe('The message'),
    conversation_id: z.string().max(64).optional().describe('Continue this conversation'),
    context: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('Extra context for the model (sent to it with the message)'),
    stream: z.boolean().default(false).describe('Stream the answer as `data: <json>` events'),
    use_tools: z
      .boolean()
      .default(true)
      .describe('Let the model call the tools you may use (the default); false answers with the model alone'),
  })
  .meta({ id: 'McpMessageRequest' });

const MessageResponse = z
  .object({
    response: z.string(),
    conversation_id: z.string(),
    model: z.string(),
    usage: z.object({
      prompt_tokens: z.number().int(),
      completion_tokens: z.number().int(),
      total_tokens: z.number().int(),
    }),
  })
  .meta({ id: 'MessageResponse' });

const anyObject = z.record(z.string(), z.unknown());

/** Counts the request against the caller's budget and reports the window in the rate-limit headers. */
async function admitted(core: McpCore, req: Request, res: Response): Promise<Caller> {
  const caller = callerOf(req);
  res.set(rateHeaders(await core.policy.admitRequest(caller)));
  return caller;
}

/** One MCP request on the caller's behalf through the shared server. */
function call(core: McpCore, caller: Caller, method: string, params?: Record<string, unknown>): Promise<unknown> {
  return answered(core.request(caller, method, params));
}

/** JSON-RPC's code for a request that needs the user to visit a URL first (an account to connect). */
const URL_ELICITATION_REQUIRED = -32042;

/** The server's answer, with a JSON-RPC error mapped to the MCP error body's HTTP status. */
async function answered<T>(request: Promise<T>): Promise<T> {
  try {
    return await request;
  } catch (error) {
    if (error instanceof JsonRpcError) {
      // -32042: the caller must connect an account at a connected server first; where travels with the 403.
      const elicitations = (error.data as { elicitations?: { url?: unknown }[] } | undefined)?.elicitations;
      if (error.code === URL_ELICITATION_REQUIRED && typeof elicitations?.[0]?.url === 'string')
        throw new ForbiddenError(error.message.replace(/^MCP error -?\d+: /, ''), {
          code: ConnectedToolErrorCode.AccountRequired,
          extra: { connect_url: elicitations[0].url },
        });
      // -32002: no such resource; data.status 404: an argument names something the caller may not see.
      if (error.code === -32002 || (error.data as { status?: unknown } | undefined)?.status === NOT_FOUND_DATA.status)
        throw new NotFoundError(error.message.replace(/^MCP error -?\d+: /, ''), { code: CommonErrorCode.NotFound });
      throw new BadRequestError(error.message.replace(/^MCP error -?\d+: /, ''), { code: CommonErrorCode.BadRequest });
    }
    throw error;
  }
}

/**
 * Streams one chat turn: `content_start`, `content_delta`…, `content_end`, `message_complete`, or an `error` event.
 * The turn is cancelled when the client goes away; at shutdown it finishes within the drain or ends with the
 * `service_stopping` error event.
 */
async function streamTurn(
  deps: RestDeps,
  req: Request,
  res: Response,
  turn: ChatTurnRequest,
  format: 'sse' | 'ndjson',
) {
  const { core, lifecycle } = deps;
  const slot = openStreamSlot({ policy: core.policy, metrics: core.metrics, lifecycle }, turn.caller, {
    server: 'rest',
    endsWith: res,
    shutdown: 'finish',
  });
  res.status(200).set({
    'Content-Type': format === 'sse' ? 'text/event-stream; charset=utf-8' : 'application/x-ndjson; charset=utf-8',
    'Cache-Control': 'no-cache',
    'X-Accel-Buffering': 'no',
  });
  res.flushHeaders();
  const write = (event: Record<string, unknown>) => {
    if (!res.writableEnded)
      res.write(format === 'sse' ? `data: ${JSON.stringify(event)}\n\n` : `${JSON.stringify(event)}\n`);
  };
  try {
    for await (const event of deps.chat.stream(turn, slot.signal)) {
      switch (event.type) {
        case 'error': {
          const { error } = event;
          if (error.status >= 500 && !isServiceStopping(error))
            req.log.error({ err: error.cause ?? error }, 'message stream failed');
          write({
            type: 'error',
            error: { code: mcpErrorCode(error), message: error.expose ? error.message : 'Internal error' },
          });
          break;
        }
        // This stream carries the answer only; a stopped one just ends (its client has gone).
        case 'tool_call':
        case 'tool_result':
        case 'message_cancelled':
          break;
        default:
          write(event);
      }
    }
  } finally {
    slot.release();
    res.end();
  }
}

/** One chat turn for /mcp/message and /message, answered as JSON or streamed. */
async function message(
  deps: RestDeps,
  req: Request,
  res: Response,
  body: z.output<typeof MessageRequest>,
  format: 'json' | 'sse' | 'ndjson',
) {
  const caller = await admitted(deps.core, req, res);
  await deps.chat.admit(caller);
  const turn: ChatTurnRequest = {
    caller,
    query: body.query,
    useTools: body.use_tools,
    ...(body.context && { context: body.context }),
    ...(body.conversation_id && { conversationId: body.conversation_id }),
  };
  if (format !== 'json') {
    await streamTurn(deps, req, res, turn, format);
    return undefined;
  }
  return deps.chat.complete(turn);
}

function mcpMethod(
  deps: RestDeps,
  path: string,
  method: string,
  summary: string,
  result: z.ZodType,
  params?: z.ZodType,
): RouteDefinition {
  return defineRoute({
    method: 'post',
    path,
    operationId: `mcp_${method.replace('/', '_')}`,
    summary,
    request: { body: envelope(method, params) },
    responses: {
      200: { description: 'The MCP result', schema: result },
      400: { description: 'The MCP server refused the request (e.g. invalid params)' },
      404: { description: 'No such resource, or one you may not see' },
      429: { description: 'Rate limit exceeded' },
    },
    handler: async ({ body, req, res }) =>
      call(deps.core, await admitted(deps.core, req, res), method, body.params as Record<string, unknown> | undefined),
  });
}

export function restRoutes(deps: RestDeps): RouteGroup[] {
  const { core } = deps;
  const mcp: RouteGroup = {
    prefix: '/mcp',
    area: 'mcp',
    tags: TAGS,
    routes: [
      defineRoute({
        method: 'post',
        path: '/initialize',
        operationId: 'mcp_initialize',
        summary: 'Initialize (protocol version negotiation and capabilities)',
        request: {
          body: z.object({
            protocolVersion: z.string().max(32).default(PROTOCOL_VERSION),
            capabilities: anyObject.default({}),
            clientInfo: z
              .object({ name: z.string().max(200), version: z.string().max(100) })
              .default({ name: 'rest-client', version: '0' }),
          }),
        },
        responses: {
          200: { description: 'Server capabilities', schema: anyObject },
          429: { description: 'Rate limit exceeded' },
        },
        handler: async ({ body, req, res }) => call(core, await admitted(core, req, res), 'initialize', body),
      }),
      mcpMethod(deps, '/tools/list', 'tools/list', 'List the tools you may use', anyObject),
      defineRoute({
        method: 'post',
        path: '/tools/call',
        operationId: 'mcp_tools_call',
        summary: 'Call a tool',
        description: 'A tool you may not call is 403 permission_denied; over the tool-call budget, 429.',
        request: {
          body: envelope(
            'tools/call',
            z.object({ name: z.string().min(1).max(128), arguments: anyObject.default({}) }),
          ),
        },
        responses: {
          200: { description: 'Tool call result (isError for failures of the tool itself)', schema: anyObject },
          403: { description: 'Not permitted to call this tool' },
          429: { description: 'Rate limit exceeded' },
        },
        handler: async ({ body, req, res }) => {
          const caller = await admitted(core, req, res);
          const outcome = await answered(core.callTool(caller, body.params as Record<string, unknown>));
          // A refused call is an HTTP 403 or 429 here, not a 200 with a tool error.
          if (outcome.kind === 'refused') throw outcome.error;
          return outcome.result;
        },
      }),
      mcpMethod(deps, '/resources/list', 'resources/list', 'List resources', anyObject),
      mcpMethod(
        deps,
        '/resources/read',
        'resources/read',
        'Read a resource',
        anyObject,
        z.object({ uri: z.string().min(1).max(2048) }),
      ),
      mcpMethod(deps, '/prompts/list', 'prompts/list', 'List prompts', anyObject),
      mcpMethod(
        deps,
        '/prompts/get',
        'prompts/get',
        'Get a prompt with its arguments filled in',
        anyObject,
        z.object({ name: z.string().min(1).max(128), arguments: z.record(z.string(), z.string()).optional() }),
      ),
      defineRoute({
        method: 'post',
        path: '/logging/setLevel',
        operationId: 'mcp_logging_setLevel',
        summary: 'Set the lowest level of log notifications to receive',
        request: {
          body: envelope(
            'logging/setLevel',
            z.object({
              level: z.enum(['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency']),
            }),
          ),
        },
        responses: {
          200: { description: 'Level set', schema: z.object({ success: z.boolean() }) },
          429: { description: 'Rate limit exceeded' },
        },
        handler: async ({ body, req, res }) => {
          await call(core, await admitted(core, req, res), 'logging/setLevel', body.params as Record<string, unknown>);
          return { success: true };
        },
      }),
      defineRoute({
        method: 'post',
        path: '/message',
        operationId: 'mcp_message',
        summary: 'Send a chat message',
        description:
          'The model may call the tools you may use (use_tools false: none). With stream false, one Message ' +
          'response. With stream true, `data: <json>` events: content_start, content_delta…, content_end, ' +
          'message_complete.',
        request: { body: MessageRequest },
        responses: {
          200: { description: 'The answer (or, streamed, text/event-stream)', schema: MessageResponse },
          403: { description: 'Not permitted to chat' },
          404: { description: 'No such conversation, or one you may not see' },
          429: { description: 'Rate limit or concurrent-stream limit exceeded' },
        },
        handler: ({ body, req, res }) => message(deps, req, res, body, body.stream ? 'sse' : 'json'),
      }),
    ],
  };

  const transportLevel: RouteGroup = {
    prefix: '/message',
    area: 'mcp',
    tags: TAGS,
    routes: [
      defineRoute({
        method: 'post',
        path: '/',
        operationId: 'message',
        summary: 'Send a chat message (transport level)',
        description:
          'The model may call the tools you may use (use_tools false: none). JSON by default; newline-delimited ' +
          'JSON for Accept: application/x-ndjson; events for text/event-stream.',
        request: { body: MessageRequest },
        responses: {
          200: { description: 'The answer, or a stream of events', schema: MessageResponse },
          403: { description: 'Not permitted to chat' },
          404: { description: 'No such conversation, or one you may not see' },
          429: { description: 'Rate limit or concurrent-stream limit exceeded' },
        },
        handler: ({ body, req, res }) => {
          const accept = req.get('Accept') ?? '';
          const format = accept.includes('application/x-ndjson')
            ? 'ndjson'
            : accept.includes('text/event-stream') || body.stream
              ? 'sse'
              : 'json';
          return message(deps, req, res, body, format);
        },
      }),
    ],
  };

  const listing = (prefix: string, method: string, summary: string): RouteGroup => ({
    prefix,
    area: 'mcp',
    tags: TAGS,
    routes: [
      defineRoute({
        method: 'get',
        path: '/',
        operationId: `get_${method.split('/')[0]}`,
        summary,
        responses: { 200: { description: summary, schema: anyObject }, 429: { description: 'Rate limit exceeded' } },
        handler: async ({ req, res }) => call(core, await admitted(core, req, res), method),
      }),
    ],
  });

  const root: RouteGroup = {
    prefix: '',
    area: 'mcp',
    tags: TAGS,
    routes: [
      defineRoute({
        method: 'get',
        path: '/',
        operationId: 'getServerInfo',
        summary: 'Server information and capabilities',
        responses: { 200: { description: 'Server information', schema: anyObject } },
        handler: () => ({
          ...SERVER_INFO,
          protocolVersion: PROTOCOL_VERSION,
          capabilities: SERVER_CAPABILITIES,
          transports: {
            streamable_http: '/mcp',
            sse: '/sse',
            websocket: '/mcp/ws',
            rest: '/mcp/{method}',
            message: '/message',
          },
        }),
      }),
    ],
  };

  return [
    mcp,
    transportLevel,
    listing('/tools', 'tools/list', 'List tools'),
    listing('/resources', 'resources/list', 'List resources'),
    root,
  ];
}
