import { afterAll, beforeAll, expect, it } from 'vitest';
import { ADMIN_PASSWORD, PASSWORD } from '../helpers/auth.js';
import { type Json, type SignedIn, type TestClient, startTestClient } from '../helpers/client.js';
import { unusedPort } from '../helpers/http.js';
import { answerConsentAt, openAuthorization } from '../helpers/oauth.js';
import {
  createPostgresDatabase,
  describeWithService,
  probePostgresAndRedis,
  sharedInstanceEnv,
} from '../helpers/services.js';
import { type TestUpstream, startTestUpstream } from '../helpers/upstreams.js';

/*
 * Connections on two instances (one PostgreSQL, one Redis): a connection, its sealed secret, a user's OAuth sign-in
 * and tokens made through A are used through B. The OAuth upstream is a third instance of this service (its own
 * authorization server); the bearer upstream is the test upstream, which echoes the Authorization header it got.
 */
const services = await probePostgresAndRedis();

describeWithService('connections across two instances on PostgreSQL and Redis', services, () => {
  let a: TestClient;
  let b: TestClient;
  let upstream: TestClient;
  let bearer: TestUpstream;
  let drop: () => Promise<void>;
  let aliceA: SignedIn;
  let aliceB: SignedIn;

  beforeAll(async () => {
    const database = await createPostgresDatabase();
    drop = database.drop;
    const [portA, portU] = [await unusedPort(), await unusedPort()];
    upstream = await startTestClient({ PORT: String(portU), PUBLIC_URL: `http://127.0.0.1:${portU}` });
    bearer = await startTestUpstream({ requireBearer: 'sealed-secret-7' });
    const env = {
      ...sharedInstanceEnv(database.url, 'conn'),
      CONNECTIONS_PRIVATE_HOSTS: '127.0.0.1',
      // Behind one address: the OAuth callback is A's, and either instance may take it.
      PUBLIC_URL: `http://127.0.0.1:${portA}`,
    };
    a = await startTestClient({ ...env, PORT: String(portA) });
    b = await startTestClient(env);
    aliceA = await a.as('alice');
    aliceB = await b.as('alice');
    await upstream.as('alice.u');
  }, 90_000);

  afterAll(async () => {
    await Promise.all([a?.close(), b?.close(), upstream?.close(), bearer?.close()]);
    await drop?.();
  });

  /** The agent on an instance calls the tool (offline model: `/tool <name> {json}`) and quotes its result. */
  async function agentCall(user: SignedIn, name: string, args: Json = {}): Promise<string> {
    const res = await user.post('/mcp/message', { query: `/tool ${name} ${JSON.stringify(args)}` });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return String(res.body.response);
  }

  /** Registers, through A, a connection of alice's to the bearer upstream with its secret. */
  async function registerBearer(name: string) {
    const created = await aliceA.post('/api/v1/connections', {
      name,
      transport: 'streamable_http',
      url: bearer.url,
      auth: { kind: 'bearer', secret: 'sealed-secret-7' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created;
  }

  it('uses through B a connection, and its sealed secret, registered through A', async () => {
    const created = await registerBearer('Bearer');
    expect((await aliceB.get(`/api/v1/connections/${created.body.id as string}`)).body).toMatchObject({
      auth: { kind: 'bearer', secret_set: true },
    });
    expect(await agentCall(aliceB, 'bearer__whoami')).toContain('Bearer sealed-secret-7');
    // Approving a changed definition on one instance holds on the other.
    await bearer.control('rug-pull');
    const states = await aliceA.get<Json[]>(`/api/v1/connections/${created.body.id as string}/tools`);
    expect(states.body.find((t) => t.upstream_name === 'echo')).toMatchObject({ status: 'held' });
    expect(await agentCall(aliceB, 'bearer__echo', { text: 'x' })).not.toContain('echo: x');
    await aliceA.post(`/api/v1/connections/${created.body.id as string}/tools/echo/approve`);
    expect(await agentCall(aliceB, 'bearer__echo', { text: 'y' })).toContain('echo: y');
  });

  it("offers on B a connection registered through A after B held alice's list without it", async () => {
    // A turn on B offers alice's tools, and B holds the connections she can reach: none by this name yet.
    expect(await agentCall(aliceB, 'later__echo', { text: 'before' })).not.toContain('echo: before');
    const created = await registerBearer('Later');
    expect(await agentCall(aliceB, 'later__echo', { text: 'after' })).toContain('echo: after');
    // Renamed through A: B offers its tools under the new name at once.
    const id = created.body.id as string;
    expect((await aliceA.patch(`/api/v1/connections/${id}`, { slug: 'renamed' })).status).toBe(200);
    expect(await agentCall(aliceB, 'renamed__echo', { text: 'renamed' })).toContain('echo: renamed');
    expect((await aliceA.delete(`/api/v1/connections/${id}`)).status).toBe(204);
    expect(await agentCall(aliceB, 'renamed__echo', { text: 'gone' })).not.toContain('echo: gone');
  });

  it('takes an OAuth sign-in started through A on B, and uses the tokens on both', async () => {
    const created = await aliceA.post('/api/v1/connections', {
      name: 'Upstream',
      transport: 'streamable_http',
      url: `${upstream.app.url('main')}/mcp`,
      auth: { kind: 'oauth' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as string;

    // Started through A: the sign-in URL, and the cookie that binds it to this browser.
    const started = await fetch(`${a.app.url('main')}/api/v1/connections/${id}/account`, {
      method: 'POST',
      headers: { ...aliceA.credentials, 'Content-Type': 'application/json' },
      body: JSON.stringify({ return_to: `${a.app.url('main')}/done` }),
    });
    expect(started.status).toBe(200);
    const binding = (started.headers.get('set-cookie') ?? '').split(';')[0]!;
    const { authorization_url } = (await started.json()) as { authorization_url: string };

    // The person signs in at the upstream and approves; its authorization server sends the browser back.
    const page = await openAuthorization(authorization_url);
    expect(page.status).toBe(200);
    const consent = await answerConsentAt(upstream.app.url('main'), page, {
      decision: 'approve',
      username: 'alice.u',
      password: PASSWORD,
    });
    expect(consent.location?.searchParams.get('code')).toBeTruthy();

    // The callback reaches B: the sign-in A started is in the shared database.
    const callback = new URL(consent.location!.toString());
    callback.host = new URL(b.app.url('main')).host;
    const back = await fetch(callback, { redirect: 'manual', headers: { Cookie: binding } });
    expect(back.status, await back.clone().text()).toBe(302);
    expect(back.headers.get('location')).toContain(`connection=${id}&connected=1`);

    // Both instances call the upstream with alice's token.
    for (const alice of [aliceA, aliceB]) {
      expect((await alice.get(`/api/v1/connections/${id}`)).body).toMatchObject({ account: { status: 'connected' } });
      expect(await agentCall(alice, 'upstream__conversation_search', { query: 'anything' })).toMatch(
        /returned [\s\S]*(No conversations|conversation)/i,
      );
    }

    // A token that expired is refreshed through B, and A uses the new one.
    const db = a.app.infrastructure.db.kysely;
    const before = await db.selectFrom('mcp_connection_accounts').selectAll().where('connection_id', '=', id).execute();
    await db
      .updateTable('mcp_connection_accounts')
      .set({ expires_at: new Date(Date.now() - 1_000).toISOString() })
      .where('connection_id', '=', id)
      .execute();
    expect(await agentCall(aliceB, 'upstream__conversation_search', { query: 'again' })).toMatch(/returned/);
    const after = await db.selectFrom('mcp_connection_accounts').selectAll().where('connection_id', '=', id).execute();
    expect(after[0]!.tokens).not.toBe(before[0]!.tokens);
    expect(await agentCall(aliceA, 'upstream__conversation_search', { query: 'once more' })).toMatch(/returned/);

    // Someone else on either instance is not offered alice's tools.
    const bob = await b.as('bob');
    expect(await agentCall(bob, 'upstream__conversation_search', { query: 'x' })).toContain('not offered');
    const admin = await a.as('admin', { password: ADMIN_PASSWORD });
    expect((await admin.get<Json[]>('/api/v1/connections')).body.some((c) => c.id === id)).toBe(false);
  });
});
