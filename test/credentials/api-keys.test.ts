import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { closeAfterEach } from '../helpers/app.js';
import { PASSWORD, call, startWithTwoUsers } from '../helpers/auth.js';
import { tablesContaining } from '../helpers/scan.js';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const closing = closeAfterEach();

const setUp = () => startWithTwoUsers(closing);

const create = (app: App, token: string, body: Record<string, unknown> = { name: 'ci' }) =>
  call(app, 'POST', '/api/v1/api-keys', { token, body });

describe('API keys', () => {
  it('creates a key, returned once, that expires after expires_days (default 365)', async () => {
    const { app, alice, clock } = await setUp();
    const res = await create(app, alice, { name: 'deploy bot' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      key_id: expect.stringMatching(/^[0-9a-f-]{36}$/) as unknown,
      name: 'deploy bot',
      created: new Date(clock.ms).toISOString(),
      expires_at: new Date(clock.ms + 365 * 86_400_000).toISOString(),
      api_key: expect.stringMatching(/^ak_live_[0-9A-Za-z]{48}$/) as unknown,
      message: expect.any(String) as unknown,
    });
    const longest = await create(app, alice, { name: 'long', expires_days: 730 });
    expect(longest.body.expires_at).toBe(new Date(clock.ms + 730 * 86_400_000).toISOString());
  });

  it('refuses expires_days above 730, a missing name and a sixth key with 400 validation_error', async () => {
    const { app, alice } = await setUp();
    const tooLong = await create(app, alice, { name: 'x', expires_days: 731 });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body).toMatchObject({ error: 'validation_error', details: [{ loc: ['body', 'expires_days'] }] });
    expect((await create(app, alice, {})).status).toBe(400);
    for (let i = 0; i < 5; i++) expect((await create(app, alice, { name: `k${i}` })).status).toBe(201);
    const sixth = await create(app, alice, { name: 'k5' });
    expect(sixth.status).toBe(400);
    expect(sixth.body).toMatchObject({
      error: 'validation_error',
      message: 'API key limit reached: at most 5 per user',
    });
    // The limit is per user.
    expect((await create(app, (await setUpBob(app)).token, { name: 'bobs' })).status).toBe(201);
  });

  it('frees a slot when a key expires', async () => {
    const { app, alice, clock } = await setUp();
    await create(app, alice, { name: 'short', expires_days: 1 });
    for (let i = 0; i < 4; i++) await create(app, alice, { name: `k${i}` });
    expect((await create(app, alice, { name: 'late' })).status).toBe(400);
    clock.advance(86_400_000);
    const relogin = (await call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } })).body
      .access_token as string;
    expect((await create(app, relogin, { name: 'late' })).status).toBe(201);
    const listed = (await call(app, 'GET', '/api/v1/api-keys', { token: relogin })).body as unknown as {
      name: string;
    }[];
    expect(listed.map((k) => k.name)).not.toContain('short');
    const all = (await call(app, 'GET', '/api/v1/api-keys?include_expired=true', { token: relogin }))
      .body as unknown as { name: string }[];
    expect(all.map((k) => k.name)).toContain('short');
  });

  it('lists keys without their values and tracks last_used', async () => {
    const { app, alice, clock } = await setUp();
    const { api_key, key_id } = (await create(app, alice)).body;
    let listed = (await call(app, 'GET', '/api/v1/api-keys', { token: alice })).body as unknown as Record<
      string,
      unknown
    >[];
    expect(listed).toEqual([
      {
        key_id,
        name: 'ci',
        created: expect.stringMatching(ISO) as unknown,
        expires_at: expect.stringMatching(ISO) as unknown,
        last_used: null,
      },
    ]);
    clock.advance(5_000);
    expect((await call(app, 'GET', '/auth/me', { apiKey: api_key as string })).status).toBe(200);
    listed = (await call(app, 'GET', '/api/v1/api-keys', { token: alice })).body as unknown as Record<
      string,
      unknown
    >[];
    expect(listed[0]!.last_used).toBe(new Date(clock.ms).toISOString());
    expect(JSON.stringify(listed)).not.toContain(api_key as string);
  });

  it('authenticates X-API-Key on protected routes with the owner’s identity, and refuses bad keys', async () => {
    const { app, alice } = await setUp();
    const { api_key } = (await create(app, alice)).body;
    const me = await call(app, 'GET', '/auth/me', { apiKey: api_key as string });
    expect(me.body).toMatchObject({ username: 'alice' });
    expect((await call(app, 'GET', '/api/v1/api-keys', { apiKey: api_key as string })).status).toBe(200);
    for (const bad of ['ak_live_nope', 'garbage', `${String(api_key)}x`]) {
      const res = await call(app, 'GET', '/auth/me', { apiKey: bad });
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ error: 'unauthorized', code: 'AUTH_INVALID_TOKEN', message: 'Invalid API key' });
    }
  });

  it('rotates under the same key_id: the new value works and the old one, and its tokens, stop at once', async () => {
    const { app, alice } = await setUp();
    const { api_key: old, key_id } = (await create(app, alice)).body;
    const exchanged = (
      await call(app, 'POST', '/api/v1/api-keys/validate', { headers: { 'X-API-Key': old as string } })
    ).body;
    const rotated = await call(app, 'POST', `/api/v1/api-keys/${String(key_id)}/rotate`, { token: alice });
    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual({
      key_id,
      new_api_key: expect.stringMatching(/^ak_live_[0-9A-Za-z]{48}$/) as unknown,
      message: expect.any(String) as unknown,
    });
    expect((await call(app, 'GET', '/auth/me', { apiKey: old as string })).status).toBe(401);
    expect((await call(app, 'GET', '/auth/me', { token: exchanged.access_token as string })).status).toBe(401);
    expect((await call(app, 'GET', '/auth/me', { apiKey: rotated.body.new_api_key as string })).status).toBe(200);
  });

  it('deletes with 204, after which the key is refused; deleting again is 404', async () => {
    const { app, alice } = await setUp();
    const { api_key, key_id } = (await create(app, alice)).body;
    const del = await fetch(`${app.url('main')}/api/v1/api-keys/${String(key_id)}`, {
      method: 'DELETE',
      headers: { Authorization: `Bearer ${alice}` },
    });
    expect(del.status).toBe(204);
    expect(await del.text()).toBe('');
    expect((await call(app, 'GET', '/auth/me', { apiKey: api_key as string })).status).toBe(401);
    const again = await call(app, 'DELETE', `/api/v1/api-keys/${String(key_id)}`, { token: alice });
    expect(again).toMatchObject({ status: 404, body: { error: 'not_found' } });
  });

  it('keeps each user’s keys their own: another user’s key is 404 to list, rotate and delete', async () => {
    const { app, alice, bob } = await setUp();
    const { key_id, api_key } = (await create(app, alice)).body;
    expect((await call(app, 'GET', '/api/v1/api-keys', { token: bob })).body).toEqual([]);
    expect((await call(app, 'POST', `/api/v1/api-keys/${String(key_id)}/rotate`, { token: bob })).status).toBe(404);
    expect((await call(app, 'DELETE', `/api/v1/api-keys/${String(key_id)}`, { token: bob })).status).toBe(404);
    expect((await call(app, 'GET', '/auth/me', { apiKey: api_key as string })).body.username).toBe('alice');
  });

  it('requires authentication for everything but validate', async () => {
    const { app } = await setUp();
    expect((await call(app, 'GET', '/api/v1/api-keys')).status).toBe(401);
    expect((await call(app, 'POST', '/api/v1/api-keys', { body: { name: 'x' } })).status).toBe(401);
    expect((await call(app, 'POST', '/api/v1/api-keys/k/rotate')).status).toBe(401);
    expect((await call(app, 'DELETE', '/api/v1/api-keys/k')).status).toBe(401);
  });

  it('exchanges a key for an access token at /validate (400 without header, 401 invalid or expired)', async () => {
    const { app, alice, clock } = await setUp();
    const { api_key } = (await create(app, alice, { name: 'gw', expires_days: 1 })).body;
    const missing = await call(app, 'POST', '/api/v1/api-keys/validate');
    expect(missing).toMatchObject({
      status: 400,
      body: { error: 'validation_error', message: 'The X-API-Key header is required' },
    });
    expect(
      (await call(app, 'POST', '/api/v1/api-keys/validate', { headers: { 'X-API-Key': 'ak_live_x' } })).status,
    ).toBe(401);
    const ok = await call(app, 'POST', '/api/v1/api-keys/validate', { headers: { 'X-API-Key': api_key as string } });
    const alice_ = await app.services.users.getByUsername('alice');
    expect(ok.body).toEqual({
      access_token: expect.any(String) as unknown,
      expires_in: 900,
      user_id: alice_!.id,
      username: 'alice',
    });
    expect((await call(app, 'GET', '/auth/me', { token: ok.body.access_token as string })).body.username).toBe('alice');
    clock.advance(86_400_000);
    const expired = await call(app, 'POST', '/api/v1/api-keys/validate', {
      headers: { 'X-API-Key': api_key as string },
    });
    expect(expired).toMatchObject({ status: 401, body: { message: 'API key has expired' } });
    expect((await call(app, 'GET', '/auth/me', { token: ok.body.access_token as string })).status).toBe(401);
  });

  it('keeps no plaintext key anywhere in the database, after creation and rotation', async () => {
    const { app, alice } = await setUp();
    const { api_key, key_id } = (await create(app, alice)).body;
    const { new_api_key } = (await call(app, 'POST', `/api/v1/api-keys/${String(key_id)}/rotate`, { token: alice }))
      .body;
    for (const secret of [api_key, new_api_key] as string[]) {
      expect(await tablesContaining(app.infrastructure.db, secret)).toEqual([]);
      expect(await tablesContaining(app.infrastructure.db, secret.slice('ak_live_'.length))).toEqual([]);
    }
    // The key's id (never its value) also names it in the audit log's creation and rotation events.
    expect((await tablesContaining(app.infrastructure.db, String(key_id))).sort()).toEqual(['api_keys', 'audit_log']);
  });
});

async function setUpBob(app: App) {
  return {
    token: (await call(app, 'POST', '/auth/login', { body: { username: 'bob', password: PASSWORD } })).body
      .access_token as string,
  };
}
