import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { createDb } from '../../src/db/create-db.js';
import { knownMigrations, migrateDown, migrateToLatest } from '../../src/db/migrate.js';
import { ensureInstallation } from '../../src/modules/system/system.service.js';
import { getSetting, putSetting, putSettingIfAbsent } from '../../src/modules/system/system.store.js';
import { DIALECTS, freshDbPerTest } from '../helpers/databases.js';
import { describeWithService } from '../helpers/services.js';

for (const dialect of DIALECTS) {
  describeWithService(`store on ${dialect.name}`, dialect.availability, () => {
    const fresh = freshDbPerTest(dialect);

    it('applies every migration in order, then has nothing left to apply', async () => {
      const first = await migrateToLatest(fresh.db);
      expect(first.applied).toEqual(knownMigrations());
      expect(first.current).toBe(knownMigrations().at(-1));
      const second = await migrateToLatest(fresh.db);
      expect(second.applied).toEqual([]);
      expect(second.current).toBe(first.current);
    });

    it('migrates down and up again without losing the way back', async () => {
      await migrateToLatest(fresh.db);
      const down = await migrateDown(fresh.db);
      expect(down.applied).toEqual([knownMigrations().at(-1)]);
      const up = await migrateToLatest(fresh.db);
      expect(up.applied).toEqual([knownMigrations().at(-1)]);
      await putSetting(fresh.db.kysely, 'k', 'v');
      expect(await getSetting(fresh.db.kysely, 'k')).toBe('v');
    });

    it('lets two migrators race on the same database without applying anything twice', async () => {
      const other = createDb(fresh.database.target);
      try {
        const [a, b] = await Promise.all([migrateToLatest(fresh.db), migrateToLatest(other)]);
        expect([...a.applied, ...b.applied].sort()).toEqual(knownMigrations());
      } finally {
        await other.destroy();
      }
    });

    it('stores, overwrites and reads settings', async () => {
      await migrateToLatest(fresh.db);
      expect(await getSetting(fresh.db.kysely, 'missing')).toBeUndefined();
      await putSetting(fresh.db.kysely, 'colour', 'blue', new Date('2026-01-01T00:00:00Z'));
      await putSetting(fresh.db.kysely, 'colour', 'green', new Date('2026-01-02T00:00:00Z'));
      expect(await getSetting(fresh.db.kysely, 'colour')).toBe('green');
      const row = await fresh.db.kysely
        .selectFrom('system_settings')
        .selectAll()
        .where('key', '=', 'colour')
        .executeTakeFirst();
      expect(row).toEqual({ key: 'colour', value: 'green', updated_at: '2026-01-02T00:00:00.000Z' });
    });

    it('keeps the first value when a setting is written only if absent', async () => {
      await migrateToLatest(fresh.db);
      expect(await putSettingIfAbsent(fresh.db.kysely, 'id', 'first')).toBe('first');
      expect(await putSettingIfAbsent(fresh.db.kysely, 'id', 'second')).toBe('first');
    });

    it('records the installation once and finds it again after reopening', async () => {
      await migrateToLatest(fresh.db);
      const installed = await ensureInstallation(fresh.db.kysely, new Date('2026-03-04T05:06:07Z'));
      expect(installed.instanceId).toMatch(/^[0-9a-f-]{36}$/);
      expect(installed.createdAt).toBe('2026-03-04T05:06:07.000Z');
      await fresh.db.destroy();
      fresh.db = createDb(fresh.database.target);
      expect(await ensureInstallation(fresh.db.kysely)).toEqual(installed);
    });

    it('rolls back a transaction that throws', async () => {
      await migrateToLatest(fresh.db);
      await expect(
        fresh.db.kysely.transaction().execute(async (trx) => {
          await putSetting(trx, 'half', 'done');
          throw new Error('second step failed');
        }),
      ).rejects.toThrow('second step failed');
      expect(await getSetting(fresh.db.kysely, 'half')).toBeUndefined();
    });

    it('returns counts as numbers on every dialect', async () => {
      await migrateToLatest(fresh.db);
      await putSetting(fresh.db.kysely, 'a', '1');
      await putSetting(fresh.db.kysely, 'b', '2');
      const { n } = await fresh.db.kysely
        .selectFrom('system_settings')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      expect(n).toBe(2);
    });

    it('answers a ping and describes itself without credentials', async () => {
      await fresh.db.ping();
      const described = fresh.db.describe();
      expect(JSON.stringify(described)).not.toMatch(/password|postgres:\/\//);
      expect(fresh.db.activeConnections()).toBeGreaterThanOrEqual(0);
      const { rows } = await sql<{ one: number }>`select 1 as one`.execute(fresh.db.kysely);
      expect(Number(rows[0]?.one)).toBe(1);
    });

    if (dialect.name === 'sqlite') {
      it('opens SQLite in WAL mode with foreign keys enforced', async () => {
        const { rows } = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(fresh.db.kysely);
        expect(rows[0]?.journal_mode).toBe('wal');
        const fk = await sql<{ foreign_keys: number }>`pragma foreign_keys`.execute(fresh.db.kysely);
        expect(fk.rows[0]?.foreign_keys).toBe(1);
      });
    }
  });
}
