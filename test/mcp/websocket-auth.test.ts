import type { IncomingMessage, Server } from 'node:http';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { WebSocket } from 'ws';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { REDACT } from '../../src/logger.js';
import { captureLogger } from '../helpers/app.js';
import { startTestClient } from '../helpers/client.js';
import { createCallerResolver } from '../../src/http/authenticate.js';
import { standaloneEndpoint } from './websocket-endpoint.js';

/**
 * Browsers cannot set headers on a WebSocket upgrade: `/mcp/ws` also takes the credential as a `bearer.<token>`
 * subprotocol, or as a first `{"type":"auth","token"}` message after connecting with `?auth=message`. Every client
 * here is the `ws` package used as a browser would use it: no custom headers.
 */

let app: App;
let token: string;
let aliceId: string;
const logs = captureLogger('debug');
const servers: Server[] = [];

beforeAll(async () => {
  const service = await startTestClient({}, { logger: logs.logger });
  app = service.app;
  ({ token, id: aliceId } = await service.as('alice'));
});
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});
afterAll(async () => {
  await app.close();
});

const socketUrl = (query = '') => `${app.url('main').replace('http', 'ws')}/mcp/ws${query}`;

interface Opened {
  socket: WebSocket;
  upgrade: IncomingMessage;
}

/** Opens a socket like a browser's `new WebSocket(url, protocols)`; rejects with the status of a refused upgrade. */
function open(url: string, protocols: string[] = []): Promise<Opened> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, protocols);
    let upgrade: IncomingMessage | undefined;
    socket.once('upgrade', (res) => (upgrade = res));
    socket.once('open', () => resolve({ socket, upgrade: upgrade! }));
    socket.once('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => reject(new RefusedUpgrade(res.statusCode ?? 0, Buffer.concat(chunks).toString())));
    });
    socket.once('error', reject);
  });
}

class RefusedUpgrade extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`refused with ${status}: ${body}`);
  }
}

async function refusal(promise: Promise<unknown>): Promise<RefusedUpgrade> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(RefusedUpgrade);
  return error as RefusedUpgrade;
}

