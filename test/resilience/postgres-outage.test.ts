import { afterEach, beforeEach, expect, it } from 'vitest';
import { closeAfterEach, startTestApp } from '../helpers/app.js';
import { PASSWORD, TestClock, call, createUser } from '../helpers/auth.js';
import { createPostgresDatabase, describeWithService, probePostgres } from '../helpers/services.js';
import { type TcpProxy, startTcpProxy } from '../helpers/tcp-proxy.js';

/**
 * PostgreSQL taken away under a running service (a real server behind a proxy the test cuts): what needs the
 * database answers 503 with Retry-After, never 500; the service is not ready while it lasts, and recovers by itself.
 */
const closing = closeAfterEach();
let proxy: TcpProxy;
let database: { url: string; drop: () => Promise<void> };

describeWithService('PostgreSQL outage', await probePostgres(), () => {
  beforeEach(async () => {
    database = await createPostgresDatabase();
    const url = new URL(database.url);
    proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
  });
  afterEach(async () => {
    await proxy.close();
    await database.drop();
  });

  it('answers 503 while the database is away, reports it, and recovers', async () => {
    const url = new URL(database.url);
    url.host = `127.0.0.1:${proxy.port}`;
    const app = closing(await startTestApp({ DATABASE_URL: url.toString() }));
    await createUser(app, 'alice');
    const login = () => call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } });
    const token = (await login()).body.access_token as string;

    proxy.set('refuse');
    for (const res of [await login(), await call(app, 'GET', '/api/v1/api-keys', { token })]) {
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(res.body).toMatchObject({ error: 'service_unavailable', code: 'SERVICE_UNAVAILABLE' });
    }
    const ready = await call(app, 'GET', '/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.body.blocking).toEqual(expect.arrayContaining([expect.stringContaining('database')]));

    proxy.set('open');
    let recovered = 0;
    for (let i = 0; i < 100 && recovered !== 200; i++) {
      recovered = (await login()).status;
      if (recovered !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(recovered).toBe(200);
    expect((await call(app, 'GET', '/api/v1/api-keys', { token })).status).toBe(200);
  }, 30_000);

  it('fails fast while a hung server is known to be away, and tries again after the cool-down', async () => {
    const url = new URL(database.url);
    url.host = `127.0.0.1:${proxy.port}`;
    // The breaker's cool-down is judged by this clock: nothing lets a request through until the test moves it.
    const clock = new TestClock(Date.now());
    const app = closing(await startTestApp({ DATABASE_URL: url.toString() }, { now: clock.now }));
    await createUser(app, 'alice');
    const token = (await call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } })).body
      .access_token as string;
    const keys = () => call(app, 'GET', '/api/v1/api-keys', { token });

    // Accepts connections and never answers: the first request waits out the connection timeout.
    proxy.set('blackhole');
    expect((await keys()).status).toBe(503);
    const tried = proxy.accepted;
    const meanwhile = await Promise.all(Array.from({ length: 10 }, keys));
    expect(meanwhile.map((res) => res.status)).toEqual(Array(10).fill(503));
    expect(meanwhile[0]!.body).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      message: 'The database is unavailable; retry shortly',
    });
    // None of them waited on the server, nor held a connection slot doing so.
    expect(proxy.accepted).toBe(tried);

    proxy.set('open');
    expect((await keys()).status).toBe(503); // still cooling down
    clock.advance(1_000);
    expect((await keys()).status).toBe(200);
    expect(proxy.accepted).toBeGreaterThan(tried);
  }, 30_000);
});
