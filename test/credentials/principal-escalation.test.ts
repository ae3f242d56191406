import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { hashSecret } from '../../src/modules/auth/tokens.js';
import { closeAfterEach } from '../helpers/app.js';
import { PASSWORD, accessToken, call, createUser, startWithTwoUsers } from '../helpers/auth.js';

const closing = closeAfterEach();

const ADMIN_PASSWORD = 'bootstrap-secret-1';
const BASE = '/api/v1/service-principals';
const SCIM_PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

async function setUp() {
  const setup = await startWithTwoUsers(closing, { ADMIN_PASSWORD });
  return { ...setup, admin: await accessToken(setup.app, 'admin', ADMIN_PASSWORD) };
}

const create = (app: App, token: string, body: Record<string, unknown>) =>
  call(app, 'POST', BASE, { token, body: { description: 'test principal', ...body } });

async function tokenOf(app: App, clientId: string, clientSecret: string): Promise<string> {
  const res = await call(app, 'POST', '/auth/token', {
    form: { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret },
  });
  expect(res.status).toBe(200);
  return res.body.access_token as string;
}

const setActive = (app: App, admin: string, userId: string, active: boolean) =>
  call(app, 'PATCH', `/scim/v2/Users/${userId}`, {
    token: admin,
    body: { schemas: [SCIM_PATCH], Operations: [{ op: 'replace', path: 'active', value: active }] },
  });

