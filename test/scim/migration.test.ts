import { Migrator } from 'kysely';
import { expect, it } from 'vitest';
import { MIGRATIONS } from '../../migrations/index.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { DIALECTS, freshDbPerTest } from '../helpers/databases.js';
import { scimUserRow, scimUserValueRow, userRow } from '../helpers/rows.js';
import { describeWithService } from '../helpers/services.js';

const SCIM_TABLES = ['scim_groups', 'scim_suspended_tuples', 'scim_user_addresses', 'scim_user_values', 'scim_users'];

for (const dialect of DIALECTS) {
  describeWithService(`migration 0006_scim on ${dialect.name}`, dialect.availability, () => {
    const fresh = freshDbPerTest(dialect);

    const tables = async () =>
      (await fresh.db.kysely.introspection.getTables())
        .map((t) => t.name)
        .filter((n) => n.startsWith('scim_'))
        .sort();

    it('creates the SCIM tables, and removes them all when reverted', async () => {
      await migrateToLatest(fresh.db);
      expect(await tables()).toEqual(SCIM_TABLES);
      const migrator = new Migrator({
        db: fresh.db.kysely,
        provider: { getMigrations: () => Promise.resolve(MIGRATIONS) },
      });
      const down = await migrator.migrateTo('0005_audit_log');
      expect(down.error).toBeUndefined();
      expect(await tables()).toEqual([]);
      await migrateToLatest(fresh.db);
      expect(await tables()).toEqual(SCIM_TABLES);
    });

    it('lets what SCIM stored about a user or group go with it (ON DELETE CASCADE)', async () => {
      await migrateToLatest(fresh.db);
      const at = '2026-06-01T12:00:00.000Z';
      await fresh.db.kysely
        .insertInto('users')
        .values(userRow({ id: 'u1', username: 'a', created_at: at }))
        .execute();
      await fresh.db.kysely
        .insertInto('groups')
        .values({ id: 'g1', name: '/G', name_key: '/g', created_at: at, updated_at: at })
        .execute();
      await fresh.db.kysely
        .insertInto('scim_users')
        .values(scimUserRow({ user_id: 'u1', external_id: 'x' }))
        .execute();
      await fresh.db.kysely
        .insertInto('scim_user_values')
        .values(scimUserValueRow({ user_id: 'u1', attribute: 'emails', value: 'a@x.io' }))
        .execute();
      await fresh.db.kysely
        .insertInto('scim_suspended_tuples')
        .values({ user_id: 'u1', relation: 'owner', object: 'conversation:c', created_at: at })
        .execute();
      await fresh.db.kysely
        .insertInto('scim_groups')
        .values({ group_id: 'g1', display_name: 'G', display_name_key: 'g', external_id: null })
        .execute();

      await fresh.db.kysely.deleteFrom('users').where('id', '=', 'u1').execute();
      await fresh.db.kysely.deleteFrom('groups').where('id', '=', 'g1').execute();
      for (const table of SCIM_TABLES) {
        const rows = await fresh.db.kysely
          .selectFrom(table as 'scim_users')
          .selectAll()
          .execute();
        expect(rows, table).toEqual([]);
      }
    });
  });
}
