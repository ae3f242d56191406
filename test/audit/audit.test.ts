import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { AuditEntry } from '../../src/modules/audit/audit.service.js';
import { closeAfterEach, startTestApp } from '../helpers/app.js';
import { PASSWORD, TestClock, call, cookiePair, createUser } from '../helpers/auth.js';
import { tablesContaining } from '../helpers/scan.js';

const closing = closeAfterEach();

const AGENT = 'audit-test/2.0';
const headers = { 'User-Agent': AGENT };
const ADMIN_PASSWORD = 'bootstrap-secret-1';
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

async function setUp(env: Record<string, string> = {}) {
  const clock = new TestClock();
  const app = closing(await startTestApp({ ADMIN_PASSWORD, ...env }, { now: clock.now }));
  const alice = await createUser(app, 'alice');
  return { app, clock, alice };
}

const login = async (app: App, username: string, password = PASSWORD) =>
  (await call(app, 'POST', '/auth/login', { body: { username, password }, headers })).body;

/** Every event of the given type, oldest first. */
async function eventsOf(app: App, type: string): Promise<AuditEntry[]> {
  return (await app.services.audit.list({ type }, { offset: 0, limit: 1000 })).items.reverse();
}

describe('audit events', () => {
  it('records logins and failed logins with address and user agent, never the name or password typed', async () => {
    const { app, alice } = await setUp();
    const ok = await login(app, 'alice');
    await login(app, 'alice', 'wrong-password-1');
    await login(app, 'ghost-account', 'hunter2-typed-secret');

    expect(await eventsOf(app, 'login.succeeded')).toEqual([
      {
        event_id: expect.stringMatching(
          /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
        ) as unknown,
        event_type: 'login.succeeded',
        timestamp: expect.stringMatching(ISO) as unknown,
        actor_id: alice.id,
        subject_id: null,
        ip_address: '127.0.0.1',
        user_agent: AGENT,
        details: { method: 'password', session_id: expect.any(String) as unknown },
      },
    ]);
    const failed = await eventsOf(app, 'login.failed');
    expect(failed.map((e) => [e.actor_id, e.subject_id, e.details])).toEqual([
      [null, alice.id, { method: 'password', reason: 'invalid_credentials' }],
      [null, null, { method: 'password', reason: 'invalid_credentials' }],
    ]);
    expect(failed[0]).toMatchObject({ ip_address: '127.0.0.1', user_agent: AGENT });
    for (const typed of ['wrong-password-1', 'hunter2-typed-secret', 'ghost-account', PASSWORD]) {
      expect(await tablesContaining(app.infrastructure.db, typed)).toEqual([]);
    }
    expect(await tablesContaining(app.infrastructure.db, ok.access_token as string)).toEqual([]);
  });

  it('records logouts and refresh-token reuse (token mode)', async () => {
    const { app, alice } = await setUp();
    const first = await login(app, 'alice');
    const refreshed = await call(app, 'POST', '/auth/refresh', { body: { refresh_token: first.refresh_token } });
    await call(app, 'POST', '/auth/refresh', { body: { refresh_token: first.refresh_token }, headers });
    const second = await login(app, 'alice');
    await call(app, 'POST', '/auth/logout', { token: second.access_token as string, headers });

    expect(refreshed.status).toBe(200);
    expect(await eventsOf(app, 'refresh_token.reused')).toMatchObject([
      {
        actor_id: null,
        subject_id: alice.id,
        user_agent: AGENT,
        details: { session_id: expect.any(String) as unknown },
      },
    ]);
    expect(await eventsOf(app, 'logout')).toMatchObject([
      {
        actor_id: alice.id,
        user_agent: AGENT,
        details: { method: 'password', session_id: expect.any(String) as unknown },
      },
    ]);
  });

  it('records sessions revoked by the user and evicted by the concurrent-session limit (session mode)', async () => {
    const { app, clock, alice } = await setUp({ AUTH_MODE: 'session', SESSION_MAX_CONCURRENT: '2' });
    const cookies: string[] = [];
    for (let i = 0; i < 3; i++) {
      clock.advance(1_000);
      const res = await call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } });
      cookies.push(cookiePair(res.headers.get('set-cookie')));
    }
    const sessions = (await call(app, 'GET', '/auth/sessions', { cookie: cookies[2] })).body.sessions as {
      session_id: string;
    }[];
    await call(app, 'DELETE', `/auth/sessions/${sessions[0]!.session_id}`, { cookie: cookies[2], headers });

    expect((await eventsOf(app, 'session.evicted')).map((e) => [e.actor_id, e.details.reason])).toEqual([
      [alice.id, 'concurrent_session_limit'],
    ]);
    expect((await eventsOf(app, 'session.revoked')).map((e) => [e.actor_id, e.details.reason])).toEqual([
      [alice.id, 'revoked_by_user'],
    ]);
  });

  it('records the API key lifecycle by key id, never the key', async () => {
    const { app, alice } = await setUp();
    const token = (await login(app, 'alice')).access_token as string;
    const created = await call(app, 'POST', '/api/v1/api-keys', { token, headers, body: { name: 'ci' } });
    const keyId = created.body.key_id as string;
    const rotated = await call(app, 'POST', `/api/v1/api-keys/${keyId}/rotate`, { token, headers });
    await call(app, 'DELETE', `/api/v1/api-keys/${keyId}`, { token, headers });

    const events = (await app.services.audit.list({ userId: alice.id }, { offset: 0, limit: 100 })).items.reverse();
    expect(events.filter((e) => e.event_type.startsWith('api_key.')).map((e) => [e.event_type, e.details])).toEqual([
      ['api_key.created', { key_id: keyId }],
      ['api_key.rotated', { key_id: keyId, generation: 2 }],
      ['api_key.deleted', { key_id: keyId }],
    ]);
    expect(events.at(-1)).toMatchObject({ actor_id: alice.id, ip_address: '127.0.0.1', user_agent: AGENT });
    for (const key of [created.body.api_key, rotated.body.new_api_key] as string[]) {
      expect(await tablesContaining(app.infrastructure.db, key)).toEqual([]);
    }
  });

  it('records the service principal lifecycle and client-credentials logins and failures, never the secret', async () => {
    const { app, alice } = await setUp();
    const token = (await login(app, 'alice')).access_token as string;
    const base = '/api/v1/service-principals';
    const created = await call(app, 'POST', base, { token, headers, body: { name: 'Billing Bot', description: 'x' } });
    const rotated = await call(app, 'POST', `${base}/billing-bot/rotate-secret`, { token, headers, body: {} });
    await call(app, 'POST', `${base}/billing-bot/associate-user?user_id=user:alice`, { token, headers });
    const grant = (client_id: string, client_secret: string) =>
      call(app, 'POST', '/auth/token', {
        form: { grant_type: 'client_credentials', client_id, client_secret },
        headers,
      });
    expect((await grant('billing-bot', rotated.body.client_secret as string)).status).toBe(200);
    expect((await grant('billing-bot', created.body.client_secret as string)).status).toBe(401);
    expect((await grant('sp_secret_pasted_as_id', 'whatever')).status).toBe(401);
    await call(app, 'DELETE', `${base}/billing-bot`, { token, headers });

    const lifecycle = (await app.services.audit.list({ userId: alice.id }, { offset: 0, limit: 100 })).items
      .reverse()
      .filter((e) => e.event_type.startsWith('service_principal.'));
    expect(lifecycle.map((e) => [e.event_type, e.details])).toEqual([
      ['service_principal.created', { service_id: 'billing-bot', authentication_mode: 'client_credentials' }],
      ['service_principal.secret_rotated', { service_id: 'billing-bot', grace_period_hours: 0 }],
      [
        'service_principal.associated',
        { service_id: 'billing-bot', associated_user_id: alice.id, inherit_permissions: true },
      ],
      ['service_principal.deleted', { service_id: 'billing-bot' }],
    ]);
    expect(await eventsOf(app, 'client_credentials.failed')).toMatchObject([
      { actor_id: null, user_agent: AGENT, details: { service_id: 'billing-bot' } },
      { actor_id: null, user_agent: AGENT, details: {} },
    ]);
    expect(await eventsOf(app, 'login.succeeded')).toContainEqual(
      expect.objectContaining({ actor_id: 'service_principal:billing-bot', details: { method: 'client_credentials' } }),
    );
    for (const secret of [
      created.body.client_secret,
      rotated.body.client_secret,
      'sp_secret_pasted_as_id',
    ] as string[]) {
      expect(await tablesContaining(app.infrastructure.db, secret)).toEqual([]);
    }
  });

  it('records profile changes, consents, exports and the erasure, which leaves the rest under a keyed hash', async () => {
    const { app, alice } = await setUp();
    const token = (await login(app, 'alice')).access_token as string;
    await call(app, 'PATCH', '/api/v1/users/me', { token, headers, body: { name: 'Alice', preferences: { a: 1 } } });
    await call(app, 'POST', '/api/v1/users/me/consent', {
      token,
      headers,
      body: { consent_type: 'marketing', granted: true },
    });
    for (const format of ['csv', 'json']) {
      const res = await fetch(`${app.url('main')}/api/v1/users/me/export?format=${format}`, {
        headers: { ...headers, Authorization: `Bearer ${token}` },
      });
      expect(res.status).toBe(200);
    }
    const own = (await app.services.audit.eventsOf(alice.id)).map((e) => [e.event_type, e.details]);
    expect(own).toEqual([
      ['login.succeeded', { method: 'password', session_id: expect.any(String) as unknown }],
      ['profile.updated', { fields: 'name,preferences' }],
      ['consent.changed', { consent_id: expect.any(String) as unknown, consent_type: 'marketing', granted: true }],
      ['data.exported', { format: 'csv' }],
      ['data.exported', { format: 'json' }],
    ]);

    const erased = await call(app, 'DELETE', '/api/v1/users/me?confirm=true', { token, headers });
    const pseudonym = await app.services.audit.pseudonym(alice.id);
    expect(pseudonym).toMatch(/^anon:[0-9a-f]{64}$/);
    expect(await app.services.audit.eventsOf(alice.id)).toEqual([]);
    const kept = await app.services.audit.eventsOf(pseudonym);
    // What happened, when and how it ended stays; ids, addresses and user agents do not, the erasure's own included.
    expect(kept.map((e) => [e.event_type, e.ip_address, e.user_agent, e.details])).toEqual([
      ['login.succeeded', null, null, { method: 'password' }],
      ['profile.updated', null, null, { fields: 'name,preferences' }],
      ['consent.changed', null, null, { consent_type: 'marketing', granted: true }],
      ['data.exported', null, null, { format: 'csv' }],
      ['data.exported', null, null, { format: 'json' }],
      ['account.erased', null, null, expect.objectContaining({ consents: 1, profile: 1, audit_logs: own.length })],
    ]);
    expect(kept.at(-1)).toMatchObject({ event_id: erased.body.audit_record_id, actor_id: pseudonym });
    expect(await tablesContaining(app.infrastructure.db, AGENT)).toEqual([]);
  });
});