describe('service principal association', () => {
  it('refuses a plain user who names the administrator, at creation and by association, and changes nothing', async () => {
    const { app, alice } = await setUp();
    for (const mode of ['service_account_user', 'service_account']) {
      const refused = await create(app, alice, {
        name: 'Escalator',
        authentication_mode: mode,
        associated_user_id: 'user:admin',
        inherit_permissions: true,
      });
      expect(refused).toMatchObject({ status: 403, body: { error: 'forbidden', code: 'AUTH_ACCESS_DENIED' } });
    }
    expect(await app.infrastructure.db.kysely.selectFrom('service_principals').select('id').execute()).toEqual([]);
    expect(await app.infrastructure.authz.read({ object: 'service_principal:escalator' })).toEqual([]);

    const { client_secret } = (await create(app, alice, { name: 'Bot' })).body;
    const associate = await call(app, 'POST', `${BASE}/bot/associate-user?user_id=user:admin`, { token: alice });
    expect(associate).toMatchObject({ status: 403, body: { error: 'forbidden' } });
    expect((await call(app, 'GET', `${BASE}/bot`, { token: alice })).body).toMatchObject({
      authentication_mode: 'client_credentials',
      inherit_permissions: false,
    });
    expect((await call(app, 'GET', `${BASE}/bot`, { token: alice })).body).not.toHaveProperty('associated_user_id');
    expect(await app.infrastructure.authz.read({ object: 'service_principal:bot', relation: 'acts_as' })).toEqual([]);

    // What the escalation was after: none of it.
    const bot = await tokenOf(app, 'bot', client_secret as string);
    expect((await call(app, 'GET', '/api/v1/audit-log', { token: bot })).status).toBe(403);
    expect((await call(app, 'GET', '/scim/v2/Users', { token: bot })).status).toBe(403);
    const provision = await call(app, 'POST', '/scim/v2/Users', {
      token: bot,
      body: { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: 'mallory' },
    });
    expect(provision.status).toBe(403);
    expect(await app.services.users.getByUsername('mallory')).toBeUndefined();
  });

  it('lets users associate themselves and administrators any active user, and nobody else', async () => {
    const { app, alice, bob, admin } = await setUp();
    const own = await create(app, alice, {
      name: 'Mine',
      authentication_mode: 'service_account_user',
      associated_user_id: 'user:alice',
      inherit_permissions: true,
    });
    expect(own).toMatchObject({ status: 201, body: { associated_user_id: 'user:alice', inherit_permissions: true } });
    const other = await create(app, alice, {
      name: 'Theirs',
      authentication_mode: 'service_account_user',
      associated_user_id: 'user:bob',
    });
    expect(other.status).toBe(403);
    // The refusal is the same for a name that exists and one that does not.
    const nobody = await create(app, bob, {
      name: 'Ghost',
      authentication_mode: 'service_account_user',
      associated_user_id: 'user:nobody',
    });
    expect(nobody).toMatchObject({ status: 403, body: { message: other.body.message } });

    const ops = await create(app, admin, {
      name: 'Ops',
      authentication_mode: 'service_account_user',
      associated_user_id: 'user:bob',
      inherit_permissions: true,
    });
    expect(ops).toMatchObject({ status: 201, body: { associated_user_id: 'user:bob', owner_user_id: 'user:admin' } });
    const adminUnknown = await create(app, admin, {
      name: 'Unknown',
      authentication_mode: 'service_account_user',
      associated_user_id: 'user:nobody',
    });
    expect(adminUnknown).toMatchObject({ status: 400, body: { error: 'validation_error' } });

    const bobUser = await app.services.users.getByUsername('bob');
    expect((await setActive(app, admin, bobUser!.id, false)).status).toBe(200);
    const inactive = await call(app, 'POST', `${BASE}/mine/associate-user?user_id=user:bob`, { token: admin });
    expect(inactive.status).toBe(403); // admin does not own `mine`
    await create(app, admin, { name: 'Later' });
    const toInactive = await call(app, 'POST', `${BASE}/later/associate-user?user_id=user:bob`, { token: admin });
    expect(toInactive).toMatchObject({ status: 403, body: { message: 'User user:bob is not active' } });
    expect((await call(app, 'GET', `${BASE}/later`, { token: admin })).body).toMatchObject({
      authentication_mode: 'client_credentials',
    });
  });

  it('keeps a client_credentials principal unassociated; associating makes it act for the user', async () => {
    const { app, alice } = await setUp();
    for (const extra of [{ associated_user_id: 'user:alice' }, { inherit_permissions: true }]) {
      const res = await create(app, alice, { name: 'Cc', authentication_mode: 'client_credentials', ...extra });
      expect(res).toMatchObject({ status: 400, body: { error: 'validation_error' } });
    }
    await create(app, alice, { name: 'Cc' });
    const associated = await call(app, 'POST', `${BASE}/cc/associate-user?user_id=user:alice`, { token: alice });
    expect(associated).toMatchObject({
      status: 200,
      body: {
        authentication_mode: 'service_account_user',
        associated_user_id: 'user:alice',
        inherit_permissions: true,
      },
    });
    const aliceUser = await app.services.users.getByUsername('alice');
    expect(await app.infrastructure.authz.read({ object: 'service_principal:cc', relation: 'acts_as' })).toEqual([
      { user: `user:${aliceUser!.id}`, relation: 'acts_as', object: 'service_principal:cc' },
    ]);
  });

  it("follows the associated user's rights at once: a lost role, deactivation, reactivation and erasure", async () => {
    const { app, admin } = await setUp();
    const carol = await createUser(app, 'carol', { roles: ['admin', 'user'] });
    const { client_secret } = (
      await create(app, admin, {
        name: 'Auditor',
        authentication_mode: 'service_account_user',
        associated_user_id: 'user:carol',
        inherit_permissions: true,
      })
    ).body;
    const auditor = await tokenOf(app, 'auditor', client_secret as string);
    const auditLog = async () => (await call(app, 'GET', '/api/v1/audit-log', { token: auditor })).status;
    expect(await auditLog()).toBe(200);

    await app.services.users.setRoles(carol.id, ['user']);
    expect(await auditLog()).toBe(403);
    await app.services.users.setRoles(carol.id, ['admin', 'user']);
    expect(await auditLog()).toBe(200);

    expect((await setActive(app, admin, carol.id, false)).status).toBe(200);
    expect(await auditLog()).toBe(403);
    expect((await setActive(app, admin, carol.id, true)).status).toBe(200);
    expect(await auditLog()).toBe(200);

    const carolToken = await accessToken(app, 'carol', PASSWORD);
    expect((await call(app, 'DELETE', '/api/v1/users/me?confirm=true', { token: carolToken })).status).toBe(200);
    expect(await auditLog()).toBe(403);
    expect((await call(app, 'GET', `${BASE}/auditor`, { token: admin })).body).toMatchObject({
      authentication_mode: 'client_credentials',
      inherit_permissions: false,
    });
    expect((await call(app, 'GET', `${BASE}/auditor`, { token: admin })).body).not.toHaveProperty('associated_user_id');
    expect(await app.infrastructure.authz.read({ object: 'service_principal:auditor', relation: 'acts_as' })).toEqual(
      [],
    );
  });
});

