import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import type { BenchLine } from './http-stack.js';
import { load } from './load.js';

/**
 * SCIM listing over 100,000 users, through the whole HTTP stack, as an identity provider calls it. Each filtered
 * listing is reported as a ratio against the unfiltered first page measured in the same run, and the indexed
 * `userName eq` also against an unindexed `co` that has to scan every user (the contrast the indexes buy).
 */
const USERS = 100_000;
const TITLES = ['Engineer', 'Designer', 'Manager', 'Analyst', 'Support'];

async function seed(app: ReturnType<typeof buildApp>): Promise<void> {
  const at = new Date().toISOString();
  const db = app.infrastructure.db.kysely;
  for (let start = 0; start < USERS; start += 500) {
    const ids = Array.from({ length: Math.min(500, USERS - start) }, () => randomUUID());
    await db.transaction().execute(async (trx) => {
      await trx
        .insertInto('users')
        .values(
          ids.map((id, k) => {
            const n = String(start + k).padStart(6, '0');
            return {
              id,
              username: `user${n}`,
              username_key: `user${n}`,
              email: `user${n}@example.com`,
              email_key: `user${n}@example.com`,
              email_verified: 0,
              name: `Person ${n}`,
              roles: '["user"]',
              active: 1,
              password_hash: null,
              created_at: at,
              updated_at: at,
              last_login: null,
            };
          }),
        )
        .execute();
      await trx
        .insertInto('scim_users')
        .values(
          ids.map((id, k) => {
            const n = String(start + k).padStart(6, '0');
            return {
              user_id: id,
              external_id: `ext-${n}`,
              display_name: `Person ${n}`,
              title: TITLES[(start + k) % TITLES.length]!,
              email_type: 'work',
              email_primary: 1,
              ...Object.fromEntries(
                [
                  'nick_name',
                  'profile_url',
                  'user_type',
                  'preferred_language',
                  'locale',
                  'timezone',
                  'given_name',
                  'family_name',
                  'middle_name',
                  'honorific_prefix',
                  'honorific_suffix',
                  'email_display',
                  'employee_number',
                  'cost_center',
                  'organization',
                  'division',
                  'department',
                  'manager_id',
                ].map((c) => [c, null]),
              ),
            };
          }),
        )
        .execute();
      // Half the users have a second (home) email, kept in scim_user_values.
      const second = ids.filter((_, k) => (start + k) % 2 === 0);
      if (second.length > 0) {
        await trx
          .insertInto('scim_user_values')
          .values(
            second.map((id) => {
              const n = String(start + ids.indexOf(id)).padStart(6, '0');
              return {
                user_id: id,
                attribute: 'emails',
                position: 0,
                value: `home${n}@example.org`,
                value_key: `home${n}@example.org`,
                display: null,
                type: 'home',
                primary_flag: null,
              };
            }),
          )
          .execute();
      }
    });
  }
}

export async function benchScim(): Promise<BenchLine[]> {
  const password = 'bench-admin-password';
  const app = buildApp(
    loadConfig({
      DATABASE_URL: 'sqlite::memory:',
      PORT: '0',
      PLAYGROUND_PORT: '0',
      BUILDER_PORT: '0',
      ADMIN_PASSWORD: password,
    }),
    { logger: pino({ level: 'info' }, pino.destination({ dest: '/dev/null', sync: true })) },
  );
  await app.start();
  try {
    await seed(app);
    const login = await fetch(`${app.url('main')}/auth/login`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password }),
    });
    const { access_token: token } = (await login.json()) as { access_token: string };
    const headers = { Authorization: `Bearer ${token}`, Accept: 'application/scim+json' };
    const url = (query: string) => `${app.url('main')}/scim/v2/Users?${query}`;
    const filter = (f: string) => url(`filter=${encodeURIComponent(f)}`);
    const run = (target: string, maxSeconds = 4) =>
      load(target, { connections: 8, requests: 2_000, maxSeconds, headers });

    await run(url('count=100'), 1); // warm-up
    const page = await run(url('count=100'));
    const eq = await run(filter('userName eq "user050000"'));
    const sw = await run(filter('userName sw "user0500"'));
    const primaryEmail = await run(filter('emails.value eq "user077777@example.com"'));
    const secondEmail = await run(filter('emails[type eq "home" and value eq "home077776@example.org"]'));
    const externalId = await run(filter('externalId eq "ext-012345"'));
    const scan = await run(filter('displayName co "Person 077777"'), 6);
    return [
      { name: `first page of 100 of ${USERS} users (baseline)`, result: page, ratio: 1, target: 1 },
      { name: 'userName eq (username_key index)', result: eq, ratio: eq.rps / page.rps, target: 1.5 },
      { name: 'userName sw, 100 matches (index range)', result: sw, ratio: sw.rps / page.rps, target: 0.5 },
      {
        name: 'emails.value eq (users.email_key index)',
        result: primaryEmail,
        ratio: primaryEmail.rps / page.rps,
        target: 1.5,
      },
      {
        name: 'emails[type, value] (scim_user_values index)',
        result: secondEmail,
        ratio: secondEmail.rps / page.rps,
        target: 1.5,
      },
      { name: 'externalId eq (scim_users index)', result: externalId, ratio: externalId.rps / page.rps, target: 1.5 },
      // Reported for contrast: a contains on an unindexed attribute reads every user (no target of its own).
      { name: 'displayName co (unindexed: scans every user)', result: scan, ratio: scan.rps / page.rps, target: 0 },
      { name: 'userName eq vs that scan', result: eq, ratio: eq.rps / scan.rps, target: 20 },
    ];
  } finally {
    await app.close();
  }
}
