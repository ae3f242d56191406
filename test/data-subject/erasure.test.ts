import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { AppOverrides } from '../../src/app.js';
import { startTestApp } from '../helpers/app.js';
import { PASSWORD, call, cookiePair, createUser } from '../helpers/auth.js';
import { DIALECTS } from '../helpers/databases.js';
import { tokenRequest } from '../helpers/oauth.js';
import { tablesContaining } from '../helpers/scan.js';
import { describeWithService, probeRedis, REDIS_URL } from '../helpers/services.js';
import {
  CLIENT,
  EMAIL,
  type Footprint,
  MARKER,
  PRINCIPAL,
  STEP_ORDER,
  USERNAME,
  failOnce,
  leaveFootprint,
  nowhere,
  redisKeysContaining,
  whereTheUserRemains,
} from './footprint.js';

const apps: App[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function start(env: Record<string, string> = {}, overrides: AppOverrides = {}) {
  // Behind a proxy on the loopback, so that requests can come from the footprint's CLIENT address.
  const app = await startTestApp({ ADMIN_PASSWORD: 'bootstrap-secret-1', TRUST_PROXY: 'loopback', ...env }, overrides);
  apps.push(app);
  return app;
}

const erase = (app: App, token: string, query = '?confirm=true') =>
  call(app, 'DELETE', `/api/v1/users/me${query}`, { token });

/** Every credential the user held is refused on the next request; bob's are not. */
async function expectCredentialsRefused(app: App, footprint: Footprint) {
  for (const token of [...footprint.tokens, footprint.exchangedToken, footprint.principal.token]) {
    expect((await call(app, 'GET', '/auth/me', { token })).status).toBe(401);
  }
  expect((await call(app, 'GET', '/auth/me', { apiKey: footprint.apiKey })).status).toBe(401);
  // The MCP client the user authorised: its access token on the MCP wires, and its refresh token.
  expect((await call(app, 'GET', '/tools', { token: footprint.mcpClient.accessToken })).status).toBe(401);
  const mcpRefresh = await tokenRequest(app, {
    grant_type: 'refresh_token',
    client_id: footprint.mcpClient.clientId,
    refresh_token: footprint.mcpClient.refreshToken,
  });
  expect(mcpRefresh.body.error).toBe('invalid_grant');
  expect((await call(app, 'POST', '/auth/refresh', { body: { refresh_token: footprint.refreshToken } })).status).toBe(
    401,
  );
  const clientCredentials = await call(app, 'POST', '/auth/token', {
    form: {
      grant_type: 'client_credentials',
      client_id: footprint.principal.id,
      client_secret: footprint.principal.secret,
    },
  });
  expect(clientCredentials.status).toBe(401);
  for (const username of [USERNAME, EMAIL]) {
    expect((await call(app, 'POST', '/auth/login', { body: { username, password: PASSWORD } })).status).toBe(401);
  }
  expect((await call(app, 'GET', '/auth/me', { token: footprint.bob.token })).status).toBe(200);
}

describe('DELETE /api/v1/users/me', () => {
  it('refuses without confirm=true with 400 {detail} and erases nothing', async () => {
    const app = await start();
    const footprint = await leaveFootprint(app);
    const token = footprint.tokens[0]!;
    for (const query of ['', '?confirm=false', '?confirm=yes', '?confirm=']) {
      const res = await erase(app, token, query);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ detail: 'Erasure is irreversible: confirm it with the query parameter confirm=true' });
    }
    expect((await call(app, 'GET', '/api/v1/users/me/data', { token })).status).toBe(200);
    expect(await app.services.users.get(footprint.user.id)).toBeDefined();
  });

  it('answers 401 {detail} without credentials and 403 {detail} for a service principal', async () => {
    const app = await start();
    const footprint = await leaveFootprint(app);
    expect(await erase(app, '')).toMatchObject({ status: 401, body: { detail: 'Authentication required' } });
    const res = await erase(app, footprint.principal.token);
    expect(res).toMatchObject({ status: 403, body: { detail: 'Data-subject rights belong to users' } });
  });

  it('erases everything in one go, reports real counts, and leaves the user only as a keyed hash', async () => {
    const app = await start();
    const footprint = await leaveFootprint(app);
    const { user } = footprint;
    // The scan can find the user: before erasure, they are everywhere.
    expect((await tablesContaining(app.infrastructure.db, user.id)).sort()).toEqual(
      expect.arrayContaining([
        'api_keys',
        'audit_log',
        'consents',
        'conversations',
        'group_members',
        'refresh_tokens',
        'relation_tuples',
        'service_principals',
        'user_identities',
        'user_preferences',
        'users',
      ]),
    );
    const conversationId = (await app.services.conversations.allOwnedBy(`user:${user.id}`))[0]!.id;
    // The agent's checkpoints: LangGraph's SQLite saver's tables, or its PostgreSQL saver's own schema.
    const checkpointTables =
      app.infrastructure.db.dialect === 'sqlite'
        ? ['checkpoints', 'writes']
        : ['langgraph.checkpoints', 'langgraph.checkpoint_writes'];
    expect(await tablesContaining(app.infrastructure.db, conversationId)).toEqual(
      expect.arrayContaining([...checkpointTables, 'messages']),
    );
    // So can it find where the user's requests came from, and what they typed into names.
    expect(await tablesContaining(app.infrastructure.db, CLIENT.ip)).toEqual(
      expect.arrayContaining(['audit_log', 'consents']),
    );
    expect(await tablesContaining(app.infrastructure.db, CLIENT.userAgent)).toEqual(['audit_log', 'consents']);
    expect(await tablesContaining(app.infrastructure.db, MARKER)).toEqual(
      expect.arrayContaining(['api_keys', 'audit_log', 'service_principals', 'workflows']),
    );

    const res = await erase(app, footprint.tokens[0]!);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      message: 'Your account and personal data have been erased',
      deletion_timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) as unknown,
      deleted_items: {
        checkpoints: 1,
        // Ownership of the conversation, the workflow, the principal and the personal connection, and the user's
        // own: role, group, acts_as from bob's helper.
        authorization_tuples: 7,
        // The failed login by email, and the MCP request and tool-call windows.
        rate_limit_counters: 3,
        refresh_tokens: 3,
        oauth_grants: 1,
        api_keys: 1,
        service_principals: 1,
        conversations: 1,
        playground_sessions: 0,
        // What runs the user started on others' workflows showed (theirs go with their workflows).
        workflow_run_events: 0,
        workflows: 1,
        mcp_tasks: 0,
        // The personal connection (no account at it: nothing to revoke upstream).
        mcp_connections: 1,
        upstream_tokens: 0,
        preferences: 1,
        consents: 3,
        profile: 1,
        sessions: 2,
      },
      anonymized_items: { audit_logs: expect.any(Number) as unknown, manager_references: 0 },
      audit_record_id: expect.stringMatching(/^[0-9a-f-]{36}$/) as unknown,
    });
    expect((res.body.anonymized_items as { audit_logs: number }).audit_logs).toBeGreaterThanOrEqual(10);

    expect(await whereTheUserRemains(app, user)).toEqual(nowhere(app, user));
    expect(await tablesContaining(app.infrastructure.db, conversationId)).toEqual([]);
    // What is kept names the user by the keyed hash, and the erasure itself is recorded under it.
    const pseudonym = await app.services.audit.pseudonym(user.id);
    expect(await tablesContaining(app.infrastructure.db, pseudonym)).toEqual(['audit_log']);
    const { items } = await app.services.audit.list({ userId: pseudonym }, { offset: 0, limit: 100 });
    expect(items[0]).toMatchObject({
      event_id: res.body.audit_record_id,
      event_type: 'account.erased',
      actor_id: pseudonym,
      details: { consents: 3, profile: 1, api_keys: 1 },
    });
    expect(items.map((e) => e.event_type)).toEqual(
      expect.arrayContaining(['login.failed', 'login.succeeded', 'api_key.created', 'consent.changed']),
    );
    // The trail keeps what happened, when, and how it ended, under the pseudonym; not where from, nor any name.
    for (const event of items) {
      expect(event).toMatchObject({ ip_address: null, user_agent: null });
      expect(Object.keys(event.details).filter((key) => /_id$|name/.test(key))).toEqual([]);
    }
    expect(items.find((e) => e.event_type === 'service_principal.created')).toMatchObject({
      actor_id: pseudonym,
      details: { authentication_mode: 'client_credentials' },
    });
    expect(items.find((e) => e.event_type === 'login.failed')).toMatchObject({
      actor_id: null,
      subject_id: pseudonym,
      details: { method: 'password', reason: 'invalid_credentials' },
    });
    // The principal the user named is kept as a pseudonym of its own, its login and the failed attempt without
    // where they came from.
    const principalEvents = (await app.services.audit.list({}, { offset: 0, limit: 1000 })).items.filter(
      (e) => e.event_type === 'client_credentials.failed' || e.actor_id?.startsWith('service_principal:anon:'),
    );
    expect(principalEvents.map((e) => [e.event_type, e.actor_id, e.ip_address, e.user_agent, e.details])).toEqual([
      [
        'login.succeeded',
        `service_principal:${await app.services.audit.pseudonym(`service_principal:${PRINCIPAL.id}`)}`,
        null,
        null,
        { method: 'client_credentials' },
      ],
      ['client_credentials.failed', null, null, null, {}],
    ]);
    // Bob's own events keep his address and user agent.
    expect((await app.services.audit.eventsOf(footprint.bob.user.id)).map((e) => e.ip_address)).toContain('127.0.0.1');

    await expectCredentialsRefused(app, footprint);
    // Bob's principal stays, no longer acting for anyone.
    const helper = await call(app, 'GET', '/api/v1/service-principals/helper', { token: footprint.bob.token });
    expect(helper.status).toBe(200);
    expect(helper.body.associated_user_id).toBeUndefined();
    expect(helper.body).toMatchObject({ authentication_mode: 'client_credentials', inherit_permissions: false });
  });

  it('ends a session-mode cookie at once', async () => {
    const app = await start({ AUTH_MODE: 'session' });
    await createUser(app, USERNAME, { email: EMAIL });
    const login = await call(app, 'POST', '/auth/login', { body: { username: USERNAME, password: PASSWORD } });
    const cookie = cookiePair(login.headers.get('set-cookie'));
    const res = await call(app, 'DELETE', '/api/v1/users/me?confirm=true', { cookie });
    expect(res.status).toBe(200);
    expect((res.body.deleted_items as Record<string, number>).sessions).toBe(1);
    expect(res.headers.get('set-cookie')).toMatch(/^session_id=; Path=\/; Expires=Thu, 01 Jan 1970/);
    expect((await call(app, 'GET', '/auth/me', { cookie })).status).toBe(401);
    expect((await call(app, 'GET', '/api/v1/users/me/data', { cookie })).status).toBe(401);
  });

  it('runs its steps in the documented order', async () => {
    const app = await start();
    expect(app.services.dataSubject.erasure.steps.map((s) => s.name)).toEqual(STEP_ORDER);
    expect(app.services.dataSubject.erasure.steps.filter((s) => !s.inTransaction).map((s) => s.name)).toEqual([
      'checkpoints',
      'upstream_tokens',
      'authorization_tuples',
      'rate_limit_counters',
    ]);
  });
});

