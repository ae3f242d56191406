import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { WebSocket } from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { startTestApp } from '../helpers/app.js';
import { PASSWORD, call, createUser } from '../helpers/auth.js';
import { startFakeOpenAi } from '../fakes/openai.js';

/** Over-limit requests on every wire, and clients that go away mid-stream. */

const apps: App[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function setUp(env: Record<string, string>) {
  const app = await startTestApp({ ADMIN_PASSWORD: 'bootstrap-secret-1', ...env });
  apps.push(app);
  await createUser(app, 'alice');
  const token = (await call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } })).body
    .access_token as string;
  return { app, token };
}

const openSocket = (app: App, token: string) =>
  new Promise<WebSocket>((resolve, reject) => {
    const socket = new WebSocket(`${app.url('main').replace('http', 'ws')}/mcp/ws`, {
      headers: { Authorization: `Bearer ${token}` },
    });
    socket.once('open', () => resolve(socket));
    socket.once('unexpected-response', (_req, res) => reject(new Error(String(res.statusCode))));
  });

describe('request limits on every wire', () => {
  it('streamable HTTP: 429 with rate-limit headers once the budget is spent', async () => {
    const { app, token } = await setUp({ MCP_REQUESTS_PER_MINUTE: '3' });
    const client = new Client({ name: 'limits', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${app.url('main')}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
    await expect(async () => {
      for (let i = 0; i < 5; i++) await client.listTools();
    }).rejects.toThrow(/rate_limit_exceeded/);
    await client.close().catch(() => undefined);
  });

  it('WebSocket: a JSON-RPC error (-32029) carrying retry_after', async () => {
    const { app, token } = await setUp({ MCP_REQUESTS_PER_MINUTE: '2' });
    const socket = await openSocket(app, token);
    const replies: Record<string, unknown>[] = [];
    socket.on('message', (data) => replies.push(JSON.parse((data as Buffer).toString()) as Record<string, unknown>));
    for (let id = 1; id <= 3; id++) socket.send(JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' }));
    while (replies.length < 3) await new Promise((resolve) => setTimeout(resolve, 10));
    const limited = replies.find((r) => 'error' in r);
    expect(limited).toMatchObject({
      id: 3,
      error: { code: -32029, data: { retry_after: expect.any(Number) as unknown } },
    });
    socket.close();
  });

  it('legacy SSE: POST /messages answers 429', async () => {
    const { app, token } = await setUp({ MCP_REQUESTS_PER_MINUTE: '1' });
    const controller = new AbortController();
    const stream = await fetch(`${app.url('main')}/sse`, {
      headers: { Authorization: `Bearer ${token}` },
      signal: controller.signal,
    });
    const first = new TextDecoder().decode((await stream.body!.getReader().read()).value as Uint8Array);
    const sessionId = /sessionId=([0-9a-f-]+)/.exec(first)![1]!;
    const send = () =>
      fetch(`${app.url('main')}/messages?sessionId=${sessionId}`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      });
    expect((await send()).status).toBe(202);
    const limited = await send();
    expect(limited.status).toBe(429);
    expect(await limited.json()).toMatchObject({ error: { code: 'rate_limit_exceeded' } });
    controller.abort();
  });
});

describe('clients that go away mid-stream', () => {
  it('a dropped /mcp/message stream releases its slot and stops the turn (model: a fake OpenAI-compatible API)', async () => {
    const fake = await startFakeOpenAi(['slow-model']);
    cleanups.push(fake.close);
    // A long answer, one slow chunk at a time: the client leaves long before it ends.
    fake.replies.push({ text: 'word '.repeat(500) });
    fake.chunkDelayMs = 20;
    const { app, token } = await setUp({
      MCP_MAX_CONCURRENT_STREAMS: '1',
      LLM_PROVIDER: 'openai',
      LLM_BASE_URL: fake.url,
      LLM_MODEL: 'slow-model',
    });
    const controller = new AbortController();
    const res = await fetch(`${app.url('main')}/mcp/message`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ query: 'tell me a long story', stream: true }),
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let seen = '';
    while (!seen.includes('content_delta')) seen += new TextDecoder().decode((await reader.read()).value as Uint8Array);
    controller.abort();
    fake.chunkDelayMs = 0;
    fake.replies.push({ text: 'short answer' });
    let status = 429;
    for (let i = 0; i < 100 && status === 429; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      const retry = await fetch(`${app.url('main')}/mcp/message`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ query: 'again', stream: true }),
      });
      status = retry.status;
      await retry.text();
    }
    expect(status).toBe(200);
    // The abandoned turn was cancelled, so its half answer was never recorded.
    const conversations = await app.services.conversations.list(
      `user:${(await app.services.users.getByUsername('alice'))!.id}`,
      {
        offset: 0,
        limit: 10,
      },
    );
    const counts = conversations.map((c) => c.messageCount).sort();
    expect(counts).toEqual([0, 2]);
  });

  it('a dropped WebSocket frees its connection and stream slot', async () => {
    const { app, token } = await setUp({ MCP_MAX_CONCURRENT_STREAMS: '1' });
    const socket = await openSocket(app, token);
    expect(app.wires.websocket.size).toBe(1);
    await expect(openSocket(app, token)).rejects.toThrow('429');
    socket.terminate();
    for (let i = 0; i < 100 && app.wires.websocket.size > 0; i++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(app.wires.websocket.size).toBe(0);
    const again = await openSocket(app, token);
    again.close();
  });

  it('closes every stream and socket on shutdown', async () => {
    const { app, token } = await setUp({});
    const socket = await openSocket(app, token);
    const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
    const stream = await fetch(`${app.url('main')}/sse`, { headers: { Authorization: `Bearer ${token}` } });
    const reading = stream.text();
    await app.close();
    expect(await closed).toBe(1001);
    await reading;
    expect(app.wires.sse.size).toBe(0);
  });
});
