import { describe, expect, it, vi } from 'vitest';
import type { App } from '../../src/app.js';
import { closeAfterEach, startTestApp } from '../helpers/app.js';
import { ADMIN_PASSWORD, TestClock, accessToken, call, createUser } from '../helpers/auth.js';
import { twoInstances } from '../helpers/instances.js';
import { describeWithService, probePostgresAndRedis } from '../helpers/services.js';
import { scimRequest } from '../scim/helpers.js';

/**
 * An `X-API-Key` is resolved to its key and owner at most once a second per instance, and forgotten at once
 * wherever it changes: rotated or deleted, or its owner's sessions all ended (deactivation, erasure). On the
 * instance that made the change before its answer; on the others when the broadcast reaches them.
 */

const closing = closeAfterEach();

async function start() {
  const clock = new TestClock();
  const app = closing(await startTestApp({ ADMIN_PASSWORD }, { now: clock.now }));
  const alice = await createUser(app, 'alice');
  const token = await accessToken(app, 'alice');
  const created = await call(app, 'POST', '/api/v1/api-keys', { token, body: { name: 'ci' } });
  expect(created.status).toBe(201);
  return { app, clock, alice, token, key: created.body.api_key as string, keyId: created.body.key_id as string };
}

/** Reads of the user behind a key from now on: one per key resolved from the database (listing keys reads none). */
function countOwnerReads(app: App, userId: string): () => number {
  const get = vi.spyOn(app.services.users, 'get');
  return () => get.mock.calls.filter(([id]) => id === userId).length;
}

const listKeys = (app: App, key: string) => call(app, 'GET', '/api/v1/api-keys', { apiKey: key });

describe('the key behind an X-API-Key (one instance)', () => {
  it('is read from the database once a second, not on every request', async () => {
    const { app, clock, alice, key } = await start();
    const reads = countOwnerReads(app, alice.id);
    for (let i = 0; i < 5; i++) expect((await listKeys(app, key)).status).toBe(200);
    expect(reads()).toBe(1);

    clock.advance(1_001);
    expect((await listKeys(app, key)).status).toBe(200);
    expect((await listKeys(app, key)).status).toBe(200);
    expect(reads()).toBe(2);
  });

  it('is refused on the next request once rotated or deleted, though it was just read', async () => {
    const { app, token, key, keyId } = await start();
    expect((await listKeys(app, key)).status).toBe(200);
    const rotated = await call(app, 'POST', `/api/v1/api-keys/${keyId}/rotate`, { token });
    const fresh = rotated.body.new_api_key as string;
    expect((await listKeys(app, key)).status).toBe(401);
    expect((await listKeys(app, fresh)).status).toBe(200);

    expect((await call(app, 'DELETE', `/api/v1/api-keys/${keyId}`, { token })).status).toBe(204);
    expect((await listKeys(app, fresh)).body).toMatchObject({ code: 'AUTH_INVALID_TOKEN', message: 'Invalid API key' });
  });

  it('is refused on the next request once its owner is deactivated through SCIM', async () => {
    const { app, alice, key } = await start();
    expect((await listKeys(app, key)).status).toBe(200);
    const admin = await accessToken(app, 'admin', ADMIN_PASSWORD);
    expect((await scimRequest(app, admin, 'DELETE', `/Users/${alice.id}`)).status).toBe(204);
    expect((await listKeys(app, key)).status).toBe(401);
  });

  it('is refused on the next request once its owner is erased', async () => {
    const { app, token, key } = await start();
    expect((await listKeys(app, key)).status).toBe(200);
    expect((await call(app, 'DELETE', '/api/v1/users/me?confirm=true', { token })).status).toBe(200);
    expect((await listKeys(app, key)).status).toBe(401);
  });

  it('is not remembered from a read that was under way when the key was deleted', async () => {
    const { app, alice, clock, token, key, keyId } = await start();
    clock.advance(1_001); // past what creating the key left in the cache
    const users = app.services.users;
    const read = users.get.bind(users);
    // The read finds the key and its owner, then the key is deleted before the read's answer arrives.
    let release: () => void = () => undefined;
    const answered = new Promise<void>((resolve) => (release = resolve));
    const get = vi.spyOn(users, 'get').mockImplementationOnce(async (id) => {
      const seen = await read(id);
      await answered;
      return seen;
    });
    const inFlight = listKeys(app, key);
    await vi.waitFor(() => expect(get).toHaveBeenCalledWith(alice.id));
    expect((await call(app, 'DELETE', `/api/v1/api-keys/${keyId}`, { token })).status).toBe(204);
    release();
    // That request presented the key while it existed; the next one must not be answered from that read.
    expect((await inFlight).status).toBe(200);
    expect((await listKeys(app, key)).status).toBe(401);
  });
});

const services = await probePostgresAndRedis();

describeWithService('the key behind an X-API-Key (two instances on PostgreSQL and Redis)', services, () => {
  const instances = twoInstances('api-key-cache', { ADMIN_PASSWORD });

  it('is read once a second by each instance, and refused by both once deleted on one', async () => {
    const { a, b } = instances;
    const token = await accessToken(a, 'alice');
    const created = (await call(a, 'POST', '/api/v1/api-keys', { token, body: { name: 'ci' } })).body;
    const key = created.api_key as string;
    const reads = vi.spyOn(b.services.users, 'get');
    for (let i = 0; i < 5; i++) expect((await listKeys(b, key)).status).toBe(200);
    expect(reads.mock.calls.length).toBe(1);

    expect((await call(a, 'DELETE', `/api/v1/api-keys/${String(created.key_id)}`, { token })).status).toBe(204);
    // The deletion answers once the broadcast is sent; B heard it before this request reached it.
    expect((await listKeys(b, key)).status).toBe(401);
    expect((await listKeys(a, key)).status).toBe(401);
    reads.mockRestore();
  });

  it('is refused by the other instance once its owner is deactivated on one', async () => {
    const { a, b } = instances;
    const token = await accessToken(a, 'alice');
    const key = (await call(a, 'POST', '/api/v1/api-keys', { token, body: { name: 'ci' } })).body.api_key as string;
    expect((await listKeys(b, key)).status).toBe(200);
    const aliceId = (await a.services.users.getByUsername('alice'))!.id;
    const admin = await accessToken(a, 'admin', ADMIN_PASSWORD);
    expect((await scimRequest(a, admin, 'DELETE', `/Users/${aliceId}`)).status).toBe(204);
    expect((await listKeys(b, key)).status).toBe(401);
  });
});
