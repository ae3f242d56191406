import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { AuditEntry } from '../../src/modules/audit/audit.service.js';
import { closeAfterEach, startTestApp } from '../helpers/app.js';
import { ADMIN_PASSWORD, type CallResult, PASSWORD, TestClock, call, cookiePair, createUser } from '../helpers/auth.js';
import { REDIS_URL, describeWithService, probeRedis } from '../helpers/services.js';
import { redisKeysContaining } from '../data-subject/footprint.js';

const closing = closeAfterEach();

const EVICTED = {
  error: 'unauthorized',
  message: 'Session was ended by a newer sign-in of this account (concurrent-session limit); sign in again',
  code: 'SESSION_EVICTED',
};
const REVOKED = { error: 'unauthorized', code: 'AUTH_INVALID_TOKEN' };

async function start(env: Record<string, string> = {}, clock = new TestClock()) {
  const app = closing(await startTestApp({ ADMIN_PASSWORD, SESSION_MAX_CONCURRENT: '2', ...env }, { now: clock.now }));
  return { app, clock };
}

/** A password login a second after the previous one, so that sessions are ordered by age. */
async function signInLater(app: App, clock: TestClock, username = 'alice'): Promise<CallResult> {
  clock.advance(1_000);
  const res = await call(app, 'POST', '/auth/login', { body: { username, password: PASSWORD } });
  expect(res.status).toBe(200);
  return res;
}

const cookieOf = (res: CallResult) => cookiePair(res.headers.get('set-cookie'));

async function eventsOf(app: App, type: string): Promise<AuditEntry[]> {
  return (await app.services.audit.list({ type }, { offset: 0, limit: 100 })).items.reverse();
}

/** The session id a token-mode login started, as the caller's own session list names it. */
async function sessionIdOf(app: App, token: string): Promise<string> {
  const sessions = (await call(app, 'GET', '/auth/sessions', { token })).body.sessions as {
    session_id: string;
    is_current: boolean;
  }[];
  return sessions.find((s) => s.is_current)!.session_id;
}

describe('a session evicted by the concurrent-session limit (token mode)', () => {
  it('answers its access and refresh tokens 401 SESSION_EVICTED on every wire, unlike a revoked session', async () => {
    const { app, clock } = await start();
    const alice = await createUser(app, 'alice');
    const script = (await signInLater(app, clock)).body;
    const scriptSession = await sessionIdOf(app, script.access_token as string);
    const second = (await signInLater(app, clock)).body;
    const third = (await signInLater(app, clock)).body;

    const me = await call(app, 'GET', '/auth/me', { token: script.access_token as string });
    expect(me.status).toBe(401);
    expect(me.body).toEqual({ ...EVICTED, timestamp: expect.any(String) as unknown });
    // The MCP wires answer 401 {detail}, and token verification its invalid form, with the same reason.
    const mcp = await call(app, 'GET', '/tools', { token: script.access_token as string });
    expect(mcp).toMatchObject({ status: 401, body: { detail: EVICTED.message } });
    const verify = await call(app, 'POST', '/auth/verify', { token: script.access_token as string });
    expect(verify).toMatchObject({ status: 401, body: { valid: false, error: EVICTED.message } });
    // The refresh token says so too, as often as it is presented, and never brings the session back.
    for (let i = 0; i < 2; i++) {
      const refreshed = await call(app, 'POST', '/auth/refresh', { body: { refresh_token: script.refresh_token } });
      expect(refreshed).toMatchObject({ status: 401, body: EVICTED });
    }
    expect((await call(app, 'GET', '/auth/me', { token: third.access_token as string })).status).toBe(200);

    // A session the user revoked is not "evicted": its tokens are answered as before.
    expect((await call(app, 'POST', '/auth/logout', { token: second.access_token as string })).status).toBe(200);
    const revoked = await call(app, 'GET', '/auth/me', { token: second.access_token as string });
    expect(revoked).toMatchObject({ status: 401, body: { ...REVOKED, message: 'Token has been revoked' } });
    const revokedRefresh = await call(app, 'POST', '/auth/refresh', { body: { refresh_token: second.refresh_token } });
    expect(revokedRefresh).toMatchObject({ status: 401, body: REVOKED });

    const evictions = await eventsOf(app, 'session.evicted');
    expect(evictions).toMatchObject([
      {
        actor_id: alice.id,
        details: { session_id: scriptSession, reason: 'concurrent_session_limit', max_concurrent: 2 },
      },
    ]);
    const recorded = JSON.stringify(evictions);
    for (const secret of [script.access_token, script.refresh_token] as string[]) {
      expect(recorded).not.toContain(secret);
    }
  });

  it('never counts API keys, tokens exchanged for them or service-principal tokens, nor evicts them', async () => {
    const { app, clock } = await start();
    await createUser(app, 'alice');
    const first = (await signInLater(app, clock)).body;
    const token = first.access_token as string;
    const key = await call(app, 'POST', '/api/v1/api-keys', { token, body: { name: 'nightly script' } });
    const apiKey = key.body.api_key as string;
    const exchanged = (await call(app, 'POST', '/api/v1/api-keys/validate', { apiKey })).body.access_token as string;
    const principal = await call(app, 'POST', '/api/v1/service-principals', {
      token,
      body: { name: 'Nightly Bot', description: 'Runs at night' },
    });
    const principalToken = (
      await call(app, 'POST', '/auth/token', {
        form: {
          grant_type: 'client_credentials',
          client_id: principal.body.service_id as string,
          client_secret: principal.body.client_secret as string,
        },
      })
    ).body.access_token as string;

    // Two sign-ins fit the limit of two: the machine credentials took no place.
    await signInLater(app, clock);
    expect((await call(app, 'GET', '/auth/me', { token })).status).toBe(200);
    expect(await eventsOf(app, 'session.evicted')).toEqual([]);

    // However many more there are, only sign-ins are evicted.
    for (let i = 0; i < 3; i++) await signInLater(app, clock);
    expect((await call(app, 'GET', '/auth/me', { token })).body.code).toBe('SESSION_EVICTED');
    expect(await eventsOf(app, 'session.evicted')).toHaveLength(3);
    for (const credential of [{ apiKey }, { token: exchanged }, { token: principalToken }]) {
      expect((await call(app, 'GET', '/auth/me', credential)).status).toBe(200);
    }
    const latest = await signInLater(app, clock);
    const sessions = await call(app, 'GET', '/auth/sessions', { token: latest.body.access_token as string });
    expect(sessions.body).toMatchObject({ total: 2, max_concurrent: 2 });
  });
});

