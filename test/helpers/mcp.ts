import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { WebSocket } from 'ws';
import { afterEach } from 'vitest';
import type { App } from '../../src/app.js';
import { ADMIN_PASSWORD } from './auth.js';
import { nodeArgsFor } from './entry.js';

/** The MCP clients of the tests: the official SDK's over every wire, and raw WebSocket and SSE streams. */

/** One JSON-RPC request over streamable HTTP with a bearer token, on the session named (none: an initialize). */
export function postMcp(app: App, token: string, message: { method: string; params?: unknown }, session?: string) {
  return fetch(`${app.url('main')}/mcp`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${token}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      ...(session ? { 'Mcp-Session-Id': session, 'Mcp-Protocol-Version': '2025-06-18' } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, ...message }),
  });
}

/** The 2026-07-28 revision, as its requests name it. */
export const MODERN_REVISION = '2026-07-28';
export const TASKS_CAPABILITY = { extensions: { 'io.modelcontextprotocol/tasks': {} } };

/**
 * The official 2.x client on the app's `/mcp` with a bearer token, pinned to the 2026-07-28 revision unless `mode`
 * says otherwise; `fetch` routes its requests (a balancer, say). Close it when done.
 */
export async function connectModernClient(
  app: App,
  token: string,
  options: { mode?: 'auto' | { pin: string }; capabilities?: Record<string, unknown>; fetch?: typeof fetch } = {},
): Promise<ModernClient> {
  const client = new ModernClient(
    { name: 'modern', version: '1.0.0' },
    {
      versionNegotiation: { mode: options.mode ?? { pin: MODERN_REVISION } },
      ...(options.capabilities && { capabilities: options.capabilities }),
    },
  );
  await client.connect(
    new ModernTransport(new URL(`${app.url('main')}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
      ...(options.fetch && { fetch: options.fetch }),
    }),
  );
  return client;
}

export interface RpcReply {
  status: number;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

/**
 * One JSON-RPC request of the 2026-07-28 revision, written by hand: its `_meta` envelope with the capabilities
 * given, and the routing headers. The reply's last message, whether sent as JSON or as a server-sent event.
 */
/** A 2026-07-28 request: the params with the revision's per-request `_meta` envelope. */
export function modernBody(method: string, params: Record<string, unknown>, capabilities: object = {}) {
  return {
    jsonrpc: '2.0',
    id: 1,
    method,
    params: {
      ...params,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': MODERN_REVISION,
        'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
        'io.modelcontextprotocol/clientCapabilities': capabilities,
      },
    },
  };
}

export function postModern(
  app: App,
  token: string,
  method: string,
  params: Record<string, unknown>,
  capabilities: Record<string, unknown> = {},
): Promise<RpcReply> {
  return sendModern(app, token, modernBody(method, params, capabilities));
}

/** Sends a framed JSON-RPC request of the revision with its routing headers: the reply's last message. */
export async function sendModern(
  app: App,
  token: string,
  message: { jsonrpc: string; id: number | string; method: string; params?: Record<string, unknown> },
): Promise<RpcReply> {
  const { method, params = {} } = message;
  const name = method === 'tools/call' ? params.name : method.startsWith('tasks/') ? params.taskId : undefined;
  const res = await fetch(`${app.url('main')}/mcp`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${token}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'Mcp-Protocol-Version': MODERN_REVISION,
      'Mcp-Method': method,
      ...(typeof name === 'string' && { 'Mcp-Name': name }),
    },
    body: JSON.stringify(message),
  });
  const text = await res.text();
  const messages = res.headers.get('content-type')?.includes('text/event-stream')
    ? text
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trim())
    : [text];
  const last = JSON.parse(messages.at(-1)!) as Omit<RpcReply, 'status'>;
  return { status: res.status, ...last };
}

const MAIN = join(import.meta.dirname, '../../src/main.ts');

/** The tools a user may call by default, in the order the server lists them. */
export const TOOL_NAMES = [
  'chat',
  'search_web',
  'agent_chat',
  'conversation_get',
  'conversation_search',
  'workflow_run',
  'workflow_resume',
];

/** The `ws://` URL of the app's WebSocket endpoint. */
export const socketUrl = (app: App, query = ''): string => `${app.url('main').replace('http', 'ws')}/mcp/ws${query}`;

/** The SDK's WebSocket client uses the global WebSocket, which on Node 20 must come from `ws`; it adds our header. */
function webSocketWithHeaders(headers: Record<string, string>): typeof globalThis.WebSocket {
  return class extends WebSocket {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols, { headers });
    }
  } as unknown as typeof globalThis.WebSocket;
}

/** Puts back, after each test, the global WebSocket that `sdkTransports.WebSocket` replaces. */
export function restoreGlobalWebSocketAfterEach(): void {
  const original = globalThis.WebSocket;
  afterEach(() => {
    globalThis.WebSocket = original;
  });
}

/**
 * The official SDK's transport for each connection-based wire of the app, sending `headers` (the credential).
 * The WebSocket one replaces the global WebSocket: suites that use it call restoreGlobalWebSocketAfterEach.
 */
export const sdkTransports = {
  'streamable HTTP': (app: App, headers: Record<string, string>) =>
    new StreamableHTTPClientTransport(new URL(`${app.url('main')}/mcp`), { requestInit: { headers } }),
  'legacy SSE': (app: App, headers: Record<string, string>) =>
    new SSEClientTransport(new URL(`${app.url('main')}/sse`), { requestInit: { headers } }),
  WebSocket: (app: App, headers: Record<string, string>) => {
    globalThis.WebSocket = webSocketWithHeaders(headers);
    return new WebSocketClientTransport(new URL(socketUrl(app)));
  },
} satisfies Record<string, (app: App, headers: Record<string, string>) => Transport>;

/** `agent-service stdio` in a child process on a fresh SQLite file, whose caller is the bootstrap administrator. */
export function stdioTransport(logLevel = 'silent'): StdioClientTransport {
  const dbFile = join(mkdtempSync(join(tmpdir(), 'agent-stdio-')), 'agent.db');
  return new StdioClientTransport({
    command: process.execPath,
    args: [...nodeArgsFor(MAIN), 'stdio'],
    env: { PATH: process.env.PATH ?? '', DATABASE_URL: `sqlite:${dbFile}`, ADMIN_PASSWORD, LOG_LEVEL: logLevel },
    stderr: 'pipe',
  });
}

/** Opens a WebSocket to the app's endpoint; rejects with the status of a refused upgrade. */
export function openSocket(app: App, headers: Record<string, string>): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(socketUrl(app), { headers });
    socket.once('open', () => resolve(socket));
    socket.once('unexpected-response', (_req, res) => reject(new Error(String(res.statusCode))));
    socket.once('error', reject);
  });
}

/** Opens a legacy SSE stream and reads its first event, which names the session to post messages to. */
export async function openSse(
  app: App,
  headers: Record<string, string>,
): Promise<{ response: Response; sessionId: string; close: () => void }> {
  const controller = new AbortController();
  const response = await fetch(`${app.url('main')}/sse`, { headers, signal: controller.signal });
  const first = new TextDecoder().decode((await response.body!.getReader().read()).value as Uint8Array);
  return { response, sessionId: /sessionId=([0-9a-f-]+)/.exec(first)![1]!, close: () => controller.abort() };
}
