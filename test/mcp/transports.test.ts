import { request } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { type SignedIn, startTestClient } from '../helpers/client.js';
import {
  TOOL_NAMES,
  openSocket,
  openSse,
  restoreGlobalWebSocketAfterEach,
  sdkTransports,
  stdioTransport,
} from '../helpers/mcp.js';

/** One MCP scenario through the official SDK client over every connection-based wire. */

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
    expect(tools.map((t) => t.name)).toEqual(TOOL_NAMES);

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
let alice: SignedIn;
let bob: SignedIn;

beforeAll(async () => {
  const service = await startTestClient();
  app = service.app;
  alice = await service.as('alice');
  bob = await service.as('bob');
});
afterAll(() => app.close());
restoreGlobalWebSocketAfterEach();

describe('one MCP scenario over every wire (official SDK client)', () => {
  it('streamable HTTP at /mcp', async () => {
    await scenario(sdkTransports['streamable HTTP'](app, alice.credentials));
  });

  it('legacy SSE at /sse', async () => {
    await scenario(sdkTransports['legacy SSE'](app, alice.credentials));
  });

  it('WebSocket at /mcp/ws', async () => {
    await scenario(sdkTransports.WebSocket(app, alice.credentials));
  });

  it('stdio (agent-service stdio), as the bootstrap administrator by default', async () => {
    const stderr: string[] = [];
    const transport = stdioTransport('info');
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
  const initialize = (protocolVersion: string) =>
    post(
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      },
      alice.credentials,
    );

  it('negotiates protocol 2024-11-05 and the newest version the SDK knows', async () => {
    for (const version of ['2024-11-05', '2025-06-18']) {
      const res = await initialize(version);
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toContain(`"protocolVersion":"${version}"`);
      await fetch(`${app.url('main')}/mcp`, {
        method: 'DELETE',
        headers: { ...alice.credentials, 'Mcp-Session-Id': res.headers.get('mcp-session-id')! },
      });
    }
  });

  it('refuses requests without credentials (401 {detail}), without a session, or with another caller’s session', async () => {
    const anonymous = await post({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual({ detail: 'Authentication required' });
    expect(anonymous.headers.get('www-authenticate')).toContain('resource_metadata=');

    const noSession = await post({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, alice.credentials);
    expect(noSession.status).toBe(400);

    const opened = await initialize('2024-11-05');
    const sessionId = opened.headers.get('mcp-session-id')!;
    const stolen = await post(
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      { ...bob.credentials, 'Mcp-Session-Id': sessionId },
    );
    expect(stolen.status).toBe(404);
    const ended = await fetch(`${app.url('main')}/mcp`, {
      method: 'DELETE',
      headers: { ...alice.credentials, 'Mcp-Session-Id': sessionId },
    });
    expect(ended.status).toBe(200);
    const gone = await post(
      { jsonrpc: '2.0', id: 3, method: 'tools/list' },
      { ...alice.credentials, 'Mcp-Session-Id': sessionId },
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
      headers: alice.credentials,
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
      headers: alice.credentials,
      signal: controller.signal,
    });
    await res.body!.getReader().read();
    expect(app.wires.sse.size).toBe(1);
    controller.abort();
    for (let i = 0; i < 50 && app.wires.sse.size > 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(app.wires.sse.size).toBe(0);
  });

  it('builds a stream’s MCP server with its first message, not when the stream opens', async () => {
    const before = { streams: app.wires.sse.size, servers: app.wires.sse.servers };
    const quiet = await openSse(app, alice.credentials);
    const busy = await openSse(app, alice.credentials);
    expect(app.wires.sse.size).toBe(before.streams + 2);
    expect(app.wires.sse.servers).toBe(before.servers);
    const posted = await alice.post(`/messages?sessionId=${busy.sessionId}`, { jsonrpc: '2.0', id: 1, method: 'ping' });
    expect(posted.status).toBe(202);
    expect(app.wires.sse.servers).toBe(before.servers + 1);
    quiet.close();
    busy.close();
    for (let i = 0; i < 50 && app.wires.sse.size > before.streams; i++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(app.wires.sse.size).toBe(before.streams);
    expect(app.wires.sse.servers).toBe(before.servers);
  });

  it('refuses to post to another caller’s stream', async () => {
    const stream = await openSse(app, alice.credentials);
    const posted = await bob.post(`/messages?sessionId=${stream.sessionId}`, {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/list',
    });
    expect(posted.status).toBe(404);
    stream.close();
  });
});

describe('WebSocket details', () => {
  const open = (headers: Record<string, string>) => openSocket(app, headers);
  const ask = (socket: WebSocket, message: unknown) =>
    new Promise<Record<string, unknown>>((resolve) => {
      socket.once('message', (data) => resolve(JSON.parse((data as Buffer).toString()) as Record<string, unknown>));
      socket.send(typeof message === 'string' ? message : JSON.stringify(message));
    });

  it('answers the spec’s {method, params} messages in kind, and JSON-RPC in JSON-RPC', async () => {
    const socket = await open(alice.credentials);
    const short = await ask(socket, { method: 'tools/list', params: {} });
    expect(short.method).toBe('tools/list');
    expect((short.result as { tools: unknown[] }).tools).toHaveLength(TOOL_NAMES.length);
    const rpc = await ask(socket, { jsonrpc: '2.0', id: 7, method: 'ping' });
    expect(rpc).toEqual({ jsonrpc: '2.0', id: 7, result: {} });
    expect(await ask(socket, 'not json{')).toMatchObject({ error: { code: -32700 } });
    socket.close();
  });

  it('refuses an upgrade without credentials (401) and from a foreign Origin (403)', async () => {
    await expect(open({})).rejects.toThrow('401');
    await expect(open({ ...alice.credentials, Origin: 'https://evil.example.com' })).rejects.toThrow('403');
  });

  it('reports a denied tool as a tool error on JSON-RPC wires', async () => {
    await app.infrastructure.authz.delete([
      { user: 'user:*', relation: 'executor', object: 'tool:conversation_search' },
    ]);
    try {
      const socket = await open(alice.credentials);
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
      headers: { Origin: 'https://evil.example.com', ...alice.credentials },
    });
    expect(origin.status).toBe(403);
    expect(await origin.json()).toEqual({ error: { code: 'permission_denied', message: 'Origin not allowed' } });
    expect(
      (await fetch(`${app.url('main')}/health/live`, { headers: { Origin: 'http://localhost:3000' } })).status,
    ).toBe(200);
  });

  it('publishes the protected-resource metadata the 401 challenge points at', async () => {
    const res = await alice.get('/.well-known/oauth-protected-resource/mcp');
    expect(res.body).toMatchObject({
      resource: expect.stringMatching(/\/mcp$/) as unknown,
      bearer_methods_supported: ['header'],
    });
  });
});
