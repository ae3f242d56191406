import { type Kysely, type MigrationResultSet, Migrator, sql } from 'kysely';
import { MIGRATIONS } from '../../migrations/index.js';
import type { Db } from './create-db.js';
import type { Database } from './database.js';

export interface MigrationReport {
  applied: string[];
  current: string | undefined;
}

/**
 * Migrations applied in the same millisecond are ordered by name in code units, as Kysely orders the migrations it
 * is given. Its default, `localeCompare`, depends on the locale and pages in ICU's collation data (about 2 MB of
 * resident memory) for a comparison of ASCII names.
 */
const byName = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function migratorFor(db: Kysely<Database>): Migrator {
  return new Migrator({
    db,
    provider: { getMigrations: () => Promise.resolve(MIGRATIONS) },
    nameComparator: byName,
  });
}

function report(result: MigrationResultSet, direction: 'Up' | 'Down'): MigrationReport {
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error')?.migrationName;
    throw new Error(`Migration ${failed ?? '(unknown)'} failed`, { cause: result.error });
  }
  const applied = (result.results ?? []).filter((r) => r.direction === direction).map((r) => r.migrationName);
  return { applied, current: undefined };
}

/**
 * Applies every pending migration in order, each in a transaction. Safe when several processes start at once:
 * PostgreSQL serialises migrators with Kysely's advisory lock, SQLite with a lock file beside the database.
 */
export async function migrateToLatest(db: Db): Promise<MigrationReport> {
  return db.exclusive(async () => {
    const migrator = migratorFor(db.kysely);
    const result = report(await migrator.migrateToLatest(), 'Up');
    return { ...result, current: await currentMigration(migrator) };
  });
}

/** Reverts the most recent migration (for `agent-service migrate --down`). */
export async function migrateDown(db: Db): Promise<MigrationReport> {
  return db.exclusive(async () => {
    const migrator = migratorFor(db.kysely);
    const result = report(await migrator.migrateDown(), 'Down');
    return { ...result, current: await currentMigration(migrator) };
  });
}

async function currentMigration(migrator: Migrator): Promise<string | undefined> {
  const all = await migrator.getMigrations();
  return all.filter((m) => m.executedAt !== undefined).at(-1)?.name;
}

/** Names of the migrations this build knows, in order. */
export function knownMigrations(): string[] {
  return Object.keys(MIGRATIONS).sort();
}

/**
 * The migrations this build knows that the database has not applied, read without writing anything (the migrator
 * itself would create its tables first). A database never migrated has them all pending.
 */
export async function pendingMigrations(db: Db): Promise<string[]> {
  let applied: Set<string>;
  try {
    const { rows } = await sql<{ name: string }>`select name from kysely_migration`.execute(db.kysely);
    applied = new Set(rows.map((row) => row.name));
  } catch (err) {
    if (!/kysely_migration/.test(String((err as Error).message))) throw err;
    applied = new Set();
  }
  return knownMigrations().filter((name) => !applied.has(name));
}