/** Every message the socket receives, and how it closed. */
function record(socket: WebSocket) {
  const messages: Record<string, unknown>[] = [];
  socket.on('message', (data: Buffer) => messages.push(JSON.parse(data.toString()) as Record<string, unknown>));
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  const next = async (count: number) => {
    for (let i = 0; i < 200 && messages.length < count; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    return messages.slice(0, count);
  };
  return { messages, closed, next };
}

describe('the bearer.<token> subprotocol', () => {
  it('authenticates the socket, and the answer names only the mcp subprotocol', async () => {
    const { socket, upgrade } = await open(socketUrl(), ['mcp', `bearer.${token}`]);
    expect(socket.protocol).toBe('mcp');
    expect(upgrade.headers['sec-websocket-protocol']).toBe('mcp');
    expect(JSON.stringify(upgrade.headers)).not.toContain(token);
    const received = record(socket);
    socket.send(JSON.stringify({ method: 'tools/list', params: {} }));
    const [answer] = await received.next(1);
    expect(answer).toMatchObject({ method: 'tools/list', result: { tools: expect.any(Array) as unknown } });
    socket.close();
  });

  it('refuses a bad token with 401, a bearer offered without mcp with 400, and two credentials with 400', async () => {
    expect((await refusal(open(socketUrl(), ['mcp', 'bearer.not-a-valid-token']))).status).toBe(401);
    const alone = await refusal(open(socketUrl(), [`bearer.${token}`]));
    expect(alone.status).toBe(400);
    expect(JSON.parse(alone.body)).toEqual({
      error: { code: 'invalid_request', message: 'Offer the mcp subprotocol together with bearer.<token>' },
    });
    const twice = await refusal(open(socketUrl('?auth=message'), ['mcp', `bearer.${token}`]));
    expect(twice.status).toBe(400);
  });
});

describe('the first auth message (?auth=message)', () => {
  it('authenticates the socket, and messages sent right behind it are answered after auth_success', async () => {
    const { socket } = await open(socketUrl('?auth=message'));
    const received = record(socket);
    socket.send(JSON.stringify({ type: 'auth', token }));
    socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }));
    const [first, second] = await received.next(2);
    expect(first).toEqual({ type: 'auth_success', user_id: aliceId });
    expect(second).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    expect(app.wires.websocket.size).toBeGreaterThan(0);
    socket.close();
  });

  it('closes a socket that floods messages before its token is checked (1008)', async () => {
    // A slow credential check (an identity provider taking its time) leaves the socket waiting while it floods.
    const slow = createCallerResolver({
      bearer: async (presented) => {
        await new Promise((resolve) => setTimeout(resolve, 300));
        return app.services.auth.auth.authenticateBearer(presented);
      },
      sessionCookie: (credential) => app.services.auth.auth.authenticateSession(credential),
    });
    const { url, server } = await standaloneEndpoint(app, { resolveCaller: slow });
    servers.push(server);
    const { socket } = await open(`${url.replace('http', 'ws')}/mcp/ws?auth=message`);
    const received = record(socket);
    socket.send(JSON.stringify({ type: 'auth', token }));
    for (let id = 1; id <= 500; id++) socket.send(JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' }));
    const { code } = await received.closed;
    expect(code).toBe(1008);
    expect(received.messages.filter((m) => (m as { result?: unknown }).result !== undefined)).toEqual([]);
  });

  it('answers a bad token with auth_error and closes with 4401', async () => {
    const { socket } = await open(socketUrl('?auth=message'));
    const received = record(socket);
    socket.send(JSON.stringify({ type: 'auth', token: `${token}x` }));
    const { code } = await received.closed;
    expect(code).toBe(4401);
    expect(received.messages).toEqual([{ type: 'auth_error', message: expect.any(String) as unknown }]);
  });

  it('answers a first message that is not an auth message with auth_error and closes with 4401', async () => {
    const { socket } = await open(socketUrl('?auth=message'));
    const received = record(socket);
    socket.send(JSON.stringify({ method: 'tools/list', params: {} }));
    const { code, reason } = await received.closed;
    expect(code).toBe(4401);
    expect(reason).toContain('"type":"auth"');
    expect(received.messages).toHaveLength(1);
    expect(received.messages[0]).toMatchObject({ type: 'auth_error' });
  });

  it('closes with 4401 when no auth message arrives in time', async () => {
    const { url, server } = await standaloneEndpoint(app, { authTimeoutMs: 100 });
    servers.push(server);
    const { socket } = await open(`${url.replace('http', 'ws')}/mcp/ws?auth=message`);
    const received = record(socket);
    const { code, reason } = await received.closed;
    expect(code).toBe(4401);
    expect(reason).toBe('No auth message received in time');
    expect(received.messages).toEqual([{ type: 'auth_error', message: 'No auth message received in time' }]);
  });

  it('still refuses an upgrade with no credential and no ?auth=message with 401', async () => {
    expect((await refusal(open(socketUrl()))).status).toBe(401);
  });
});

describe('credentials in logs', () => {
  it('never writes the token, from any of the tests above', () => {
    const text = JSON.stringify(logs.lines());
    expect(text).toContain('websocket');
    expect(text).not.toContain(token);
  });

  it('redacts the Sec-WebSocket-Protocol header wherever request headers are logged', () => {
    const chunks: string[] = [];
    const logger = pino(
      { redact: { paths: REDACT, censor: '[redacted]' } },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          chunks.push(chunk.toString());
          done();
        },
      }),
    );
    logger.info({ req: { headers: { 'sec-websocket-protocol': `mcp, bearer.${token}` } } }, 'upgrade');
    expect(chunks.join('')).not.toContain(token);
    expect(chunks.join('')).toContain('[redacted]');
  });
});
