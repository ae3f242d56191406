import { randomUUID } from 'node:crypto';
import type { App } from '../src/app.js';
import { scimUserRow, scimUserValueRow, userRow } from '../test/helpers/rows.js';
import { accessTokenOf, startBenchApp } from './app.js';
import type { BenchLine } from './http-stack.js';
import { load } from './load.js';

/**
 * SCIM listing over 100,000 users, through the whole HTTP stack, as an identity provider calls it. Each filtered
 * listing is reported as a ratio against the unfiltered first page measured in the same run, and the indexed
 * `userName eq` also against an unindexed `co` that has to scan every user (the contrast the indexes buy).
 */
const USERS = 100_000;
const TITLES = ['Engineer', 'Designer', 'Manager', 'Analyst', 'Support'];

async function seed(app: App): Promise<void> {
  const at = new Date().toISOString();
  const db = app.infrastructure.db.kysely;
  for (let start = 0; start < USERS; start += 500) {
    // User i is user<n>, n its six-digit number.
    const batch = Array.from({ length: Math.min(500, USERS - start) }, (_, k) => ({
      id: randomUUID(),
      i: start + k,
      n: String(start + k).padStart(6, '0'),
    }));
    await db.transaction().execute(async (trx) => {
      await trx
        .insertInto('users')
        .values(
          batch.map(({ id, n }) =>
            userRow({
              id,
              username: `user${n}`,
              email: `user${n}@example.com`,
              email_key: `user${n}@example.com`,
              name: `Person ${n}`,
              roles: '["user"]',
              created_at: at,
            }),
          ),
        )
        .execute();
      await trx
        .insertInto('scim_users')
        .values(
          batch.map(({ id, i, n }) =>
            scimUserRow({
              user_id: id,
              external_id: `ext-${n}`,
              display_name: `Person ${n}`,
              title: TITLES[i % TITLES.length]!,
              email_type: 'work',
              email_primary: 1,
            }),
          ),
        )
        .execute();
      // Half the users have a second (home) email, kept in scim_user_values.
      const second = batch.filter(({ i }) => i % 2 === 0);
      if (second.length > 0) {
        await trx
          .insertInto('scim_user_values')
          .values(
            second.map(({ id, n }) =>
              scimUserValueRow({ user_id: id, attribute: 'emails', value: `home${n}@example.org`, type: 'home' }),
            ),
          )
          .execute();
      }
    });
  }
}

export async function benchScim(): Promise<BenchLine[]> {
  const password = 'bench-admin-password';
  const app = await startBenchApp({ ADMIN_PASSWORD: password });
  try {
    await seed(app);
    const token = await accessTokenOf(app, 'admin', password);
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
