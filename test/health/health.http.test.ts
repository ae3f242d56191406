import type { AddressInfo, Socket } from 'node:net';
import { createServer as createNetServer } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { App } from '../../src/app.js';
import { migrateDown, migrateToLatest } from '../../src/db/migrate.js';
import { buildTestApp, startTestApp } from '../helpers/app.js';
import { unusedPort } from '../helpers/http.js';
import { REDIS_URL, describeWithService, probeRedis } from '../helpers/services.js';
import { startFakeOpenAi } from '../fakes/openai.js';
import { FAKE_MODEL_ID, FAKE_STORE_ID, startFakeOpenFga } from '../fakes/openfga.js';
import { startTestIdp } from '../fakes/oidc-idp.js';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function start(env: Record<string, string> = {}): Promise<App> {
  const app = await startTestApp(env);
  cleanups.push(() => app.close());
  return app;
}

/** Whether the main listener is bound yet (start() binds before it migrates). */
async function reachable(app: App): Promise<boolean> {
  try {
    await fetch(`${app.url('main')}/health/live`);
    return true;
  } catch {
    return false;
  }
}

async function get(app: App, path: string, listener: 'main' | 'playground' | 'builder' = 'main') {
  const res = await fetch(`${app.url(listener)}${path}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('health endpoints on embedded defaults (spec "Health")', () => {
  it('GET /health reports every component healthy with service and version', async () => {
    const app = await start();
    const { status, body } = await get(app, '/health');
    expect(status).toBe(200);
    expect(body).toEqual({
      status: 'healthy',
      service: 'agent-service',
      version: '2.8.0',
      timestamp: expect.stringMatching(ISO) as unknown,
      checks: {
        database: 'healthy',
        session_store: 'healthy',
        authz_service: 'healthy',
        identity_provider: 'healthy',
        llm_provider: 'healthy',
        mcp_server: 'healthy',
      },
    });
  });

  it('GET /health/ready is ready with every dependency', async () => {
    const app = await start();
    const { status, body } = await get(app, '/health/ready');
    expect(status).toBe(200);
    expect(body).toEqual({
      ready: true,
      service: 'agent-service',
      timestamp: expect.stringMatching(ISO) as unknown,
      dependencies: {
        database: 'ready',
        session_store: 'ready',
        authz_service: 'ready',
        identity_provider: 'ready',
        llm_provider: 'ready',
        mcp_server: 'ready',
      },
    });
  });

  it('GET /health/live reports uptime', async () => {
    const app = await start();
    const { status, body } = await get(app, '/health/live');
    expect(status).toBe(200);
    expect(body).toEqual({
      alive: true,
      service: 'agent-service',
      timestamp: expect.stringMatching(ISO) as unknown,
      uptime_seconds: expect.any(Number) as unknown,
    });
  });

  it('GET /health/startup reports what start-up did', async () => {
    const app = await start();
    const { status, body } = await get(app, '/health/startup');
    expect(status).toBe(200);
    expect(body).toEqual({
      started: true,
      service: 'agent-service',
      timestamp: expect.stringMatching(ISO) as unknown,
      startup_duration_seconds: expect.any(Number) as unknown,
      initialization: {
        database_migrations: 'completed',
        session_store_connection: 'loaded',
        authz_model: 'loaded',
        identity_provider_config: 'loaded',
        llm_connection: 'loaded',
      },
    });
  });

  it('GET /health/dependencies names each embedded provider, so none is mistaken for a real one', async () => {
    const app = await start();
    const { status, body } = await get(app, '/health/dependencies');
    expect(status).toBe(200);
    expect(body.overall_status).toBe('healthy');
    const deps = body.dependencies as Record<string, Record<string, unknown>>;
    expect(deps.llm_provider).toMatchObject({ status: 'healthy', provider: 'offline', model: 'offline' });
    expect(deps.session_store).toMatchObject({ status: 'healthy', provider: 'memory' });
    expect(deps.authz_service).toMatchObject({ status: 'healthy', provider: 'embedded' });
    expect(deps.identity_provider).toMatchObject({ status: 'healthy', provider: 'local' });
    // The suite's database: in-memory SQLite, or a PostgreSQL database of its own (TEST_DATABASE=postgres).
    const { dialect } = app.infrastructure.db;
    expect(deps.database).toMatchObject({
      status: 'healthy',
      dialect,
      database: dialect === 'sqlite' ? ':memory:' : app.infrastructure.db.describe().database,
      active_connections: dialect === 'sqlite' ? 1 : (expect.any(Number) as unknown),
      response_time_ms: expect.any(Number) as unknown,
      last_check: expect.stringMatching(ISO) as unknown,
    });
  });

  it('is not ready while a migration is pending, and ready again once it is applied', async () => {
    const app = await start();
    const db = app.infrastructure.db;
    // As after `agent-service migrate --down` or restoring an older backup under a running instance.
    const { applied } = await migrateDown(db);
    expect(applied).toHaveLength(1);

    const ready = await get(app, '/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({ ready: false, blocking: ['database'] });
    const deps = (await get(app, '/health/dependencies')).body.dependencies as Record<string, Record<string, unknown>>;
    expect(deps.database).toMatchObject({
      status: 'unhealthy',
      pending_migrations: 1,
      error: `1 migration(s) pending (${applied[0]}): run agent-service migrate`,
    });

    await migrateToLatest(db);
    expect((await get(app, '/health/ready')).status).toBe(200);
    expect(
      ((await get(app, '/health/dependencies')).body.dependencies as Record<string, unknown>).database,
    ).toMatchObject({ status: 'healthy', pending_migrations: 0 });
  });

  it('serves the playground and builder health on their own listeners', async () => {
    const app = await start();
    expect(await get(app, '/api/playground/health', 'playground')).toEqual({
      status: 200,
      body: { status: 'healthy', version: '2.8.0', dependencies: { session_store: 'healthy', mcp_server: 'healthy' } },
    });
    expect(await get(app, '/api/builder/health', 'builder')).toEqual({
      status: 200,
      body: { status: 'healthy', version: '2.8.0', dependencies: { database: 'healthy', mcp_server: 'healthy' } },
    });
    // The MCP core answering no ping takes the playground down with it (spec "Errors" 12).
    vi.spyOn(app.services.mcp.core, 'request').mockRejectedValue(new Error('the MCP server is gone'));
    expect(await get(app, '/api/playground/health', 'playground')).toMatchObject({
      status: 503,
      body: { status: 'unhealthy', dependencies: { session_store: 'healthy', mcp_server: 'unhealthy' } },
    });
    vi.restoreAllMocks();
    // Each listener serves only its own routes.
    expect((await fetch(`${app.url('playground')}/api/version`)).status).toBe(404);
  });

  it('answers probes while starting, and traffic only once started', async () => {
    // A server that accepts connections and never answers keeps start-up waiting on the session store.
    const sockets: Socket[] = [];
    const silent = createNetServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => silent.close(() => resolve()));
    });
    const app = buildTestApp({ REDIS_URL: `redis://127.0.0.1:${(silent.address() as AddressInfo).port}` });
    cleanups.push(() => app.close());
    const started = app.start();
    while (!(await reachable(app))) await new Promise((resolve) => setTimeout(resolve, 10));
    // Wait for start-up to reach the session store, where the silent server holds it.
    let startup = await get(app, '/health/startup');
    while ((startup.body.initialization as Record<string, string>).session_store_connection !== 'in_progress') {
      await new Promise((resolve) => setTimeout(resolve, 10));
      startup = await get(app, '/health/startup');
    }
    expect(startup.status).toBe(503);
    expect(startup.body).toMatchObject({
      started: false,
      progress: expect.stringMatching(/^\d+%$/) as unknown,
      initialization: { database_migrations: 'completed', session_store_connection: 'in_progress' },
    });
    const early = await fetch(`${app.url('main')}/api/version`);
    expect(early.status).toBe(503);
    expect(await early.json()).toMatchObject({ code: 'SERVICE_STARTING' });
    expect((await get(app, '/health/ready')).body.blocking).toContain('startup');

    await started;
    expect((await get(app, '/health/startup')).body).toMatchObject({
      started: true,
      initialization: { session_store_connection: 'failed' },
    });
    expect((await fetch(`${app.url('main')}/api/version`)).status).toBe(200);
  });
});

