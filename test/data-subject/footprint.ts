import type { Redis } from 'ioredis';
import { expect } from 'vitest';
import type { App } from '../../src/app.js';
import type { ErasureStep } from '../../src/modules/data-subject/erasure.service.js';
import type { User } from '../../src/modules/users/users.service.js';
import { PASSWORD, call, createUser } from '../helpers/auth.js';
import { linear } from '../builder/helpers.js';
import { authorizeClient } from '../helpers/oauth.js';
import { tablesContaining } from '../helpers/scan.js';

/** Distinctive enough that no other row, key or generated text contains them by chance. */
export const USERNAME = 'erin7q';
export const EMAIL = 'erin7q.mail@example.org';
/** Where the user's requests come from (through a proxy the app trusts: run it with TRUST_PROXY=loopback). */
export const CLIENT = { ip: '198.51.100.77', userAgent: 'ErinBrowser/7.7 (footprint; x86_64)' };
/** Typed by the user into the names of what they create. */
export const MARKER = 'quokka7731';
/** The service principal the user creates: its id is made from the name the user gives it. */
export const PRINCIPAL = { name: `${MARKER} Deploy Bot`, id: `${MARKER}-deploy-bot` };
/** Headers of the user's own requests. */
const FROM_CLIENT = { 'User-Agent': CLIENT.userAgent, 'X-Forwarded-For': CLIENT.ip };

