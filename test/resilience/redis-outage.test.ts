import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { closeAfterEach, startTestApp } from '../helpers/app.js';
import { PASSWORD, TestClock, call, cookiePair, createUser } from '../helpers/auth.js';
import { REDIS_URL, describeWithService, probeRedis } from '../helpers/services.js';
import { postMcp } from '../helpers/mcp.js';
import { type TcpProxy, startTcpProxy } from '../helpers/tcp-proxy.js';

/**
 * Redis taken away under a running service (a real Redis behind a proxy the test cuts): no request answers 500,
 * and none answers 401 to a credential that is still good. Access tokens whose session this instance saw live keep
 * working for the grace period; logins, cookies and every write answer 503 with Retry-After; rate limits count in
 * the process; health says degraded; everything comes back with Redis.
 */
const closing = closeAfterEach();
let proxy: TcpProxy;
let clock: TestClock;

beforeEach(async () => {
  const redis = new URL(REDIS_URL);
  proxy = await startTcpProxy({ host: redis.hostname, port: Number(redis.port || 6379) });
  clock = new TestClock(Date.now());
});
afterEach(() => proxy.close());

async function start(env: Record<string, string> = {}): Promise<App> {
  const app = closing(
    await startTestApp(
      {
        REDIS_URL: `redis://127.0.0.1:${proxy.port}`,
        REDIS_PREFIX: `outage-${randomBytes(4).toString('hex')}:`,
        ...env,
      },
      { now: clock.now },
    ),
  );
  await createUser(app, 'alice');
  return app;
}

const login = (app: App) => call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } });

/** Waits (real time) until the service finds Redis again and its breaker lets calls through. */
async function untilRecovered(app: App): Promise<void> {
  for (let i = 0; i < 150; i++) {
    clock.advance(2_000);
    if ((await call(app, 'GET', '/health')).status === 200 && (await login(app)).status === 200) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the service did not recover');
}

function expectUnavailable(res: { status: number; headers: Headers; body: Record<string, unknown> }): void {
  expect(res.status).toBe(503);
  expect(res.headers.get('retry-after')).toBe('5');
  expect(res.body).toMatchObject({ error: 'service_unavailable', code: 'SERVICE_UNAVAILABLE' });
}

describeWithService('Redis outage', await probeRedis(), () => {
  it('keeps valid access tokens working for the grace period, and answers 503 where Redis is needed', async () => {
    const app = await start();
    const token = (await login(app)).body.access_token as string;
    expect((await call(app, 'GET', '/auth/me', { token })).status).toBe(200);

    proxy.set('refuse');
    expect((await call(app, 'GET', '/auth/me', { token })).status).toBe(200);
    const tools = await call(app, 'POST', '/mcp/tools/call', {
      token,
      body: { params: { name: 'conversation_search', arguments: { query: 'x' } } },
    });
    expect(tools.status).toBe(200);
    expectUnavailable(await login(app));
    expectUnavailable(await call(app, 'POST', '/auth/logout', { token }));

    const health = await call(app, 'GET', '/health');
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({ status: 'degraded', checks: { session_store: 'degraded' } });
    expect(health.body.warnings).toEqual([expect.stringContaining('session_store: unreachable')]);
    expect((await call(app, 'GET', '/health/ready')).status).toBe(200);

    // Past the grace period the instance no longer vouches for sessions it cannot check: 503, still not 401.
    clock.advance(61_000);
    expectUnavailable(await call(app, 'GET', '/auth/me', { token }));

    proxy.set('open');
    await untilRecovered(app);
    expect((await call(app, 'GET', '/auth/me', { token })).status).toBe(200);
  });

  it('a token whose session this instance never saw: 503, not 401', async () => {
    // Two instances on one database and one Redis; the session was started on the first.
    const database = `sqlite:${join(mkdtempSync(join(tmpdir(), 'outage-')), 'agent.db')}`;
    const app = await start({ DATABASE_URL: database });
    const token = (await login(app)).body.access_token as string;
    const other = closing(
      await startTestApp(
        {
          DATABASE_URL: database,
          REDIS_URL: `redis://127.0.0.1:${proxy.port}`,
          REDIS_PREFIX: app.config.redis!.prefix,
        },
        { now: clock.now },
      ),
    );
    expect((await call(other, 'GET', '/auth/me', { token })).status).toBe(200);
    // The first instance has read the session; the second only now would.
    const fresh = (await login(app)).body.access_token as string;
    proxy.set('refuse');
    expect((await call(other, 'GET', '/auth/me', { token })).status).toBe(200);
    expectUnavailable(await call(other, 'GET', '/auth/me', { token: fresh }));
  });

  it('session cookies answer 503 during the outage, and work again after it', async () => {
    const app = await start({ AUTH_MODE: 'session' });
    const cookie = cookiePair((await login(app)).headers.get('set-cookie'));
    expect((await call(app, 'GET', '/auth/me', { cookie })).status).toBe(200);
    proxy.set('refuse');
    expectUnavailable(await call(app, 'GET', '/auth/me', { cookie }));
    proxy.set('open');
    await untilRecovered(app);
    expect((await call(app, 'GET', '/auth/me', { cookie })).status).toBe(200);
  });

  it('fails closed when the operator says so: 503 at once, and not ready', async () => {
    const app = await start({ REDIS_OUTAGE_GRACE_SECONDS: '0' });
    const token = (await login(app)).body.access_token as string;
    proxy.set('refuse');
    expectUnavailable(await call(app, 'GET', '/auth/me', { token }));
    const ready = await call(app, 'GET', '/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.body.blocking).toEqual(expect.arrayContaining([expect.stringContaining('session_store')]));
  });

  it('a hung Redis (accepts, never answers) does not hang requests', async () => {
    const app = await start();
    const token = (await login(app)).body.access_token as string;
    proxy.set('blackhole');
    // The first call waits for the command timeout; then the breaker answers at once.
    expect((await call(app, 'GET', '/auth/me', { token })).status).toBe(200);
    expectUnavailable(await login(app));
  }, 20_000);

  it('MCP sessions this instance holds keep working; one it cannot look up is a 503, not "not found"', async () => {
    const app = await start();
    const token = (await login(app)).body.access_token as string;
    const open = async () => {
      const res = await postMcp(app, token, { method: 'initialize', params: INITIALIZE });
      return res.headers.get('mcp-session-id')!;
    };
    const held = await open();
    proxy.set('refuse');
    expect((await postMcp(app, token, { method: 'tools/list' }, held)).status).toBe(200);
    // Opened during the outage: served here, just not shared with other instances.
    const local = await open();
    expect((await postMcp(app, token, { method: 'tools/list' }, local)).status).toBe(200);
    // Perhaps opened on another instance: whether it exists cannot be told, and a 404 would end it for the client.
    const unknown = await postMcp(app, token, { method: 'tools/list' }, randomUUID());
    expect(unknown.status).toBe(503);
    expect(unknown.headers.get('retry-after')).toBe('5');
  });

  it('rate limits keep counting in the process while Redis is away', async () => {
    const app = await start({ MCP_REQUESTS_PER_MINUTE: '3' });
    const token = (await login(app)).body.access_token as string;
    proxy.set('refuse');
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await call(app, 'GET', '/tools', { token })).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
  });
});

const INITIALIZE = {
  protocolVersion: '2025-06-18',
  capabilities: {},
  clientInfo: { name: 'outage', version: '1.0.0' },
};
