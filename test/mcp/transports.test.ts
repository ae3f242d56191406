import { mkdtempSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { WebSocket } from 'ws';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { startTestApp } from '../helpers/app.js';
import { PASSWORD, call, createUser } from '../helpers/auth.js';

/** One MCP scenario through the official SDK client over every connection-based wire. */

const MAIN = join(import.meta.dirname, '../../src/main.ts');

/** The SDK's WebSocket client uses the global WebSocket, which on Node 20 must come from `ws`; it adds our header. */
function webSocketWithHeaders(headers: Record<string, string>): typeof globalThis.WebSocket {
  return class extends WebSocket {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols, { headers });
    }
  } as unknown as typeof globalThis.WebSocket;
}

async function scenario(transport: Transport): Promise<void> {
  const client = new Client({ name: 'scenario', version: '1.0.0' });
  const logs: unknown[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    logs.push(notification.params);
  });
  await client.connect(transport);
  try {
    expect(client.getServerVersion()).toMatchObject({ name: 'agent-service', version: '2.8.0' });
    expect(client.getServerCapabilities()).toMatchObject({
      logging: {},
      tools: { listChanged: true },
      prompts: { listChanged: true },
    });

    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual([
      'chat',
      'search_web',
      'agent_chat',
      'conversation_get',
      'conversation_search',
    ]);

    const chat = await client.callTool({ name: 'chat', arguments: { query: 'hello over the wire' } });
    const answer = chat.structuredContent as { response: string; conversation_id: string; model: string };
    expect(answer.model).toBe('offline');
    expect(answer.response).toMatch(/^Offline model: you said "hello over the wire"/);

    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toEqual(
      expect.arrayContaining(['agent-service://server', `conversation://${answer.conversation_id}`]),
    );
    const read = await client.readResource({ uri: `conversation://${answer.conversation_id}` });
    expect(JSON.parse((read.contents[0] as { text: string }).text)).toMatchObject({
      conversation_id: answer.conversation_id,
    });

    const { prompts } = await client.listPrompts();
    expect(prompts.map((p) => p.name).sort()).toEqual(['research_topic', 'summarize_conversation']);
    const prompt = await client.getPrompt({
      name: 'summarize_conversation',
      arguments: { conversation_id: answer.conversation_id },
    });
    expect((prompt.messages[0]!.content as { text: string }).text).toContain('hello over the wire');

    await client.setLoggingLevel('debug');
    await client.callTool({ name: 'search_web', arguments: { query: 'streamable HTTP' } });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(logs).toContainEqual({
      level: 'debug',
      logger: 'search_web',
      data: { tool: 'search_web', results: expect.any(Number) as unknown },
    });
  } finally {
    await client.close();
  }
}

let app: App;
let token: string;
let bobToken: string;
const originalWebSocket = globalThis.WebSocket;

beforeAll(async () => {
  app = await startTestApp({ ADMIN_PASSWORD: 'bootstrap-secret-1' });
  await createUser(app, 'alice');
  await createUser(app, 'bob');
  token = (await call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } })).body
    .access_token as string;
  bobToken = (await call(app, 'POST', '/auth/login', { body: { username: 'bob', password: PASSWORD } })).body
    .access_token as string;
});
afterAll(async () => {
  globalThis.WebSocket = originalWebSocket;
  await app.close();
});
afterEach(() => {
  globalThis.WebSocket = originalWebSocket;
});