/** The erasure's steps in the order the service runs them. */
export const STEP_ORDER = [
  'checkpoints',
  'upstream_tokens',
  'authorization_tuples',
  'rate_limit_counters',
  'refresh_tokens',
  'oauth_grants',
  'api_keys',
  'service_principals',
  'conversations',
  'playground_sessions',
  'workflow_run_events',
  'workflows',
  'mcp_tasks',
  'mcp_connections',
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

const login = async (app: App, username: string, password = PASSWORD, headers: Record<string, string> = {}) =>
  (await call(app, 'POST', '/auth/login', { body: { username, password }, headers })).body;

/**
 * Uses every part of the service that keeps something about a person (token mode): failed and successful logins,
 * a refreshed session, an API key and a token exchanged for it, an owned service principal and its token (and a
 * failed attempt at one), a principal of an administrator acting for the user, a conversation (with its checkpoints
 * and rate-limit counters), consents, a rectified profile with preferences, a group, a linked identity-provider
 * account and an export. The user's requests come from CLIENT, and what they name carries MARKER.
 */
export async function leaveFootprint(app: App): Promise<Footprint> {
  const user = await createUser(app, USERNAME, { email: EMAIL });
  // An administrator: only an administrator may make a principal act for someone else.
  const bobUser = await createUser(app, 'bob', { roles: ['admin', 'user'] });
  const failed = await call(app, 'POST', '/auth/login', {
    body: { username: EMAIL, password: 'not it' },
    headers: FROM_CLIENT,
  });
  expect(failed.status).toBe(401);

  const first = await login(app, USERNAME, PASSWORD, FROM_CLIENT);
  const second = await login(app, USERNAME, PASSWORD, FROM_CLIENT);
  const refreshed = await call(app, 'POST', '/auth/refresh', {
    body: { refresh_token: second.refresh_token },
    headers: FROM_CLIENT,
  });
  expect(refreshed.status).toBe(200);
  const token = first.access_token as string;

  const key = await call(app, 'POST', '/api/v1/api-keys', {
    token,
    body: { name: `${MARKER} laptop` },
    headers: FROM_CLIENT,
  });
  const apiKey = key.body.api_key as string;
  const exchange = await call(app, 'POST', '/api/v1/api-keys/validate', { apiKey, headers: FROM_CLIENT });
  // A personal connection to an MCP server (registering one contacts nothing).
  const connection = await call(app, 'POST', '/api/v1/connections', {
    token,
    body: { name: `${MARKER} files`, transport: 'streamable_http', url: `https://${MARKER}.example/mcp` },
    headers: FROM_CLIENT,
  });
  expect(connection.status).toBe(201);
  const mcpClient = await authorizeClient(app, USERNAME, PASSWORD);

  const principal = await call(app, 'POST', '/api/v1/service-principals', {
    token,
    body: { name: PRINCIPAL.name, description: `Ships ${MARKER} releases` },
    headers: FROM_CLIENT,
  });
  expect(principal.body.service_id).toBe(PRINCIPAL.id);
  const secret = principal.body.client_secret as string;
  const wrongSecret = await call(app, 'POST', '/auth/token', {
    form: { grant_type: 'client_credentials', client_id: PRINCIPAL.id, client_secret: 'an old secret' },
    headers: FROM_CLIENT,
  });
  expect(wrongSecret.status).toBe(401);
  const principalToken = await call(app, 'POST', '/auth/token', {
    form: { grant_type: 'client_credentials', client_id: PRINCIPAL.id, client_secret: secret },
    headers: FROM_CLIENT,
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

  const chat = await call(app, 'POST', '/mcp/message', {
    token,
    body: { query: `Hello, please remember ${MARKER}` },
    headers: FROM_CLIENT,
  });
  expect(chat.status).toBe(200);
  const workflow = await call(app, 'POST', '/api/builder/workflows', {
    token,
    listener: 'builder',
    body: linear(`${MARKER} release flow`),
    headers: FROM_CLIENT,
  });
  expect(workflow.status).toBe(201);

  for (const [consent_type, granted] of [
    ['analytics', true],
    ['marketing', false],
    ['analytics', false],
  ] as const) {
    expect(
      (
        await call(app, 'POST', '/api/v1/users/me/consent', {
          token,
          body: { consent_type, granted },
          headers: FROM_CLIENT,
        })
      ).status,
    ).toBe(200);
  }
  const patched = await call(app, 'PATCH', '/api/v1/users/me', {
    token,
    body: { name: `Erin ${MARKER}`, preferences: { theme: 'dark', language: 'en' } },
    headers: FROM_CLIENT,
  });
  expect(patched.status).toBe(200);
  await app.services.users.setGroups(user.id, ['/engineering']);
  await app.services.users.linkIdentity(user.id, 'https://idp.example.test', 'idp-subject-0042');
  const exported = await call(app, 'GET', '/api/v1/users/me/export?format=json', { token, headers: FROM_CLIENT });
  expect(exported.status).toBe(200);

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
    principal: { id: PRINCIPAL.id, secret, token: principalToken.body.access_token as string },
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

/**
 * Where the user still appears: their id, username and email, the address and user agent of their requests, and
 * the marker they typed into names, in the tables of the database and, with Redis, its keys.
 */
export async function whereTheUserRemains(
  app: App,
  user: User,
): Promise<Record<string, { tables: string[]; redis: string[] }>> {
  const found: Record<string, { tables: string[]; redis: string[] }> = {};
  for (const needle of needlesOf(user)) {
    found[needle] = {
      tables: await tablesContaining(app.infrastructure.db, needle),
      redis: app.infrastructure.redis
        ? (await redisKeysContaining(app.infrastructure.redis, app.config.redis!.prefix, needle)).sort()
        : [],
    };
  }
  return found;
}

function needlesOf(user: User): string[] {
  return [user.id, user.username, user.email!, CLIENT.ip, CLIENT.userAgent, MARKER];
}

/**
 * The answer `whereTheUserRemains` gives once the user is erased: nowhere, but for the address in Redis. Failed
 * logins and client-credentials attempts count against the address they came from until their window closes
 * (LOGIN_FAILURE_WINDOW_SECONDS for logins): a count per address that names no account, and keeps that address from
 * guessing passwords and secrets meanwhile.
 */
export function nowhere(app: App, user: User) {
  const none = { tables: [], redis: [] };
  const found: Record<string, { tables: string[]; redis: string[] }> = {};
  for (const needle of needlesOf(user)) found[needle] = none;
  const prefix = app.config.redis?.prefix;
  if (app.infrastructure.redis && prefix !== undefined) {
    found[CLIENT.ip] = {
      tables: [],
      redis: [`${prefix}counter:client-addr:${CLIENT.ip}`, `${prefix}counter:login:addr:${CLIENT.ip}`],
    };
  }
  return found;
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
