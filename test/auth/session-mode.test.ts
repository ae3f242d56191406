import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { captureLogger, startTestApp } from '../helpers/app.js';
import { PASSWORD, TestClock, call, cookiePair, createUser } from '../helpers/auth.js';
import { REDIS_URL, describeWithService, probeRedis } from '../helpers/services.js';

const apps: App[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

async function start(env: Record<string, string> = {}, clock = new TestClock()) {
  const app = await startTestApp(
    { AUTH_MODE: 'session', ADMIN_PASSWORD: 'bootstrap-secret-1', ...env },
    { now: clock.now },
  );
  apps.push(app);
  return { app, clock };
}

async function login(app: App, username = 'alice', headers: Record<string, string> = {}) {
  const res = await call(app, 'POST', '/auth/login', { body: { username, password: PASSWORD }, headers });
  return { ...res, cookie: res.status === 200 ? cookiePair(res.headers.get('set-cookie')) : '' };
}

describe('session mode: login and the session cookie', () => {
  it('answers with the session and sets an HttpOnly, SameSite=Lax cookie carrying it', async () => {
    const { app, clock } = await start({ SESSION_ABSOLUTE_TIMEOUT_SECONDS: '7200' });
    const alice = await createUser(app, 'alice');
    const res = await login(app);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      session_id: expect.stringMatching(/^[0-9a-f-]{36}$/) as unknown,
      user: { id: alice.id, username: 'alice', email: 'alice@example.com', roles: ['user'] },
      expires_at: new Date(clock.ms + 7_200_000).toISOString(),
    });
    const setCookie = res.headers.get('set-cookie')!;
    // The cookie carries the session id and, after a dot, the secret that proves it.
    expect(res.cookie).toMatch(new RegExp(`^session_id=${String(res.body.session_id)}\\.[\\w-]{43}$`));
    expect(setCookie).toMatch(/; Path=\//);
    expect(setCookie).toMatch(/; HttpOnly/);
    expect(setCookie).toMatch(/; SameSite=Lax/);
    expect(setCookie).toMatch(/; Expires=/);
    expect(setCookie).not.toMatch(/Secure/);
  });

  it('marks the cookie Secure when the service is reached over https', async () => {
    const direct = await start({ PUBLIC_URL: 'https://agent.example.com' });
    await createUser(direct.app, 'alice');
    expect((await login(direct.app)).headers.get('set-cookie')).toMatch(/; Secure/);

    const proxied = await start({ TRUST_PROXY: 'loopback' });
    await createUser(proxied.app, 'alice');
    expect((await login(proxied.app, 'alice', { 'X-Forwarded-Proto': 'https' })).headers.get('set-cookie')).toMatch(
      /; Secure/,
    );
    // Without trusting the proxy, the same header is ignored.
    const untrusted = await start();
    await createUser(untrusted.app, 'alice');
    expect(
      (await login(untrusted.app, 'alice', { 'X-Forwarded-Proto': 'https' })).headers.get('set-cookie'),
    ).not.toMatch(/Secure/);
  });

  it('authenticates with the cookie, and logout deletes the session and clears the cookie', async () => {
    const { app } = await start();
    await createUser(app, 'alice');
    const { cookie } = await login(app);
    expect((await call(app, 'GET', '/auth/me', { cookie })).body.username).toBe('alice');
    const out = await call(app, 'POST', '/auth/logout', { cookie });
    expect(out).toMatchObject({ status: 200, body: { message: 'Logged out' } });
    expect(out.headers.get('set-cookie')).toMatch(/^session_id=; Path=\/; Expires=Thu, 01 Jan 1970/);
    const after = await call(app, 'GET', '/auth/me', { cookie });
    expect(after.status).toBe(401);
    expect(after.body).toMatchObject({ error: 'unauthorized', code: 'AUTH_INVALID_TOKEN' });
  });

  it('refuses a forged cookie: a real session id with another secret, or garbage', async () => {
    const { app } = await start();
    await createUser(app, 'alice');
    const { cookie } = await login(app);
    const id = cookie.slice('session_id='.length).split('.')[0]!;
    for (const forged of [
      `session_id=${id}.${randomBytes(32).toString('base64url')}`,
      `session_id=${id}`,
      'session_id=nonsense',
    ]) {
      expect((await call(app, 'GET', '/auth/me', { cookie: forged })).status).toBe(401);
    }
    expect((await call(app, 'GET', '/auth/me', { cookie })).status).toBe(200);
  });

  it('tells a web app whether its cookie signs it in, 200 either way, on every listener that signs in', async () => {
    const { app } = await start();
    await createUser(app, 'alice');
    const { cookie } = await login(app);
    const id = cookie.slice('session_id='.length).split('.')[0]!;
    for (const listener of ['main', 'playground', 'builder'] as const) {
      const state = (options: { cookie?: string } = {}) => call(app, 'GET', '/auth/session', { listener, ...options });
      expect(await state()).toMatchObject({ status: 200, body: { signed_in: false } });
      expect(await state({ cookie })).toMatchObject({ status: 200, body: { signed_in: true } });
      // A forged secret is no sign-in, and the answer says nothing more than that.
      const forged = await state({ cookie: `session_id=${id}.${randomBytes(32).toString('base64url')}` });
      expect(forged).toMatchObject({ status: 200, body: { signed_in: false } });
      expect(Object.keys(forged.body)).toEqual(['signed_in']);
    }
    await call(app, 'POST', '/auth/logout', { cookie });
    expect(await call(app, 'GET', '/auth/session', { cookie })).toMatchObject({
      status: 200,
      body: { signed_in: false },
    });
  });

  it('never falls back from a bad Bearer token to a good cookie', async () => {
    const { app } = await start();
    await createUser(app, 'alice');
    const { cookie } = await login(app);
    expect((await call(app, 'GET', '/auth/me', { cookie, token: 'forged' })).status).toBe(401);
  });

  it('ends an idle session, while use keeps it alive', async () => {
    const { app, clock } = await start({ SESSION_IDLE_TIMEOUT_SECONDS: '600' });
    await createUser(app, 'alice');
    const { cookie } = await login(app);
    for (let i = 0; i < 3; i++) {
      clock.advance(400_000);
      expect((await call(app, 'GET', '/auth/me', { cookie })).status).toBe(200);
    }
    clock.advance(600_000);
    expect((await call(app, 'GET', '/auth/me', { cookie })).status).toBe(401);
  });

  it('ends a session at its absolute expiry however active it is', async () => {
    const { app, clock } = await start({
      SESSION_IDLE_TIMEOUT_SECONDS: '1800',
      SESSION_ABSOLUTE_TIMEOUT_SECONDS: '3600',
    });
    await createUser(app, 'alice');
    const { cookie } = await login(app);
    for (let i = 0; i < 3; i++) {
      clock.advance(1_000_000);
      expect((await call(app, 'GET', '/auth/me', { cookie })).status).toBe(200);
    }
    clock.advance(600_000);
    expect((await call(app, 'GET', '/auth/me', { cookie })).status).toBe(401);
  });

  it('ends the sessions of a user who has been deactivated', async () => {
    const { app } = await start();
    const alice = await createUser(app, 'alice');
    const { cookie } = await login(app);
    await app.infrastructure.db.kysely.updateTable('users').set({ active: 0 }).where('id', '=', alice.id).execute();
    expect((await call(app, 'GET', '/auth/me', { cookie })).status).toBe(401);
  });

  it('lists sessions with the current one marked and lets the owner revoke one; refresh tokens do not exist', async () => {
    const { app, clock } = await start();
    await createUser(app, 'alice');
    await createUser(app, 'bob');
    const first = await login(app);
    clock.advance(1_000);
    const second = await login(app);
    const bob = await login(app, 'bob');
    const list = await call(app, 'GET', '/auth/sessions', { cookie: second.cookie });
    expect(list.body).toMatchObject({ total: 2, max_concurrent: 5 });
    const sessions = list.body.sessions as { session_id: string; is_current: boolean }[];
    expect(sessions.map((s) => s.is_current)).toEqual([false, true]);
    // The listed id is the one login answered with; the cookie's secret half never appears.
    expect(sessions[0]!.session_id).toBe(first.body.session_id);
    expect(first.cookie.startsWith(`session_id=${sessions[0]!.session_id}.`)).toBe(true);

    expect(
      (await call(app, 'DELETE', `/auth/sessions/${sessions[0]!.session_id}`, { cookie: bob.cookie })).status,
    ).toBe(403);
    // Refused, and nothing changed: alice's session still works.
    expect((await call(app, 'GET', '/auth/me', { cookie: first.cookie })).status).toBe(200);
    expect(
      (await call(app, 'DELETE', `/auth/sessions/${sessions[0]!.session_id}`, { cookie: second.cookie })).status,
    ).toBe(200);
    expect((await call(app, 'GET', '/auth/me', { cookie: first.cookie })).status).toBe(401);

    const grant = await call(app, 'POST', '/auth/login', {
      body: { username: 'alice', grant_type: 'refresh_token', refresh_token: 'rt_x' },
    });
    expect(grant).toMatchObject({ status: 400, body: { message: 'Refresh tokens are issued only in token mode' } });
  });
});

