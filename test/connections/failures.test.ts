import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD } from '../helpers/auth.js';
import { closeAfterEach } from '../helpers/app.js';
import { type Json, type SignedIn, startTestClient } from '../helpers/client.js';
import {
  type HttpUpstream,
  type TestUpstream,
  memoryStdioCommand,
  startEverythingHttp,
  startEverythingSse,
  startTestUpstream,
} from '../helpers/upstreams.js';

// What a connected server that misbehaves does to the service: nothing beyond a clear tool error. Real upstreams:
// the test upstream (killed and restarted for real), server-memory over stdio, server-everything over SSE.

const closing = closeAfterEach();
let upstream: TestUpstream;
let everythingSse: HttpUpstream;

beforeAll(async () => {
  [upstream, everythingSse] = await Promise.all([startTestUpstream(), startEverythingSse()]);
});
afterAll(async () => {
  await Promise.all([upstream?.close(), everythingSse?.close()]);
});

const LIMIT_BYTES = 1024 * 1024;

async function setUp() {
  const dir = mkdtempSync(join(tmpdir(), 'memory-'));
  const client = closing(
    await startTestClient({
      CONNECTIONS_PRIVATE_HOSTS: '127.0.0.1,localhost',
      CONNECTIONS_TIMEOUT_MS: '4000',
      CONNECTIONS_MAX_RESPONSE_BYTES: String(LIMIT_BYTES),
      CONNECTIONS_STDIO_COMMANDS: JSON.stringify({ memory: memoryStdioCommand(dir) }),
    }),
  );
  const alice = await client.as('alice');
  const admin = await client.as('admin', { password: ADMIN_PASSWORD });
  const created = await alice.post('/api/v1/connections', {
    name: 'Up',
    transport: 'streamable_http',
    url: upstream.url,
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return { app: client.app, alice, admin, id: created.body.id as string };
}

/** The agent calls the tool (offline model: `/tool <name> {json}`) and quotes the result or the error. */
async function agentCall(user: SignedIn, name: string, args: Json = {}): Promise<string> {
  const res = await user.post('/mcp/message', { query: `/tool ${name} ${JSON.stringify(args)}` });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return String(res.body.response);
}

const callsOf = async (tool: string) => ((await upstream.control('calls')) as Record<string, number>)[tool] ?? 0;

describe('a misbehaving upstream', () => {
  it('is cut off at the size limit and the timeout, and its bad output is refused', async () => {
    const { alice } = await setUp();
    expect(await agentCall(alice, 'up__huge')).toMatch(/more than the allowed response size|more than the \d+ allowed/);
    const started = Date.now();
    expect(await agentCall(alice, 'up__hang')).toMatch(/did not answer/);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await agentCall(alice, 'up__bad_output')).toMatch(/does not match its schema/);
    // And the connection still works.
    expect(await agentCall(alice, 'up__echo', { text: 'still here' })).toContain('echo: still here');
  });

  it('killed mid-call gives a clear error, opens the breaker, and recovers when it is back', async () => {
    const { app, alice } = await setUp();
    expect(await agentCall(alice, 'up__echo', { text: 'before' })).toContain('echo: before');
    const pending = agentCall(alice, 'up__slow', { ms: 5_000 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await upstream.kill();
    expect(await pending).toMatch(/closed the connection|unavailable|did not answer|could not be called/);
    // While it is down, calls fail at once (the breaker is open) with a clear message.
    const quick = Date.now();
    expect(await agentCall(alice, 'up__echo', { text: 'down' })).toMatch(/unavailable|could not be called|closed/);
    expect(Date.now() - quick).toBeLessThan(2_000);
    const health = (await (await fetch(`${app.url('main')}/health/dependencies`)).json()) as Json;
    expect(health.dependencies).toHaveProperty('mcp_connections');
    // Readiness does not depend on a connected server.
    expect((await fetch(`${app.url('main')}/health/ready`)).status).toBe(200);

    await upstream.restart();
    let answer = '';
    for (let i = 0; i < 40 && !answer.includes('echo: back'); i++) {
      answer = await agentCall(alice, 'up__echo', { text: 'back' });
      if (!answer.includes('echo: back')) await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(answer).toContain('echo: back');
  });

  it('runs a destructive tool only when a person approves it: the agent alone never does', async () => {
    const { alice } = await setUp();
    await upstream.control('reset');
    expect(await agentCall(alice, 'up__delete_item', { id: 'a1' })).toMatch(/must approve/);
    expect(await callsOf('delete_item')).toBe(0);
  });

  it('counts and audits every upstream call with the acting user and connection', async () => {
    const { app, alice, admin, id } = await setUp();
    await agentCall(alice, 'up__echo', { text: 'counted' });
    const metrics = await (await fetch(`${app.url('main')}/metrics`)).text();
    expect(metrics).toMatch(/connected_tool_calls_total\{[^}]*connection="up"[^}]*tool="echo"[^}]*status="success"/);
    const audit = await admin.get<Json>('/api/v1/audit-log?type=connection.tool_called');
    const items = audit.body.items as { actor_id?: string; user_id?: string; details: Json }[];
    expect(items.some((e) => e.details.connection_id === id && e.details.tool === 'echo')).toBe(true);
    expect(JSON.stringify(items)).toContain(alice.id);
  });
});

describe('registry servers', () => {
  it('server-memory over stdio keeps what the agent tells it', async () => {
    const { admin, alice } = await setUp();
    const created = await admin.post('/api/v1/connections', {
      name: 'Memory',
      scope: 'shared',
      transport: 'stdio',
      command: 'memory',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const test = await admin.post(`/api/v1/connections/${created.body.id as string}/test`);
    expect(test.body, JSON.stringify(test.body)).toMatchObject({ ok: true });
    const entity = { name: 'quokka', entityType: 'animal', observations: ['smiles a lot'] };
    expect(await agentCall(alice, 'memory__create_entities', { entities: [entity] })).toMatch(/returned [\s\S]*quokka/);
    expect(await agentCall(alice, 'memory__read_graph')).toMatch(/returned [\s\S]*smiles a lot/);
  });

  it('server-everything over streamable HTTP is tested and called', async () => {
    const { alice } = await setUp();
    const everything = await startEverythingHttp();
    try {
      const created = await alice.post('/api/v1/connections', {
        name: 'Everything',
        transport: 'streamable_http',
        url: everything.url,
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const test = await alice.post(`/api/v1/connections/${created.body.id as string}/test`);
      expect(test.body, JSON.stringify(test.body)).toMatchObject({ ok: true });
      expect(await agentCall(alice, 'everything__echo', { message: 'over http' })).toMatch(/returned [\s\S]*over http/);
    } finally {
      await everything.close();
    }
  });

  it('server-everything over legacy SSE is tested and called', async () => {
    const { alice } = await setUp();
    const created = await alice.post('/api/v1/connections', {
      name: 'Everything SSE',
      slug: 'ev',
      transport: 'sse',
      url: everythingSse.url,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const test = await alice.post(`/api/v1/connections/${created.body.id as string}/test`);
    expect(test.body, JSON.stringify(test.body)).toMatchObject({ ok: true });
    expect(await agentCall(alice, 'ev__echo', { message: 'over sse' })).toMatch(/returned [\s\S]*over sse/);
  });
});