describe('one MCP scenario over every wire (official SDK client)', () => {
  it('streamable HTTP at /mcp', async () => {
    await scenario(
      new StreamableHTTPClientTransport(new URL(`${app.url('main')}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
  });

  it('legacy SSE at /sse', async () => {
    await scenario(
      new SSEClientTransport(new URL(`${app.url('main')}/sse`), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
  });

  it('WebSocket at /mcp/ws', async () => {
    globalThis.WebSocket = webSocketWithHeaders({ Authorization: `Bearer ${token}` });
    await scenario(new WebSocketClientTransport(new URL(`${app.url('main').replace('http', 'ws')}/mcp/ws`)));
  });

  it('stdio (agent-service stdio), as the bootstrap administrator by default', async () => {
    const dbFile = join(mkdtempSync(join(tmpdir(), 'agent-stdio-')), 'agent.db');
    const stderr: string[] = [];
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', MAIN, 'stdio'],
      env: {
        PATH: process.env.PATH ?? '',
        DATABASE_URL: `sqlite:${dbFile}`,
        ADMIN_PASSWORD: 'bootstrap-secret-1',
        LOG_LEVEL: 'info',
      },
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
    await scenario(transport);
    // Logs went to stderr, so stdout carried only JSON-RPC.
    expect(stderr.join('')).toContain('serving MCP on stdio');
  });
});

describe('streamable HTTP details', () => {
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${app.url('main')}/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify(body),
    });
  const initialize = (protocolVersion: string, bearer = token) =>
    post(
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      },
      { Authorization: `Bearer ${bearer}` },
    );

  it('negotiates protocol 2024-11-05 and the newest version the SDK knows', async () => {
    for (const version of ['2024-11-05', '2025-06-18']) {
      const res = await initialize(version);
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toContain(`"protocolVersion":"${version}"`);
      await fetch(`${app.url('main')}/mcp`, {
        method: 'DELETE',
        headers: { Authorization: `Bearer ${token}`, 'Mcp-Session-Id': res.headers.get('mcp-session-id')! },
      });
    }
  });

  it('refuses requests without credentials (401 {detail}), without a session, or with another caller’s session', async () => {
    const anonymous = await post({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual({ detail: 'Authentication required' });
    expect(anonymous.headers.get('www-authenticate')).toContain('resource_metadata=');

    const noSession = await post({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, { Authorization: `Bearer ${token}` });
    expect(noSession.status).toBe(400);

    const opened = await initialize('2024-11-05');
    const sessionId = opened.headers.get('mcp-session-id')!;
    const stolen = await post(
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      { Authorization: `Bearer ${bobToken}`, 'Mcp-Session-Id': sessionId },
    );
    expect(stolen.status).toBe(404);
    const ended = await fetch(`${app.url('main')}/mcp`, {
      method: 'DELETE',
      headers: { Authorization: `Bearer ${token}`, 'Mcp-Session-Id': sessionId },
    });
    expect(ended.status).toBe(200);
    const gone = await post(
      { jsonrpc: '2.0', id: 3, method: 'tools/list' },
      { Authorization: `Bearer ${token}`, 'Mcp-Session-Id': sessionId },
    );
    expect(gone.status).toBe(404);
  });

  it('reaps idle sessions', async () => {
    const before = app.wires.streamable.size;
    await initialize('2024-11-05');
    expect(app.wires.streamable.size).toBe(before + 1);
    expect(await app.wires.streamable.reapIdle(Date.now() + 24 * 3_600_000)).toBeGreaterThanOrEqual(1);
    expect(app.wires.streamable.size).toBe(0);
  });
});

describe('legacy SSE details', () => {
  it('emits the endpoint event, then the spec’s connected event', async () => {
    const controller = new AbortController();
    const res = await fetch(`${app.url('main')}/sse`, {
      headers: { Authorization: `Bearer ${token}` },
      signal: controller.signal,
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('event: connected'))
      text += new TextDecoder().decode((await reader.read()).value as Uint8Array);
    controller.abort();
    expect(text).toMatch(/^event: endpoint\ndata: \/messages\?sessionId=[0-9a-f-]+\n\n/);
    expect(text).toMatch(/event: connected\ndata: \{"session_id":"[0-9a-f-]+","server":\{"name":"agent-service"/);
  });

  it('frees the connection when the client goes away mid-stream', async () => {
    const controller = new AbortController();
    const res = await fetch(`${app.url('main')}/sse`, {
      headers: { Authorization: `Bearer ${token}` },
      signal: controller.signal,
    });
    await res.body!.getReader().read();
    expect(app.wires.sse.size).toBe(1);
    controller.abort();
    for (let i = 0; i < 50 && app.wires.sse.size > 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(app.wires.sse.size).toBe(0);
  });

  it('refuses to post to another caller’s stream', async () => {
    const controller = new AbortController();
    const res = await fetch(`${app.url('main')}/sse`, {
      headers: { Authorization: `Bearer ${token}` },
      signal: controller.signal,
    });
    const first = new TextDecoder().decode((await res.body!.getReader().read()).value as Uint8Array);
    const sessionId = /sessionId=([0-9a-f-]+)/.exec(first)![1]!;
    const posted = await call(app, 'POST', `/messages?sessionId=${sessionId}`, {
      token: bobToken,
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    });
    expect(posted.status).toBe(404);
    controller.abort();
  });
});

describe('WebSocket details', () => {
  const socketUrl = () => `${app.url('main').replace('http', 'ws')}/mcp/ws`;
  const open = (headers: Record<string, string>) =>
    new Promise<WebSocket>((resolve, reject) => {
      const socket = new WebSocket(socketUrl(), { headers });
      socket.once('open', () => resolve(socket));
      socket.once('unexpected-response', (_req, res) => reject(new Error(String(res.statusCode))));
      socket.once('error', reject);
    });
  const ask = (socket: WebSocket, message: unknown) =>
    new Promise<Record<string, unknown>>((resolve) => {
      socket.once('message', (data) => resolve(JSON.parse((data as Buffer).toString()) as Record<string, unknown>));
      socket.send(typeof message === 'string' ? message : JSON.stringify(message));
    });

  it('answers the spec’s {method, params} messages in kind, and JSON-RPC in JSON-RPC', async () => {
    const socket = await open({ Authorization: `Bearer ${token}` });
    const short = await ask(socket, { method: 'tools/list', params: {} });
    expect(short.method).toBe('tools/list');
    expect((short.result as { tools: unknown[] }).tools).toHaveLength(5);
    const rpc = await ask(socket, { jsonrpc: '2.0', id: 7, method: 'ping' });
    expect(rpc).toEqual({ jsonrpc: '2.0', id: 7, result: {} });
    expect(await ask(socket, 'not json{')).toMatchObject({ error: { code: -32700 } });
    socket.close();
  });

  it('refuses an upgrade without credentials (401) and from a foreign Origin (403)', async () => {
    await expect(open({})).rejects.toThrow('401');
    await expect(open({ Authorization: `Bearer ${token}`, Origin: 'https://evil.example.com' })).rejects.toThrow('403');
  });

  it('reports a denied tool as a tool error on JSON-RPC wires', async () => {
    await app.infrastructure.authz.delete([
      { user: 'user:*', relation: 'executor', object: 'tool:conversation_search' },
    ]);
    try {
      const socket = await open({ Authorization: `Bearer ${token}` });
      const reply = await ask(socket, {
        method: 'tools/call',
        params: { name: 'conversation_search', arguments: { query: 'x' } },
      });
      expect(reply.result).toMatchObject({
        isError: true,
        content: [{ text: 'Permission denied: you may not call the tool conversation_search' }],
      });
      socket.close();
    } finally {
      await app.infrastructure.authz.write([
        { user: 'user:*', relation: 'executor', object: 'tool:conversation_search' },
      ]);
    }
  });
});

describe('DNS-rebinding protection on loopback', () => {
  it('refuses a foreign Host or Origin', async () => {
    // fetch may not set Host, so this request goes out through node:http.
    const { port } = new URL(app.url('main'));
    const hostStatus = await new Promise<number>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, path: '/health/live', headers: { Host: 'evil.example.com' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(hostStatus).toBe(403);
    const origin = await fetch(`${app.url('main')}/mcp`, {
      method: 'POST',
      headers: { Origin: 'https://evil.example.com', Authorization: `Bearer ${token}` },
    });
    expect(origin.status).toBe(403);
    expect(await origin.json()).toEqual({ error: { code: 'permission_denied', message: 'Origin not allowed' } });
    expect(
      (await fetch(`${app.url('main')}/health/live`, { headers: { Origin: 'http://localhost:3000' } })).status,
    ).toBe(200);
  });

  it('publishes the protected-resource metadata the 401 challenge points at', async () => {
    const res = await call(app, 'GET', '/.well-known/oauth-protected-resource/mcp');
    expect(res.body).toMatchObject({
      resource: expect.stringMatching(/\/mcp$/) as unknown,
      bearer_methods_supported: ['header'],
    });
  });
});
