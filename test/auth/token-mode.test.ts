import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { captureLogger, closeAfterEach, startTestApp } from '../helpers/app.js';
import { PASSWORD, TestClock, call, createUser } from '../helpers/auth.js';
import { signIn } from '../helpers/client.js';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const closing = closeAfterEach();

async function start(env: Record<string, string> = {}, clock = new TestClock()) {
  const logs = captureLogger('info');
  const app = closing(
    await startTestApp({ ADMIN_PASSWORD: 'bootstrap-secret-1', ...env }, { now: clock.now, logger: logs.logger }),
  );
  return { app, clock, logs };
}

async function login(app: App, username: string, password = PASSWORD) {
  return call(app, 'POST', '/auth/login', { body: { username, password } });
}

describe('token mode: POST /auth/login', () => {
  it('returns a token pair and the user, by username or by email', async () => {
    const { app } = await start();
    const alice = await createUser(app, 'alice');
    for (const username of ['alice', 'ALICE', 'alice@example.com']) {
      const res = await login(app, username);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        access_token: expect.stringMatching(/^ey[\w-]+\.[\w-]+\.[\w-]+$/) as unknown,
        refresh_token: expect.stringMatching(/^rt_[\w-]{43}$/) as unknown,
        token_type: 'Bearer',
        expires_in: 900,
        user: { id: alice.id, username: 'alice', email: 'alice@example.com', roles: ['user'] },
      });
    }
  });

  it('accepts form-encoded credentials', async () => {
    const { app } = await start();
    await createUser(app, 'alice');
    const res = await call(app, 'POST', '/auth/login', { form: { username: 'alice', password: PASSWORD } });
    expect(res.status).toBe(200);
    expect(res.body.token_type).toBe('Bearer');
  });

  it('answers an unknown user and a wrong password identically', async () => {
    const { app } = await start();
    await createUser(app, 'alice');
    const wrong = await login(app, 'alice', 'not the password');
    const unknown = await login(app, 'mallory', 'not the password');
    for (const res of [wrong, unknown]) {
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(
        /^Bearer realm="agent-service", resource_metadata="http:\/\/127\.0\.0\.1:0\/\.well-known\/oauth-protected-resource\/mcp"$/,
      );
      const { timestamp, ...rest } = res.body;
      expect(timestamp).toMatch(ISO);
      expect(rest).toEqual({
        error: 'unauthorized',
        message: 'Invalid username or password',
        code: 'AUTH_INVALID_CREDENTIALS',
      });
    }
  });

  it('refuses a deactivated account like a wrong password', async () => {
    const { app } = await start();
    const alice = await createUser(app, 'alice');
    await app.infrastructure.db.kysely.updateTable('users').set({ active: 0 }).where('id', '=', alice.id).execute();
    expect((await login(app, 'alice')).body.code).toBe('AUTH_INVALID_CREDENTIALS');
  });

  it('rejects a request without a username or password with 400', async () => {
    const { app } = await start();
    const res = await call(app, 'POST', '/auth/login', { body: { password: 'x' } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'validation_error', details: [{ loc: ['body', 'username'] }] });
    expect((await call(app, 'POST', '/auth/login', { body: { username: 'alice' } })).status).toBe(400);
  });

  it('locks an account out with 429 and Retry-After after too many failures, and lets it in after the window', async () => {
    const { app, clock } = await start({ LOGIN_MAX_FAILURES: '3', LOGIN_FAILURE_WINDOW_SECONDS: '60' });
    await createUser(app, 'alice');
    for (let i = 0; i < 3; i++) expect((await login(app, 'alice', 'guess')).status).toBe(401);
    // Even the right password is refused while the account is locked.
    const locked = await login(app, 'alice');
    expect(locked.status).toBe(429);
    expect(locked.headers.get('retry-after')).toBe('60');
    expect(locked.body).toMatchObject({ error: 'rate_limit_exceeded', code: 'AUTH_RATE_LIMIT', retry_after: 60 });
    // Another account is not affected.
    await createUser(app, 'bob');
    expect((await login(app, 'bob')).status).toBe(200);
    clock.advance(60_000);
    expect((await login(app, 'alice')).status).toBe(200);
  });

  it('throttles a client address that tries many accounts', async () => {
    const { app } = await start({ LOGIN_MAX_FAILURES_PER_ADDRESS: '4' });
    await createUser(app, 'alice');
    for (const name of ['u1', 'u2', 'u3', 'u4']) expect((await login(app, name, 'guess')).status).toBe(401);
    const res = await login(app, 'alice');
    expect(res.status).toBe(429);
    expect(res.body.code).toBe('AUTH_RATE_LIMIT');
  });
});

