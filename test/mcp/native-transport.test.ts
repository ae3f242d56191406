import { type Server as HttpServer, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BoundedEventStore } from '../../src/mcp/event-store.js';
import {
  type NodeStreamableHttpOptions,
  NodeStreamableHttpTransport,
} from '../../transports/node-streamable-transport.js';

/**
 * The service's own streamable-HTTP transport speaks exactly what the SDK's does: the same exchanges, raw over
 * HTTP, are played against an SDK server on each transport and must be answered alike (status, the headers a
 * client reads, JSON bodies and event streams, with session and event ids normalised).
 */

type Kind = 'native' | 'sdk';
type Transport = NodeStreamableHttpTransport | StreamableHTTPServerTransport;

const servers: HttpServer[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map((server) => {
      const closed = new Promise((done) => server.close(done));
      server.closeAllConnections();
      return closed;
    }),
  );
});

const LATEST = '2025-11-25';
const ACCEPT = 'application/json, text/event-stream';

function mcpServer(): McpServer {
  const server = new McpServer({ name: 'parity', version: '1.0.0' }, { capabilities: { logging: {} } });
  server.registerTool('echo', { inputSchema: { text: z.string() } }, ({ text }) => ({
    content: [{ type: 'text', text }],
  }));
  // Says something on the request's stream, cuts it, and answers a little later: the client resumes for the answer.
  server.registerTool('interrupt', {}, async (extra) => {
    await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data: 'halfway' } });
    extra.closeSSEStream?.();
    await new Promise((done) => setTimeout(done, 50));
    return { content: [{ type: 'text', text: 'done' }] };
  });
  // Tells the session's GET stream, not the request's.
  server.registerTool('announce', {}, async () => {
    await server.server.sendLoggingMessage({ level: 'info', data: 'to everyone' });
    return { content: [{ type: 'text', text: 'announced' }] };
  });
  return server;
}

/**
 * An SDK server on one transport kind. Requests name their session's transport in the query (`?s=`), so that the
 * transport's own checks of the `Mcp-Session-Id` header are what answers a wrong one; without it, a new one answers.
 */
async function serve(kind: Kind, options: Partial<NodeStreamableHttpOptions> = {}): Promise<string> {
  const events = new BoundedEventStore();
  const sessions = new Map<string, Transport>();
  let next = 0;
  const make = (): Transport => {
    const route = String(++next);
    const settings: NodeStreamableHttpOptions = {
      sessionIdGenerator: () => `session-${route}`,
      eventStore: events.forSession('someone', route),
      retryInterval: 100,
      ...options,
    };
    const transport =
      kind === 'native' ? new NodeStreamableHttpTransport(settings) : new StreamableHTTPServerTransport(settings);
    sessions.set(route, transport);
    return transport;
  };
  const server = createServer((req, res) => {
    void (async () => {
      const route = new URL(req.url ?? '/', 'http://x').searchParams.get('s');
      let transport = route ? sessions.get(route) : undefined;
      if (!transport) {
        transport = make();
        res.setHeader('x-route', String(next));
        await mcpServer().connect(transport);
      }
      await transport.handleRequest(req, res);
    })().catch((error: unknown) => {
      res.writeHead(500).end(String(error));
    });
  });
  servers.push(server);
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
}

interface Seen {
  status: number;
  type: string | null;
  session: string | null;
  allow: string | null;
  body: unknown;
}

/** An event stream's events, with ids normalised to their order. */
function events(text: string, ids: Map<string, string>) {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const event: Record<string, unknown> = {};
      for (const line of block.split('\n')) {
        const [field, ...rest] = line.split(':');
        const value = rest.join(':').trimStart();
        if (field === 'id') {
          if (!ids.has(value)) ids.set(value, `#${ids.size + 1}`);
          event.id = ids.get(value);
        } else if (field === 'data') event.data = value === '' ? '' : JSON.parse(value);
        else if (field === '') event.comment = value;
        else event[field!] = value;
      }
      return event;
    });
}

/**
 * Reads a response whole, or an endless stream until it has said `enough` events (then stops listening). Event ids
 * are numbered in their order within the response.
 */
async function seen(res: Response, enough = Infinity): Promise<Seen> {
  const ids = new Map<string, string>();
  const type = res.headers.get('content-type');
  let body: unknown;
  if (type?.startsWith('text/event-stream') && res.body) {
    const reader: ReadableStreamDefaultReader<Uint8Array> = res.body.getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (events(text, new Map()).length < enough) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    if (enough !== Infinity) await reader.cancel();
    body = events(text, ids);
  } else {
    const text = await res.text();
    body = text === '' ? '' : JSON.parse(text);
  }
  const session = res.headers.get('mcp-session-id');
  // The server's own address, which differs from run to run, is named in some refusals.
  if (typeof body === 'object') body = JSON.parse(JSON.stringify(body).replace(/127\.0\.0\.1:\d+/g, 'server'));
  return { status: res.status, type, session: session && 'present', allow: res.headers.get('allow'), body };
}

