import type { Redis } from 'ioredis';
import { expect } from 'vitest';
import type { App } from '../../src/app.js';
import type { ErasureStep } from '../../src/modules/data-subject/erasure.service.js';
import type { User } from '../../src/modules/users/users.service.js';
import { PASSWORD, call, createUser } from '../helpers/auth.js';
import { authorizeClient } from '../helpers/oauth.js';
import { tablesContaining } from '../helpers/scan.js';

/** Distinctive enough that no other row, key or generated text contains them by chance. */
export const USERNAME = 'erin7q';
export const EMAIL = 'erin7q.mail@example.org';

/** The erasure's steps in the order the service runs them. */
export const STEP_ORDER = [
  'checkpoints',
  'authorization_tuples',
  'rate_limit_counters',
  'refresh_tokens',
  'oauth_grants',
  'api_keys',
  'service_principals',
  'conversations',
  'playground_sessions',
  'workflows',
  'mcp_tasks',
  'preferences',
  'consents',
  'audit_logs',
  'manager_references',
  'profile',
  'erasure_record',
  'sessions',
];

/** Everything a user leaves behind in the service, and every credential they hold. */
export interface Footprint {
  user: User;
  /** Access tokens of two login sessions (the second refreshed once). */
  tokens: string[];
  refreshToken: string;
  apiKey: string;
  /** An access token the gateway exchanged the API key for. */
  exchangedToken: string;
  /** The token pair of an MCP client the user authorised. */
  mcpClient: { accessToken: string; refreshToken: string; clientId: string };
  principal: { id: string; secret: string; token: string };
  bob: { user: User; token: string };
}

const login = async (app: App, username: string, password = PASSWORD) =>
  (await call(app, 'POST', '/auth/login', { body: { username, password } })).body;

/**
 * Uses every part of the service that keeps something about a person (token mode): failed and successful logins,
 * a refreshed session, an API key and a token exchanged for it, an owned service principal and its token, a
 * principal of an administrator acting for the user, a conversation (with its checkpoints and rate-limit counters),
 * consents, a rectified profile with preferences, a group, a linked identity-provider account and an export.
 */
export async function leaveFootprint(app: App): Promise<Footprint> {
  const user = await createUser(app, USERNAME, { email: EMAIL });
  // An administrator: only an administrator may make a principal act for someone else.
  const bobUser = await createUser(app, 'bob', { roles: ['admin', 'user'] });
  expect((await call(app, 'POST', '/auth/login', { body: { username: EMAIL, password: 'not it' } })).status).toBe(401);

  const first = await login(app, USERNAME);
  const second = await login(app, USERNAME);
  const refreshed = await call(app, 'POST', '/auth/refresh', { body: { refresh_token: second.refresh_token } });
  expect(refreshed.status).toBe(200);
  const token = first.access_token as string;

  const key = await call(app, 'POST', '/api/v1/api-keys', { token, body: { name: 'laptop' } });
  const apiKey = key.body.api_key as string;
  const exchange = await call(app, 'POST', '/api/v1/api-keys/validate', { apiKey });
  const mcpClient = await authorizeClient(app, USERNAME, PASSWORD);

  const principal = await call(app, 'POST', '/api/v1/service-principals', {
    token,
    body: { name: 'Deploy Bot', description: 'Ships releases' },
  });
  const secret = principal.body.client_secret as string;
  const principalToken = await call(app, 'POST', '/auth/token', {
    form: { grant_type: 'client_credentials', client_id: 'deploy-bot', client_secret: secret },
  });

  const bobToken = (await login(app, 'bob')).access_token as string;
  const helper = await call(app, 'POST', '/api/v1/service-principals', {
    token: bobToken,
    body: {
      name: 'Helper',
      description: 'Acts for a colleague',
      authentication_mode: 'service_account_user',
      associated_user_id: `user:${USERNAME}`,
      inherit_permissions: true,
    },
  });
  expect(helper.status).toBe(201);

  const chat = await call(app, 'POST', '/mcp/message', { token, body: { query: 'Hello, please remember me' } });
  expect(chat.status).toBe(200);

  for (const [consent_type, granted] of [
    ['analytics', true],
    ['marketing', false],
    ['analytics', false],
  ] as const) {
    expect(
      (await call(app, 'POST', '/api/v1/users/me/consent', { token, body: { consent_type, granted } })).status,
    ).toBe(200);
  }
  const patched = await call(app, 'PATCH', '/api/v1/users/me', {
    token,
    body: { name: 'Erin Q', preferences: { theme: 'dark', language: 'en' } },
  });
  expect(patched.status).toBe(200);
  await app.services.users.setGroups(user.id, ['/engineering']);
  await app.services.users.linkIdentity(user.id, 'https://idp.example.test', 'idp-subject-0042');
  expect((await call(app, 'GET', '/api/v1/users/me/export?format=json', { token })).status).toBe(200);

  return {
    user,
    tokens: [token, refreshed.body.access_token as string],
    refreshToken: refreshed.body.refresh_token as string,
    apiKey,
    exchangedToken: exchange.body.access_token as string,
    mcpClient: {
      accessToken: mcpClient.tokens.access_token as string,
      refreshToken: mcpClient.tokens.refresh_token as string,
      clientId: mcpClient.clientId,
    },
    principal: { id: 'deploy-bot', secret, token: principalToken.body.access_token as string },
    bob: { user: bobUser, token: bobToken },
  };
}

/** Every Redis key under `prefix` whose name or value contains `needle`. */
export async function redisKeysContaining(redis: Redis, prefix: string, needle: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    cursor = next;
    for (const key of keys) {
      const type = await redis.type(key);
      const value =
        type === 'string'
          ? await redis.get(key)
          : type === 'hash'
            ? await redis.hgetall(key)
            : type === 'zset'
              ? await redis.zrange(key, 0, '-1')
              : type === 'set'
                ? await redis.smembers(key)
                : type === 'list'
                  ? await redis.lrange(key, 0, -1)
                  : `<${type}>`;
      if (key.includes(needle) || JSON.stringify(value).includes(needle)) found.push(key);
    }
  } while (cursor !== '0');
  return found;
}

/** Where the user's id, username and email still appear: tables of the database and, with Redis, its keys. */
export async function whereTheUserRemains(
  app: App,
  user: User,
): Promise<Record<string, { tables: string[]; redis: string[] }>> {
  const found: Record<string, { tables: string[]; redis: string[] }> = {};
  for (const needle of [user.id, user.username, user.email!]) {
    found[needle] = {
      tables: await tablesContaining(app.infrastructure.db, needle),
      redis: app.infrastructure.redis
        ? await redisKeysContaining(app.infrastructure.redis, app.config.redis!.prefix, needle)
        : [],
    };
  }
  return found;
}

/** The answer `whereTheUserRemains` gives once the user is erased: nowhere. */
export function nowhere(user: User) {
  const none = { tables: [], redis: [] };
  return { [user.id]: none, [user.username]: none, [user.email!]: none };
}

/** Makes the named step fail once: before doing anything, or after doing its work. */
export function failOnce(target: string, when: 'before' | 'after') {
  return (steps: ErasureStep[]): ErasureStep[] => {
    let failed = false;
    return steps.map((step) =>
      step.name !== target
        ? step
        : {
            ...step,
            run: async (context) => {
              if (failed) return step.run(context);
              failed = true;
              if (when === 'after') await step.run(context);
              throw new Error(`fault injected into ${target}`);
            },
          },
    );
  };
}
