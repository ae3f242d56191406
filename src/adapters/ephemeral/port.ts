/**
 * Short-lived, single-use values (the state, nonce and PKCE verifier of an SSO login in flight). A value can be
 * taken once: `take` reads and deletes it atomically, so a replayed callback finds nothing.
 * Implementations: in-process (`memory.ts`) and Redis (`redis.ts`); both pass
 * `test/contracts/ephemeral-store.contract.ts`.
 */
export interface EphemeralStore {
  put(key: string, value: string, ttlMs: number): Promise<void>;
  /** The value, deleted in the same step; undefined when missing, expired or already taken. */
  take(key: string): Promise<string | undefined>;
}