interface Step {
  method?: string;
  /** The session's route (`?s=`) and header: the session opened by the exchange's first initialize. */
  session?: boolean | 'wrong';
  headers?: Record<string, string>;
  body?: unknown;
  raw?: string;
  /** An endless stream: read this many events. */
  events?: number;
  /** Resume the stream of this earlier step from its first event id. */
  resumeFrom?: number;
  /** Sent without waiting for the answer; read at the end. */
  background?: boolean;
}

const rpc = (id: number, method: string, params: unknown = {}) => ({ jsonrpc: '2.0', id, method, params });
const initialize = (id = 1, protocolVersion = LATEST) =>
  rpc(id, 'initialize', { protocolVersion, capabilities: {}, clientInfo: { name: 'parity', version: '1' } });
const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
const call = (id: number, name: string, args: unknown = {}) => rpc(id, 'tools/call', { name, arguments: args });

/** Plays an exchange against one transport kind; answers what each step saw. */
async function play(kind: Kind, steps: Step[], options?: Partial<NodeStreamableHttpOptions>): Promise<Seen[]> {
  const url = await serve(kind, options);
  const answers: Seen[] = [];
  const rawEventIds: string[][] = [];
  const pending: Promise<Seen>[] = [];
  let session: { route: string; id: string } | undefined;
  for (const [index, step] of steps.entries()) {
    const headers: Record<string, string> = {
      accept: ACCEPT,
      'content-type': 'application/json',
      ...(session && step.session !== undefined && { 'mcp-protocol-version': LATEST }),
      ...step.headers,
    };
    let target = url;
    if (step.session && session) {
      target = `${url}?s=${session.route}`;
      headers['mcp-session-id'] = step.session === 'wrong' ? 'someone-else' : session.id;
    }
    if (step.resumeFrom !== undefined) headers['last-event-id'] = rawEventIds[step.resumeFrom]![0]!;
    const method = step.method ?? 'POST';
    // The head first, so that what a step opens is open before the next step is sent.
    const response = await fetch(target, {
      method,
      headers,
      ...(method === 'POST' && { body: step.raw ?? JSON.stringify(step.body) }),
    });
    const route = response.headers.get('x-route');
    const id = response.headers.get('mcp-session-id');
    if (!session && route && id && response.status === 200) session = { route, id };
    const reading = (async () => {
      const clone = step.events === undefined ? response.clone() : undefined;
      const answer = await seen(response, step.events);
      const text = clone ? await clone.text() : '';
      rawEventIds[index] = [...text.matchAll(/^id: (.+)$/gm)].map((m) => m[1]!);
      return answer;
    })();
    if (step.background) {
      pending.push(reading);
      answers.push(undefined as unknown as Seen);
      continue;
    }
    answers.push(await reading);
  }
  const late = await Promise.all(pending);
  return answers.map((answer) => answer ?? late.shift()!);
}

/** Both transports answer the exchange alike; answers the native transport's answers to check them too. */
async function alike(steps: Step[], options?: Partial<NodeStreamableHttpOptions>): Promise<Seen[]> {
  const sdk = await play('sdk', steps, options);
  const native = await play('native', steps, options);
  expect(native).toEqual(sdk);
  return native;
}

const statuses = (answers: Seen[]) => answers.map((a) => a.status);
const errorOf = (answer: Seen) => (answer.body as { error: { code: number; message: string } }).error;