describe('identity collision between principals and users', () => {
  it('refuses a service id of the form user ids take', async () => {
    const { app, alice } = await setUp();
    const bob = await app.services.users.getByUsername('bob');
    for (const name of [bob!.id, bob!.id.toUpperCase()]) {
      const res = await create(app, alice, { name });
      expect(res).toMatchObject({ status: 400, body: { error: 'validation_error' } });
    }
    expect(await app.infrastructure.db.kysely.selectFrom('service_principals').select('id').execute()).toEqual([]);
  });

  it("never takes a principal whose id equals a user's id for that user", async () => {
    const { app, alice } = await setUp();
    const aliceUser = await app.services.users.getByUsername('alice');
    const bobUser = await app.services.users.getByUsername('bob');
    // A principal stored before ids of this form were refused.
    const twin = await legacyPrincipal(app, aliceUser!.id, bobUser!.id);
    const aliceSessions = (await call(app, 'GET', '/auth/sessions', { token: alice })).body.sessions as {
      session_id: string;
    }[];
    expect(aliceSessions).toHaveLength(1);

    const listed = await call(app, 'GET', '/auth/sessions', { token: twin });
    expect(listed).toMatchObject({ status: 200, body: { sessions: [], total: 0 } });
    const revoke = await call(app, 'DELETE', `/auth/sessions/${aliceSessions[0]!.session_id}`, { token: twin });
    expect([403, 404]).toContain(revoke.status);
    expect((await call(app, 'GET', '/auth/me', { token: alice })).status).toBe(200);
    expect((await call(app, 'GET', '/auth/me', { token: twin })).body).toMatchObject({
      id: aliceUser!.id,
      email: null,
      groups: [],
      roles: ['service'],
    });
    expect((await call(app, 'GET', '/api/v1/users/me/data', { token: twin })).status).toBe(403);
  });
});

/** Inserts a principal row directly (as an older release could have stored it) and returns a token for it. */
async function legacyPrincipal(app: App, id: string, ownerId: string): Promise<string> {
  const secret = 'sp_secret_legacy_principal_secret_value_0123456789';
  const at = new Date().toISOString();
  await app.infrastructure.db.kysely
    .insertInto('service_principals')
    .values({
      id,
      name: id,
      description: 'stored before UUID-shaped ids were refused',
      authentication_mode: 'client_credentials',
      owner_user_id: ownerId,
      associated_user_id: null,
      inherit_permissions: 0,
      enabled: 1,
      secret_hash: hashSecret(secret),
      secret_generation: 1,
      previous_secret_hash: null,
      previous_secret_expires_at: null,
      created_at: at,
      updated_at: at,
    })
    .execute();
  await app.infrastructure.authz.write([
    { user: `user:${ownerId}`, relation: 'owner', object: `service_principal:${id}` },
  ]);
  return tokenOf(app, id, secret);
}