describe('token mode: refresh, logout and revocation', () => {
  it('rotates the refresh token on every use', async () => {
    const { app } = await start();
    await createUser(app, 'alice');
    const first = (await login(app, 'alice')).body;
    const refreshed = await call(app, 'POST', '/auth/refresh', { body: { refresh_token: first.refresh_token } });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body).toEqual({
      access_token: expect.any(String) as unknown,
      refresh_token: expect.stringMatching(/^rt_/) as unknown,
      token_type: 'Bearer',
      expires_in: 900,
    });
    expect(refreshed.body.refresh_token).not.toBe(first.refresh_token);
    expect((await call(app, 'GET', '/auth/me', { token: refreshed.body.access_token as string })).status).toBe(200);
    // The login endpoint's refresh grant does the same.
    const viaLogin = await call(app, 'POST', '/auth/login', {
      body: { username: 'alice', grant_type: 'refresh_token', refresh_token: refreshed.body.refresh_token },
    });
    expect(viaLogin.status).toBe(200);
    expect(viaLogin.body.user).toBeUndefined();
  });

  it('revokes the whole family when a used refresh token is presented again', async () => {
    const { app } = await start();
    await createUser(app, 'alice');
    const first = (await login(app, 'alice')).body;
    const second = (await call(app, 'POST', '/auth/refresh', { body: { refresh_token: first.refresh_token } })).body;

    const replay = await call(app, 'POST', '/auth/refresh', { body: { refresh_token: first.refresh_token } });
    expect(replay.status).toBe(401);
    expect(replay.body).toMatchObject({ error: 'unauthorized', code: 'AUTH_INVALID_TOKEN' });
    // Everything of that login is dead now: the newer refresh token and every access token.
    expect((await call(app, 'POST', '/auth/refresh', { body: { refresh_token: second.refresh_token } })).status).toBe(
      401,
    );
    expect((await call(app, 'GET', '/auth/me', { token: second.access_token as string })).status).toBe(401);
    expect((await call(app, 'GET', '/auth/me', { token: first.access_token as string })).status).toBe(401);
  });

  it('lets only one of two simultaneous refreshes win, and treats the other as reuse', async () => {
    const { app } = await start();
    await createUser(app, 'alice');
    const { refresh_token } = (await login(app, 'alice')).body;
    const results = await Promise.all(
      [1, 2].map(() => call(app, 'POST', '/auth/refresh', { body: { refresh_token } })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 401]);
    const winner = results.find((r) => r.status === 200)!;
    expect((await call(app, 'GET', '/auth/me', { token: winner.body.access_token as string })).status).toBe(401);
  });

  it('refuses unknown and expired refresh tokens', async () => {
    const { app, clock } = await start({ REFRESH_TOKEN_TTL_SECONDS: '3600' });
    await createUser(app, 'alice');
    expect((await call(app, 'POST', '/auth/refresh', { body: { refresh_token: 'rt_forged' } })).status).toBe(401);
    const { refresh_token } = (await login(app, 'alice')).body;
    clock.advance(3_600_000);
    const res = await call(app, 'POST', '/auth/refresh', { body: { refresh_token } });
    expect(res.status).toBe(401);
    expect(res.body.message).toBe('Refresh token has expired');
  });

  it('logout revokes the refresh token and makes the access token stop working at once', async () => {
    const { app } = await start();
    await createUser(app, 'alice');
    const tokens = (await login(app, 'alice')).body;
    const token = tokens.access_token as string;
    expect((await call(app, 'GET', '/auth/me', { token })).status).toBe(200);
    const out = await call(app, 'POST', '/auth/logout', { token });
    expect(out).toMatchObject({ status: 200, body: { message: 'Logged out' } });
    const after = await call(app, 'GET', '/auth/me', { token });
    expect(after.status).toBe(401);
    expect(after.body.message).toBe('Token has been revoked');
    expect((await call(app, 'POST', '/auth/refresh', { body: { refresh_token: tokens.refresh_token } })).status).toBe(
      401,
    );
    expect((await call(app, 'POST', '/auth/logout', { token })).status).toBe(401);
  });

  it('requires credentials for logout and /auth/me', async () => {
    const { app } = await start();
    for (const [method, path] of [
      ['POST', '/auth/logout'],
      ['GET', '/auth/me'],
      ['GET', '/auth/sessions'],
    ] as const) {
      const res = await call(app, method, path);
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({
        error: 'unauthorized',
        code: 'AUTH_INVALID_TOKEN',
        message: 'Authentication required',
      });
    }
    expect((await call(app, 'GET', '/auth/me', { headers: { Authorization: 'Basic YWxpY2U6eA==' } })).status).toBe(401);
  });
});

