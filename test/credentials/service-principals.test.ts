import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { slugify } from '../../src/modules/service-principals/service-principals.service.js';
import { closeAfterEach, startTestApp } from '../helpers/app.js';
import { PASSWORD, call, createUser, startWithTwoUsers } from '../helpers/auth.js';
import { tablesContaining } from '../helpers/scan.js';
import { FAKE_MODEL_ID, FAKE_STORE_ID, startFakeOpenFga } from '../fakes/openfga.js';

const closing = closeAfterEach();

const setUp = () => startWithTwoUsers(closing);

const BASE = '/api/v1/service-principals';
const create = (app: App, token: string, body: Record<string, unknown> = {}) =>
  call(app, 'POST', BASE, { token, body: { name: 'Billing Bot', description: 'Sends invoices', ...body } });
const grant = (app: App, client_id: string, client_secret: string) =>
  call(app, 'POST', '/auth/token', { form: { grant_type: 'client_credentials', client_id, client_secret } });

describe('service principals', () => {
  it('creates a principal owned by the caller, with a slug id and a secret shown once', async () => {
    const { app, alice, clock } = await setUp();
    const res = await create(app, alice);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      service_id: 'billing-bot',
      name: 'Billing Bot',
      description: 'Sends invoices',
      authentication_mode: 'client_credentials',
      owner_user_id: 'user:alice',
      inherit_permissions: false,
      enabled: true,
      created_at: new Date(clock.ms).toISOString(),
      client_secret: expect.stringMatching(/^sp_secret_[0-9A-Za-z]{48}$/) as unknown,
      message: expect.any(String) as unknown,
    });
    const owner = await app.services.users.getByUsername('alice');
    expect(await app.infrastructure.authz.check(`user:${owner!.id}`, 'owner', 'service_principal:billing-bot')).toBe(
      true,
    );
  });

  it('refuses a taken id (409), an invalid mode and missing fields (400)', async () => {
    const { app, alice, bob } = await setUp();
    await create(app, alice);
    const taken = await create(app, bob, { name: 'billing bot' });
    expect(taken).toMatchObject({ status: 409, body: { error: 'conflict' } });
    const badMode = await create(app, alice, { name: 'x', authentication_mode: 'password' });
    expect(badMode).toMatchObject({ status: 400, body: { error: 'validation_error' } });
    expect((await call(app, 'POST', BASE, { token: alice, body: { name: 'no description' } })).status).toBe(400);
    expect((await create(app, alice, { name: '!!!' })).status).toBe(400);
    const noUser = await create(app, alice, { name: 'agent', authentication_mode: 'service_account_user' });
    expect(noUser).toMatchObject({
      status: 400,
      body: { message: 'associated_user_id is required for service_account_user mode' },
    });
    // Naming anyone but yourself is refused alike whether or not they exist: it reveals no account.
    expect(
      (
        await create(app, alice, {
          name: 'agent',
          authentication_mode: 'service_account_user',
          associated_user_id: 'user:nobody',
        })
      ).status,
    ).toBe(403);
  });

  it('accepts service_account as an alias of service_account_user', async () => {
    const { app, alice } = await setUp();
    const res = await create(app, alice, {
      name: 'Helper',
      authentication_mode: 'service_account',
      associated_user_id: 'user:alice',
      inherit_permissions: true,
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      authentication_mode: 'service_account_user',
      associated_user_id: 'user:alice',
      inherit_permissions: true,
    });
  });

  it('lists and reads only what the caller owns, never a secret: 403 for others, 404 for nothing', async () => {
    const { app, alice, bob } = await setUp();
    const { client_secret } = (await create(app, alice)).body;
    await create(app, alice, {
      name: 'Second',
      authentication_mode: 'service_account_user',
      associated_user_id: 'user:alice',
    });
    const list = await call(app, 'GET', BASE, { token: alice });
    expect(list.headers.get('x-total-count')).toBe('2');
    const items = list.body as unknown as Record<string, unknown>[];
    expect(items.map((p) => p.service_id)).toEqual(['billing-bot', 'second']);
    expect(JSON.stringify(items)).not.toContain(client_secret as string);
    expect(items.every((p) => !('client_secret' in p))).toBe(true);
    const filtered = await call(app, 'GET', `${BASE}?authentication_mode=service_account_user`, { token: alice });
    expect((filtered.body as unknown as { service_id: string }[]).map((p) => p.service_id)).toEqual(['second']);
    const paged = await call(app, 'GET', `${BASE}?page=2&page_size=1`, { token: alice });
    expect((paged.body as unknown as { service_id: string }[]).map((p) => p.service_id)).toEqual(['second']);

    expect((await call(app, 'GET', BASE, { token: bob })).body).toEqual([]);
    expect((await call(app, 'GET', `${BASE}/billing-bot`, { token: alice })).body).toMatchObject({
      service_id: 'billing-bot',
    });
    const forbidden = await call(app, 'GET', `${BASE}/billing-bot`, { token: bob });
    expect(forbidden).toMatchObject({ status: 403, body: { error: 'forbidden', code: 'AUTH_ACCESS_DENIED' } });
    expect((await call(app, 'GET', `${BASE}/nothing`, { token: alice })).status).toBe(404);
  });

  it('keeps every operation of one owner’s principal away from another user (403)', async () => {
    const { app, alice, bob } = await setUp();
    await create(app, alice);
    for (const [method, path] of [
      ['POST', `${BASE}/billing-bot/rotate-secret`],
      ['POST', `${BASE}/billing-bot/associate-user?user_id=user:bob`],
      ['DELETE', `${BASE}/billing-bot`],
    ] as const) {
      expect((await call(app, method, path, { token: bob })).status).toBe(403);
    }
    expect((await call(app, 'GET', `${BASE}/billing-bot`, { token: alice })).body).toMatchObject({ enabled: true });
  });

  it('issues client-credentials tokens (form, JSON and Basic), with no refresh token and no user', async () => {
    const { app, alice } = await setUp();
    const { client_secret } = (await create(app, alice)).body;
    const form = await grant(app, 'billing-bot', client_secret as string);
    expect(form.status).toBe(200);
    expect(form.headers.get('cache-control')).toBe('no-store');
    expect(form.body).toEqual({ access_token: expect.any(String) as unknown, token_type: 'Bearer', expires_in: 900 });
    const json = await call(app, 'POST', '/auth/token', {
      body: { grant_type: 'client_credentials', client_id: 'billing-bot', client_secret },
    });
    expect(json.status).toBe(200);
    const basic = await call(app, 'POST', '/auth/token', {
      form: { grant_type: 'client_credentials' },
      headers: { Authorization: `Basic ${Buffer.from(`billing-bot:${String(client_secret)}`).toString('base64')}` },
    });
    expect(basic.status).toBe(200);

    const me = await call(app, 'GET', '/auth/me', { token: form.body.access_token as string });
    expect(me.body).toMatchObject({
      id: 'billing-bot',
      username: 'billing-bot',
      name: 'Billing Bot',
      roles: ['service'],
      groups: [],
    });
  });

  it('refuses a wrong secret with 401, other grants with 400, and locks out guessing', async () => {
    const { app, alice } = await setUp();
    await create(app, alice);
    const wrong = await grant(app, 'billing-bot', 'sp_secret_wrong');
    expect(wrong.status).toBe(401);
    expect(wrong.body).toMatchObject({
      error: 'unauthorized',
      code: 'AUTH_INVALID_CREDENTIALS',
      message: 'Invalid client credentials',
    });
    expect((await grant(app, 'nobody', 'sp_secret_wrong')).body).toMatchObject({ code: 'AUTH_INVALID_CREDENTIALS' });
    const password = await call(app, 'POST', '/auth/token', {
      form: { grant_type: 'password', client_id: 'billing-bot', client_secret: 'x' },
    });
    expect(password).toMatchObject({ status: 400, body: { error: 'validation_error' } });
    expect((await call(app, 'POST', '/auth/token', { form: { grant_type: 'client_credentials' } })).status).toBe(400);
    for (let i = 0; i < 10; i++) await grant(app, 'billing-bot', 'sp_secret_wrong');
    const locked = await grant(app, 'billing-bot', 'sp_secret_wrong');
    expect(locked).toMatchObject({ status: 429, body: { code: 'AUTH_RATE_LIMIT' } });
  });

  it('rotates the secret: the old secret and its tokens die at once', async () => {
    const { app, alice } = await setUp();
    const { client_secret: old } = (await create(app, alice)).body;
    const oldToken = (await grant(app, 'billing-bot', old as string)).body.access_token as string;
    const rotated = await call(app, 'POST', `${BASE}/billing-bot/rotate-secret`, { token: alice });
    expect(rotated.body).toEqual({
      service_id: 'billing-bot',
      client_secret: expect.stringMatching(/^sp_secret_/) as unknown,
      message: expect.any(String) as unknown,
    });
    expect((await grant(app, 'billing-bot', old as string)).status).toBe(401);
    expect((await call(app, 'GET', '/auth/me', { token: oldToken })).status).toBe(401);
    expect((await grant(app, 'billing-bot', rotated.body.client_secret as string)).status).toBe(200);
  });

  it('with a grace period, keeps the old secret working until it ends', async () => {
    const { app, alice, clock } = await setUp();
    const { client_secret: old } = (await create(app, alice)).body;
    const rotated = await call(app, 'POST', `${BASE}/billing-bot/rotate-secret`, {
      token: alice,
      body: { grace_period_hours: 1 },
    });
    expect(rotated.status).toBe(200);
    const graceToken = (await grant(app, 'billing-bot', old as string)).body.access_token as string;
    expect((await call(app, 'GET', '/auth/me', { token: graceToken })).status).toBe(200);
    clock.advance(3_600_000);
    expect((await grant(app, 'billing-bot', old as string)).status).toBe(401);
    expect((await grant(app, 'billing-bot', rotated.body.client_secret as string)).status).toBe(200);
    expect(
      (
        await call(app, 'POST', `${BASE}/billing-bot/rotate-secret`, {
          token: alice,
          body: { grace_period_hours: 1000 },
        })
      ).status,
    ).toBe(401);
  });

  it('associates a user; with inherited permissions the principal is authorized as that user', async () => {
    const { app, alice } = await setUp();
    const aliceUser = await app.services.users.getByUsername('alice');
    await app.infrastructure.authz.write([
      { user: `user:${aliceUser!.id}`, relation: 'owner', object: 'conversation:c1' },
    ]);
    await create(app, alice, {
      name: 'Agent',
      authentication_mode: 'service_account_user',
      associated_user_id: 'user:alice',
      inherit_permissions: false,
    });
    expect(await app.infrastructure.authz.check('service_principal:agent', 'viewer', 'conversation:c1')).toBe(false);

    const associated = await call(app, 'POST', `${BASE}/agent/associate-user?user_id=user:alice`, { token: alice });
    expect(associated.body).toMatchObject({ associated_user_id: 'user:alice', inherit_permissions: true });
    expect(await app.infrastructure.authz.check('service_principal:agent', 'viewer', 'conversation:c1')).toBe(true);

    await call(app, 'POST', `${BASE}/agent/associate-user?user_id=user:alice&inherit_permissions=false`, {
      token: alice,
    });
    expect(await app.infrastructure.authz.check('service_principal:agent', 'viewer', 'conversation:c1')).toBe(false);
    expect((await call(app, 'POST', `${BASE}/agent/associate-user?user_id=user:nobody`, { token: alice })).status).toBe(
      403,
    );
    expect((await call(app, 'POST', `${BASE}/agent/associate-user`, { token: alice })).status).toBe(400);
  });

  it('deletes irreversibly: 204, its tuples gone, its tokens refused, then 404', async () => {
    const { app, alice } = await setUp();
    const { client_secret } = (
      await create(app, alice, {
        name: 'Agent',
        authentication_mode: 'service_account_user',
        associated_user_id: 'user:alice',
        inherit_permissions: true,
      })
    ).body;
    const token = (await grant(app, 'agent', client_secret as string)).body.access_token as string;
    expect((await app.infrastructure.authz.read({ object: 'service_principal:agent' })).length).toBe(2);
    const del = await call(app, 'DELETE', `${BASE}/agent`, { token: alice });
    expect(del.status).toBe(204);
    expect(await app.infrastructure.authz.read({ object: 'service_principal:agent' })).toEqual([]);
    expect((await call(app, 'GET', '/auth/me', { token })).status).toBe(401);
    expect((await grant(app, 'agent', client_secret as string)).status).toBe(401);
    expect((await call(app, 'GET', `${BASE}/agent`, { token: alice })).status).toBe(404);
  });

  it('does not let a service principal manage principals or API keys', async () => {
    const { app, alice } = await setUp();
    const { client_secret } = (await create(app, alice)).body;
    const token = (await grant(app, 'billing-bot', client_secret as string)).body.access_token as string;
    expect((await create(app, token, { name: 'Child' })).status).toBe(403);
    expect((await call(app, 'POST', '/api/v1/api-keys', { token, body: { name: 'x' } })).status).toBe(403);
  });

  it('keeps no plaintext secret anywhere in the database, after creation and rotation', async () => {
    const { app, alice } = await setUp();
    const { client_secret } = (await create(app, alice)).body;
    const rotated = (
      await call(app, 'POST', `${BASE}/billing-bot/rotate-secret`, { token: alice, body: { grace_period_hours: 2 } })
    ).body;
    for (const secret of [client_secret, rotated.client_secret] as string[]) {
      expect(await tablesContaining(app.infrastructure.db, secret)).toEqual([]);
      expect(await tablesContaining(app.infrastructure.db, secret.slice('sp_secret_'.length))).toEqual([]);
    }
  });

  it('derives ids from names', () => {
    expect(slugify('  Café Ordering Service!! ')).toBe('cafe-ordering-service');
    expect(slugify('a'.repeat(80))).toHaveLength(64);
    expect(slugify('***')).toBe('');
  });
});