describe('impersonation matrix: nobody else reaches my resources', () => {
  /** Alice's resources of every owner-scoped kind, and a snapshot of them to compare after the attempts. */
  async function aliceOwnsOneOfEach(app: App, alice: string) {
    const session = (
      (await call(app, 'GET', '/auth/sessions', { token: alice })).body.sessions as {
        session_id: string;
      }[]
    )[0]!.session_id;
    const key = (await call(app, 'POST', '/api/v1/api-keys', { token: alice, body: { name: 'laptop' } })).body;
    await call(app, 'GET', '/auth/me', { apiKey: key.api_key as string }); // so last_used is set before any snapshot
    const principal = (await create(app, alice, { name: 'Alice Bot' })).body;
    const chat = await call(app, 'POST', '/mcp/tools/call', {
      token: alice,
      body: { method: 'tools/call', params: { name: 'chat', arguments: { query: 'my secret plans' } } },
    });
    const conversation = (chat.body.structuredContent as { conversation_id: string }).conversation_id;
    await call(app, 'POST', '/api/v1/users/me/consent', {
      token: alice,
      body: { consent_type: 'analytics', granted: true },
    });
    return {
      session,
      keyId: key.key_id as string,
      apiKey: key.api_key as string,
      principalId: principal.service_id as string,
      principalSecret: principal.client_secret as string,
      conversation,
    };
  }

  async function snapshot(app: App, alice: string, owned: Awaited<ReturnType<typeof aliceOwnsOneOfEach>>) {
    const conversation = await call(app, 'POST', '/mcp/tools/call', {
      token: alice,
      body: {
        method: 'tools/call',
        params: { name: 'conversation_get', arguments: { conversation_id: owned.conversation } },
      },
    });
    return {
      sessions: (await call(app, 'GET', '/auth/sessions', { token: alice })).body,
      keys: (await call(app, 'GET', '/api/v1/api-keys', { token: alice })).body,
      keyWorks: (await call(app, 'GET', '/auth/me', { apiKey: owned.apiKey })).status,
      principal: (await call(app, 'GET', `${BASE}/${owned.principalId}`, { token: alice })).body,
      principalSecretWorks: (
        await call(app, 'POST', '/auth/token', {
          form: {
            grant_type: 'client_credentials',
            client_id: owned.principalId,
            client_secret: owned.principalSecret,
          },
        })
      ).status,
      conversation: conversation.body.structuredContent,
      consents: (await call(app, 'GET', '/api/v1/users/me/consent', { token: alice })).body,
      profile: (await call(app, 'GET', '/auth/me', { token: alice })).body,
    };
  }

  it('gives a second user, a principal the owner made and a principal sharing her id nothing of hers', async () => {
    const { app, alice, bob } = await setUp();
    const aliceUser = await app.services.users.getByUsername('alice');
    const bobUser = await app.services.users.getByUsername('bob');
    const owned = await aliceOwnsOneOfEach(app, alice);
    const ownBot = await tokenOf(app, owned.principalId, owned.principalSecret);
    const twin = await legacyPrincipal(app, aliceUser!.id, bobUser!.id);
    const before = await snapshot(app, alice, owned);

    const intruders = { bob, 'alice-bot': ownBot, twin };
    for (const [who, token] of Object.entries(intruders)) {
      const isUser = who === 'bob';
      const attempt = async (method: string, path: string, body?: unknown) => {
        const res = await call(app, method, path, { token, ...(body !== undefined && { body }) });
        expect(res.status, `${who} ${method} ${path}`).toBeLessThan(500);
        return res;
      };
      const refused = async (method: string, path: string, body?: unknown) => {
        const res = await attempt(method, path, body);
        expect([403, 404], `${who} ${method} ${path} → ${res.status}`).toContain(res.status);
      };
      const notMine = (text: unknown) => {
        const json = JSON.stringify(text);
        for (const secret of [aliceUser!.id, 'alice@example.com', owned.session, owned.keyId, owned.conversation]) {
          expect(json, `${who} saw ${secret}`).not.toContain(secret);
        }
      };

      // Sessions
      notMine((await attempt('GET', '/auth/sessions')).body);
      await refused('DELETE', `/auth/sessions/${owned.session}`);
      // API keys (a principal has none and may not manage any)
      const keys = await attempt('GET', '/api/v1/api-keys');
      if (isUser) notMine(keys.body);
      else expect(keys.status).toBe(403);
      await refused('POST', `/api/v1/api-keys/${owned.keyId}/rotate`);
      await refused('DELETE', `/api/v1/api-keys/${owned.keyId}`);
      // Service principals
      const principals = await attempt('GET', BASE);
      if (isUser) expect(JSON.stringify(principals.body)).not.toContain(owned.principalId);
      else expect(principals.status).toBe(403);
      await refused('GET', `${BASE}/${owned.principalId}`);
      await refused('POST', `${BASE}/${owned.principalId}/rotate-secret`, {});
      await refused('POST', `${BASE}/${owned.principalId}/associate-user?user_id=user:bob`);
      await refused('DELETE', `${BASE}/${owned.principalId}`);
      // Conversations, through the MCP tools and the chat entry point
      const tool = (name: string, args: Record<string, unknown>) =>
        attempt('POST', '/mcp/tools/call', { method: 'tools/call', params: { name, arguments: args } });
      const got = await tool('conversation_get', { conversation_id: owned.conversation });
      // Refused outright (a principal without tool rights), or answered as not found: never the conversation.
      expect(got.status === 403 || got.body.isError === true, `${who} conversation_get`).toBe(true);
      expect(JSON.stringify(got.body)).not.toContain('my secret plans');
      const found = await tool('conversation_search', { query: 'secret plans' });
      expect(JSON.stringify(found.body)).not.toContain(owned.conversation);
      const continued = await attempt('POST', '/mcp/message', {
        query: 'continue',
        conversation_id: owned.conversation,
        use_tools: false,
      });
      expect([403, 404], `${who} continues alice's conversation`).toContain(continued.status);
      // Personal data and consents: a user sees only their own; a principal has none
      for (const path of ['/api/v1/users/me/data', '/api/v1/users/me/consent']) {
        const res = await attempt('GET', path);
        if (isUser) notMine(res.body);
        else expect(res.status).toBe(403);
      }
      const patched = await attempt('PATCH', '/api/v1/users/me', { name: `changed by ${who}` });
      if (!isUser) expect(patched.status).toBe(403);
      const consent = await attempt('POST', '/api/v1/users/me/consent', { consent_type: 'analytics', granted: false });
      if (!isUser) expect(consent.status).toBe(403);
      if (!isUser) await refused('DELETE', '/api/v1/users/me?confirm=true');
    }

    expect(await snapshot(app, alice, owned)).toEqual(before);
    expect(before.keyWorks).toBe(200);
    expect(before.principalSecretWorks).toBe(200);
  });
});
