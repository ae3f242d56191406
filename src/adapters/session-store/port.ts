/**
 * Server-side login sessions. Every login creates one — in session mode it is what the `session_id` cookie
 * names, in token mode it is the family its refresh tokens belong to — so that logout, revocation and the
 * concurrent-session limit work the same way in both modes.
 *
 * Implementations: in-process (`memory.ts`, the default) and Redis (`redis.ts`). Both pass
 * `test/contracts/session-store.contract.ts`.
 */
export interface SessionRecord {
  /** Public, non-secret id: listed by GET /auth/sessions and used to revoke. */
  id: string;
  /** SHA-256 (hex) of the secret half of the session credential; the secret itself is never stored. */
  secretHash: string;
  userId: string;
  /** Epoch milliseconds. */
  createdAt: number;
  lastAccessedAt: number;
  /** Absolute expiry (epoch ms): the session ends then, however active it is. */
  expiresAt: number;
  /** The session ends when not used for this long. */
  idleTimeoutMs: number;
  ipAddress: string | null;
  userAgent: string | null;
  /** Small string facts kept with the session (e.g. the identity provider's id_token for SSO logout). */
  data: Record<string, string>;
}

/**
 * What the store remembers of a session `create` evicted, until the session would have ended anyway: enough for
 * any instance to tell a credential of an evicted session ("sign in again; you signed in elsewhere") from one that
 * was revoked, expired or never existed. No secret: only the hash the session itself kept.
 */
export interface EvictedSession {
  id: string;
  userId: string;
  /** The evicted session's `secretHash`, so that only a holder of its credential learns it was evicted. */
  secretHash: string;
  /** Epoch milliseconds. */
  evictedAt: number;
}

export interface SessionStore {
  /**
   * Stores a new session. If the user then has more than `maxPerUser` live sessions, the oldest (by createdAt)
   * are deleted; their ids are returned, and each is remembered as evicted (see `evicted`) until it would have
   * ended by itself. Re-creating an id forgets that it was evicted.
   */
  create(record: SessionRecord, maxPerUser: number): Promise<{ evicted: string[] }>;
  /**
   * A live session by id. `staleOk`: the caller (an access token's check) may be answered from what this instance
   * last read, when the store is unreachable and the operator allows it for a while.
   */
  get(id: string, read?: { staleOk?: boolean }): Promise<SessionRecord | undefined>;
  /** Records use at `at` (epoch ms), extending the idle window but never past the absolute expiry. */
  touch(id: string, at: number): Promise<void>;
  /**
   * Deletes a session; false when there was none. With `owner`, only a session of that user is deleted, in the
   * same step as the check: another user's session is left as it is and answers false.
   */
  delete(id: string, owner?: string): Promise<boolean>;
  /** The user's live sessions, oldest first. */
  listByUser(userId: string): Promise<SessionRecord[]>;
  /** Deletes every session of the user, and forgets which of theirs were evicted; returns how many were live. */
  deleteByUser(userId: string): Promise<number>;
  /**
   * The session `create` evicted under this id, while it would still have been live (its idle window and absolute
   * expiry as they stood at eviction); undefined for any other id. Deleting a session does not forget this.
   */
  evicted(id: string): Promise<EvictedSession | undefined>;
  /**
   * Changes whenever the store may have lost sessions without being told (a new connection to a Redis server, which
   * may have restarted empty): a caller that keeps sessions it read for a while drops those read before a change.
   * Absent for a store that cannot lose them (the in-process one).
   */
  readonly epoch?: () => number;
}