describe('a session evicted by the concurrent-session limit (session mode)', () => {
  it('answers its cookie 401 SESSION_EVICTED, but only to the holder of its secret', async () => {
    const { app, clock } = await start({ AUTH_MODE: 'session' });
    await createUser(app, 'alice');
    const oldest = cookieOf(await signInLater(app, clock));
    const second = cookieOf(await signInLater(app, clock));
    const third = cookieOf(await signInLater(app, clock));

    const me = await call(app, 'GET', '/auth/me', { cookie: oldest });
    expect(me).toMatchObject({ status: 401, body: EVICTED });
    expect((await call(app, 'POST', '/auth/logout', { cookie: oldest })).body.code).toBe('SESSION_EVICTED');
    // The evicted session's id with another secret learns nothing.
    const forged = `${oldest.slice(0, oldest.indexOf('.') + 1)}${'A'.repeat(43)}`;
    expect(await call(app, 'GET', '/auth/me', { cookie: forged })).toMatchObject({ status: 401, body: REVOKED });

    // A cookie whose session the user revoked is not "evicted".
    const sessions = (await call(app, 'GET', '/auth/sessions', { cookie: third })).body.sessions as {
      session_id: string;
    }[];
    expect(sessions).toHaveLength(2);
    await call(app, 'DELETE', `/auth/sessions/${sessions[0]!.session_id}`, { cookie: third });
    expect(await call(app, 'GET', '/auth/me', { cookie: second })).toMatchObject({ status: 401, body: REVOKED });
    expect((await call(app, 'GET', '/auth/me', { cookie: third })).status).toBe(200);
  });

  it('forgets the eviction once the session would have ended anyway', async () => {
    const { app, clock } = await start({ AUTH_MODE: 'session', SESSION_IDLE_TIMEOUT_SECONDS: '600' });
    await createUser(app, 'alice');
    const oldest = cookieOf(await signInLater(app, clock));
    await signInLater(app, clock);
    await signInLater(app, clock);
    // Evicted two seconds after its last use, it would have been idle too long 600 seconds after that use.
    clock.advance(600 * 1000 - 2_001);
    expect((await call(app, 'GET', '/auth/me', { cookie: oldest })).body.code).toBe('SESSION_EVICTED');
    clock.advance(1);
    expect(await call(app, 'GET', '/auth/me', { cookie: oldest })).toMatchObject({ status: 401, body: REVOKED });
  });
});

describeWithService('evictions shared by instances through Redis', await probeRedis(), () => {
  for (const mode of ['token', 'session'] as const) {
    it(`${mode} mode: an eviction on one instance is told on the other, and erasure forgets it`, async () => {
      const prefix = `agent-test:${Date.now()}-${Math.random().toString(16).slice(2)}:`;
      const env = {
        AUTH_MODE: mode,
        REDIS_URL,
        REDIS_PREFIX: prefix,
        DATABASE_URL: `sqlite:${join(mkdtempSync(join(tmpdir(), 'agent-eviction-')), 'agent.db')}`,
      };
      const clock = new TestClock();
      const { app: a } = await start(env, clock);
      const { app: b } = await start(env, clock);
      const alice = await createUser(a, 'alice');
      const redis = new Redis(REDIS_URL);
      try {
        const first = await signInLater(a, clock);
        await signInLater(b, clock);
        const latest = await signInLater(a, clock);
        const credential = (res: CallResult) =>
          mode === 'token' ? { token: res.body.access_token as string } : { cookie: cookieOf(res) };

        expect(await call(b, 'GET', '/auth/me', credential(first))).toMatchObject({ status: 401, body: EVICTED });
        if (mode === 'token') {
          const refreshed = await call(b, 'POST', '/auth/refresh', {
            body: { refresh_token: first.body.refresh_token },
          });
          expect(refreshed).toMatchObject({ status: 401, body: EVICTED });
        }
        expect(await redisKeysContaining(redis, prefix, 'evicted:')).toHaveLength(2);

        const erased = await call(b, 'DELETE', '/api/v1/users/me?confirm=true', credential(latest));
        expect(erased.status).toBe(200);
        expect(await redisKeysContaining(redis, prefix, alice.id)).toEqual([]);
        expect(await call(a, 'GET', '/auth/me', credential(first))).toMatchObject({ status: 401, body: REVOKED });
      } finally {
        const keys = await redisKeysContaining(redis, prefix, '');
        if (keys.length > 0) await redis.del(...keys);
        redis.disconnect();
      }
    });
  }
});
