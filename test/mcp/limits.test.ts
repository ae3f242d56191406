import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { describe, expect, it, vi } from 'vitest';
import { closeAfterEach } from '../helpers/app.js';
import { startTestClient } from '../helpers/client.js';
import { MODERN_REVISION, modernBody, openSocket, openSse, sdkTransports } from '../helpers/mcp.js';
import { startFakeOpenAi } from '../fakes/openai.js';

/** Over-limit requests on every wire, and clients that go away mid-stream. */

const closing = closeAfterEach();

async function setUp(env: Record<string, string>) {
  const { app, as } = closing(await startTestClient(env));
  return { app, alice: await as('alice') };
}

describe('request limits on every wire', () => {
  it('streamable HTTP: 429 with rate-limit headers once the budget is spent', async () => {
    const { app, alice } = await setUp({ MCP_REQUESTS_PER_MINUTE: '3' });
    const client = new Client({ name: 'limits', version: '1' });
    await client.connect(sdkTransports['streamable HTTP'](app, alice.credentials));
    await expect(async () => {
      for (let i = 0; i < 5; i++) await client.listTools();
    }).rejects.toThrow(/rate_limit_exceeded/);
    await client.close().catch(() => undefined);
  });

  it('WebSocket: a JSON-RPC error (-32029) carrying retry_after', async () => {
    const { app, alice } = await setUp({ MCP_REQUESTS_PER_MINUTE: '2' });
    const socket = await openSocket(app, alice.credentials);
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
    const { app, alice } = await setUp({ MCP_REQUESTS_PER_MINUTE: '1' });
    const stream = await openSse(app, alice.credentials);
    const send = () => alice.post(`/messages?sessionId=${stream.sessionId}`, { jsonrpc: '2.0', id: 1, method: 'ping' });
    expect((await send()).status).toBe(202);
    const limited = await send();
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ error: { code: 'rate_limit_exceeded' } });
    stream.close();
  });
});

describe('clients that go away mid-stream', () => {
  it('a dropped /mcp/message stream releases its slot and stops the turn (model: a fake OpenAI-compatible API)', async () => {
    const fake = closing(await startFakeOpenAi(['slow-model']));
    // A long answer, one slow chunk at a time: the client leaves long before it ends.
    fake.replies.push({ text: 'word '.repeat(500) });
    fake.chunkDelayMs = 20;
    const { app, alice } = await setUp({
      MCP_MAX_CONCURRENT_STREAMS: '1',
      LLM_PROVIDER: 'openai',
      LLM_BASE_URL: fake.url,
      LLM_MODEL: 'slow-model',
    });
    const controller = new AbortController();
    const res = await fetch(`${app.url('main')}/mcp/message`, {
      method: 'POST',
      headers: { ...alice.credentials, 'Content-Type': 'application/json' },
      body: JSON.stringify({ query: 'tell me a long story', stream: true }),
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let seen = '';
    while (!seen.includes('content_delta')) seen += new TextDecoder().decode((await reader.read()).value as Uint8Array);
    controller.abort();
    // Still slow: the abandoned answer must not reach its end before the service hears the client leave.
    fake.replies.push({ text: 'short answer' });
    let status = 429;
    for (let i = 0; i < 100 && status === 429; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      const retry = await fetch(`${app.url('main')}/mcp/message`, {
        method: 'POST',
        headers: { ...alice.credentials, 'Content-Type': 'application/json' },
        body: JSON.stringify({ query: 'again', stream: true }),
      });
      status = retry.status;
      await retry.text();
    }
    expect(status).toBe(200);
    // The abandoned turn was cancelled, so its half answer was never recorded.
    const conversations = await app.services.conversations.list(`user:${alice.id}`, { offset: 0, limit: 10 });
    const counts = conversations.map((c) => c.messageCount).sort();
    expect(counts).toEqual([0, 2]);
  });

  it('a 2026-07-28 tools/call whose client leaves stops its model call (model: a fake OpenAI-compatible API)', async () => {
    const fake = closing(await startFakeOpenAi(['slow-model']));
    // A long answer, one slow chunk at a time: some ten seconds unless the call is stopped.
    fake.replies.push({ text: 'word '.repeat(500) });
    fake.chunkDelayMs = 20;
    const { app, alice } = await setUp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: fake.url, LLM_MODEL: 'slow-model' });
    const controller = new AbortController();
    const answered = fetch(`${app.url('main')}/mcp`, {
      method: 'POST',
      headers: {
        ...alice.credentials,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'Mcp-Protocol-Version': MODERN_REVISION,
        'Mcp-Method': 'tools/call',
        'Mcp-Name': 'chat',
      },
      body: JSON.stringify(modernBody('tools/call', { name: 'chat', arguments: { query: 'a long story' } })),
      signal: controller.signal,
    }).catch((error: unknown) => error);
    await vi.waitFor(() => expect(fake.requests.some((r) => r.path.endsWith('/chat/completions'))).toBe(true));
    controller.abort();
    expect(await answered).toMatchObject({ name: 'AbortError' });
    // The service heard the client leave and stopped the model's answer long before its end.
    await vi.waitFor(() => expect(fake.abandoned).toBe(1), { timeout: 3_000 });
  });

  it('a dropped WebSocket frees its connection and stream slot', async () => {
    const { app, alice } = await setUp({ MCP_MAX_CONCURRENT_STREAMS: '1' });
    const socket = await openSocket(app, alice.credentials);
    expect(app.wires.websocket.size).toBe(1);
    await expect(openSocket(app, alice.credentials)).rejects.toThrow('429');
    socket.terminate();
    for (let i = 0; i < 100 && app.wires.websocket.size > 0; i++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(app.wires.websocket.size).toBe(0);
    const again = await openSocket(app, alice.credentials);
    again.close();
  });

  it('closes every stream and socket on shutdown', async () => {
    const { app, alice } = await setUp({});
    const socket = await openSocket(app, alice.credentials);
    const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
    const stream = await fetch(`${app.url('main')}/sse`, { headers: alice.credentials });
    const reading = stream.text();
    await app.close();
    expect(await closed).toBe(1001);
    await reading;
    expect(app.wires.sse.size).toBe(0);
  });
});
