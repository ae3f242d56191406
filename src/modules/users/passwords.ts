import { hash, verify } from '@node-rs/argon2';

/**
 * Passwords are hashed with argon2id (memory-hard, per-hash random salt, PHC string with its parameters, so they
 * can be raised later without breaking old hashes).
 */
export const MIN_PASSWORD_LENGTH = 8;
/** Long enough for any passphrase, short enough that hashing cannot be used to burn CPU. */
export const MAX_PASSWORD_LENGTH = 1024;

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
