import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD } from '../helpers/auth.js';
import { closeAfterEach } from '../helpers/app.js';
import { type Json, type SignedIn, startTestClient } from '../helpers/client.js';
import { type TestUpstream, everythingStdioCommand, startTestUpstream } from '../helpers/upstreams.js';

// Connected MCP servers, against real upstreams started here: the test upstream (an SDK server in its own process)
// over streamable HTTP, and server-everything over stdio.

const closing = closeAfterEach();
let upstream: TestUpstream;

beforeAll(async () => {
  upstream = await startTestUpstream();
});
afterAll(async () => {
  await upstream?.close();
});

const ENV = {
  CONNECTIONS_PRIVATE_HOSTS: '127.0.0.1,localhost',
  CONNECTIONS_TIMEOUT_MS: '3000',
  CONNECTIONS_MAX_RESPONSE_BYTES: String(1024 * 1024),
};

async function setUp(env: Record<string, string> = {}) {
  const stdio = everythingStdioCommand();
  const client = closing(
    await startTestClient({
      ...ENV,
      CONNECTIONS_STDIO_COMMANDS: JSON.stringify({ everything: { ...stdio, description: 'server-everything' } }),
      ...env,
    }),
  );
  return {
    app: client.app,
    admin: await client.as('admin', { password: ADMIN_PASSWORD }),
    alice: await client.as('alice'),
    bob: await client.as('bob'),
  };
}

