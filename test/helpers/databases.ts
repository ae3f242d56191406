import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import type { DatabaseTarget } from '../../src/config.js';
import { type Db, createDb } from '../../src/db/create-db.js';
import { type Availability, createPostgresDatabase, probePostgres } from './services.js';

/** A database to run a suite against, created fresh and removed afterwards. */
export interface TestDatabase {
  target: DatabaseTarget;
  url: string;
  cleanup: () => Promise<void>;
}

export interface Dialect {
  name: 'sqlite' | 'postgres';
  availability: Availability;
  /** An empty database. */
  create: () => Promise<TestDatabase>;
  /**
   * A database that may already hold the schema (a copy of the run's migrated template, on PostgreSQL), for a
   * suite that migrates it, or starts the service on it, before anything else: what it then applies is nothing.
   */
  createMigrated: () => Promise<TestDatabase>;
}

const sqliteDatabase = (): Promise<TestDatabase> => {
  // A file, not :memory:, so the suite also covers WAL and reopening.
  const filename = join(mkdtempSync(join(tmpdir(), 'agent-db-')), 'agent.db');
  return Promise.resolve({
    target: { dialect: 'sqlite', filename },
    url: `sqlite:${filename}`,
    cleanup: () => Promise.resolve(),
  });
};

const sqlite: Dialect = {
  name: 'sqlite',
  availability: { available: true, reason: '' },
  create: sqliteDatabase,
  // Migrating a SQLite file is quick: the suite's own migration does it.
  createMigrated: sqliteDatabase,
};

async function postgresDatabase(migrated: boolean): Promise<TestDatabase> {
  const { url, drop } = await createPostgresDatabase({ migrated });
  return { target: { dialect: 'postgres', connectionString: url }, url, cleanup: drop };
}

const postgres: Dialect = {
  name: 'postgres',
  availability: await probePostgres(),
  create: () => postgresDatabase(false),
  createMigrated: () => postgresDatabase(true),
};

/** Every dialect the store must work on; store suites run once per entry. */
export const DIALECTS: Dialect[] = [sqlite, postgres];

/** The database of the running test; see freshDbPerTest. */
export interface FreshDb {
  /** Open (not migrated); a test that reopens it puts the new one here, and that one is destroyed after it. */
  db: Db;
  database: TestDatabase;
}

/** A fresh database of `dialect` for each test of the enclosing suite: created and opened before it, removed after. */
export function freshDbPerTest(dialect: Dialect): FreshDb {
  const fresh = {} as FreshDb;
  beforeEach(async () => {
    fresh.database = await dialect.create();
    fresh.db = createDb(fresh.database.target);
  });
  afterEach(async () => {
    await fresh.db.destroy();
    await fresh.database.cleanup();
  });
  return fresh;
}