describe('GET /api/v1/audit-log', () => {
  /** Seeds events one second apart, from 12:00:01: three actors in turn, two types. */
  async function seeded() {
    const { app, clock, alice } = await setUp();
    for (let i = 0; i < 30; i++) {
      clock.advance(1_000);
      await app.services.audit.record({
        type: i % 2 === 0 ? 'consent.changed' : 'profile.updated',
        actorId: ['u-1', 'u-2', 'u-3'][i % 3]!,
        subjectId: i === 29 ? 'u-9' : null,
        details: { i },
      });
    }
    const admin = (await login(app, 'admin', ADMIN_PASSWORD)).access_token as string;
    const user = (await login(app, 'alice')).access_token as string;
    return { app, clock, alice, admin, user };
  }

  const get = (app: App, token: string, query: string) => call(app, 'GET', `/api/v1/audit-log${query}`, { token });
  const seq = (body: Record<string, unknown>) =>
    (body.items as { details: { i?: number } }[]).map((e) => e.details.i ?? e.details);

  it('is for administrators: 401 without credentials, 403 for anyone else', async () => {
    const { app, user } = await seeded();
    const anonymous = await call(app, 'GET', '/api/v1/audit-log');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toMatchObject({ error: 'unauthorized', code: 'AUTH_INVALID_TOKEN' });
    const denied = await get(app, user, '');
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({
      error: 'forbidden',
      message: 'The audit log is for administrators',
      code: 'AUTH_ACCESS_DENIED',
      timestamp: expect.stringMatching(ISO) as unknown,
    });
  });

  it('pages newest first with page/page_size or offset/limit and reports the shared page metadata', async () => {
    const { app, admin } = await seeded();
    const page = await get(app, admin, '?user_id=u-1&page=2&page_size=4');
    expect(page.status).toBe(200);
    expect(seq(page.body)).toEqual([15, 12, 9, 6]);
    expect(page.body).toMatchObject({
      total: 10,
      page: 2,
      page_size: 4,
      total_pages: 3,
      has_next: true,
      has_prev: true,
    });
    expect((page.body.items as unknown[])[0]).toEqual({
      event_id: expect.any(String) as unknown,
      event_type: 'profile.updated',
      timestamp: '2026-06-01T12:00:16.000Z',
      actor_id: 'u-1',
      subject_id: null,
      ip_address: null,
      user_agent: null,
      details: { i: 15 },
    });
    const window = await get(app, admin, '?user_id=u-1&offset=8&limit=5');
    expect(seq(window.body)).toEqual([3, 0]);
    expect(window.body).toMatchObject({ total: 10, has_next: false, has_prev: true });
    const all = await get(app, admin, '');
    // The seeded events, and the logins of alice and the admin: 50 per page by default.
    expect(all.body).toMatchObject({ total: 32, page: 1, page_size: 50, total_pages: 1, has_next: false });
  });

  it('filters by user (actor or subject), type and time range', async () => {
    const { app, admin } = await seeded();
    expect(seq((await get(app, admin, '?user_id=u-9')).body)).toEqual([29]);
    expect(seq((await get(app, admin, '?user_id=u-3&type=consent.changed')).body)).toEqual([26, 20, 14, 8, 2]);
    const range = await get(app, admin, '?from=2026-06-01T12:00:05Z&to=2026-06-01T14:00:08%2B02:00');
    expect(seq(range.body)).toEqual([6, 5, 4]);
    const logins = await get(app, admin, '?type=login.succeeded');
    expect((logins.body.items as AuditEntry[]).map((e) => e.user_agent)).toEqual([AGENT, AGENT]);
    expect(seq((await get(app, admin, '?user_id=nobody')).body)).toEqual([]);
  });

  it('refuses bad parameters with 400 validation_error naming them', async () => {
    const { app, admin } = await seeded();
    for (const [query, loc] of [
      ['?page_size=1001', ['query', 'page_size']],
      ['?limit=0', ['query', 'limit']],
      ['?page=2&limit=10', ['query', 'offset']],
      ['?type=login.teleported', ['query', 'type']],
      ['?from=yesterday', ['query', 'from']],
    ] as const) {
      const res = await get(app, admin, query);
      expect(res.status, query).toBe(400);
      expect(res.body).toMatchObject({ error: 'validation_error', code: 'VALIDATION_ERROR', details: [{ loc }] });
    }
  });
});
