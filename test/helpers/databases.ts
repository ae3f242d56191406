import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DatabaseTarget } from '../../src/config.js';
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
  create: () => Promise<TestDatabase>;
}

const sqlite: Dialect = {
  name: 'sqlite',
  availability: { available: true, reason: '' },
  create: () => {
    // A file, not :memory:, so the suite also covers WAL and reopening.
    const filename = join(mkdtempSync(join(tmpdir(), 'agent-db-')), 'agent.db');
    return Promise.resolve({
      target: { dialect: 'sqlite', filename },
      url: `sqlite:${filename}`,
      cleanup: () => Promise.resolve(),
    });
  },
};

const postgres: Dialect = {
  name: 'postgres',
  availability: await probePostgres(),
  create: async () => {
    const { url, drop } = await createPostgresDatabase();
    return { target: { dialect: 'postgres', connectionString: url }, url, cleanup: drop };
  },
};

/** Every dialect the store must work on; store suites run once per entry. */
export const DIALECTS: Dialect[] = [sqlite, postgres];