describe('a failed erasure', () => {
  const cases = [
    ...STEP_ORDER.map((step) => [step, 'before'] as const),
    // A step that did its work and then failed is done again on the retry; the session store is the last step and
    // its work cannot be undone by the rollback, so a failure after it is not one the same credential can retry.
    ...STEP_ORDER.filter((step) => step !== 'sessions').map((step) => [step, 'after'] as const),
  ];

  it.each(cases)('at %s (failing %s its work) answers 500 naming the step; the retry completes', async (step, when) => {
    const app = await start({}, { erasureSteps: failOnce(step, when) });
    const footprint = await leaveFootprint(app);
    const token = footprint.tokens[0]!;

    const failed = await erase(app, token);
    expect(failed.status).toBe(500);
    expect(failed.body).toEqual({
      detail: `Account erasure failed at step "${step}". Repeat the request to complete it.`,
      trace_id: failed.headers.get('x-request-id'),
    });
    // The account is still there, and the same credential still reaches it.
    expect((await call(app, 'GET', '/api/v1/users/me/data', { token })).status).toBe(200);

    const retried = await erase(app, token);
    expect(retried.status).toBe(200);
    expect(await whereTheUserRemains(app, footprint.user)).toEqual(nowhere(app, footprint.user));
    await expectCredentialsRefused(app, footprint);
  });
});

