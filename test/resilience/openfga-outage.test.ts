import { describe, expect, it } from 'vitest';
import { closeAfterEach, startTestApp } from '../helpers/app.js';
import { PASSWORD, TestClock, call, createUser } from '../helpers/auth.js';
import { type FakeOpenFga, startFakeOpenFga } from '../fakes/openfga.js';

/**
 * The authorization service going away under a running service. OpenFGA cannot run on this machine: the fake
 * speaks its HTTP API (test/fakes/openfga.ts) and is stopped mid-test. A request that needs a decision answers 503
 * with Retry-After and a message that names neither the store nor the server; none answers 500.
 */
const closing = closeAfterEach();

/** The service on the fake OpenFGA, every decision asked of it; answers a tool call as alice. */
async function start(fga: FakeOpenFga, clock?: TestClock) {
  const env = {
    AUTHZ_PROVIDER: 'openfga',
    OPENFGA_API_URL: fga.url,
    OPENFGA_STORE_ID: fga.storeId,
    OPENFGA_MODEL_ID: fga.modelId,
    AUTHZ_CACHE_MS: '0',
  };
  const app = closing(await startTestApp(env, clock ? { now: clock.now } : {}));
  await createUser(app, 'alice');
  const token = (await call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } })).body
    .access_token as string;
  const callTool = () =>
    call(app, 'POST', '/mcp/tools/call', {
      token,
      body: { params: { name: 'conversation_search', arguments: { query: 'x' } } },
    });
  return { app, callTool };
}

describe('OpenFGA outage', () => {
  it('answers 503 for decisions it cannot get, and says why only in the log', async () => {
    const fga = await startFakeOpenFga();
    const { app, callTool } = await start(fga);
    expect((await callTool()).status).toBe(200);

    await fga.close();
    const refused = await callTool();
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(JSON.stringify(refused.body)).not.toContain(fga.url);
    expect(JSON.stringify(refused.body)).not.toContain(fga.storeId);
    const health = await call(app, 'GET', '/health');
    expect(health.body).toMatchObject({ checks: { authz_service: 'unhealthy' } });
  }, 30_000);

  it('stops asking a failing OpenFGA for a while, then asks again', async () => {
    const fga = await startFakeOpenFga();
    const clock = new TestClock(Date.now());
    const { callTool } = await start(fga, clock);
    expect((await callTool()).status).toBe(200);

    fga.failWith = 500;
    expect((await callTool()).status).toBe(503);
    const asked = fga.requests.length;
    const meanwhile = await Promise.all(Array.from({ length: 5 }, callTool));
    expect(meanwhile.map((res) => res.status)).toEqual(Array(5).fill(503));
    expect(fga.requests.length).toBe(asked);

    fga.failWith = undefined;
    clock.advance(1_000);
    expect((await callTool()).status).toBe(200);
    expect(fga.requests.length).toBeGreaterThan(asked);
    await fga.close();
  }, 30_000);
});
