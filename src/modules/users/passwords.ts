import { availableParallelism } from 'node:os';
import { hash as argon2Hash, verify as argon2Verify } from '@node-rs/argon2';

/**
 * Passwords are hashed with argon2id (memory-hard, per-hash random salt, PHC string with its parameters, so they
 * can be raised later without breaking old hashes).
 */
export const MIN_PASSWORD_LENGTH = 8;
/** Long enough for any passphrase, short enough that hashing cannot be used to burn CPU. */
export const MAX_PASSWORD_LENGTH = 1024;

/**
 * Runs at most `size` pieces of work at a time; the rest wait their turn, first come first served.
 */
export function concurrencyLimit(size: number): <T>(work: () => Promise<T>) => Promise<T> {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (work) => {
    if (running >= size) await new Promise<void>((resolve) => waiting.push(resolve));
    else running += 1;
    try {
      return await work();
    } finally {
      // The slot passes straight to the next in line, if any.
      const next = waiting.shift();
      if (next) next();
      else running -= 1;
    }
  };
}

/**
 * At most one hash per core at a time. Each argon2id hash is a core's work over 19 MiB for a few milliseconds: run
 * more at once (libuv's pool has more threads than there are cores) and they only evict each other's memory from
 * the caches and take the event loop's core away from every other request.
 */
const inHashingSlot = concurrencyLimit(Math.max(1, availableParallelism()));
const hash = (password: string) => inHashingSlot(() => argon2Hash(password));
const verify = (stored: string, password: string) => inHashingSlot(() => argon2Verify(stored, password));

export function hashPassword(password: string): Promise<string> {
  return hash(password);
}

let dummyHash: Promise<string> | undefined;

/**
 * Checks a password against a stored hash. With no hash (unknown user, SSO-only user) it still spends the time
 * of a real verification, so a response's timing does not tell whether the account exists.
 */
export async function checkPassword(stored: string | null | undefined, password: string): Promise<boolean> {
  if (password.length > MAX_PASSWORD_LENGTH) return false;
  if (!stored) {
    dummyHash ??= hash('dummy password that matches nothing');
    await verify(await dummyHash, password).catch(() => false);
    return false;
  }
  return verify(stored, password).catch(() => false);
}