describe('token mode: /auth/me, /auth/sessions, /auth/verify, JWKS', () => {
  it('GET /auth/me describes the caller with groups', async () => {
    const { app, clock } = await start();
    const alice = await createUser(app, 'alice');
    await app.services.users.setGroups(alice.id, ['/engineering/backend', '/staff']);
    const { access_token } = (await login(app, 'alice')).body;
    const me = await call(app, 'GET', '/auth/me', { token: access_token as string });
    expect(me.body).toEqual({
      id: alice.id,
      username: 'alice',
      email: 'alice@example.com',
      email_verified: false,
      name: null,
      roles: ['user'],
      groups: ['/engineering/backend', '/staff'],
      created_at: alice.createdAt,
      last_login: new Date(clock.ms).toISOString(),
    });
  });

  it('lists the caller’s sessions, marks the current one, and evicts the oldest beyond the limit', async () => {
    const { app, clock } = await start({ SESSION_MAX_CONCURRENT: '2' });
    const signInWith = (agent: string) => signIn(app, 'alice', { headers: { 'User-Agent': agent } });
    const first = await signInWith('first');
    clock.advance(1_000);
    const second = await signInWith('second');
    clock.advance(1_000);
    const third = await signInWith('third');

    const list = await third.get('/auth/sessions');
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ total: 2, max_concurrent: 2 });
    const sessions = list.body.sessions as Record<string, unknown>[];
    expect(sessions.map((s) => s.user_agent)).toEqual(['second', 'third']);
    expect(sessions.map((s) => s.is_current)).toEqual([false, true]);
    expect(sessions[0]).toEqual({
      session_id: expect.stringMatching(/^[0-9a-f-]{36}$/) as unknown,
      created_at: expect.stringMatching(ISO) as unknown,
      expires_at: expect.stringMatching(ISO) as unknown,
      last_accessed: expect.stringMatching(ISO) as unknown,
      ip_address: expect.stringMatching(/127\.0\.0\.1/) as unknown,
      user_agent: 'second',
      is_current: false,
    });
    // The evicted login is logged out entirely.
    expect((await first.get('/auth/me')).status).toBe(401);
    expect(
      (await call(app, 'POST', '/auth/refresh', { body: { refresh_token: first.login.refresh_token } })).status,
    ).toBe(401);
    expect((await second.get('/auth/me')).status).toBe(200);
  });

  it('revokes an own session (200), refuses another user’s (403) and an unknown one (404)', async () => {
    const { app, clock } = await start();
    const aliceOne = await signIn(app, 'alice');
    clock.advance(1_000);
    const aliceTwo = await signIn(app, 'alice');
    const bob = await signIn(app, 'bob');
    const aliceSessions = (await aliceTwo.get('/auth/sessions')).body.sessions as {
      session_id: string;
      is_current: boolean;
    }[];
    const other = aliceSessions.find((s) => !s.is_current)!.session_id;

    const forbidden = await bob.delete(`/auth/sessions/${other}`);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toMatchObject({ error: 'forbidden', code: 'AUTH_ACCESS_DENIED' });
    // Bob cannot see Alice's sessions either: his list has only his own.
    const bobList = await bob.get('/auth/sessions');
    expect((bobList.body.sessions as unknown[]).length).toBe(1);

    const missing = await aliceTwo.delete('/auth/sessions/00000000-0000-0000-0000-000000000000');
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ error: 'not_found', code: 'SESSION_NOT_FOUND' });

    const revoked = await aliceTwo.delete(`/auth/sessions/${other}`);
    expect(revoked).toMatchObject({ status: 200, body: { message: 'Session revoked' } });
    expect((await aliceOne.get('/auth/me')).status).toBe(401);
    expect((await aliceTwo.get('/auth/me')).status).toBe(200);
  });

  it('POST /auth/verify reports a valid token and, with 401, an invalid or expired one', async () => {
    const { app, clock } = await start();
    const alice = await createUser(app, 'alice');
    const { access_token } = (await login(app, 'alice')).body;
    const ok = await call(app, 'POST', '/auth/verify', { token: access_token as string });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({
      valid: true,
      user_id: alice.id,
      username: 'alice',
      issued_at: new Date(clock.ms).toISOString(),
      expires_at: new Date(clock.ms + 900_000).toISOString(),
    });
    expect(await call(app, 'POST', '/auth/verify')).toMatchObject({
      status: 401,
      body: { valid: false, error: 'Missing Bearer token' },
    });
    expect(await call(app, 'POST', '/auth/verify', { token: 'not.a.jwt' })).toMatchObject({
      status: 401,
      body: { valid: false, error: 'Invalid token' },
    });
    const issued = clock.ms;
    clock.advance(901_000 + 5_000);
    const expired = await call(app, 'POST', '/auth/verify', { token: access_token as string });
    expect(expired.status).toBe(401);
    expect(expired.body).toEqual({
      valid: false,
      error: 'Token has expired',
      expired_at: new Date(issued + 900_000).toISOString(),
    });
  });

  it('publishes the signing key at /.well-known/jwks.json', async () => {
    const { app } = await start();
    const res = await call(app, 'GET', '/.well-known/jwks.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('public, max-age=300');
    const keys = res.body.keys as Record<string, unknown>[];
    expect(keys).toHaveLength(1);
    expect(keys[0]).toEqual({
      kty: 'OKP',
      crv: 'Ed25519',
      x: expect.any(String) as unknown,
      kid: expect.any(String) as unknown,
      alg: 'EdDSA',
      use: 'sig',
    });
    expect(keys[0]).not.toHaveProperty('d');
  });
});