describe('the native streamable-HTTP transport answers as the SDK transport does', () => {
  it('refuses what is not a message: Accept, Content-Type, JSON, JSON-RPC, batch size, method', async () => {
    const answers = await alike([
      { headers: { accept: 'application/json' }, body: initialize() },
      { headers: { 'content-type': 'text/plain' }, body: initialize() },
      { raw: '{"jsonrpc": "2.0", ' },
      { body: { hello: 'world' } },
      { body: Array.from({ length: 101 }, (_, i) => rpc(i, 'ping')) },
      { method: 'PUT', body: initialize() },
    ]);
    expect(statuses(answers)).toEqual([406, 415, 400, 400, 400, 405]);
    expect(answers.map((a) => errorOf(a).code)).toEqual([-32000, -32000, -32700, -32700, -32600, -32000]);
    expect(answers[5]!.allow).toBe('GET, POST, DELETE');
  });

  it('opens a session, checks its id and protocol version, and ends it', async () => {
    const answers = await alike([
      { body: rpc(1, 'tools/list') },
      { body: initialize() },
      { session: true, body: initialize(2) },
      { session: true, body: initialized },
      { session: 'wrong', body: rpc(3, 'tools/list') },
      { session: true, headers: { 'mcp-protocol-version': '1999-01-01' }, body: rpc(4, 'tools/list') },
      { session: true, body: call(5, 'echo', { text: 'hi' }) },
      { session: true, method: 'DELETE' },
      { session: true, body: rpc(6, 'tools/list') },
    ]);
    expect(statuses(answers)).toEqual([400, 200, 400, 202, 404, 400, 200, 200, 404]);
    expect(answers[1]).toMatchObject({ type: 'text/event-stream', session: 'present' });
    // A priming event (an id, a retry delay, no data) before the answer, for clients of 2025-11-25 and later.
    expect(answers[6]!.body).toEqual([
      { id: '#1', retry: '100', data: '' },
      {
        event: 'message',
        id: '#2',
        data: { jsonrpc: '2.0', id: 5, result: { content: [{ type: 'text', text: 'hi' }] } },
      },
    ]);
  });

  it('answers a batch on one stream, and an older client without a priming event', async () => {
    const answers = await alike([
      { body: initialize(1, '2025-06-18') },
      { session: true, body: initialized },
      {
        session: true,
        headers: { 'mcp-protocol-version': '2025-06-18' },
        body: [call(2, 'echo', { text: 'a' }), call(3, 'echo', { text: 'b' })],
      },
    ]);
    const stream = answers[2]!.body as { id?: string; data: { id: number } }[];
    expect(stream.map((e) => e.data.id)).toEqual([2, 3]);
  });

  it('keeps one GET stream per session, and sends it what belongs to no request', async () => {
    const answers = await alike([
      { body: initialize() },
      { session: true, body: initialized },
      { session: true, method: 'GET', events: 1, background: true },
      { session: true, body: call(2, 'announce') },
    ]);
    expect(answers[2]!.body).toEqual([
      { event: 'message', id: '#1', data: expect.objectContaining({ method: 'notifications/message' }) as unknown },
    ]);
  });

  it('refuses a second GET stream while one is open', async () => {
    const answers = await alike([
      { body: initialize() },
      { session: true, body: initialized },
      { session: true, method: 'GET', events: 1, background: true },
      { session: true, method: 'GET', headers: { accept: 'application/json' } },
      { session: true, method: 'GET' },
      { session: true, body: call(2, 'announce') },
    ]);
    expect(statuses(answers).slice(3)).toEqual([406, 409, 200]);
  });

  it('lets a client resume a stream the server cut, from the priming event, to hear the answer', async () => {
    const answers = await alike([
      { body: initialize() },
      { session: true, body: initialized },
      { session: true, body: call(2, 'interrupt') },
      { session: true, method: 'GET', resumeFrom: 2, events: 2 },
      { session: true, method: 'GET', headers: { 'last-event-id': 'not-an-event' } },
    ]);
    expect(answers[2]!.body).toEqual([
      { id: '#1', retry: '100', data: '' },
      { event: 'message', id: '#2', data: expect.objectContaining({ method: 'notifications/message' }) as unknown },
    ]);
    expect((answers[3]!.body as { data: unknown }[]).at(-1)!.data).toMatchObject({ id: 2, result: {} });
    expect(answers[4]!.status).toBe(400);
  });

  it('answers with one JSON body when asked to', async () => {
    const answers = await alike(
      [
        { body: initialize() },
        { session: true, body: initialized },
        { session: true, body: [call(2, 'echo', { text: 'a' }), rpc(3, 'ping')] },
      ],
      { enableJsonResponse: true, eventStore: undefined },
    );
    expect(answers[2]).toMatchObject({ status: 200, type: 'application/json', session: 'present' });
    expect((answers[2]!.body as { id: number }[]).map((m) => m.id)).toEqual([2, 3]);
  });

  it('refuses a Host or Origin it was not told to expect, when protecting against DNS rebinding', async () => {
    const answers = await alike(
      [{ body: initialize() }, { headers: { origin: 'https://evil.example' }, body: initialize() }],
      { enableDnsRebindingProtection: true, allowedHosts: ['allowed.example'], allowedOrigins: ['https://ok.example'] },
    );
    expect(statuses(answers)).toEqual([403, 403]);
    expect(errorOf(answers[0]!).message).toBe('Invalid Host header: server');
    const origins = await alike(
      [{ body: initialize() }, { headers: { origin: 'https://evil.example' }, body: initialize() }],
      { enableDnsRebindingProtection: true, allowedOrigins: ['https://ok.example'] },
    );
    expect(statuses(origins)).toEqual([200, 403]);
    expect(errorOf(origins[1]!).message).toBe('Invalid Origin header: https://evil.example');
  });
});
