import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import { connect } from 'node:net';
import { WebSocket } from 'ws';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ForbiddenError } from '../../src/errors.js';
import { Lifecycle } from '../../src/lifecycle.js';
import { closeAfterEach } from '../helpers/app.js';
import { startTestClient } from '../helpers/client.js';
import { socketUrl } from '../helpers/mcp.js';
import { standaloneEndpoint } from './websocket-endpoint.js';

/** Every refusal of every MCP wire comes from the HTTP error renderer: one status, body and header set. */

const closing = closeAfterEach();
const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

async function setUp(env: Record<string, string> = {}) {
  const { app, as } = closing(await startTestClient(env));
  return { app, alice: await as('alice') };
}

interface RawResponse {
  statusLine: string;
  headers: Record<string, string>;
  body: string;
}

/** A WebSocket upgrade written by hand on a TCP socket, and the raw HTTP answer read back until the server closes. */
function rawUpgrade(baseUrl: string, headers: Record<string, string> = {}, path = '/mcp/ws'): Promise<RawResponse> {
  const { hostname, port, host } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const [statusLine = '', ...lines] = text.slice(0, split).split('\r\n');
      const parsed: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        parsed[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ statusLine, headers: parsed, body: text.slice(split + 4) });
    });
    const request = {
      Host: host,
      Connection: 'Upgrade',
      Upgrade: 'websocket',
      'Sec-WebSocket-Version': '13',
      'Sec-WebSocket-Key': randomBytes(16).toString('base64'),
      ...headers,
    };
    socket.write(
      `GET ${path} HTTP/1.1\r\n${Object.entries(request)
        .map(([name, value]) => `${name}: ${value}`)
        .join('\r\n')}\r\n\r\n`,
    );
  });
}

/** The response's declared length matches its body, and its body is JSON. */
function jsonBody(response: RawResponse): unknown {
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  expect(Number(response.headers['content-length'])).toBe(Buffer.byteLength(response.body));
  return JSON.parse(response.body);
}

describe('a refused WebSocket upgrade is an HTTP response from the HTTP renderer', () => {
  it('without credentials: 401 Unauthorized, the resource_metadata hint and the MCP 401 body', async () => {
    const { app } = await setUp();
    const refused = await rawUpgrade(app.url('main'));
    expect(refused.statusLine).toBe('HTTP/1.1 401 Unauthorized');
    expect(refused.headers['www-authenticate']).toBe(
      `Bearer realm="agent-service", resource_metadata="${app.config.publicUrl}/.well-known/oauth-protected-resource/mcp"`,
    );
    expect(jsonBody(refused)).toEqual({ detail: 'Authentication required' });
    // The same challenge and body as the streamable HTTP route.
    const http = await fetch(`${app.url('main')}/mcp`, { method: 'POST' });
    expect(http.status).toBe(401);
    expect(http.headers.get('www-authenticate')).toBe(refused.headers['www-authenticate']);
    expect(await http.json()).toEqual({ detail: 'Authentication required' });
  });

  it('with a bad token: 401 with the hint', async () => {
    const { app } = await setUp();
    const refused = await rawUpgrade(app.url('main'), { Authorization: 'Bearer not-a-token' });
    expect(refused.statusLine).toBe('HTTP/1.1 401 Unauthorized');
    expect(refused.headers['www-authenticate']).toContain('resource_metadata=');
    expect(jsonBody(refused)).toEqual({ detail: expect.any(String) as unknown });
  });

  it('over the concurrent-stream limit: 429 Too Many Requests, Retry-After and rate_limit_exceeded', async () => {
    const { app, alice } = await setUp({ MCP_MAX_CONCURRENT_STREAMS: '1' });
    const first = new WebSocket(socketUrl(app), { headers: alice.credentials });
    await new Promise((resolve, reject) => first.once('open', resolve).once('error', reject));
    const refused = await rawUpgrade(app.url('main'), alice.credentials);
    expect(refused.statusLine).toBe('HTTP/1.1 429 Too Many Requests');
    expect(refused.headers['retry-after']).toBe('1');
    expect(jsonBody(refused)).toEqual({
      error: { code: 'rate_limit_exceeded', message: 'At most 1 concurrent streams', retry_after: 1 },
    });
    first.close();
  });

  it('from a foreign Origin: 403 Forbidden with permission_denied', async () => {
    const { app, alice } = await setUp();
    const refused = await rawUpgrade(app.url('main'), {
      ...alice.credentials,
      Origin: 'https://evil.example.com',
    });
    expect(refused.statusLine).toBe('HTTP/1.1 403 Forbidden');
    expect(jsonBody(refused)).toEqual({ error: { code: 'permission_denied', message: 'Origin not allowed' } });
  });

  it('while the service is not running: 503 Service Unavailable with Retry-After', async () => {
    const { app, alice } = await setUp();
    const { url, server } = await standaloneEndpoint(app, { lifecycle: new Lifecycle() });
    servers.push(server);
    const refused = await rawUpgrade(url, alice.credentials);
    expect(refused.statusLine).toBe('HTTP/1.1 503 Service Unavailable');
    expect(refused.headers['retry-after']).toBe('1');
    expect(jsonBody(refused)).toEqual({
      error: {
        code: 'internal_error',
        message: 'The service is not running',
        trace_id: refused.headers['x-request-id'],
      },
    });
  });

  it('over the limit of sockets awaiting their auth message: 503 with Retry-After', async () => {
    const { app } = await setUp();
    const { url, server } = await standaloneEndpoint(app, { maxPendingAuth: 1 });
    servers.push(server);
    const waiting = new WebSocket(`${url.replace('http', 'ws')}/mcp/ws?auth=message`);
    await new Promise((resolve, reject) => waiting.once('open', resolve).once('error', reject));
    const refused = await rawUpgrade(url, {}, '/mcp/ws?auth=message');
    expect(refused.statusLine).toBe('HTTP/1.1 503 Service Unavailable');
    expect(refused.headers['retry-after']).toBe('1');
    expect(jsonBody(refused)).toMatchObject({ error: { code: 'internal_error' } });
    waiting.close();
  });

  it('a malformed handshake: 400 in the MCP error shape, not the socket library’s text', async () => {
    const { app, alice } = await setUp();
    const refused = await rawUpgrade(app.url('main'), {
      ...alice.credentials,
      'Sec-WebSocket-Key': 'short',
    });
    expect(refused.statusLine).toBe('HTTP/1.1 400 Bad Request');
    expect(jsonBody(refused)).toEqual({
      error: { code: 'invalid_request', message: 'Missing or invalid Sec-WebSocket-Key header' },
    });
  });
});