describe('bootstrap administrator', () => {
  it('is created on first start with the configured password, once', async () => {
    const { app } = await start({ ADMIN_USERNAME: 'root', ADMIN_PASSWORD: 'bootstrap-secret-1' });
    const res = await login(app, 'root', 'bootstrap-secret-1');
    expect(res.status).toBe(200);
    expect((res.body.user as { roles: string[] }).roles).toEqual(['admin', 'user']);
  });

  it('gets a generated password, shown once outside the logs', async () => {
    const announced: string[] = [];
    const logs = captureLogger('debug');
    const app = closing(await startTestApp({}, { announce: (m) => announced.push(m), logger: logs.logger }));
    expect(announced).toHaveLength(1);
    const password = /password: (\S+)/.exec(announced[0]!)![1]!;
    expect((await login(app, 'admin', password)).status).toBe(200);
    expect(JSON.stringify(logs.lines())).not.toContain(password);
  });
});

describe('secrets stay out of the logs', () => {
  it('logs no password, access token, refresh token or session credential', async () => {
    const { app, logs } = await start();
    await createUser(app, 'alice');
    await login(app, 'alice', 'a wrong password');
    const tokens = (await login(app, 'alice')).body;
    const refreshed = (await call(app, 'POST', '/auth/refresh', { body: { refresh_token: tokens.refresh_token } }))
      .body;
    await call(app, 'GET', '/auth/me', { token: refreshed.access_token as string });
    await call(app, 'POST', '/auth/logout', { token: refreshed.access_token as string });
    const text = JSON.stringify(logs.lines());
    expect(logs.lines().some((l) => l.msg === 'login succeeded')).toBe(true);
    for (const secret of [
      PASSWORD,
      'a wrong password',
      tokens.access_token,
      tokens.refresh_token,
      refreshed.access_token,
      refreshed.refresh_token,
    ]) {
      expect(text).not.toContain(secret as string);
    }
  });
});
