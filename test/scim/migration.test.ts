import { Migrator } from 'kysely';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { MIGRATIONS } from '../../migrations/index.js';
import { type Db, createDb } from '../../src/db/create-db.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { DIALECTS, type TestDatabase } from '../helpers/databases.js';
import { describeWithService } from '../helpers/services.js';

const SCIM_TABLES = ['scim_groups', 'scim_suspended_tuples', 'scim_user_addresses', 'scim_user_values', 'scim_users'];

for (const dialect of DIALECTS) {
  describeWithService(`migration 0006_scim on ${dialect.name}`, dialect.availability, () => {
    let database: TestDatabase;
    let db: Db;
    beforeEach(async () => {
      database = await dialect.create();
      db = createDb(database.target);
    });
    afterEach(async () => {
      await db.destroy();
      await database.cleanup();
    });

    const tables = async () =>
      (await db.kysely.introspection.getTables())
        .map((t) => t.name)
        .filter((n) => n.startsWith('scim_'))
        .sort();

    it('creates the SCIM tables, and removes them all when reverted', async () => {
      await migrateToLatest(db);
      expect(await tables()).toEqual(SCIM_TABLES);
      const migrator = new Migrator({ db: db.kysely, provider: { getMigrations: () => Promise.resolve(MIGRATIONS) } });
      const down = await migrator.migrateTo('0005_audit_log');
      expect(down.error).toBeUndefined();
      expect(await tables()).toEqual([]);
      await migrateToLatest(db);
      expect(await tables()).toEqual(SCIM_TABLES);
    });

    it('lets what SCIM stored about a user or group go with it (ON DELETE CASCADE)', async () => {
      await migrateToLatest(db);
      const at = '2026-06-01T12:00:00.000Z';
      await db.kysely
        .insertInto('users')
        .values({
          id: 'u1',
          username: 'a',
          username_key: 'a',
          email: null,
          email_key: null,
          email_verified: 0,
          name: null,
          roles: '[]',
          active: 1,
          password_hash: null,
          created_at: at,
          updated_at: at,
          last_login: null,
        })
        .execute();
      await db.kysely
        .insertInto('groups')
        .values({ id: 'g1', name: '/G', name_key: '/g', created_at: at, updated_at: at })
        .execute();
      await db.kysely
        .insertInto('scim_users')
        .values({ user_id: 'u1', external_id: 'x', ...nulls() })
        .execute();
      await db.kysely
        .insertInto('scim_user_values')
        .values({
          user_id: 'u1',
          attribute: 'emails',
          position: 0,
          value: 'a@x.io',
          value_key: 'a@x.io',
          display: null,
          type: null,
          primary_flag: null,
        })
        .execute();
      await db.kysely
        .insertInto('scim_suspended_tuples')
        .values({ user_id: 'u1', relation: 'owner', object: 'conversation:c', created_at: at })
        .execute();
      await db.kysely
        .insertInto('scim_groups')
        .values({ group_id: 'g1', display_name: 'G', display_name_key: 'g', external_id: null })
        .execute();

      await db.kysely.deleteFrom('users').where('id', '=', 'u1').execute();
      await db.kysely.deleteFrom('groups').where('id', '=', 'g1').execute();
      for (const table of SCIM_TABLES) {
        const rows = await db.kysely
          .selectFrom(table as 'scim_users')
          .selectAll()
          .execute();
        expect(rows, table).toEqual([]);
      }
    });
  });
}

function nulls() {
  return Object.fromEntries(
    [
      'display_name',
      'nick_name',
      'profile_url',
      'title',
      'user_type',
      'preferred_language',
      'locale',
      'timezone',
      'given_name',
      'family_name',
      'middle_name',
      'honorific_prefix',
      'honorific_suffix',
      'email_type',
      'email_display',
      'email_primary',
      'employee_number',
      'cost_center',
      'organization',
      'division',
      'department',
      'manager_id',
    ].map((c) => [c, null]),
  ) as Record<string, null>;
}
