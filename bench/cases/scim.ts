import { adminToken, bearer, checkOk } from '../client.js';
import type { Context } from '../context.js';
import { type Stats, type Target, failures, interleavedRounds } from '../load.js';
import { type Row, figures, throughputRow, valueRow } from '../report.js';
import { seedScimUsers } from '../seed.js';
import { type Service, freshDatabase, startService } from '../service.js';

/**
 * SCIM `GET /Users` over 100,000 users (seeded into the database before the service starts), as an identity
 * provider calls it with an administrator's token: `userName eq` throughput against the same over 100 users, and
 * the latency at one connection of `sw`, `co` and a 100-row page. The service sends no Server-Timing header, so a
 * page's "server time" is its p50 at c=1 minus the express hello p50 at c=1 measured in the same rounds (what a
 * request costs on loopback before any work is done).
 */

const SECTION = 'SCIM GET /scim/v2/Users';

export interface ScimResult {
  rows: Row[];
  /** The 100,000-user database (for the start-up case), once its service has stopped. */
  largeDatabase: string;
}

export async function scimRows(ctx: Context): Promise<ScimResult> {
  const users = ctx.settings.scimUsers;
  const large = await freshDatabase(ctx.tmp, `scim-${users}`);
  const small = await freshDatabase(ctx.tmp, 'scim-100');
  ctx.log(`scim: seeding ${users} users`);
  seedScimUsers(large, users);
  seedScimUsers(small, 100);

  const big = await startService({ name: `service-scim-${users}`, database: large, logDir: ctx.logDir });
  try {
    const little = await startService({ name: 'service-scim-100', database: small, logDir: ctx.logDir });
    try {
      return { rows: await measure(ctx, big, little, users), largeDatabase: large };
    } finally {
      await little.stop();
    }
  } finally {
    await big.stop();
  }
}

async function measure(ctx: Context, big: Service, little: Service, users: number): Promise<Row[]> {
  const headersOf = async (service: Service) => ({
    ...bearer(await adminToken(service.main)),
    Accept: 'application/scim+json',
  });
  const [bigHeaders, littleHeaders] = [await headersOf(big), await headersOf(little)];
  const url = (service: Service, query: string) => `${service.main}/scim/v2/Users?${query}`;
  const filter = (f: string) => `filter=${encodeURIComponent(f)}`;
  // user000050 exists in both databases.
  const eq = filter('userName eq "user000050"');
  const sw = filter('userName sw "user0500"'); // 100 matches in the large database
  const co = filter('displayName co "Person 077777"');
  const page = 'startIndex=50001&count=100';

  const target = (name: string, service: Service, headers: Record<string, string>, query: string, c: number) => ({
    name,
    url: url(service, query),
    headers,
    connections: c,
  });
  const targets = {
    eqSmall: target('eq over 100', little, littleHeaders, eq, 50),
    eqLarge: target(`eq over ${users}`, big, bigHeaders, eq, 50),
    hello: { name: 'express hello c=1', url: `${ctx.express.url}/hello`, connections: 1 },
    sw: target('sw c=1', big, bigHeaders, sw, 1),
    co: target('co c=1', big, bigHeaders, co, 1),
    page: target('page c=1', big, bigHeaders, page, 1),
  } satisfies Record<string, Target>;
  for (const t of Object.values(targets)) {
    const text = await checkOk(t.name, t.url, { headers: 'headers' in t ? t.headers : {} });
    if (t !== targets.hello && !text.includes('"totalResults"')) throw new Error(`${t.name}: not a SCIM list`);
  }
  ctx.log(`scim: ${ctx.settings.rounds} interleaved rounds`);
  const stats = await interleavedRounds(Object.values(targets), ctx.settings);
  const s = (t: Target): Stats => stats.get(t.name)!;
  const latencyRow = (name: string, t: Target, max: number, transport?: Stats): Row => {
    const raw = s(t).p50;
    const value = transport ? raw - transport.p50 : raw;
    const bad = failures(s(t)) + (transport ? failures(transport) : 0);
    return {
      ...valueRow(SECTION, name, value, 'ms', max, {
        ...(transport && {
          note: `server time = p50 ${raw.toFixed(3)} ms minus express hello p50 at c=1 ${transport.p50.toFixed(3)} ms (no Server-Timing header)`,
        }),
        ...(bad > 0 && { failed: `${bad} errors/non-2xx answers` }),
      }),
      load: figures(s(t)),
      ...(transport && { baselineLoad: figures(transport) }),
    };
  };
  return [
    throughputRow(
      SECTION,
      `filter userName eq, c=50, ${users} users vs 100`,
      s(targets.eqLarge),
      s(targets.eqSmall),
      0.9,
    ),
    latencyRow(`filter userName sw (100 matches) p50, c=1`, targets.sw, 1),
    latencyRow(`filter displayName co p50, c=1`, targets.co, 20),
    latencyRow('100-row page, server time p50, c=1', targets.page, 1, s(targets.hello)),
  ];
}
