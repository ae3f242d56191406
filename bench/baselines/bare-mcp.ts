import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import express, { type Request, type Response } from 'express';
import { z } from 'zod';
import { listenAndAnnounce } from './listen.js';

/**
 * Baseline (c): the SDK's own stateful streamable HTTP server, as its README shows it: express with a JSON body
 * parser, one `StreamableHTTPServerTransport` (with a session id generator) and one `McpServer` per session, one
 * no-op tool, no authentication.
 */
const transports = new Map<string, StreamableHTTPServerTransport>();

function newServer(): McpServer {
  const server = new McpServer({ name: 'bare-sdk-baseline', version: '1.0.0' });
  server.registerTool('noop', { description: 'Does nothing', inputSchema: { query: z.string().optional() } }, () => ({
    content: [{ type: 'text', text: 'ok' }],
  }));
  return server;
}

const app = express();
app.use(express.json());

app.post('/mcp', async (req: Request, res: Response) => {
  const sessionId = req.get('mcp-session-id');
  let transport = sessionId ? transports.get(sessionId) : undefined;
  if (!transport) {
    if (sessionId || !isInitializeRequest(req.body)) {
      res.status(400).json({ jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request' }, id: null });
      return;
    }
    const created = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        transports.set(id, created);
      },
    });
    created.onclose = () => {
      if (created.sessionId) transports.delete(created.sessionId);
    };
    await newServer().connect(created);
    transport = created;
  }
  await transport.handleRequest(req, res, req.body);
});

const sessionRequest = async (req: Request, res: Response) => {
  const transport = transports.get(req.get('mcp-session-id') ?? '');
  if (!transport) {
    res.status(400).send('Invalid or missing session ID');
    return;
  }
  await transport.handleRequest(req, res);
};
app.get('/mcp', sessionRequest);
app.delete('/mcp', sessionRequest);

listenAndAnnounce(createServer(app));
