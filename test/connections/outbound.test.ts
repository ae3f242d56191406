import {
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  createServer,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import {
  OutboundLimitError,
  type OutboundPolicy,
  OutboundRefusedError,
  checkOutboundUrl,
  createOutboundFetch,
} from '../../src/modules/connections/outbound.js';

/**
 * The outbound request guard against real HTTP servers on loopback: what it refuses it must refuse before a byte
 * leaves (the servers count connections), and what it lets through must behave as fetch does.
 */

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

interface TestServer {
  port: number;
  /** `http://127.0.0.1:port` (or the server's own host). */
  origin: string;
  received: Received[];
  connections: () => number;
}

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

const open: Server[] = [];
const cleanups: (() => void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) cleanup();
  await Promise.all(
    open.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
});

async function serve(handler: Handler, host = '127.0.0.1'): Promise<TestServer> {
  const received: Received[] = [];
  let connections = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, res, body);
    });
  });
  server.on('connection', () => connections++);
  open.push(server);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return { port, origin, received, connections: () => connections };
}

const hello: Handler = (_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain' }).end('hello');
};

function policy(overrides: Partial<OutboundPolicy> = {}): OutboundPolicy {
  return { privateHosts: [], timeoutMs: 2_000, maxResponseBytes: 1024 * 1024, ...overrides };
}

/** Settles with the error a promise rejects with (or fails when it resolves). */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection');
}

