import { afterAll, beforeAll } from 'vitest';
import type { App } from '../../src/app.js';
import { startTestApp } from './app.js';
import { createUser } from './auth.js';
import { createPostgresDatabase, sharedInstanceEnv } from './services.js';

/** Two instances of one installation, and the settings they share. Set once the suite's `beforeAll` has run. */
export interface TwoInstances {
  a: App;
  b: App;
  /** What both share: a fresh PostgreSQL database, the shared Redis, and `shared`. */
  env: Record<string, string>;
}

/**
 * Registers, in the calling suite, two instances of the service sharing a fresh PostgreSQL database and a Redis
 * key prefix named after `name`, started with `shared` and `each` (settings of these two only, not part of `env`),
 * with `alice` created through A; both are closed and the database dropped after the suite. Call it inside a
 * `describeWithService` body, which skips it where those services are missing.
 */
export function twoInstances(
  name: string,
  shared: Record<string, string> = {},
  each: Record<string, string> = {},
): TwoInstances {
  const instances = {} as TwoInstances;
  let drop: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const database = await createPostgresDatabase();
    drop = database.drop;
    instances.env = { ...sharedInstanceEnv(database.url, name), ...shared };
    instances.a = await startTestApp({ ...instances.env, ...each });
    instances.b = await startTestApp({ ...instances.env, ...each });
    await createUser(instances.a, 'alice');
  }, 60_000);
  afterAll(async () => {
    await instances.a?.close();
    await instances.b?.close();
    await drop?.();
  });
  return instances;
}
