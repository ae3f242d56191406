import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpFetch } from '../../src/adapters/llm/http-fetch.js';

/** The fetch the model client uses, against a real HTTP server on the loopback. */

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers) server.closeAllConnections();
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

async function serve(handler: Handler): Promise<{ url: string; sockets: Set<Socket> }> {
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => handler(req, res, body));
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, sockets };
}

describe('the model client’s fetch', () => {
  const httpFetch = createHttpFetch();

  it('sends the method, headers and body, and answers status, headers and a streamed body', async () => {
    const { url } = await serve((req, res, body) => {
      res.writeHead(201, 'Made', [
        ['Content-Type', 'application/json'],
        ['X-Request-Id', 'req-1'],
        ['Set-Cookie', 'a=1'],
        ['Set-Cookie', 'b=2'],
      ]);
      res.end(JSON.stringify({ method: req.method, auth: req.headers.authorization, body }));
    });
    const res = await httpFetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: new Headers({ Authorization: 'Bearer sk-test', 'Content-Type': 'application/json' }),
      body: '{"model":"m"}',
    });
    expect(res).toMatchObject({ status: 201, statusText: 'Made', ok: true });
    expect(res.headers.get('x-request-id')).toBe('req-1');
    expect(res.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(await res.json()).toEqual({ method: 'POST', auth: 'Bearer sk-test', body: '{"model":"m"}' });
  });

  it('streams chunks as the server writes them, on one kept-alive connection', async () => {
    let release: () => void = () => undefined;
    const { url, sockets } = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write('data: first\n\n');
      release = () => res.end('data: [DONE]\n\n');
    });
    for (let turn = 0; turn < 2; turn++) {
      const res = await httpFetch(url, { method: 'POST', body: '{}' });
      const reader = res.body!.getReader();
      // The first chunk arrives while the server still holds the rest.
      expect(new TextDecoder().decode((await reader.read()).value as Uint8Array)).toBe('data: first\n\n');
      release();
      let rest = '';
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
        rest += new TextDecoder().decode(chunk.value as Uint8Array);
      expect(rest).toBe('data: [DONE]\n\n');
    }
    expect(sockets.size).toBe(1);
  });

  it('answers a bodiless status without a body', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(204);
      res.end();
    });
    const res = await httpFetch(url, { method: 'DELETE' });
    expect(res.status).toBe(204);
    expect(res.body).toBeNull();
  });

  it('rejects with an AbortError when aborted before or during the answer', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write('data: first\n\n');
    });
    const before = new AbortController();
    before.abort();
    await expect(httpFetch(url, { signal: before.signal })).rejects.toMatchObject({ name: 'AbortError' });

    const during = new AbortController();
    const res = await httpFetch(url, { signal: during.signal });
    const reader = res.body!.getReader();
    await reader.read();
    during.abort();
    await expect(reader.read()).rejects.toBeDefined();
  });

  it('errors the body when the server cuts the answer off', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write('data: first\n\n', () => setTimeout(() => res.socket?.destroy(), 20));
    });
    const reader = (await httpFetch(url)).body!.getReader();
    expect((await reader.read()).done).toBe(false);
    await expect(reader.read()).rejects.toBeInstanceOf(Error);
  });

  it('rejects, and does not throw, when the server is away or answers a status no response can carry', async () => {
    const { url } = await serve((req, res) => {
      req.socket.write('HTTP/1.1 999 Odd\r\nContent-Length: 0\r\n\r\n');
      res.destroy();
    });
    await expect(httpFetch(url)).rejects.toBeInstanceOf(RangeError);
    await expect(httpFetch('http://127.0.0.1:1/')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });
});
