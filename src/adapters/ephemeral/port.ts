/**
 * Short-lived values: single-use ones (the state, nonce and PKCE verifier of an SSO login in flight), which `take`
 * reads and deletes atomically so a replayed callback finds nothing, and shared ones read with `peek` (an MCP
 * session's record, which any instance may need while the session lives).
 * Implementations: in-process (`memory.ts`) and Redis (`redis.ts`); both pass
 * `test/contracts/ephemeral-store.contract.ts`.
 */
export interface EphemeralStore {
  put(key: string, value: string, ttlMs: number): Promise<void>;
  /** The value, deleted in the same step; undefined when missing, expired or already taken. */
  take(key: string): Promise<string | undefined>;
  /** The value, left in place; undefined when missing or expired. */
  peek(key: string): Promise<string | undefined>;
  /** Removes the value, if any. */
  delete(key: string): Promise<void>;
}