function refusal(call: () => unknown): Error {
  try {
    call();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a refusal');
}

/** Writes `total` bytes in chunks, without Content-Length (chunked), for as long as the client reads. */
function writeChunked(res: ServerResponse, total: number): void {
  const chunk = Buffer.alloc(64 * 1024, 'x');
  let written = 0;
  const pump = (): void => {
    while (written < total && !res.destroyed) {
      written += chunk.length;
      if (!res.write(chunk)) return void res.once('drain', pump);
    }
    if (!res.destroyed) res.end();
  };
  res.writeHead(200, { 'content-type': 'application/octet-stream' });
  pump();
}

describe('checkOutboundUrl', () => {
  it('refuses schemes other than http and https', () => {
    for (const url of ['ftp://example.com/', 'file:///etc/passwd', 'ws://example.com/', 'javascript:alert(1)']) {
      const error = refusal(() => checkOutboundUrl(url, policy({ privateHosts: ['*'] })));
      expect(error).toBeInstanceOf(OutboundRefusedError);
      expect((error as OutboundRefusedError).code).toBe('outbound_refused');
      expect(error.message).toMatch(/only http and https/);
    }
  });

  it('refuses credentials in the URL and text that is not a URL', () => {
    expect(() => checkOutboundUrl('https://user:secret@example.com/', policy())).toThrow(
      'Refused: credentials in the URL are not allowed',
    );
    expect(() => checkOutboundUrl('not a url', policy())).toThrow(OutboundRefusedError);
  });

  it('refuses plain http off loopback, even when every address is allowed', () => {
    for (const url of ['http://example.com/mcp', 'http://10.0.0.5/', 'http://93.184.215.14/']) {
      expect(() => checkOutboundUrl(url, policy({ privateHosts: ['*'] }))).toThrow(
        'Refused: plain http is only allowed to a loopback host; use https',
      );
    }
  });

  it('refuses http to loopback unless privateHosts allows it', () => {
    expect(() => checkOutboundUrl('http://127.0.0.1:8080/', policy())).toThrow(
      'Refused: 127.0.0.1 is a loopback address (allow it in CONNECTIONS_PRIVATE_HOSTS)',
    );
    expect(() => checkOutboundUrl('http://localhost:8080/', policy())).toThrow(/localhost is a loopback address/);
    expect(checkOutboundUrl('http://127.0.0.1:8080/', policy({ privateHosts: ['127.0.0.1'] })).port).toBe('8080');
    expect(checkOutboundUrl('http://localhost:8080/', policy({ privateHosts: ['localhost'] })).hostname).toBe(
      'localhost',
    );
    expect(checkOutboundUrl('http://localhost/', policy({ privateHosts: ['127.0.0.0/8'] })).hostname).toBe('localhost');
    expect(() => checkOutboundUrl('http://localhost/', policy({ privateHosts: ['10.0.0.0/8'] }))).toThrow(
      OutboundRefusedError,
    );
  });

  it('refuses private, loopback, link-local and other special IP literals', () => {
    const refused = {
      'https://10.0.0.5/': '10.0.0.5 is a private address',
      'https://192.168.1.1/': '192.168.1.1 is a private address',
      'https://172.16.0.1/': '172.16.0.1 is a private address',
      'https://169.254.169.254/latest/meta-data/': '169.254.169.254 is a link-local address',
      'https://[::1]/': '::1 is a loopback address',
      'https://[::ffff:127.0.0.1]/': '::ffff:7f00:1 is a loopback address',
      'https://[::ffff:10.0.0.1]/': '::ffff:a00:1 is a private address',
      'https://[fc00::1]/': 'fc00::1 is a private address',
      'https://[fd12:3456::1]/': 'fd12:3456::1 is a private address',
      'https://[fe80::1]/': 'fe80::1 is a link-local address',
      'https://100.64.0.1/': '100.64.0.1 is a shared (CGNAT) address',
      'https://0.0.0.0/': '0.0.0.0 is an unspecified address',
      'https://[::]/': ':: is an unspecified address',
      'https://224.0.0.1/': '224.0.0.1 is a multicast address',
      'https://[ff02::1]/': 'ff02::1 is a multicast address',
      'https://255.255.255.255/': '255.255.255.255 is a reserved address',
      'https://192.0.0.8/': '192.0.0.8 is a reserved address',
      'https://198.18.0.1/': '198.18.0.1 is a reserved address',
      // Spellings the URL parser turns into 127.0.0.1, and IPv6 addresses that carry a private IPv4 inside.
      'https://2130706433/': '127.0.0.1 is a loopback address',
      'https://0x7f.1/': '127.0.0.1 is a loopback address',
      'https://[64:ff9b::a00:1]/': '64:ff9b::a00:1 is a private address',
      'https://[2002:a00:1::]/': '2002:a00:1:: is a private address',
    };
    for (const [url, reason] of Object.entries(refused)) {
      expect(() => checkOutboundUrl(url, policy()), url).toThrow(
        `Refused: ${reason} (allow it in CONNECTIONS_PRIVATE_HOSTS)`,
      );
    }
  });

  it('lets public addresses and names through, names being judged when connecting', () => {
    for (const url of ['https://93.184.215.14/', 'https://[2606:4700:4700::1111]/', 'https://example.com/mcp']) {
      expect(checkOutboundUrl(url, policy()).href).toBe(url);
    }
  });

  it('allows what privateHosts lists by address, range or wildcard, and nothing beside it', () => {
    const ranges = policy({ privateHosts: ['10.0.0.0/8', 'fc00::/7', '169.254.169.254'] });
    expect(checkOutboundUrl('https://10.200.0.1/', ranges).hostname).toBe('10.200.0.1');
    expect(checkOutboundUrl('https://[fd00::5]/', ranges).hostname).toBe('[fd00::5]');
    expect(checkOutboundUrl('https://169.254.169.254/', ranges).hostname).toBe('169.254.169.254');
    // An IPv4-mapped address is judged as its IPv4, for allowing as for refusing.
    expect(checkOutboundUrl('https://[::ffff:10.1.2.3]/', ranges).hostname).toBe('[::ffff:a01:203]');
    expect(() => checkOutboundUrl('https://192.168.1.1/', ranges)).toThrow(/192\.168\.1\.1 is a private address/);
    expect(() => checkOutboundUrl('https://169.254.169.253/', ranges)).toThrow(/link-local/);
    expect(checkOutboundUrl('https://192.168.1.1/', policy({ privateHosts: ['*'] })).hostname).toBe('192.168.1.1');
  });

  it('rejects a privateHosts entry that means nothing', () => {
    for (const entry of ['10.0.0.0/33', '10.0.0.0/x', 'localhost:3000', 'bad host', 'example.com/path']) {
      expect(() => checkOutboundUrl('https://example.com/', policy({ privateHosts: [entry] })), entry).toThrow(
        /Invalid private host/,
      );
      expect(() => createOutboundFetch(policy({ privateHosts: [entry] })), entry).toThrow(/Invalid private host/);
    }
  });
});

describe('createOutboundFetch', () => {
  it('refuses loopback by default without connecting, and reaches it when listed', async () => {
    const server = await serve(hello);
    const error = await rejection(createOutboundFetch(policy())(`${server.origin}/`));
    expect(error).toBeInstanceOf(OutboundRefusedError);
    expect(error.message).toBe('Refused: 127.0.0.1 is a loopback address (allow it in CONNECTIONS_PRIVATE_HOSTS)');
    expect(server.connections()).toBe(0);

    const res = await createOutboundFetch(policy({ privateHosts: ['127.0.0.1'] }))(`${server.origin}/path?q=1`);
    expect(res).toBeInstanceOf(Response);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain');
    expect(res.url).toBe(`${server.origin}/path?q=1`);
    expect(res.redirected).toBe(false);
    expect(await res.text()).toBe('hello');
  });

  it('judges the name localhost by the address it resolves to', async () => {
    const server = await serve(hello);
    // Listed by address, not by name: the name passes because it resolves to 127.0.0.1.
    const byAddress = await createOutboundFetch(policy({ privateHosts: ['127.0.0.1'] }))(
      `http://localhost:${server.port}/`,
    );
    expect(await byAddress.text()).toBe('hello');
    const byName = await createOutboundFetch(policy({ privateHosts: ['localhost'] }))(
      `http://localhost:${server.port}/`,
    );
    expect(await byName.text()).toBe('hello');

    // https names are judged only when the connection is made, by the resolved address (nothing is sent).
    expect(checkOutboundUrl(`https://localhost:${server.port}/`, policy()).hostname).toBe('localhost');
    const error = await rejection(createOutboundFetch(policy())(`https://localhost:${server.port}/`));
    expect(error).toBeInstanceOf(OutboundRefusedError);
    expect(error.message).toBe(
      'Refused: localhost resolves to a loopback address (allow it in CONNECTIONS_PRIVATE_HOSTS)',
    );
    const elsewhere = await rejection(
      createOutboundFetch(policy({ privateHosts: ['10.0.0.0/8'] }))(`https://localhost:${server.port}/`),
    );
    expect(elsewhere).toBeInstanceOf(OutboundRefusedError);
    expect(server.connections()).toBe(2);
  });

  it('refuses private IP literals without sending anything', async () => {
    const v4 = await serve(hello);
    const v6 = await serve(hello, '::1');
    const guarded = createOutboundFetch(policy({ privateHosts: ['192.0.2.0/24'] }));
    for (const url of [
      `http://[::1]:${v6.port}/`,
      `http://[::ffff:127.0.0.1]:${v4.port}/`,
      `https://[::ffff:127.0.0.1]:${v4.port}/`,
      'https://10.1.2.3/',
      'https://192.168.0.1/',
      'https://169.254.169.254/latest/meta-data/iam/',
      'https://[fc00::1]/',
    ]) {
      const error = await rejection(guarded(url));
      expect(error, url).toBeInstanceOf(OutboundRefusedError);
      expect(error.message, url).toMatch(/^Refused: \S+ is a (loopback|private|link-local) address/);
    }
    expect(v4.connections()).toBe(0);
    expect(v6.connections()).toBe(0);
    // The same server is reachable once its address is listed, so the refusal above was the guard's.
    const allowed = await createOutboundFetch(policy({ privateHosts: ['::1'] }))(`${v6.origin}/`);
    expect(await allowed.text()).toBe('hello');
  });

  it('refuses plain http to a host off loopback', async () => {
    const error = await rejection(createOutboundFetch(policy({ privateHosts: ['*'] }))('http://example.com/mcp'));
    expect(error).toBeInstanceOf(OutboundRefusedError);
    expect(error.message).toBe('Refused: plain http is only allowed to a loopback host; use https');
  });

  it('refuses a redirect from an allowed server to an address that is not allowed', async () => {
    const target = await serve(hello, '127.0.0.2');
    const server = await serve((req, res) => {
      const to = req.url === '/metadata' ? 'https://169.254.169.254/latest/meta-data/' : `${target.origin}/`;
      res.writeHead(302, { location: to }).end();
    });
    const guarded = createOutboundFetch(policy({ privateHosts: ['127.0.0.1'] }));

    const error = await rejection(guarded(`${server.origin}/`));
    expect(error).toBeInstanceOf(OutboundRefusedError);
    expect(error.message).toBe(
      `Refused redirect to ${target.origin}: 127.0.0.2 is a loopback address (allow it in CONNECTIONS_PRIVATE_HOSTS)`,
    );
    const metadata = await rejection(guarded(`${server.origin}/metadata`));
    expect(metadata.message).toMatch(/^Refused redirect to https:\/\/169\.254\.169\.254: .* link-local address/);
    expect(target.connections()).toBe(0);
    expect(server.received).toHaveLength(2);

    // The same hop is followed once its address is allowed.
    const followed = await createOutboundFetch(policy({ privateHosts: ['127.0.0.0/8'] }))(`${server.origin}/`);
    expect(await followed.text()).toBe('hello');
    expect(followed.url).toBe(`${target.origin}/`);
    expect(followed.redirected).toBe(true);
  });

  it('follows at most maxRedirects redirects', async () => {
    const server = await serve((req, res) => {
      const n = Number(/^\/hop\/(\d+)/.exec(req.url ?? '')?.[1] ?? 0);
      if (req.url?.endsWith('?stop=3') && n === 3) return void res.writeHead(200).end(`hop ${n}`);
      res.writeHead(n % 2 ? 301 : 308, { location: `/hop/${n + 1}${req.url?.includes('?') ? '?stop=3' : ''}` }).end();
    });
    const guarded = createOutboundFetch(policy({ privateHosts: ['127.0.0.1'], maxRedirects: 3 }));

    const ok = await guarded(`${server.origin}/hop/0?stop=3`);
    expect(await ok.text()).toBe('hop 3');
    expect(ok.url).toBe(`${server.origin}/hop/3?stop=3`);

    server.received.length = 0;
    const error = await rejection(guarded(`${server.origin}/hop/0`));
    expect(error).toBeInstanceOf(OutboundRefusedError);
    expect(error.message).toBe('Refused: more than 3 redirects');
    expect(server.received.map(({ url }) => url)).toEqual(['/hop/0', '/hop/1', '/hop/2', '/hop/3']);

    const defaults = await rejection(
      createOutboundFetch(policy({ privateHosts: ['127.0.0.1'] }))(`${server.origin}/hop/0`),
    );
    expect(defaults.message).toBe('Refused: more than 5 redirects');
  });

  it('drops Authorization and Cookie on a redirect to another origin, and keeps them on the same origin', async () => {
    const other = await serve(hello);
    const server = await serve((req, res) => {
      if (req.url === '/same') return void res.writeHead(307, { location: '/landing' }).end();
      if (req.url === '/cross') return void res.writeHead(307, { location: `${other.origin}/landing` }).end();
      hello(req, res, '');
    });
    const guarded = createOutboundFetch(policy({ privateHosts: ['127.0.0.1'] }));
    const headers = { authorization: 'Bearer secret', cookie: 'session=1', 'x-trace': 'abc' };

    expect((await guarded(`${server.origin}/same`, { headers })).status).toBe(200);
    const landed = server.received.find(({ url }) => url === '/landing');
    expect(landed?.headers.authorization).toBe('Bearer secret');
    expect(landed?.headers.cookie).toBe('session=1');

    expect((await guarded(`${server.origin}/cross`, { headers })).status).toBe(200);
    const [crossed] = other.received;
    expect(crossed?.headers.authorization).toBeUndefined();
    expect(crossed?.headers.cookie).toBeUndefined();
    expect(crossed?.headers['x-trace']).toBe('abc');
  });

  it('keeps method and body on 307 and 308, and turns a POST into a bodiless GET on 303', async () => {
    const server = await serve((req, res, body) => {
      if (req.url === '/307') return void res.writeHead(307, { location: '/echo' }).end();
      if (req.url === '/303') return void res.writeHead(303, { location: '/echo' }).end();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ method: req.method, body, contentType: req.headers['content-type'] ?? null }));
    });
    const guarded = createOutboundFetch(policy({ privateHosts: ['127.0.0.1'] }));
    const form = () => new URLSearchParams({ grant_type: 'authorization_code', code: 'abc' });

    const kept = await guarded(`${server.origin}/307`, { method: 'POST', body: form() });
    expect(await kept.json()).toEqual({
      method: 'POST',
      body: 'grant_type=authorization_code&code=abc',
      contentType: 'application/x-www-form-urlencoded;charset=UTF-8',
    });
    const turned = await guarded(`${server.origin}/303`, { method: 'POST', body: form() });
    expect(await turned.json()).toEqual({ method: 'GET', body: '', contentType: null });
  });

  it('sends a string body as fetch would, with its Content-Type, method spelled in capitals, again on a 307', async () => {
    const server = await serve((req, res, body) => {
      if (req.url === '/307') return void res.writeHead(307, { location: '/echo' }).end();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ method: req.method, body, contentType: req.headers['content-type'] ?? null }));
    });
    const guarded = createOutboundFetch(policy({ privateHosts: ['127.0.0.1'] }));
    const message = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', text: 'grüße' });

    const plain = await guarded(`${server.origin}/307`, { method: 'post', body: message });
    expect(await plain.json()).toEqual({ method: 'POST', body: message, contentType: 'text/plain;charset=UTF-8' });
    const typed = await guarded(`${server.origin}/echo`, {
      method: 'PATCH',
      headers: { 'Content-Type': 'application/json' },
      body: message,
    });
    expect(await typed.json()).toEqual({ method: 'PATCH', body: message, contentType: 'application/json' });
    const refused = await rejection(guarded(`${server.origin}/echo`, { method: 'GET', body: message }));
    expect(refused).toBeInstanceOf(TypeError);
    expect(server.received.map((r) => r.method)).toEqual(['POST', 'POST', 'PATCH']);
  });

  it('errors a compressed body that inflates past maxResponseBytes, whatever its Content-Length says', async () => {
    const packed = gzipSync(Buffer.alloc(4 * 1024 * 1024, 'x'));
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip', 'content-length': packed.length }).end(packed);
    });
    expect(packed.length).toBeLessThan(1024 * 1024);
    const res = await createOutboundFetch(policy({ privateHosts: ['127.0.0.1'] }))(`${server.origin}/`);
    const error = await rejection(res.arrayBuffer());
    expect(error).toBeInstanceOf(OutboundLimitError);
    expect(error).toMatchObject({ limit: 'size' });
  });

  it('cuts off a server that sends no headers within timeoutMs', async () => {
    const server = await serve((_req, res) => {
      const timer = setTimeout(() => res.writeHead(200).end('late'), 5_000);
      cleanups.push(() => clearTimeout(timer));
    });
    const started = Date.now();
    const error = await rejection(
      createOutboundFetch(policy({ privateHosts: ['127.0.0.1'], timeoutMs: 150 }))(`${server.origin}/`),
    );
    expect(error).toBeInstanceOf(OutboundLimitError);
    expect(error).toMatchObject({ code: 'outbound_limit', limit: 'timeout' });
    expect(error.message).toBe(`Timed out: no response from 127.0.0.1:${server.port} within 150 ms`);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('lets a body take longer than timeoutMs once the headers have come', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.flushHeaders();
      const timer = setTimeout(() => res.end('slow body'), 300);
      cleanups.push(() => clearTimeout(timer));
    });
    const res = await createOutboundFetch(policy({ privateHosts: ['127.0.0.1'], timeoutMs: 100 }))(`${server.origin}/`);
    expect(await res.text()).toBe('slow body');
  });

  it('refuses a body whose Content-Length exceeds maxResponseBytes before reading it', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-length': 10 * 1024 * 1024 }).end(Buffer.alloc(10 * 1024 * 1024));
    });
    const error = await rejection(createOutboundFetch(policy({ privateHosts: ['127.0.0.1'] }))(`${server.origin}/`));
    expect(error).toBeInstanceOf(OutboundLimitError);
    expect(error).toMatchObject({ limit: 'size' });
    expect(error.message).toBe(`Cut off: the response from 127.0.0.1:${server.port} exceeds 1048576 bytes`);
  });

  it('errors a chunked body once it exceeds maxResponseBytes', async () => {
    let closed = false;
    const server = await serve((_req, res) => {
      res.on('close', () => (closed = true));
      writeChunked(res, 10 * 1024 * 1024);
    });
    const res = await createOutboundFetch(policy({ privateHosts: ['127.0.0.1'] }))(`${server.origin}/`);
    expect(res.headers.get('content-length')).toBeNull();
    expect(res.status).toBe(200);
    const error = await rejection(res.arrayBuffer());
    expect(error).toBeInstanceOf(OutboundLimitError);
    expect(error).toMatchObject({ limit: 'size' });
    // The connection is given up rather than read to the end.
    await expect.poll(() => closed).toBe(true);
  });

  it('passes an SSE stream on event by event, before the server ends it', async () => {
    let release = (): void => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write('event: message\ndata: {"n":1}\n\n');
      void released.then(() => res.end('event: message\ndata: {"n":2}\n\n'));
    });
    const res = await createOutboundFetch(policy({ privateHosts: ['127.0.0.1'], timeoutMs: 200 }))(
      `${server.origin}/`,
      { headers: { accept: 'text/event-stream' } },
    );
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    const first = await reader.read();
    expect(first.value).toBe('event: message\ndata: {"n":1}\n\n');
    release();
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += chunk.value;
    expect(rest).toBe('event: message\ndata: {"n":2}\n\n');
  });

  it("stops at the caller's abort, before the headers and while the body streams", async () => {
    const server = await serve((req, res) => {
      if (req.url === '/hang') return;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: first\n\n');
    });
    const guarded = createOutboundFetch(policy({ privateHosts: ['127.0.0.1'], timeoutMs: 5_000 }));

    const early = new AbortController();
    setTimeout(() => early.abort(), 50);
    const started = Date.now();
    const error = await rejection(guarded(`${server.origin}/hang`, { signal: early.signal }));
    expect(error.name).toBe('AbortError');
    expect(error).not.toBeInstanceOf(OutboundLimitError);
    expect(Date.now() - started).toBeLessThan(1_000);

    const late = new AbortController();
    const res = await guarded(`${server.origin}/stream`, { signal: late.signal });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: first\n\n');
    late.abort();
    expect((await rejection(reader.read())).name).toBe('AbortError');

    const already = AbortSignal.abort();
    expect((await rejection(guarded(`${server.origin}/stream`, { signal: already }))).name).toBe('AbortError');
  });
});
