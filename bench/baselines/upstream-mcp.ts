import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { listenAndAnnounce } from './listen.js';

/**
 * The upstream of the connected-tool case: an MCP server the service calls through a connection, and the load
 * calls directly. The SDK's stateful streamable HTTP server on plain `node:http`, one `McpServer` per session, one
 * `echo` tool (defined as test/fixtures/upstream-server.ts defines it: an output schema, read-only), and /mcp
 * refused with 401 unless `Authorization: Bearer <UPSTREAM_BEARER>` comes. A request before `initialize` (a 2026
 * client's probe) is answered 400, as the SDK's own transport answers it. `GET /calls` (no token) answers how many
 * times `echo` ran, so that the harness can tell calls that reached it from errors answered on the way.
 */
const TOKEN = process.env.UPSTREAM_BEARER;
if (!TOKEN) throw new Error('UPSTREAM_BEARER is required');
const EXPECTED = `Bearer ${TOKEN}`;

const transports = new Map<string, StreamableHTTPServerTransport>();
let echoes = 0;

function newServer(): McpServer {
  const server = new McpServer({ name: 'bench-upstream', version: '1.0.0' });
  server.registerTool(
    'echo',
    {
      description: 'Echoes the text back.',
      inputSchema: { text: z.string() },
      outputSchema: { echoed: z.string() },
      annotations: { readOnlyHint: true },
    },
    ({ text }) => {
      echoes++;
      return { content: [{ type: 'text', text: `echo: ${text}` }], structuredContent: { echoed: text } };
    },
  );
  return server;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers }).end(JSON.stringify(body));
}

const rpcError = (code: number, message: string) => ({ jsonrpc: '2.0', error: { code, message }, id: null });

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks).toString();
  return body ? JSON.parse(body) : undefined;
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://localhost').pathname;
  if (path === '/calls' && req.method === 'GET') return sendJson(res, 200, { echo: echoes });
  if (path !== '/mcp') return sendJson(res, 404, { error: 'not found' });
  if (req.headers.authorization !== EXPECTED)
    return sendJson(res, 401, rpcError(-32001, 'Unauthorized'), { 'WWW-Authenticate': 'Bearer realm="bench"' });
  const sessionId = req.headers['mcp-session-id'];
  if (typeof sessionId === 'string') {
    const transport = transports.get(sessionId);
    if (!transport) return sendJson(res, 404, rpcError(-32001, 'Session not found'));
    return transport.handleRequest(req, res);
  }
  if (req.method !== 'POST') return sendJson(res, 400, rpcError(-32000, 'Bad Request: No valid session ID provided'));
  const body = await readJson(req);
  if (!isInitializeRequest(body)) return sendJson(res, 400, rpcError(-32000, 'Bad Request: Server not initialized'));
  const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => void transports.set(id, transport),
  });
  transport.onclose = () => {
    if (transport.sessionId) transports.delete(transport.sessionId);
  };
  await newServer().connect(transport);
  await transport.handleRequest(req, res, body);
}

listenAndAnnounce(
  createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: error instanceof Error ? error.message : String(error) });
      else res.destroy();
    });
  }),
);