describe('refusals of the HTTP streaming wires', () => {
  it('streamable HTTP: a full session table is 503 with Retry-After and the MCP error body', async () => {
    const { app, alice } = await setUp({ MCP_MAX_SESSIONS: '1' });
    const initialize = () =>
      fetch(`${app.url('main')}/mcp`, {
        method: 'POST',
        headers: {
          ...alice.credentials,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
        }),
      });
    const first = await initialize();
    expect(first.status).toBe(200);
    await first.text();
    const refused = await initialize();
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toEqual({
      error: {
        code: 'internal_error',
        message: 'Too many open sessions; try again later',
        trace_id: refused.headers.get('x-request-id'),
      },
    });
  });

  it('legacy SSE: a message that is not JSON-RPC is 400 invalid_request in JSON, not the SDK’s plain text', async () => {
    const { app, alice } = await setUp();
    const controller = new AbortController();
    const stream = await fetch(`${app.url('main')}/sse`, {
      headers: alice.credentials,
      signal: controller.signal,
    });
    const reader = stream.body!.getReader();
    let text = '';
    while (!text.includes('event: connected'))
      text += new TextDecoder().decode((await reader.read()).value as Uint8Array);
    const endpoint = /data: (\/messages\?sessionId=[0-9a-f-]+)/.exec(text)![1]!;
    const refused = await fetch(`${app.url('main')}${endpoint}`, {
      method: 'POST',
      headers: { ...alice.credentials, 'Content-Type': 'application/json' },
      body: JSON.stringify({ hello: 'world' }),
    });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({
      error: { code: 'invalid_request', message: 'The body must be a JSON-RPC 2.0 message' },
    });
    controller.abort();
  });

  it('a stream refused mid-way for lack of permission says permission_denied, like every other route', async () => {
    const { app, alice } = await setUp();
    vi.spyOn(app.services.agent.agent(), 'run').mockImplementation(async function* () {
      await Promise.resolve();
      yield* [];
      throw new ForbiddenError('Permission denied: you may not call the tool chat', { code: 'AUTH_ACCESS_DENIED' });
    });
    const res = await fetch(`${app.url('main')}/mcp/message`, {
      method: 'POST',
      headers: { ...alice.credentials, 'Content-Type': 'application/json' },
      body: JSON.stringify({ query: 'hello', stream: true }),
    });
    expect(res.status).toBe(200);
    const events = (await res.text())
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice('data: '.length)) as Record<string, unknown>);
    expect(events.at(-1)).toEqual({
      type: 'error',
      error: { code: 'permission_denied', message: 'Permission denied: you may not call the tool chat' },
    });
  });
});