async function register(user: SignedIn, body: Json): Promise<Json> {
  const res = await user.post('/api/v1/connections', body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

/** A tool call over MCP (the REST-style endpoint POST /mcp/tools/call): gateway tools only. */
async function callTool(user: SignedIn, name: string, args: Json) {
  return user.post('/mcp/tools/call', { method: 'tools/call', params: { name, arguments: args } });
}

/** A tool call by the agent: the offline model calls `/tool <name> {json}` and quotes the result in its answer. */
async function agentCall(user: SignedIn, name: string, args: Json): Promise<string> {
  const res = await user.post('/mcp/message', { query: `/tool ${name} ${JSON.stringify(args)}` });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return String(res.body.response);
}

describe('connections', () => {
  it('registers a personal server, lists and calls its tools, and hides them from others', async () => {
    const { alice, bob } = await setUp();
    const created = await register(alice, {
      name: 'Test upstream',
      transport: 'streamable_http',
      url: upstream.url,
    });
    expect(created).toMatchObject({
      slug: 'test-upstream',
      scope: 'personal',
      auth: { kind: 'none', secret_set: false },
    });

    const test = await alice.post(`/api/v1/connections/${created.id as string}/test`);
    expect(test.body).toMatchObject({ ok: true });
    expect(typeof (test.body.server as Json).name).toBe('string');
    expect(test.body.tools).toBeGreaterThanOrEqual(5);

    const tools = await alice.at('builder').get<Json[]>('/api/builder/tools');
    const echo = tools.body.find((t) => t.name === 'test-upstream__echo');
    expect(echo).toMatchObject({
      server: { id: created.id, slug: 'test-upstream' },
      annotations: { readOnlyHint: true },
    });

    expect(await agentCall(alice, 'test-upstream__echo', { text: 'hello' })).toContain('echo: hello');

    // Bob is not offered alice's server, and a direct call is refused as an unknown tool.
    const bobs = await bob.at('builder').get<Json[]>('/api/builder/tools');
    expect(bobs.body.some((t) => String(t.name).startsWith('test-upstream__'))).toBe(false);
    expect(await agentCall(bob, 'test-upstream__echo', { text: 'x' })).not.toContain('echo: x');
    const direct = await callTool(bob, 'test-upstream__echo', { text: 'x' });
    expect(JSON.stringify(direct.body)).toContain('not found');
    expect((await bob.get(`/api/v1/connections/${created.id as string}`)).status).toBe(404);
    expect((await bob.delete(`/api/v1/connections/${created.id as string}`)).status).toBe(404);
    expect((await alice.get(`/api/v1/connections/${created.id as string}`)).status).toBe(200);
  });

  it('holds a tool whose definition changed upstream until it is approved', async () => {
    const { alice } = await setUp();
    await upstream.control('reset');
    const created = await register(alice, { name: 'Pinned', transport: 'streamable_http', url: upstream.url });
    const id = created.id as string;
    expect((await alice.post(`/api/v1/connections/${id}/test`)).body.ok).toBe(true);
    await upstream.control('rug-pull');
    // The next listing sees the new definition (fresh on the tools page).
    const states = await alice.get<Json[]>(`/api/v1/connections/${id}/tools`);
    expect(states.body.find((t) => t.upstream_name === 'echo')).toMatchObject({ status: 'held' });
    expect(await agentCall(alice, 'pinned__echo', { text: 'x' })).not.toContain('echo: x');

    const approved = await alice.post<Json>(`/api/v1/connections/${id}/tools/echo/approve`);
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ status: 'approved' });
    expect(await agentCall(alice, 'pinned__echo', { text: 'y' })).toContain('echo: y');
    await upstream.control('reset');
  });

  it('refuses what a user may not do, and addresses the service may not reach', async () => {
    const { alice } = await setUp({ CONNECTIONS_PRIVATE_HOSTS: '' });
    const cases: Json[] = [
      { name: 'x', transport: 'streamable_http', url: 'http://10.0.0.5/mcp' },
      { name: 'x', transport: 'streamable_http', url: 'http://169.254.169.254/latest' },
      { name: 'x', transport: 'streamable_http', url: 'file:///etc/passwd' },
      { name: 'x', transport: 'streamable_http', url: upstream.url },
    ];
    for (const body of cases) expect((await alice.post('/api/v1/connections', body)).status).toBe(400);
    expect(
      (await alice.post('/api/v1/connections', { name: 'x', transport: 'stdio', command: 'everything' })).status,
    ).toBe(403);
    expect(
      (
        await alice.post('/api/v1/connections', {
          name: 'x',
          scope: 'shared',
          transport: 'streamable_http',
          url: 'https://example.com/mcp',
        })
      ).status,
    ).toBe(403);
    expect((await alice.get<Json[]>('/api/v1/connections')).body).toEqual([]);
  });

  it('does not send a secret to another address: moving a connection needs the secret again', async () => {
    const { alice } = await setUp();
    const created = await register(alice, {
      name: 'Keyed',
      transport: 'streamable_http',
      url: 'https://one.example/mcp',
      auth: { kind: 'bearer', secret: 'for-one-only' },
    });
    const path = `/api/v1/connections/${created.id as string}`;
    expect((await alice.patch(path, { name: 'Renamed' })).status).toBe(200);
    const moved = await alice.patch(path, { url: 'https://two.example/mcp' });
    expect(moved.status).toBe(400);
    expect((await alice.get(path)).body).toMatchObject({ url: 'https://one.example/mcp', name: 'Renamed' });
    const withSecret = await alice.patch(path, { url: 'https://two.example/mcp', auth: { secret: 'for-two' } });
    expect(withSecret.body).toMatchObject({ url: 'https://two.example/mcp', auth: { secret_set: true } });
    expect(JSON.stringify(withSecret.body)).not.toContain('for-two');
  });

  it('runs an allow-listed stdio server for everyone as a shared connection, over MCP as a gateway', async () => {
    const { app, admin, alice } = await setUp();
    const created = await register(admin, {
      name: 'Everything',
      scope: 'shared',
      transport: 'stdio',
      command: 'everything',
      gateway: true,
    });
    expect(created).toMatchObject({ scope: 'shared', gateway: true });
    const test = await alice.post(`/api/v1/connections/${created.id as string}/test`);
    expect(test.body, JSON.stringify(test.body)).toMatchObject({ ok: true });

    const echoed = await callTool(alice, 'everything__echo', { message: 'from stdio' });
    expect(JSON.stringify(echoed.body)).toContain('from stdio');

    // Alice may use it, not change it.
    expect((await alice.delete(`/api/v1/connections/${created.id as string}`)).status).toBe(403);

    const client = new Client({ name: 'gateway-test', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${app.url('main')}/mcp`), {
        requestInit: { headers: alice.credentials },
      }),
    );
    const listed = await client.listTools();
    expect(listed.tools.map((t) => t.name)).toContain('everything__echo');
    const result = await client.callTool({ name: 'everything__echo', arguments: { message: 'gateway' } });
    expect(JSON.stringify(result.content)).toContain('gateway');
    await client.close();
  });
});
