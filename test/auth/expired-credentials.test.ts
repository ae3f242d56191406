import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { closeAfterEach, startTestApp } from '../helpers/app.js';
import { ADMIN_PASSWORD, PASSWORD, TestClock, call, createUser } from '../helpers/auth.js';

/**
 * Refresh tokens, and the MCP authorization server's codes and refresh tokens, are deleted a week after they
 * expired, by every instance as it starts and then hourly: a session that simply lapses leaves nothing behind
 * for ever. Until then an expired token is still told apart from one that never existed.
 */

const closing = closeAfterEach();
const DAY = 24 * 60 * 60_000;
const TTL_SECONDS = 3_600;

/** One SQLite file, so that an instance started later (with its clock moved on) finds what an earlier one wrote. */
function sharedDatabase(): Record<string, string> {
  const file = join(mkdtempSync(join(tmpdir(), 'agent-expiry-')), 'agent.db');
  return { DATABASE_URL: `sqlite:${file}`, ADMIN_PASSWORD, REFRESH_TOKEN_TTL_SECONDS: String(TTL_SECONDS) };
}

const count = async (app: App, table: 'refresh_tokens' | 'oauth_codes' | 'oauth_refresh_tokens') =>
  Number(
    (
      await app.infrastructure.db.kysely
        .selectFrom(table)
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

/** An OAuth client, a grant of alice's, and one code and one refresh token through it, expiring at `expiresAt`. */
async function oauthCredentials(app: App, userId: string, suffix: string, expiresAt: string): Promise<void> {
  const db = app.infrastructure.db.kysely;
  const at = new Date(0).toISOString();
  await db
    .insertInto('oauth_clients')
    .values({ client_id: `client-${suffix}`, metadata: '{}', secret_hash: null, created_at: at })
    .execute();
  await db
    .insertInto('oauth_grants')
    .values({
      id: `grant-${suffix}`,
      client_id: `client-${suffix}`,
      user_id: userId,
      scope: 'mcp',
      resource: 'http://127.0.0.1/mcp',
      created_at: at,
      last_used_at: null,
    })
    .execute();
  await db
    .insertInto('oauth_codes')
    .values({
      code_hash: `code-${suffix}`,
      grant_id: `grant-${suffix}`,
      client_id: `client-${suffix}`,
      redirect_uri: 'http://127.0.0.1/callback',
      code_challenge: 'challenge',
      expires_at: expiresAt,
      used_at: null,
    })
    .execute();
  await db
    .insertInto('oauth_refresh_tokens')
    .values({
      token_hash: `refresh-${suffix}`,
      grant_id: `grant-${suffix}`,
      created_at: at,
      expires_at: expiresAt,
      used_at: null,
    })
    .execute();
}

describe('expired credentials', () => {
  it('are deleted a week after they expired, when an instance starts; younger ones are kept', async () => {
    const env = sharedDatabase();
    const clock = new TestClock();
    const first = closing(await startTestApp(env, { now: clock.now }));
    const alice = await createUser(first, 'alice');
    const login = () => call(first, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } });
    expect((await login()).status).toBe(200);
    await oauthCredentials(first, alice.id, 'old', new Date(clock.ms + TTL_SECONDS * 1000).toISOString());
    // Eight days on, a second sign-in: its token expires within the hour, the first one a week ago and more.
    clock.advance(8 * DAY);
    const recent = await login();
    expect(recent.status).toBe(200);
    await oauthCredentials(first, alice.id, 'new', new Date(clock.ms + TTL_SECONDS * 1000).toISOString());
    expect(await count(first, 'refresh_tokens')).toBe(2);
    await first.close();

    const second = closing(await startTestApp(env, { now: clock.now }));
    await expect.poll(() => count(second, 'refresh_tokens')).toBe(1);
    await expect.poll(() => count(second, 'oauth_codes')).toBe(1);
    await expect.poll(() => count(second, 'oauth_refresh_tokens')).toBe(1);
    const kept = await second.infrastructure.db.kysely.selectFrom('oauth_codes').select('code_hash').execute();
    expect(kept).toEqual([{ code_hash: 'code-new' }]);
    // The token left is the recent sign-in's, not yet expired.
    const [left] = await second.infrastructure.db.kysely.selectFrom('refresh_tokens').select('expires_at').execute();
    expect(Date.parse(left!.expires_at)).toBeGreaterThan(clock.ms);
  });

  it('are kept, and answered as expired, within the week after they expired', async () => {
    const env = sharedDatabase();
    const clock = new TestClock();
    const first = closing(await startTestApp(env, { now: clock.now }));
    const alice = await createUser(first, 'alice');
    const login = await call(first, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } });
    // Expired long before: its going shows that the start-up sweep has run.
    await oauthCredentials(first, alice.id, 'old', new Date(clock.ms - 30 * DAY).toISOString());
    await first.close();

    clock.advance(TTL_SECONDS * 1000 + 6 * DAY);
    const second = closing(await startTestApp(env, { now: clock.now }));
    await expect.poll(() => count(second, 'oauth_codes')).toBe(0);
    expect(await count(second, 'refresh_tokens')).toBe(1);
    const refreshed = await call(second, 'POST', '/auth/refresh', {
      body: { refresh_token: login.body.refresh_token as string },
    });
    expect(refreshed).toMatchObject({ status: 401, body: { message: 'Refresh token has expired' } });
  });
});
