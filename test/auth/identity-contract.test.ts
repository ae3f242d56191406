import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { startTestApp } from '../helpers/app.js';
import { PASSWORD, call, cookiePair, createUser } from '../helpers/auth.js';
import { REDIS_URL, describeWithService, probeRedis } from '../helpers/services.js';

const ADMIN_PASSWORD = 'bootstrap-secret-1';
const apps: App[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

async function start(env: Record<string, string> = {}) {
  const app = await startTestApp({ ADMIN_PASSWORD, ...env });
  apps.push(app);
  return app;
}

async function stop(app: App): Promise<void> {
  apps.splice(apps.indexOf(app), 1);
  await app.close();
}

interface Listed {
  session_id: string;
  is_current: boolean;
}

async function listed(app: App, credential: { cookie?: string; token?: string }): Promise<Listed[]> {
  const res = await call(app, 'GET', '/auth/sessions', credential);
  expect(res.status).toBe(200);
  return res.body.sessions as Listed[];
}

describe('one session id everywhere', () => {
  it('session mode: the session_id login answers is the one listed as current, and DELETE takes it', async () => {
    const app = await start({ AUTH_MODE: 'session' });
    await createUser(app, 'alice');
    const other = await call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } });
    const res = await call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } });
    expect(res.status).toBe(200);
    const id = res.body.session_id as string;
    const cookie = cookiePair(res.headers.get('set-cookie'));

    const sessions = await listed(app, { cookie });
    expect(sessions).toHaveLength(2);
    expect(sessions.find((s) => s.session_id === id)).toMatchObject({ is_current: true });
    expect(sessions.find((s) => s.session_id === other.body.session_id)).toMatchObject({ is_current: false });

    // The other session, by the id its login answered with.
    const revoke = await call(app, 'DELETE', `/auth/sessions/${String(other.body.session_id)}`, { cookie });
    expect(revoke).toMatchObject({ status: 200, body: { message: 'Session revoked' } });
    const otherCookie = cookiePair(other.headers.get('set-cookie'));
    expect((await call(app, 'GET', '/auth/me', { cookie: otherCookie })).status).toBe(401);

    // And its own: the cookie is cleared and stops working.
    const own = await call(app, 'DELETE', `/auth/sessions/${id}`, { cookie });
    expect(own.status).toBe(200);
    expect(own.headers.get('set-cookie')).toMatch(/^session_id=;/);
    expect((await call(app, 'GET', '/auth/me', { cookie })).status).toBe(401);
  });

  it("token mode: the access token's session is listed as current and DELETE with its id ends it", async () => {
    const app = await start();
    await createUser(app, 'alice');
    const res = await call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } });
    const token = res.body.access_token as string;
    const sessions = await listed(app, { token });
    expect(sessions).toHaveLength(1);
    expect(sessions[0]!.is_current).toBe(true);
    expect((await call(app, 'DELETE', `/auth/sessions/${sessions[0]!.session_id}`, { token })).status).toBe(200);
    expect((await call(app, 'GET', '/auth/me', { token })).status).toBe(401);
    const refresh = await call(app, 'POST', '/auth/refresh', { body: { refresh_token: res.body.refresh_token } });
    expect(refresh.status).toBe(401);
  });
});

describeWithService('one session id across instances sharing Redis', await probeRedis(), () => {
  it('session mode: a login on one instance is listed and revoked by the same id on the other', async () => {
    const env = {
      AUTH_MODE: 'session',
      REDIS_URL,
      REDIS_PREFIX: `agent-test:${randomBytes(6).toString('hex')}:`,
      DATABASE_URL: `sqlite:${join(mkdtempSync(join(tmpdir(), 'agent-auth-')), 'agent.db')}`,
    };
    const a = await start(env);
    const b = await start(env);
    await createUser(a, 'alice');
    const res = await call(a, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } });
    const id = res.body.session_id as string;
    const cookie = cookiePair(res.headers.get('set-cookie'));
    expect(await listed(b, { cookie })).toEqual([expect.objectContaining({ session_id: id, is_current: true })]);
    expect((await call(b, 'DELETE', `/auth/sessions/${id}`, { cookie })).status).toBe(200);
    expect((await call(a, 'GET', '/auth/me', { cookie })).status).toBe(401);
  });
});

