import { describe, expect, it, vi } from 'vitest';
import type { SessionRecord, SessionStore } from '../../src/adapters/session-store/port.js';
import type { App } from '../../src/app.js';
import { closeAfterEach, startTestApp } from '../helpers/app.js';
import { ADMIN_PASSWORD, PASSWORD, TestClock, call, createUser } from '../helpers/auth.js';
import { twoInstances } from '../helpers/instances.js';
import { describeWithService, probePostgresAndRedis } from '../helpers/services.js';

/**
 * An access token names its login session, which must still be live for the token to be accepted. The session is
 * read from the store at most once a second per instance, and forgotten at once wherever it ends: on the instance
 * that ended it before the revocation answers, on the others when the broadcast reaches them.
 */

const closing = closeAfterEach();

async function start() {
  const clock = new TestClock();
  const app = closing(await startTestApp({ ADMIN_PASSWORD }, { now: clock.now }));
  const alice = await createUser(app, 'alice');
  const login = await call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } });
  expect(login.status).toBe(200);
  const sessions = await call(app, 'GET', '/auth/sessions', { token: login.body.access_token as string });
  const session = (sessions.body.sessions as { session_id: string; is_current: boolean }[]).find((s) => s.is_current)!;
  return { app, clock, alice, token: login.body.access_token as string, sessionId: session.session_id };
}

/** Counts the store reads of one session from now on. */
function countReads(app: App, sessionId: string): () => number {
  const get = vi.spyOn(app.infrastructure.stores.sessions, 'get');
  return () => get.mock.calls.filter(([id]) => id === sessionId).length;
}

describe('the session behind an access token (one instance)', () => {
  it('is read from the store once a second, not on every request', async () => {
    const { app, clock, token, sessionId } = await start();
    const reads = countReads(app, sessionId);
    for (let i = 0; i < 5; i++) expect((await call(app, 'GET', '/auth/me', { token })).status).toBe(200);
    expect(reads()).toBeLessThanOrEqual(1);

    clock.advance(1_001);
    expect((await call(app, 'GET', '/auth/me', { token })).status).toBe(200);
    expect((await call(app, 'GET', '/auth/me', { token })).status).toBe(200);
    expect(reads()).toBeLessThanOrEqual(2);
    expect(reads()).toBeGreaterThanOrEqual(1);
  });

  it('is refused on the next request once logged out, though it was just read', async () => {
    const { app, token } = await start();
    expect((await call(app, 'GET', '/auth/me', { token })).status).toBe(200);
    expect((await call(app, 'POST', '/auth/logout', { token })).status).toBe(200);
    const after = await call(app, 'GET', '/auth/me', { token });
    expect(after).toMatchObject({
      status: 401,
      body: { code: 'AUTH_INVALID_TOKEN', message: 'Token has been revoked' },
    });
  });

  it('is refused on the next request once the user is deactivated', async () => {
    const { app, alice, token } = await start();
    expect((await call(app, 'GET', '/auth/me', { token })).status).toBe(200);
    await app.services.auth.auth.revokeUser(alice.id);
    expect((await call(app, 'GET', '/auth/me', { token })).status).toBe(401);
  });

  it('is read again once the store may have lost it (a reconnection to a Redis that restarted empty)', async () => {
    const { app, token, sessionId } = await start();
    const store = app.infrastructure.stores.sessions as { -readonly [K in keyof SessionStore]: SessionStore[K] };
    let epoch = 1;
    store.epoch = () => epoch;
    expect((await call(app, 'GET', '/auth/me', { token })).status).toBe(200);
    // The session vanishes from the store without the service being told, as when Redis restarts empty.
    await store.delete(sessionId);
    expect((await call(app, 'GET', '/auth/me', { token })).status).toBe(200); // still within the second
    epoch += 1;
    expect((await call(app, 'GET', '/auth/me', { token })).status).toBe(401);
  });

  it('is not remembered from a read that was under way when the session ended', async () => {
    const { app, clock, alice, token, sessionId } = await start();
    clock.advance(1_001); // past what the sign-in's own requests left in the cache
    const store = app.infrastructure.stores.sessions;
    const read = store.get.bind(store);
    // The read sees the session, then the session is revoked before the read's answer arrives.
    let release: () => void = () => undefined;
    const answered = new Promise<void>((resolve) => (release = resolve));
    const get = vi
      .spyOn(store, 'get')
      .mockImplementationOnce(async (id, options): Promise<SessionRecord | undefined> => {
        const seen = await read(id, options);
        await answered;
        return seen;
      });
    const inFlight = call(app, 'GET', '/auth/me', { token });
    await vi.waitFor(() => expect(get).toHaveBeenCalled());
    await app.services.auth.auth.revokeSession(alice.id, sessionId);
    release();
    // That request read the session while it was live; the next one must not be answered from it.
    expect((await inFlight).status).toBe(200);
    expect((await call(app, 'GET', '/auth/me', { token })).status).toBe(401);
  });
});

const services = await probePostgresAndRedis();

describeWithService('the session behind an access token (two instances on PostgreSQL and Redis)', services, () => {
  const instances = twoInstances('session-cache', { ADMIN_PASSWORD });

  it('is read from Redis once a second by each instance, and refused by both once logged out on one', async () => {
    const { a, b } = instances;
    const login = await call(a, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } });
    const token = login.body.access_token as string;
    const reads = vi.spyOn(b.infrastructure.stores.sessions, 'get');
    for (let i = 0; i < 5; i++) expect((await call(b, 'GET', '/auth/me', { token })).status).toBe(200);
    expect(reads.mock.calls.length).toBeLessThanOrEqual(1);

    expect((await call(a, 'POST', '/auth/logout', { token })).status).toBe(200);
    // The logout answers once the broadcast is sent; B heard it before this request reached it.
    expect((await call(b, 'GET', '/auth/me', { token })).status).toBe(401);
    expect((await call(a, 'GET', '/auth/me', { token })).status).toBe(401);
    reads.mockRestore();
  });
});
