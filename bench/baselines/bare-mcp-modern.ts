import { createServer } from 'node:http';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import express from 'express';
import { z } from 'zod';
import { listenAndAnnounce } from './listen.js';

/**
 * Baseline (d): the 2026-07-28 revision as the SDK's documentation serves it: express with a JSON body parser and
 * `createMcpHandler` (a server per request from one factory) through `toNodeHandler`, one no-op tool, no
 * authentication.
 */
function newServer(): McpServer {
  const server = new McpServer({ name: 'bare-sdk-modern-baseline', version: '1.0.0' });
  server.registerTool(
    'noop',
    { description: 'Does nothing', inputSchema: z.object({ query: z.string().optional() }) },
    () => ({ content: [{ type: 'text', text: 'ok' }] }),
  );
  return server;
}

const handler = toNodeHandler(createMcpHandler(newServer, { legacy: 'reject' }));
const app = express();
app.use(express.json());
app.post('/mcp', (req, res) => handler(req, res, req.body));

listenAndAnnounce(createServer(app));