const redis = await probeRedis();

describeWithService('session store health on Redis', redis, () => {
  it('reports Redis connected with its clients and memory', async () => {
    const app = await start({ REDIS_URL });
    const { body } = await get(app, '/health/dependencies');
    const store = (body.dependencies as Record<string, Record<string, unknown>>).session_store;
    expect(store).toMatchObject({ status: 'healthy', provider: 'redis', url: `${REDIS_URL}` });
    expect(store!.connected_clients).toBeGreaterThanOrEqual(1);
    expect(store!.used_memory_mb).toBeGreaterThan(0);
    expect((await get(app, '/health/startup')).body.initialization).toMatchObject({
      session_store_connection: 'completed',
    });
  });
});

describe('health with an unreachable session store', () => {
  it('is unhealthy and not ready, names the blocker, and the playground answers 503', async () => {
    const app = await start({ REDIS_URL: `redis://127.0.0.1:${await unusedPort()}` });
    const health = await get(app, '/health');
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({ status: 'unhealthy', checks: { session_store: 'unhealthy' } });
    expect(health.body.errors).toEqual([expect.stringMatching(/^session_store: /)]);

    const ready = await get(app, '/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({ ready: false, blocking: ['session_store'] });
    expect((ready.body.dependencies as Record<string, string>).session_store).toBe('not_ready');

    const deps = await get(app, '/health/dependencies');
    expect(deps.status).toBe(200);
    expect(deps.body.overall_status).toBe('unhealthy');

    expect((await get(app, '/health/startup')).body.initialization).toMatchObject({
      session_store_connection: 'failed',
    });
    const playground = await get(app, '/api/playground/health', 'playground');
    expect(playground).toMatchObject({
      status: 503,
      body: { status: 'unhealthy', dependencies: { session_store: 'unhealthy' } },
    });
    // Liveness does not depend on dependencies: restarting would not bring Redis back.
    expect((await get(app, '/health/live')).status).toBe(200);
  });
});

describe('LLM provider health against an OpenAI-compatible endpoint (fake hosted API)', () => {
  it('is healthy when the key works and the model is listed', async () => {
    const fake = await startFakeOpenAi(['gpt-4o-mini', 'other']);
    cleanups.push(fake.close);
    const app = await start({
      LLM_PROVIDER: 'openai',
      LLM_BASE_URL: fake.url,
      LLM_MODEL: 'gpt-4o-mini',
      LLM_API_KEY: 'sk-test',
    });
    const { body } = await get(app, '/health/dependencies');
    expect((body.dependencies as Record<string, unknown>).llm_provider).toMatchObject({
      status: 'healthy',
      provider: 'openai',
      model: 'gpt-4o-mini',
      url: fake.url,
    });
    const { method, path, authorization, body: sent } = fake.requests.at(-1)!;
    expect({ method, path, authorization, sent }).toEqual({
      method: 'GET',
      path: '/v1/models',
      authorization: 'Bearer sk-test',
      sent: undefined,
    });
    expect((await get(app, '/health/startup')).body.initialization).toMatchObject({ llm_connection: 'completed' });
  });

  it('degrades the service, without making it unready, when the model is missing or the key is rejected', async () => {
    const fake = await startFakeOpenAi(['something-else']);
    cleanups.push(fake.close);
    const app = await start({ LLM_PROVIDER: 'openai', LLM_BASE_URL: fake.url, LLM_MODEL: 'gpt-4o-mini' });
    const health = await get(app, '/health');
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({
      status: 'degraded',
      warnings: ['llm_provider: model gpt-4o-mini is not available'],
    });
    expect((await get(app, '/health/ready')).status).toBe(200);

    fake.failWith = 401;
    expect((await get(app, '/health')).body.warnings).toEqual(['llm_provider: API key rejected']);
    fake.failWith = 429;
    const limited = await get(app, '/health/dependencies');
    expect((limited.body.dependencies as Record<string, unknown>).llm_provider).toMatchObject({
      status: 'degraded',
      error: 'rate limited or over quota',
    });
  });
});

describe('identity provider health against a real OIDC provider (oidc-provider)', () => {
  it('is healthy when discovery succeeds, and unhealthy once the provider is gone', async () => {
    const idp = await startTestIdp();
    const app = await start({
      AUTH_PROVIDER: 'oidc',
      OIDC_ISSUER_URL: idp.issuer,
      OIDC_CLIENT_ID: idp.clientId,
      OIDC_CLIENT_SECRET: idp.clientSecret,
      OIDC_REDIRECT_URI: 'http://127.0.0.1:8000/auth/sso/callback',
    });
    const { body } = await get(app, '/health/dependencies');
    expect((body.dependencies as Record<string, unknown>).identity_provider).toMatchObject({
      status: 'healthy',
      provider: 'oidc',
      url: idp.issuer,
      realm: new URL(idp.issuer).host,
      issuer: idp.issuer,
    });
    await idp.close();
    const ready = await get(app, '/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.body.blocking).toEqual(['identity_provider']);
  });
});

describe('authorization service health against OpenFGA (fake server)', () => {
  it('is healthy when the store and model load, and unhealthy when the store is missing', async () => {
    const fga = await startFakeOpenFga();
    cleanups.push(fga.close);
    const app = await start({
      AUTHZ_PROVIDER: 'openfga',
      OPENFGA_API_URL: fga.url,
      OPENFGA_STORE_ID: FAKE_STORE_ID,
      OPENFGA_MODEL_ID: FAKE_MODEL_ID,
    });
    const healthy = await get(app, '/health/dependencies');
    expect((healthy.body.dependencies as Record<string, unknown>).authz_service).toMatchObject({
      status: 'healthy',
      provider: 'openfga',
      url: fga.url,
      store_id: FAKE_STORE_ID,
      model_id: FAKE_MODEL_ID,
      store_name: 'agent-service',
    });
    fga.storeExists = false;
    const missing = await get(app, '/health');
    expect(missing.status).toBe(503);
    expect(missing.body.errors).toEqual(['authz_service: store or authorization model not found']);
  });
});