describe('the bootstrap administrator has an email address (ADMIN_EMAIL)', () => {
  it('answers a string email on login and /auth/me, and logs in by that email', async () => {
    const app = await start();
    const login = await call(app, 'POST', '/auth/login', { body: { username: 'admin', password: ADMIN_PASSWORD } });
    expect(login.status).toBe(200);
    expect((login.body.user as { email: unknown }).email).toBe('admin@localhost.invalid');
    const me = await call(app, 'GET', '/auth/me', { token: login.body.access_token as string });
    expect(me.body).toMatchObject({ username: 'admin', email: 'admin@localhost.invalid' });

    const byEmail = await call(app, 'POST', '/auth/login', {
      body: { username: 'Admin@Localhost.invalid', password: ADMIN_PASSWORD },
    });
    expect(byEmail.status).toBe(200);
    expect(byEmail.body.user).toMatchObject({ username: 'admin', email: 'admin@localhost.invalid' });
  });

  it('takes the configured address, in session mode too', async () => {
    const app = await start({ AUTH_MODE: 'session', ADMIN_USERNAME: 'root', ADMIN_EMAIL: 'ops@example.com' });
    const login = await call(app, 'POST', '/auth/login', {
      body: { username: 'ops@example.com', password: ADMIN_PASSWORD },
    });
    expect(login.status).toBe(200);
    expect(login.body.user).toMatchObject({ username: 'root', email: 'ops@example.com' });
    const me = await call(app, 'GET', '/auth/me', { cookie: cookiePair(login.headers.get('set-cookie')) });
    expect(me.body).toMatchObject({ username: 'root', email: 'ops@example.com' });
  });

  it('fills the email of an existing administrator that has none on start, and keeps one that is set', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-admin-'));
    const env = { DATABASE_URL: `sqlite:${join(dir, 'agent.db')}`, ADMIN_EMAIL: 'ops@example.com' };
    const first = await start(env);
    // An administrator created by an older version, before ADMIN_EMAIL existed.
    await first.infrastructure.db.kysely
      .updateTable('users')
      .set({ email: null, email_key: null })
      .where('username_key', '=', 'admin')
      .execute();
    await stop(first);

    const second = await start(env);
    expect((await second.services.users.getByUsername('admin'))?.email).toBe('ops@example.com');
    const admin = (await second.services.users.getByUsername('admin'))!;
    await second.services.users.updateProfile(admin.id, { email: 'boss@example.com' });
    await stop(second);

    const third = await start({ ...env, ADMIN_EMAIL: 'other@example.com' });
    expect((await third.services.users.getByUsername('admin'))?.email).toBe('boss@example.com');
    const login = await call(third, 'POST', '/auth/login', {
      body: { username: 'boss@example.com', password: ADMIN_PASSWORD },
    });
    expect(login.status).toBe(200);
  });

  it('refuses an ADMIN_EMAIL that is not an email address, and derives one from an ADMIN_USERNAME that is', () => {
    expect(() => loadConfig({ ADMIN_EMAIL: 'not an address' })).toThrow(ConfigError);
    expect(loadConfig({}).auth.adminEmail).toBe('admin@localhost.invalid');
    expect(loadConfig({ ADMIN_USERNAME: 'ops@example.com' }).auth.adminEmail).toBe('ops@example.com');
  });
});

describe('POST /auth/refresh refuses whatever is not a refresh token with 401', () => {
  it('answers an access token and a 10 KB string with 401 unauthorized, like garbage', async () => {
    const app = await start();
    await createUser(app, 'alice');
    const login = await call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } });
    const accessToken = login.body.access_token as string;
    expect(accessToken.length).toBeGreaterThan(512);
    for (const refresh_token of [accessToken, 'x'.repeat(10 * 1024), 'rt_garbage', '']) {
      for (const [path, body] of [
        ['/auth/refresh', { refresh_token }],
        ['/auth/login', { username: 'alice', grant_type: 'refresh_token', refresh_token }],
      ] as const) {
        if (path === '/auth/login' && refresh_token === '') continue; // the grant without a token: 400 below
        const res = await call(app, 'POST', path, { body });
        expect(res.status, `${path} with a ${refresh_token.length}-character token`).toBe(401);
        expect(res.body).toMatchObject({ error: 'unauthorized', code: 'AUTH_INVALID_TOKEN' });
        expect(typeof res.body.message).toBe('string');
        expect(typeof res.body.timestamp).toBe('string');
      }
    }
    // Nothing was revoked: the real refresh token still works, and the access token too.
    const refreshed = await call(app, 'POST', '/auth/refresh', { body: { refresh_token: login.body.refresh_token } });
    expect(refreshed.status).toBe(200);
    expect((await call(app, 'GET', '/auth/me', { token: accessToken })).status).toBe(200);
  });

  it('keeps 400 validation_error for a missing or non-string refresh_token', async () => {
    const app = await start();
    for (const body of [{}, { refresh_token: 42 }, { refresh_token: null }, { refresh_token: ['rt_x'] }]) {
      const res = await call(app, 'POST', '/auth/refresh', { body });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error: 'validation_error' });
    }
    const grant = await call(app, 'POST', '/auth/login', { body: { username: 'alice', grant_type: 'refresh_token' } });
    expect(grant.status).toBe(400);
  });
});
