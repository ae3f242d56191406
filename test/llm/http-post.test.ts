import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ResponseTimedOut, createHttpPost, textChunks, textOf } from '../../src/adapters/llm/http-post.js';
import { headersOf } from '../../src/web-headers.js';

/** The POST the model provider sends, against a real HTTP server on the loopback. */

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

describe('the model provider’s POST', () => {
  const post = createHttpPost();
  const postTo = (url: string, signal = new AbortController().signal) =>
    post({ url: new URL(url), headers: { 'Content-Type': 'application/json' }, body: '{"model":"m"}', signal });

  async function readAll(res: IncomingMessage): Promise<string> {
    let text = '';
    for await (const chunk of textChunks(res)) text += chunk;
    return text;
  }

  it('sends the method, headers, length and body, and answers status, headers and a streamed body', async () => {
    const { url } = await serve((req, res, body) => {
      res.writeHead(201, 'Made', [
        ['Content-Type', 'application/json'],
        ['X-Request-Id', 'req-1'],
        ['Set-Cookie', 'a=1'],
        ['Set-Cookie', 'b=2'],
      ]);
      res.end(
        JSON.stringify({
          method: req.method,
          length: req.headers['content-length'],
          type: req.headers['content-type'],
          body,
        }),
      );
    });
    const res = await postTo(`${url}/v1/chat/completions`);
    expect(res.statusCode).toBe(201);
    const headers = headersOf(res);
    expect(headers.get('x-request-id')).toBe('req-1');
    expect(headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(JSON.parse(await textOf(res))).toEqual({
      method: 'POST',
      length: '13',
      type: 'application/json',
      body: '{"model":"m"}',
    });
  });

  it('streams chunks as the server writes them, on one kept-alive connection', async () => {
    let release: () => void = () => undefined;
    const { url, sockets } = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write('data: first\n\n');
      release = () => res.end('data: [DONE]\n\n');
    });
    for (let turn = 0; turn < 2; turn++) {
      const chunks = textChunks(await postTo(url));
      // The first chunk arrives while the server still holds the rest.
      expect((await chunks.next()).value).toBe('data: first\n\n');
      release();
      expect((await chunks.next()).value).toBe('data: [DONE]\n\n');
      expect((await chunks.next()).done).toBe(true);
    }
    expect(sockets.size).toBe(1);
  });

  it('rejects with an AbortError when aborted before the answer, and errors the body when aborted during it', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write('data: first\n\n');
    });
    const before = new AbortController();
    before.abort();
    await expect(postTo(url, before.signal)).rejects.toMatchObject({ name: 'AbortError' });

    const during = new AbortController();
    const chunks = textChunks(await postTo(url, during.signal));
    expect((await chunks.next()).value).toBe('data: first\n\n');
    during.abort();
    await expect(chunks.next()).rejects.toBeInstanceOf(Error);
  });

  it('gives up on an answer that has not started within its time, and not on one that has', async () => {
    let answerLate!: () => void;
    const { url, sockets } = await serve((req, res) => {
      if (req.headers['x-slow'] === 'head') {
        answerLate = () => res.end('late');
        return;
      }
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write('data: first\n\n');
      setTimeout(() => res.end('data: second\n\n'), 150);
    });
    const signal = new AbortController().signal;
    const slow = post({ url: new URL(url), headers: { 'X-Slow': 'head' }, body: '{}', signal, timeoutMs: 50 });
    await expect(slow).rejects.toBeInstanceOf(ResponseTimedOut);
    await expect(slow).rejects.toThrow('no response within 50 ms');
    // The request was given up with its connection: an answer that comes now has nowhere to go.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(sockets.size).toBe(0);
    answerLate();

    // The time bounds the wait for the head only: a body that takes longer still streams to its end.
    const started = await post({ url: new URL(url), headers: {}, body: '{}', signal, timeoutMs: 50 });
    expect(await readAll(started)).toBe('data: first\n\ndata: second\n\n');
  });

  it('keeps a character split between chunks whole, and drops the connection of a reader that stops early', async () => {
    const { url, sockets } = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      const euro = Buffer.from('data: €\n\n');
      res.write(euro.subarray(0, 7), () => setTimeout(() => res.write(euro.subarray(7)), 20));
    });
    const chunks = textChunks(await postTo(url));
    let text = '';
    for await (const chunk of chunks) {
      text += chunk;
      if (text.endsWith('\n\n')) break;
    }
    expect(text).toBe('data: €\n\n');
    await expect.poll(() => sockets.size).toBe(0);
  });

  it('errors the body when the server cuts the answer off', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write('data: first\n\n', () => setTimeout(() => res.socket?.destroy(), 20));
    });
    await expect(readAll(await postTo(url))).rejects.toBeInstanceOf(Error);
  });

  it('rejects, and does not throw, when the server is away or the URL is not HTTP', async () => {
    await expect(postTo('http://127.0.0.1:1/')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    await expect(postTo('ftp://127.0.0.1/')).rejects.toBeInstanceOf(TypeError);
  });
});