describe('service principals with authorization in OpenFGA (a fake OpenFGA server: none can run here)', () => {
  it('writes the owner tuple to OpenFGA and enforces ownership through it', async () => {
    const fga = await startFakeOpenFga();
    const app = closing(
      await startTestApp({
        ADMIN_PASSWORD: 'bootstrap-secret-1',
        AUTHZ_PROVIDER: 'openfga',
        OPENFGA_API_URL: fga.url,
        OPENFGA_STORE_ID: FAKE_STORE_ID,
        OPENFGA_MODEL_ID: FAKE_MODEL_ID,
      }),
    );
    try {
      const alice = await createUser(app, 'alice');
      await createUser(app, 'bob');
      const login = async (username: string) =>
        (await call(app, 'POST', '/auth/login', { body: { username, password: PASSWORD } })).body
          .access_token as string;
      const [aliceToken, bobToken] = [await login('alice'), await login('bob')];
      expect((await create(app, aliceToken)).status).toBe(201);
      expect(fga.tuples()).toContainEqual({
        user: `user:${alice.id}`,
        relation: 'owner',
        object: 'service_principal:billing-bot',
      });
      expect(fga.tuples()).toContainEqual({ user: `user:${alice.id}`, relation: 'assignee', object: 'role:user' });
      expect((await call(app, 'GET', `${BASE}/billing-bot`, { token: aliceToken })).status).toBe(200);
      expect((await call(app, 'GET', `${BASE}/billing-bot`, { token: bobToken })).status).toBe(403);
      expect(((await call(app, 'GET', BASE, { token: aliceToken })).body as unknown as unknown[]).length).toBe(1);
      const health = await call(app, 'GET', '/health/dependencies');
      expect((health.body.dependencies as Record<string, unknown>).authz_service).toMatchObject({
        status: 'healthy',
        provider: 'openfga',
      });
    } finally {
      await fga.close();
    }
  });
});
