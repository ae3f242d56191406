import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { startTestApp } from '../helpers/app.js';
import { unusedPort } from '../helpers/http.js';
import { ADMIN_PASSWORD, type CallOptions, type CallResult, PASSWORD, call, createUser } from '../helpers/auth.js';
import { type Availability, describeWithService } from '../helpers/services.js';

/**
 * A Redis server process of the suite's own, killed outright (SIGKILL) under a running service and started again
 * on the same port, empty: what a crashed and rescheduled Redis does. While it is gone nothing answers 500,
 * logins answer 503 with Retry-After, access tokens this instance saw live keep working, and health says degraded;
 * once it is back the service recovers by itself.
 */
const REDIS_SERVER = process.env.REDIS_SERVER_PATH ?? 'redis-server';

function probeRedisServer(): Availability {
  const found = spawnSync(REDIS_SERVER, ['--version'], { encoding: 'utf8', timeout: 5_000 });
  if (found.error || found.status !== 0)
    return {
      available: false,
      reason: `no ${REDIS_SERVER} binary to run (${found.error?.message ?? `exit ${found.status}`}; set REDIS_SERVER_PATH)`,
    };
  return { available: true, reason: '' };
}

/** Whether something accepts TCP connections on the port. */
function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Starts redis-server on the port without persistence, and waits (bounded) until it takes connections. */
async function startRedisServer(port: number): Promise<ChildProcess> {
  const child = spawn(
    REDIS_SERVER,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}: ${stderr}`);
    if (await accepting(port)) return child;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  child.kill('SIGKILL');
  throw new Error(`redis-server did not listen on ${port}: ${stderr}`);
}

/** Kills the process outright and waits until it is gone (its port is then free). */
async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  process.kill(child.pid!, 'SIGKILL');
  await exited;
}

function expectUnavailable(res: CallResult): void {
  expect(res.status).toBe(503);
  expect(res.headers.get('retry-after')).toBe('5');
  expect(res.body).toMatchObject({ error: 'service_unavailable', code: 'SERVICE_UNAVAILABLE' });
}

describeWithService('Redis process killed and restarted under the service', probeRedisServer(), () => {
  let port: number;
  let redis: ChildProcess | undefined;
  let app: App | undefined;
  /** Every status the service answered in this suite, with what was asked: none may be a 500. */
  const seen: { request: string; status: number }[] = [];

  const observe = async (method: string, path: string, options: CallOptions = {}): Promise<CallResult> => {
    const res = await call(app!, method, path, options);
    seen.push({ request: `${method} ${path}`, status: res.status });
    return res;
  };
  const login = () => observe('POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } });
  const listTools = (token: string) => observe('POST', '/mcp/tools/list', { token, body: {} });
  const searchTool = (token: string) =>
    observe('POST', '/mcp/tools/call', {
      token,
      body: { params: { name: 'conversation_search', arguments: { query: 'x' } } },
    });

  beforeAll(async () => {
    port = await unusedPort();
    redis = await startRedisServer(port);
    app = await startTestApp({
      REDIS_URL: `redis://127.0.0.1:${port}`,
      REDIS_PREFIX: `process-${randomBytes(4).toString('hex')}:`,
      // Far longer than Redis stays away here: tokens are honoured throughout the outage.
      REDIS_OUTAGE_GRACE_SECONDS: '60',
      ADMIN_PASSWORD,
    });
    await createUser(app, 'alice');
  });

  afterAll(async () => {
    // Whatever happened above: no Redis process outlives the suite.
    try {
      await app?.close();
    } finally {
      if (redis) await kill(redis);
    }
  });

  it('serves through the loss of Redis without a 500, and recovers when it is started again', async () => {
    const loggedIn = await login();
    expect(loggedIn.status).toBe(200);
    const token = loggedIn.body.access_token as string;
    expect((await observe('GET', '/auth/me', { token })).status).toBe(200);
    expect((await observe('GET', '/health')).status).toBe(200);

    // Requests in flight while Redis dies (its connection drops under their commands), then Redis is gone.
    const inFlight = Array.from({ length: 10 }, (_, i) =>
      i % 2 === 0 ? observe('GET', '/auth/me', { token }) : listTools(token),
    );
    await kill(redis!);
    for (const res of await Promise.all(inFlight)) expect([200, 503]).toContain(res.status);

    // Within the grace period a token whose session this instance saw live is honoured without Redis.
    const me = await observe('GET', '/auth/me', { token });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ username: 'alice' });
    const tools = await listTools(token);
    expect(tools.status).toBe(200);
    expect(tools.body.tools).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'conversation_search' })]),
    );
    expect((await searchTool(token)).status).toBe(200);

    // A login needs Redis (the session is written there): a clean 503 telling when to retry.
    expectUnavailable(await login());

    const health = await observe('GET', '/health');
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({ status: 'degraded', checks: { session_store: 'degraded' } });
    expect(health.body.warnings).toEqual([expect.stringContaining('session_store: unreachable')]);
    // Degraded, not down: the instance still takes traffic during the grace period.
    expect((await observe('GET', '/health/ready')).status).toBe(200);

    // A new, empty Redis on the same port; ioredis reconnects on its own backoff and the breaker lets a call
    // through after its cool-down, so wait (bounded) for the service to find it.
    redis = await startRedisServer(port);
    let fresh: string | undefined;
    for (let i = 0; i < 150 && fresh === undefined; i++) {
      const health = await observe('GET', '/health');
      const again = health.status === 200 ? await login() : undefined;
      if (again?.status === 200) fresh = again.body.access_token as string;
      else await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(fresh, 'the service did not recover within 30 s of Redis coming back').toBeDefined();
    expect((await observe('GET', '/health/ready')).status).toBe(200);
    expect((await observe('GET', '/health')).body).toMatchObject({
      status: 'healthy',
      checks: { session_store: 'healthy' },
    });
    expect((await observe('GET', '/auth/me', { token: fresh })).status).toBe(200);
    expect((await listTools(fresh!)).status).toBe(200);
    // The restarted Redis kept nothing, so the session the first token was issued on is gone: with Redis
    // answering again the instance no longer vouches for it from memory.
    expect((await observe('GET', '/auth/me', { token })).status).toBe(401);

    expect(seen.filter((s) => s.status >= 500 && s.status !== 503)).toEqual([]);
    expect(seen.some((s) => s.status === 503)).toBe(true);
  }, 60_000);
});