describe('session mode: secrets stay out of the logs', () => {
  it('logs no password, session id or session credential, even when one is put in a URL', async () => {
    const logs = captureLogger('debug');
    const app = await startTestApp(
      { AUTH_MODE: 'session', ADMIN_PASSWORD: 'bootstrap-secret-1' },
      { logger: logs.logger },
    );
    apps.push(app);
    await createUser(app, 'alice');
    const { cookie, body } = await login(app);
    const credential = cookie.slice('session_id='.length);
    const id = String(body.session_id);
    expect(credential.startsWith(`${id}.`)).toBe(true);
    await call(app, 'GET', '/auth/me', { cookie });
    await call(app, 'GET', `/auth/me?session_id=${encodeURIComponent(credential)}`, { cookie });
    await call(app, 'DELETE', `/auth/sessions/${encodeURIComponent(credential)}`, { cookie });
    const lines = logs.lines();
    expect(lines.some((l) => l.url === '/auth/sessions/:session_id')).toBe(true);
    const text = JSON.stringify(lines);
    for (const secret of [PASSWORD, credential, id]) expect(text).not.toContain(secret);
  });
});

const redis = await probeRedis();

describeWithService('sessions shared by two instances through Redis', redis, () => {
  for (const mode of ['token', 'session'] as const) {
    it(`${mode} mode: a login on one instance works on the other, and logout on either ends it on both`, async () => {
      const prefix = `agent-test:${randomBytes(6).toString('hex')}:`;
      const dbFile = join(mkdtempSync(join(tmpdir(), 'agent-auth-')), 'agent.db');
      const env = {
        AUTH_MODE: mode,
        REDIS_URL,
        REDIS_PREFIX: prefix,
        DATABASE_URL: `sqlite:${dbFile}`,
        ADMIN_PASSWORD: 'bootstrap-secret-1',
      };
      const a = await startTestApp(env);
      apps.push(a);
      const b = await startTestApp(env);
      apps.push(b);
      await createUser(a, 'alice');

      const res = await call(a, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } });
      const credential =
        mode === 'token'
          ? { token: res.body.access_token as string }
          : { cookie: cookiePair(res.headers.get('set-cookie')) };
      expect((await call(b, 'GET', '/auth/me', credential)).status).toBe(200);
      expect(((await call(b, 'GET', '/auth/sessions', credential)).body.sessions as unknown[]).length).toBe(1);
      if (mode === 'token') {
        const refreshed = await call(b, 'POST', '/auth/refresh', { body: { refresh_token: res.body.refresh_token } });
        expect(refreshed.status).toBe(200);
        credential.token = refreshed.body.access_token as string;
      }
      expect((await call(b, 'POST', '/auth/logout', credential)).status).toBe(200);
      expect((await call(a, 'GET', '/auth/me', credential)).status).toBe(401);

      const client = new Redis(REDIS_URL);
      try {
        const keys = await client.keys(`${prefix}*`);
        expect(keys.filter((k) => k.includes('sess:'))).toEqual([]);
        await (keys.length > 0 ? client.del(...keys) : Promise.resolve(0));
      } finally {
        client.disconnect();
      }
    });
  }
});
