import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import { describe, it } from 'vitest';

/**
 * Services this machine runs for the tests. A suite that needs one skips (saying why) where it is missing,
 * and fails under CI=true, where a missing service is a broken machine rather than a laptop.
 */
export const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface Availability {
  available: boolean;
  reason: string;
}

export async function probePostgres(): Promise<Availability> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    await client.query('select 1');
    return { available: true, reason: '' };
  } catch (err) {
    return { available: false, reason: `PostgreSQL not reachable at ${POSTGRES_URL}: ${(err as Error).message}` };
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function probeRedis(): Promise<Availability> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 2_000, maxRetriesPerRequest: 0 });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.ping();
    return { available: true, reason: '' };
  } catch (err) {
    return { available: false, reason: `Redis not reachable at ${REDIS_URL}: ${(err as Error).message}` };
  } finally {
    redis.disconnect();
  }
}

/** `describe` for a suite that needs a service: runs, skips with the reason, or (under CI) fails. */
/** PostgreSQL and Redis both, as several instances share them: the first one missing is the reason to skip. */
export async function probePostgresAndRedis(): Promise<Availability> {
  const postgres = await probePostgres();
  return postgres.available ? probeRedis() : postgres;
}

/**
 * The settings every instance of one deployment shares: the database, Redis under a prefix of its own, and the key
 * that opens the signing keys stored in the database.
 */
export function sharedInstanceEnv(databaseUrl: string, name: string): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    REDIS_URL,
    REDIS_PREFIX: `${name}-${randomBytes(4).toString('hex')}:`,
    KEY_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  };
}

export function describeWithService(name: string, availability: Availability, suite: () => void): void {
  if (availability.available) {
    describe(name, suite);
  } else if (process.env.CI === 'true') {
    describe(name, () => {
      it('has the service it needs (required under CI)', () => {
        throw new Error(availability.reason);
      });
    });
  } else {
    describe.skip(`${name} — skipped: ${availability.reason}`, suite);
  }
}

/** Runs one statement as the test server's administrator (creating and dropping databases). */
export async function postgresAdmin(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/** A name and URL for a fresh PostgreSQL database (empty, or `migrated`), created and dropped when the caller says. */
export function postgresDatabaseName(options: { migrated?: boolean } = {}): {
  url: string;
  create: () => Promise<void>;
  drop: () => Promise<void>;
} {
  const name = `agent_test_${randomBytes(6).toString('hex')}`;
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  // `migrated`: a copy of the run's migrated template when there is one (test/setup/postgres-template.ts).
  const template = options.migrated ? process.env.TEST_POSTGRES_TEMPLATE : undefined;
  const create = async () => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await postgresAdmin(`create database ${name}${template ? ` template ${template}` : ''}`);
      } catch (error) {
        // Two copies of one template at the same moment: PostgreSQL refuses the second; it tries again.
        if (!template || attempt >= 20 || !/being accessed by other users/.test(String(error))) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 100));
      }
    }
  };
  return {
    url: url.toString(),
    create,
    drop: () => postgresAdmin(`drop database if exists ${name} with (force)`),
  };
}

/**
 * A fresh PostgreSQL database for one suite, so suites can run in parallel; dropped afterwards. Empty, or `migrated`
 * (see `postgresDatabaseName`).
 */
export async function createPostgresDatabase(
  options: { migrated?: boolean } = {},
): Promise<{ url: string; drop: () => Promise<void> }> {
  const database = postgresDatabaseName(options);
  await database.create();
  return { url: database.url, drop: database.drop };
}
