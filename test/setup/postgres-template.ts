import { randomBytes } from 'node:crypto';
import { createDb } from '../../src/db/create-db.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { POSTGRES_URL, postgresAdmin, probePostgres } from '../helpers/services.js';

/**
 * Databases that start migrated are copies of one migrated template, about half the time of migrating each:
 * with TEST_DATABASE=postgres every test app gets one, and in every run the suites that run on each dialect
 * (`createMigrated`) do. The template holds the schema only (no bootstrap administrator, no keys), so a copy starts
 * as a fresh installation would. Without PostgreSQL there is none (those suites skip, or fail under CI). Vitest
 * runs `setup` once before the suite and `teardown` after it.
 */
let template: string | undefined;

export async function setup(): Promise<void> {
  if (process.env.TEST_DATABASE !== 'postgres' && !(await probePostgres()).available) return;
  const name = `agent_template_${randomBytes(4).toString('hex')}`;
  await postgresAdmin(`create database ${name}`);
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  const db = createDb({ dialect: 'postgres', connectionString: url.toString() });
  try {
    await migrateToLatest(db);
  } finally {
    await db.destroy();
  }
  process.env.TEST_POSTGRES_TEMPLATE = template = name;
}

export async function teardown(): Promise<void> {
  if (template) await postgresAdmin(`drop database if exists ${template} with (force)`);
}
