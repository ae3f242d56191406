import type * as Argon2 from '@node-rs/argon2';
import { vi } from 'vitest';

/**
 * Passwords in the apps the tests run in-process are hashed with argon2id at a small cost. At the production cost
 * (19 MiB, two passes) each hash and each check takes a core for tens of milliseconds, and the suite hashes or
 * checks about four passwords a test (a bootstrap administrator per app, each user created and signed in): some
 * two minutes of every run, spent proving nothing about the tests' subjects.
 *
 * Only the cost changes. The hashes are still argon2id with a random salt in a PHC string, checked by the same
 * `verify`, which reads the cost from the string; a cost the service passes explicitly is kept. The service run as
 * its own process (test/helpers/service-process.ts) is not affected, so the command line still hashes at the
 * production cost.
 */
const TEST_COST = { memoryCost: 256, timeCost: 1 } as const;

vi.mock('@node-rs/argon2', async (importOriginal) => {
  const argon2 = await importOriginal<typeof Argon2>();
  return {
    ...argon2,
    hash: (...[password, options, signal]: Parameters<typeof argon2.hash>) =>
      argon2.hash(password, { ...TEST_COST, ...options }, signal),
  };
});