describeWithService('erasure with the session store and counters in Redis', await probeRedis(), () => {
  async function startWithRedis(overrides: AppOverrides = {}) {
    const prefix = `test-erasure-${randomBytes(6).toString('hex')}:`;
    const app = await start({ REDIS_URL, REDIS_PREFIX: prefix }, overrides);
    cleanups.push(async () => {
      const redis = new Redis(REDIS_URL);
      const keys = await redisKeysContaining(redis, prefix, '');
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    });
    return { app, prefix };
  }

  it('leaves nothing of the user in Redis or the database', async () => {
    const { app, prefix } = await startWithRedis();
    const footprint = await leaveFootprint(app);
    // Before: their sessions, their session index and their rate-limit windows name them.
    expect(
      (await redisKeysContaining(app.infrastructure.redis!, prefix, footprint.user.id)).length,
    ).toBeGreaterThanOrEqual(4);
    expect(await redisKeysContaining(app.infrastructure.redis!, prefix, EMAIL)).toEqual([
      `${prefix}counter:login:user:${EMAIL}`,
    ]);

    expect((await erase(app, footprint.tokens[0]!)).status).toBe(200);
    expect(await whereTheUserRemains(app, footprint.user)).toEqual(nowhere(app, footprint.user));
    await expectCredentialsRefused(app, footprint);
  });

  it('completes on retry after a failure at the session store', async () => {
    const { app } = await startWithRedis({ erasureSteps: failOnce('sessions', 'before') });
    const footprint = await leaveFootprint(app);
    const failed = await erase(app, footprint.tokens[0]!);
    expect(failed.body.detail).toBe('Account erasure failed at step "sessions". Repeat the request to complete it.');
    expect((await erase(app, footprint.tokens[0]!)).status).toBe(200);
    expect(await whereTheUserRemains(app, footprint.user)).toEqual(nowhere(app, footprint.user));
  });
});

const postgres = DIALECTS.find((d) => d.name === 'postgres')!;
describeWithService('erasure on PostgreSQL', postgres.availability, () => {
  it('leaves nothing of the user in any table, checkpoints included', async () => {
    const database = await postgres.createMigrated();
    cleanups.push(database.cleanup);
    const app = await start({ DATABASE_URL: database.url });
    const footprint = await leaveFootprint(app);
    const conversationId = (await app.services.conversations.allOwnedBy(`user:${footprint.user.id}`))[0]!.id;
    // PostgreSQL's saver keeps its tables in their own schema, which the table scan does not cover.
    const checkpoints = async () =>
      (
        await sql<{
          n: number;
        }>`select count(*)::int as n from langgraph.checkpoints where thread_id = ${conversationId}`.execute(
          app.infrastructure.db.kysely,
        )
      ).rows[0]!.n;
    expect(await checkpoints()).toBeGreaterThan(0);

    expect((await erase(app, footprint.tokens[0]!)).status).toBe(200);
    expect(await whereTheUserRemains(app, footprint.user)).toEqual(nowhere(app, footprint.user));
    expect(await checkpoints()).toBe(0);
    await expectCredentialsRefused(app, footprint);
  });
});
