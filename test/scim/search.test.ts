import { Migrator, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../migrations/index.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { type Column, FilterCompiler, type FilterMapping, parseFilter } from '../../src/modules/scim/scim.filter.js';
import { ftsNeedle, likePattern } from '../../src/modules/scim/scim.search.js';
import { USER_FILTERS, countUsers, registerSqlFunctions, userPageQuery } from '../../src/modules/scim/scim.store.js';
import { DIALECTS, type TestDatabase, freshDbPerTest } from '../helpers/databases.js';
import { scimUserRow, userRow } from '../helpers/rows.js';
import { describeWithService } from '../helpers/services.js';
import { ENTERPRISE, type ScimClient, startScim, USER, userListingPlan } from './helpers.js';

/**
 * Substring filters (`co`, `sw`, `ew`) answered through the trigram indexes of migrations/0012_scim_search.ts: they
 * select exactly what the same comparison does in memory (lower-cased, RFC 7643 §2.2), whatever the needle holds.
 */

interface Person {
  userName: string;
  displayName?: string;
  title?: string;
  nickName?: string;
  externalId?: string;
  formatted?: string;
  givenName?: string;
  email?: string;
}

const PEOPLE: Person[] = [
  { userName: 'pct', displayName: '100% Pure_Joy', title: 'a%b_c', externalId: 'EXT-%_1', email: 'p_c.t@x.io' },
  { userName: 'pctx', displayName: '100x Purely', title: 'aXb-c', externalId: 'EXT-x1', email: 'pxct@x.io' },
  { userName: 'quote', displayName: 'Ann "Q" Lee', nickName: "O'Neil \\ back", formatted: 'Ann Q. Lee' },
  { userName: 'emile', displayName: 'Émile Zoë', givenName: 'ÉMILE', title: 'Straße' },
  { userName: 'istanbul', displayName: 'İSTANBUL İi', nickName: 'iSTANBUL' },
  { userName: 'greek', displayName: 'ΟΔΥΣΣΕΥΣ', title: 'Σίσυφος' },
  { userName: 'cherokee', displayName: 'ᏣᎳᎩ Ꭰ Tsalagi', nickName: 'ꮳꮃꭹ' },
  { userName: 'digraph', displayName: 'ǅemal Ǉubica', givenName: 'ǆemal' },
  { userName: 'kelvin', displayName: '10 \u212A cold', title: '10 k cold' },
  { userName: 'plain', displayName: 'Person 077777', formatted: 'Person 077777', email: 'user077777@example.com' },
];

/** The attributes compared, and how to read each from a person. */
const ATTRIBUTES: [string, (p: Person) => string | undefined][] = [
  ['userName', (p) => p.userName],
  ['displayName', (p) => p.displayName],
  ['title', (p) => p.title],
  ['nickName', (p) => p.nickName],
  // Sent without formatted, name.formatted is the given and family names joined.
  ['name.formatted', (p) => p.formatted ?? p.givenName],
  ['name.givenName', (p) => p.givenName],
  ['emails.value', (p) => p.email],
];

const NEEDLES = [
  // LIKE's own characters, quotes, backslashes
  '%',
  '_',
  '0%',
  '% p',
  '%_',
  'e_j',
  'a%b',
  '%b_c',
  '"q"',
  '"',
  '\\',
  "o'n",
  '\\ b',
  'x.io',
  'p_c',
  // one and two characters: the scan
  'e',
  'É',
  'ss',
  'Ꭰ',
  // Unicode: folding, final sigma, dotted capital I, scripts FTS5 does not fold, title-case digraphs, Kelvin sign
  'émile',
  'zoË',
  'straße',
  'STRASSE',
  'οδυσσευς',
  'οδυσσευσ',
  'σσευς',
  'σίσυφος',
  'i̇stanbul',
  'i̇ i',
  'stanbul i̇',
  'anbul i',
  'istanbul',
  'ꮳꮃꭹ',
  'ᏣᎳᎩ',
  'ꭰ tsa',
  'ǆemal',
  'ǅEMAL ǈ',
  'ǉubica',
  '10 k c',
  '10 \u212A',
  // plain
  'person 0777',
  'son 077777',
  '077777',
  '77777@example.com',
  'nobody here',
];

/** USER_FILTERS without the trigram indexes: every comparison as it was before them. */
const UNINDEXED: FilterMapping = {
  resource: USER_FILTERS.resource,
  target: (key) => {
    const target = USER_FILTERS.target(key);
    const plain = (columns: Readonly<Partial<Record<string, Column>>>) =>
      Object.fromEntries(Object.entries(columns).map(([k, c]) => [k, { ...c!, search: undefined }]));
    if (target?.kind === 'column') return { kind: 'column', column: { ...target.column, search: undefined } };
    if (target?.kind === 'complex') return { kind: 'complex', columns: plain(target.columns) };
    if (target?.kind === 'multi') {
      return { kind: 'multi', sources: target.sources.map((s) => ({ ...s, columns: plain(s.columns) })) };
    }
    return target;
  },
};

for (const dialect of DIALECTS) {
  describeWithService(`substring filters through trigram indexes on ${dialect.name}`, dialect.availability, () => {
    let database: TestDatabase;
    let c: ScimClient;
    const ids = new Map<string, string>();

    beforeAll(async () => {
      database = await dialect.createMigrated();
      c = await startScim({ DATABASE_URL: database.url });
      for (const p of PEOPLE) {
        const res = await c.request('POST', '/Users', {
          schemas: [USER, ENTERPRISE],
          userName: p.userName,
          ...(p.displayName && { displayName: p.displayName }),
          ...(p.title && { title: p.title }),
          ...(p.nickName && { nickName: p.nickName }),
          ...(p.externalId && { externalId: p.externalId }),
          ...((p.formatted || p.givenName) && {
            name: { ...(p.formatted && { formatted: p.formatted }), ...(p.givenName && { givenName: p.givenName }) },
          }),
          ...(p.email && { emails: [{ value: p.email, primary: true }] }),
        });
        expect(res.status, JSON.stringify(res.body)).toBe(201);
        ids.set(p.userName, res.body.id as string);
      }
    });
    afterAll(async () => {
      await c?.app.close();
      await database?.cleanup();
    });

    const selected = async (filter: string) => {
      const page = await c.app.services.scim.listUsers({
        filter,
        startIndex: 1,
        count: 1000,
        attributes: ['userName'],
      });
      expect(page.totalResults, filter).toBe(page.Resources.length);
      return page.Resources.map((r) => r.userName as string)
        .filter((u) => u !== 'admin')
        .sort();
    };

    /** The ids and count a filter selects through the indexes, and without them. */
    const bothWays = async (filter: string) => {
      const db = c.app.infrastructure.db.kysely;
      const run = async (mapping: FilterMapping) => {
        const where = new FilterCompiler(mapping, dialect.name).compile(parseFilter(filter));
        const rows = await userPageQuery(db, { where, order: undefined, offset: 0, limit: 1000 }).execute();
        return { ids: rows.map((r) => r.id).sort(), total: await countUsers(db, where) };
      };
      return { indexed: await run(USER_FILTERS), scanned: await run(UNINDEXED) };
    };

    // Some 1,500 queries: a few at a time, as the pool allows, and with time for a machine busy with other tests.
    it('selects exactly what the same comparison selects without the indexes', { timeout: 60_000 }, async () => {
      const filters = [...ATTRIBUTES, ['externalId']].flatMap(([attribute]) =>
        NEEDLES.flatMap((needle) =>
          ['co', 'sw', 'ew'].flatMap((op) => [
            `${attribute} ${op} ${JSON.stringify(needle)}`,
            `not (${attribute} ${op} ${JSON.stringify(needle)})`,
          ]),
        ),
      );
      let nonEmpty = 0;
      for (let at = 0; at < filters.length; at += 4) {
        await Promise.all(
          filters.slice(at, at + 4).map(async (filter) => {
            const { indexed, scanned } = await bothWays(filter);
            expect(indexed, filter).toEqual(scanned);
            expect(indexed.total, filter).toBe(indexed.ids.length);
            if (!filter.startsWith('not') && indexed.total > 0) nonEmpty++;
          }),
        );
      }
      expect(nonEmpty).toBeGreaterThan(100);
    });

    // PostgreSQL's lower() has no final sigma (ΟΔΥΣΣΕΥΣ → οδυσσευσ) where toLowerCase has (οδυσσευς): a difference
    // that predates the indexes. The test above covers PostgreSQL.
    if (dialect.name === 'sqlite')
      it('selects exactly what the comparison selects in memory, for every operator, attribute and needle', async () => {
        const compare = { co: 'includes', sw: 'startsWith', ew: 'endsWith' } as const;
        for (const [attribute, read] of ATTRIBUTES) {
          for (const needle of NEEDLES) {
            for (const op of ['co', 'sw', 'ew'] as const) {
              const wanted = needle.toLowerCase();
              const expected = PEOPLE.filter((p) => read(p)?.toLowerCase()[compare[op]](wanted))
                .map((p) => p.userName)
                .sort();
              const filter = `${attribute} ${op} ${JSON.stringify(needle)}`;
              expect(await selected(filter), filter).toEqual(expected);
              expect(await selected(`not (${filter})`), `not (${filter})`).toEqual(
                PEOPLE.map((p) => p.userName)
                  .filter((u) => !expected.includes(u))
                  .sort(),
              );
            }
          }
        }
      });

    it('compares case-exact externalId exactly', async () => {
      expect(await selected('externalId co "EXT-%_"')).toEqual(['pct']);
      expect(await selected('externalId co "ext-%_"')).toEqual([]);
      expect(await selected('externalId ew "-x1"')).toEqual(['pctx']);
      expect(await selected('externalId sw "EXT"')).toEqual(['pct', 'pctx']);
    });

    it('follows every change: replaced, patched, and rows written by other means', async () => {
      const id = ids.get('plain')!;
      expect(await selected('displayName co "on 077777"')).toEqual(['plain']);
      const patched = await c.request('PATCH', `/Users/${id}`, {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [{ op: 'replace', path: 'displayName', value: 'Someone Else' }],
      });
      expect(patched.status, JSON.stringify(patched.body)).toBe(200);
      expect(await selected('displayName co "on 077777"')).toEqual([]);
      expect(await selected('displayName co "one else"')).toEqual(['plain']);
      const replaced = await c.request('PUT', `/Users/${id}`, {
        schemas: [USER],
        userName: 'plain2',
        displayName: 'Person 077777',
      });
      expect(replaced.status, JSON.stringify(replaced.body)).toBe(200);
      expect(await selected('displayName co "one else"')).toEqual([]);
      expect(await selected('userName co "ain2"')).toEqual(['plain2']);
      expect(await selected('userName co "plain"')).toEqual(['plain2']);
      expect(await selected('emails co "77777@example"')).toEqual([]);

      // Rows written straight into the tables (a seeding script, another service) are found too, and go with them.
      const db = c.app.infrastructure.db.kysely;
      const at = '2026-06-01T12:00:00.000Z';
      const direct = '00000000-0000-4000-8000-00000000d1ec';
      await db
        .insertInto('users')
        .values(userRow({ id: direct, username: 'direct', created_at: at }))
        .execute();
      await db
        .insertInto('scim_users')
        .values(scimUserRow({ user_id: direct, display_name: 'Written Directly' }))
        .execute();
      expect(await selected('displayName co "ten direct"')).toEqual(['direct']);
      await db
        .updateTable('scim_users')
        .set({ display_name: 'Changed Directly' })
        .where('user_id', '=', direct)
        .execute();
      expect(await selected('displayName co "ten direct"')).toEqual([]);
      expect(await selected('displayName co "ged direct"')).toEqual(['direct']);
      await db.deleteFrom('users').where('id', '=', direct).execute();
      expect(await selected('displayName co "ged direct"')).toEqual([]);
      if (dialect.name === 'sqlite') {
        // Nothing is left behind: one search row per user, one FTS5 row per users and scim_users row.
        const count = async (table: string) =>
          Number((await sql<{ n: number }>`select count(*) as n from ${sql.table(table)}`.execute(db)).rows[0]!.n);
        expect(await count('users_search_rows')).toBe(await count('users'));
        expect(await count('users_search')).toBe(await count('users'));
        expect(await count('users_search_scim')).toBe(await count('scim_users'));
      }
    });

    if (dialect.name === 'sqlite') {
      it('answers a substring of three or more characters from the FTS5 index, a shorter one by a scan', () => {
        const plan = (filter: string) => userListingPlan(c.app, filter);
        for (const filter of [
          'displayName co "son 0777"',
          'displayName ew "77777"',
          'displayName sw "person 0"',
          'userName co "ersn"',
          'title co "a%b"',
          'name.formatted co "ann q"',
          'emails.value co "example.com"',
          'externalId co "EXT"',
        ]) {
          expect(plan(filter), filter).toMatch(/users_search(_scim)? VIRTUAL TABLE/);
        }
        // Too short for a trigram, or a needle FTS5 folds differently from the application: the exact scan only.
        for (const filter of ['displayName co "77"', 'displayName co "ꮳꮃꭹ"', 'userName sw "per"']) {
          expect(plan(filter), filter).not.toMatch(/users_search/);
        }
      });
    }
  });
}

describe('needles for the indexes', () => {
  it('quotes FTS5 phrases, and leaves short and ill-formed needles to the scan', () => {
    expect(ftsNeedle('a"b c', true)).toBe('"a""b c"');
    expect(ftsNeedle('ab', true)).toBeUndefined();
    expect(ftsNeedle('a\ud800bc', true)).toBeUndefined();
    expect(ftsNeedle('%_\\', true)).toBe('"%_\\"');
  });

  it('escapes LIKE patterns for PostgreSQL', () => {
    expect(likePattern('co', 'a%b_c\\d')).toBe('%a\\%b\\_c\\\\d%');
    expect(likePattern('sw', 'ab')).toBe('ab%');
    expect(likePattern('ew', 'ab')).toBe('%ab');
  });
});

for (const dialect of DIALECTS) {
  describeWithService(`migration 0012_scim_search on ${dialect.name}`, dialect.availability, () => {
    const fresh = freshDbPerTest(dialect);
    const migrator = () =>
      new Migrator({ db: fresh.db.kysely, provider: { getMigrations: () => Promise.resolve(MIGRATIONS) } });

    const objects = async () => {
      const db = fresh.db.kysely;
      if (dialect.name === 'postgres') {
        const { rows } = await sql<{ name: string }>`
          select indexname as name from pg_indexes
          where indexname like '%trgm' or indexname = 'users_username_key_id' order by 1`.execute(db);
        return rows.map((r) => r.name);
      }
      const { rows } = await sql<{ name: string }>`
        select name from sqlite_master
        where name like 'users_search%' or name = 'users_username_key_id' order by 1`.execute(db);
      return rows.map((r) => r.name);
    };

    it('indexes the users already there, and removes every index, table and trigger when reverted', async () => {
      expect((await migrator().migrateTo('0011_builder')).error).toBeUndefined();
      const db = fresh.db.kysely;
      const at = '2026-06-01T12:00:00.000Z';
      await db
        .insertInto('users')
        .values(userRow({ id: 'u1', username: 'early', created_at: at }))
        .execute();
      await db
        .insertInto('scim_users')
        .values(scimUserRow({ user_id: 'u1', display_name: 'Early Bird' }))
        .execute();
      await migrateToLatest(fresh.db);
      expect(await objects()).not.toEqual([]);
      registerSqlFunctions(fresh.db);
      const where = new FilterCompiler(USER_FILTERS, dialect.name).compile(parseFilter('displayName co "rly bi"'));
      const page = await userPageQuery(db, { where, order: undefined, offset: 0, limit: 10 }).execute();
      expect(page.map((r) => r.id)).toEqual(['u1']);

      expect((await migrator().migrateTo('0011_builder')).error).toBeUndefined();
      expect(await objects()).toEqual([]);
      // Without the triggers, users are written as before.
      await db.updateTable('scim_users').set({ display_name: 'Late Bird' }).execute();
      await migrateToLatest(fresh.db);
      const again = await userPageQuery(db, {
        where: new FilterCompiler(USER_FILTERS, dialect.name).compile(parseFilter('displayName co "ate bi"')),
        order: undefined,
        offset: 0,
        limit: 10,
      }).execute();
      expect(again.map((r) => r.id)).toEqual(['u1']);
    });
  });
}
