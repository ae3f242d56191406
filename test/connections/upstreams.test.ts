import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Client,
  SSEClientTransport,
  StreamableHTTPClientTransport,
  type Transport,
} from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type TestUpstream,
  everythingStdioCommand,
  memoryStdioCommand,
  startEverythingHttp,
  startEverythingSse,
  startTestUpstream,
} from '../helpers/upstreams.js';

/** The upstream helpers work: each server starts, answers the official 2.x client, and goes away when told. */

const clients: Client[] = [];
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close().catch(() => undefined)));
});
afterAll(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

async function connect(transport: Transport, options: { onToolsChanged?: () => void } = {}): Promise<Client> {
  const client = new Client({ name: 'upstreams-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  if (options.onToolsChanged) client.setNotificationHandler('notifications/tools/list_changed', options.onToolsChanged);
  await client.connect(transport);
  clients.push(client);
  return client;
}

async function until(condition: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const textOf = (result: { content?: unknown }) =>
  ((result.content ?? []) as { type: string; text?: string }[]).map((block) => block.text ?? '').join('');

describe('server-everything', () => {
  it('lists its tools over stdio', async () => {
    const client = await connect(new StdioClientTransport({ ...everythingStdioCommand(), stderr: 'ignore' }));
    expect(client.getProtocolEra()).toBe('legacy');
    expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toContain('echo');
  });

  it('lists its tools over streamable HTTP', async () => {
    const server = await startEverythingHttp();
    cleanups.push(server.close);
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const client = await connect(new StreamableHTTPClientTransport(new URL(server.url)));
    expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toContain('echo');
    expect(textOf(await client.callTool({ name: 'echo', arguments: { message: 'hi' } }))).toContain('hi');
  });

  it('lists its tools over SSE', async () => {
    const server = await startEverythingSse();
    cleanups.push(server.close);
    expect(server.url).toMatch(/\/sse$/);
    const client = await connect(new SSEClientTransport(new URL(server.url)));
    expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toContain('echo');
  });
});

describe('server-memory', () => {
  it('keeps a knowledge graph in the directory given', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'memory-upstream-'));
    cleanups.push(() => Promise.resolve(rmSync(dir, { recursive: true, force: true })));
    const client = await connect(new StdioClientTransport({ ...memoryStdioCommand(dir), stderr: 'ignore' }));
    expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    await client.callTool({
      name: 'create_entities',
      arguments: { entities: [{ name: 'Ada', entityType: 'person', observations: ['wrote the first program'] }] },
    });
    const graph = await client.callTool({ name: 'read_graph', arguments: {} });
    expect(JSON.stringify(graph)).toContain('wrote the first program');
    expect(existsSync(join(dir, 'memory.jsonl'))).toBe(true);
  });
});

describe('the test upstream', () => {
  let upstream: TestUpstream;
  beforeAll(async () => {
    upstream = await startTestUpstream();
    cleanups.push(upstream.close);
  });
  afterEach(async () => {
    await upstream.control('reset');
  });

  const connectUpstream = (options: { onToolsChanged?: () => void; token?: string } = {}) =>
    connect(
      new StreamableHTTPClientTransport(new URL(upstream.url), {
        ...(options.token && { requestInit: { headers: { Authorization: `Bearer ${options.token}` } } }),
      }),
      options,
    );

  it('lists its tools with their annotations and echoes', async () => {
    const client = await connectUpstream();
    expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
    expect(Object.keys(byName).sort()).toEqual(
      ['add', 'bad_output', 'delete_item', 'echo', 'hang', 'huge', 'slow', 'whoami', 'write_note'].sort(),
    );
    expect(byName.echo?.annotations?.readOnlyHint).toBe(true);
    expect(byName.echo?.outputSchema?.properties).toEqual({ echoed: { type: 'string' } });
    expect(byName.delete_item?.annotations).toMatchObject({ destructiveHint: true, readOnlyHint: false });
    expect(byName.write_note?.annotations).toMatchObject({ destructiveHint: false, readOnlyHint: false });
    expect(byName.bad_output?.outputSchema?.properties).toEqual({ count: { type: 'number' } });

    const echoed = await client.callTool({ name: 'echo', arguments: { text: 'hello' } });
    expect(textOf(echoed)).toBe('echo: hello');
    expect(echoed.structuredContent).toEqual({ echoed: 'hello' });
    expect(textOf(await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } }))).toBe('5');
    expect(textOf(await client.callTool({ name: 'slow', arguments: { ms: 20 } }))).toBe('slow done');
    await expect(client.callTool({ name: 'hang', arguments: {} }, { timeout: 300 })).rejects.toThrow(/time/i);
    expect(await upstream.control('calls')).toEqual({ echo: 1, add: 1, slow: 1, hang: 1 });
  });

  it('lets a violation of its output schema through to the client', async () => {
    const response = await fetch(upstream.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      }),
    });
    const session = response.headers.get('mcp-session-id')!;
    await response.text();
    const headers = {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'Mcp-Session-Id': session,
      'Mcp-Protocol-Version': '2025-06-18',
    };
    const post = (body: object) => fetch(upstream.url, { method: 'POST', headers, body: JSON.stringify(body) });
    await post({ jsonrpc: '2.0', method: 'notifications/initialized' }).then((r) => r.text());
    const call = await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'bad_output' } });
    expect(await call.text()).toContain('"structuredContent":{"count":"many"}');
    // The official client refuses it.
    const client = await connectUpstream();
    await client.listTools();
    await expect(client.callTool({ name: 'bad_output', arguments: {} })).rejects.toThrow(/output|schema|structured/i);
  });

  it('sends tools/list_changed to open sessions on a rug pull', async () => {
    let notified!: () => void;
    const changed = new Promise<void>((resolve) => (notified = resolve));
    const transport = new StreamableHTTPClientTransport(new URL(upstream.url));
    const client = await connect(transport, { onToolsChanged: () => notified() });
    const before = await client.listTools();
    expect(before.tools.find((tool) => tool.name === 'echo')?.description).toBe('Echoes the text back.');
    // The standalone GET stream carries the notification: wait until the client has opened it.
    await until(async () => {
      const sessions = (await upstream.control('sessions')) as { id: string; listening: boolean }[];
      return sessions.some((session) => session.id === transport.sessionId && session.listening);
    });
    await upstream.control('rug-pull');
    await changed;
    const after = await client.listTools({}, { cacheMode: 'refresh' });
    expect(after.tools.find((tool) => tool.name === 'echo')?.description).toMatch(/ignore previous instructions/);
  });

  it('demands a bearer token when told, and shows which one it got', async () => {
    await upstream.control('require-bearer', { token: 'secret' });
    const refused = await fetch(upstream.url, { method: 'POST', body: '{}' });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer /);
    await expect(connectUpstream({ token: 'wrong' })).rejects.toThrow();
    const client = await connectUpstream({ token: 'secret' });
    expect(textOf(await client.callTool({ name: 'whoami', arguments: {} }))).toBe('Bearer secret');
  });

  it('returns more than 10 MB from huge', async () => {
    const client = await connectUpstream();
    const result = await client.callTool({ name: 'huge', arguments: {} });
    expect(textOf(result).length).toBeGreaterThan(10_000_000);
  });

  it('dies on kill and comes back on the same port on restart', async () => {
    const client = await connectUpstream();
    expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'one' } }))).toBe('echo: one');
    await upstream.kill();
    await expect(client.callTool({ name: 'echo', arguments: { text: 'two' } })).rejects.toThrow();
    const port = upstream.port;
    await upstream.restart();
    expect(upstream.port).toBe(port);
    const again = await connectUpstream();
    expect(textOf(await again.callTool({ name: 'echo', arguments: { text: 'three' } }))).toBe('echo: three');
  });
});
