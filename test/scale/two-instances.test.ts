import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { startTestApp } from '../helpers/app.js';
import { PASSWORD, call, createUser } from '../helpers/auth.js';
import {
  REDIS_URL,
  createPostgresDatabase,
  describeWithService,
  probePostgres,
  probeRedis,
} from '../helpers/services.js';

/**
 * Two instances on one PostgreSQL and one Redis, as behind a load balancer: whatever one instance issues or
 * changes holds on the other at once, and a stateless MCP client is served whichever instance each request reaches.
 */
const services = (await probePostgres()).available ? await probeRedis() : await probePostgres();

describeWithService('two instances on PostgreSQL and Redis', services, () => {
  let a: App;
  let b: App;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const database = await createPostgresDatabase();
    drop = database.drop;
    const env = {
      DATABASE_URL: database.url,
      REDIS_URL,
      REDIS_PREFIX: `two-${randomBytes(4).toString('hex')}:`,
      // Both instances open the signing keys in the database with the same key.
      KEY_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      MCP_SESSION_MODE: 'stateless',
      MCP_REQUESTS_PER_MINUTE: '6',
    };
    a = await startTestApp(env);
    b = await startTestApp(env);
    await createUser(a, 'alice');
  }, 60_000);

  afterAll(async () => {
    await a?.close();
    await b?.close();
    await drop?.();
  });

  const login = (app: App) => call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } });

  it('a token from A works on B; refreshed on B and logged out on A, it fails on both', async () => {
    const issued = await login(a);
    const token = issued.body.access_token as string;
    expect((await call(b, 'GET', '/auth/me', { token })).status).toBe(200);
    const refreshed = await call(b, 'POST', '/auth/refresh', { body: { refresh_token: issued.body.refresh_token } });
    expect(refreshed.status).toBe(200);
    const renewed = refreshed.body.access_token as string;
    expect((await call(a, 'POST', '/auth/logout', { token: renewed })).status).toBe(200);
    for (const app of [a, b])
      for (const credential of [token, renewed])
        expect((await call(app, 'GET', '/auth/me', { token: credential })).status).toBe(401);
  });

  it('an API key rotated on A fails at once on B', async () => {
    const token = (await login(a)).body.access_token as string;
    const created = await call(a, 'POST', '/api/v1/api-keys', { token, body: { name: 'laptop' } });
    const apiKey = created.body.api_key as string;
    expect((await call(b, 'GET', '/auth/me', { apiKey })).status).toBe(200);
    const rotated = await call(a, 'POST', `/api/v1/api-keys/${created.body.key_id as string}/rotate`, { token });
    expect(rotated.status).toBe(200);
    expect((await call(b, 'GET', '/auth/me', { apiKey })).status).toBe(401);
    expect((await call(b, 'GET', '/auth/me', { apiKey: rotated.body.new_api_key as string })).status).toBe(200);
  });

  it('shares rate limits: the budget spent on A is spent on B', async () => {
    await createUser(a, 'carol');
    const token = (await call(a, 'POST', '/auth/login', { body: { username: 'carol', password: PASSWORD } })).body
      .access_token as string;
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await call(i % 2 === 0 ? a : b, 'GET', '/tools', { token })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429, 429]);
  });

  it('serves a stateless MCP client whichever instance each request reaches', async () => {
    const token = (await login(a)).body.access_token as string;
    const reached: string[] = [];
    let turn = 0;
    // A load balancer without stickiness: requests alternate between the instances.
    const roundRobin = (input: string | URL | Request, init?: RequestInit) => {
      const target = [a, b][turn++ % 2]!;
      const url = new URL(input instanceof Request ? input.url : input.toString());
      const to = new URL(target.url('main'));
      url.host = to.host;
      reached.push(to.host);
      return fetch(url, init);
    };
    const client = new Client({ name: 'balanced', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${a.url('main')}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
        fetch: roundRobin,
      }),
    );
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name)).toContain('conversation_search');
    const result = await client.callTool({ name: 'conversation_search', arguments: { query: 'x' } });
    expect(result.isError).toBe(false);
    await client.close();
    expect(new Set(reached).size).toBe(2);
    // Nothing was kept in either instance, and there is no session to stream on or to end.
    expect(a.wires.streamable.size + b.wires.streamable.size).toBe(0);
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${b.url('main')}/mcp`, {
        method,
        headers: { Authorization: `Bearer ${token}`, Accept: 'text/event-stream' },
      });
      expect(res.status, method).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
    }
  });
});
