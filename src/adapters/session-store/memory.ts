import type { EvictedSession, SessionRecord, SessionStore } from './port.js';

/**
 * Entries examined per write by the background-free sweep. A full pass over N entries takes N / SWEEP_BATCH
 * writes, during which at most that many entries are added, so expired sessions that are never read again
 * are still reclaimed and the map stays proportional to the live sessions.
 */
const SWEEP_BATCH = 4;

/** When the session ends by the earlier of its idle window and its absolute expiry (epoch ms). */
function deadlineOf(record: SessionRecord): number {
  return Math.min(record.lastAccessedAt + record.idleTimeoutMs, record.expiresAt);
}

/** Callers get and give copies, so nobody can change a stored session behind the store's back. */
function copyOf(record: SessionRecord): SessionRecord {
  return { ...record, data: { ...record.data } };
}

/** Oldest first by createdAt, ties by id: the order a Redis sorted set scored by createdAt gives. */
function byAge(a: SessionRecord, b: SessionRecord): number {
  if (a.createdAt !== b.createdAt) return a.createdAt - b.createdAt;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/**
 * In-process session store, the default when no Redis is configured. Sessions, and the evictions remembered, live
 * only as long as the process and are not shared between instances. Expiry is judged on every read with `now()`;
 * expired sessions and lapsed evictions nobody reads again are swept a few at a time on writes, so there is no timer
 * and nothing to close.
 */
export function createMemorySessionStore(options: { now?: () => number } = {}): SessionStore {
  const now = options.now ?? Date.now;
  const sessions = new Map<string, SessionRecord>();
  const byUser = new Map<string, Set<string>>();
  /** Evicted sessions, each until the moment it would have ended by itself. */
  const evictions = new Map<string, { record: EvictedSession; until: number }>();
  let cursor: Iterator<[string, SessionRecord]> | undefined;
  let evictionCursor: Iterator<string> | undefined;

  function remove(record: SessionRecord): void {
    sessions.delete(record.id);
    const ids = byUser.get(record.userId);
    ids?.delete(record.id);
    if (ids?.size === 0) byUser.delete(record.userId);
  }

  /** The stored session if it is still live at `at`; a dead one is removed. */
  function live(id: string, at: number): SessionRecord | undefined {
    const record = sessions.get(id);
    if (record === undefined) return undefined;
    if (deadlineOf(record) <= at) {
      remove(record);
      return undefined;
    }
    return record;
  }

  /** The user's live sessions, oldest first, dropping the dead ones on the way. */
  function liveOfUser(userId: string, at: number): SessionRecord[] {
    const records: SessionRecord[] = [];
    for (const id of byUser.get(userId) ?? []) {
      const record = live(id, at);
      if (record !== undefined) records.push(record);
    }
    return records.sort(byAge);
  }

  function sweep(at: number): void {
    for (let examined = 0; examined < SWEEP_BATCH; examined++) {
      cursor ??= sessions.entries();
      const next = cursor.next();
      if (next.done === true) {
        cursor = undefined;
        break;
      }
      // Deleting the entry just visited is safe: Map iterators tolerate deletion.
      live(next.value[0], at);
    }
    for (let examined = 0; examined < SWEEP_BATCH; examined++) {
      evictionCursor ??= evictions.keys();
      const next = evictionCursor.next();
      if (next.done === true) {
        evictionCursor = undefined;
        return;
      }
      evictedAt(next.value, at);
    }
  }

  /** The eviction remembered under `id` if the session would still be live at `at`; a lapsed one is forgotten. */
  function evictedAt(id: string, at: number): EvictedSession | undefined {
    const eviction = evictions.get(id);
    if (eviction === undefined) return undefined;
    if (eviction.until <= at) {
      evictions.delete(id);
      return undefined;
    }
    return eviction.record;
  }

  return {
    create(record, maxPerUser) {
      if (!Number.isInteger(maxPerUser) || maxPerUser < 1) {
        return Promise.reject(new RangeError(`maxPerUser must be a positive integer, got ${maxPerUser}`));
      }
      const at = now();
      sweep(at);
      // Re-creating an id replaces the old session, even one that belonged to another user.
      const previous = sessions.get(record.id);
      if (previous !== undefined) remove(previous);
      evictions.delete(record.id);
      if (deadlineOf(record) <= at) return Promise.resolve({ evicted: [] });

      sessions.set(record.id, copyOf(record));
      let ids = byUser.get(record.userId);
      if (ids === undefined) {
        ids = new Set();
        byUser.set(record.userId, ids);
      }
      ids.add(record.id);

      const userSessions = liveOfUser(record.userId, at);
      const excess = userSessions.slice(0, Math.max(0, userSessions.length - maxPerUser));
      for (const evicted of excess) {
        remove(evicted);
        evictions.set(evicted.id, {
          record: { id: evicted.id, userId: evicted.userId, secretHash: evicted.secretHash, evictedAt: at },
          until: deadlineOf(evicted),
        });
      }
      return Promise.resolve({ evicted: excess.map((evicted) => evicted.id) });
    },

    get(id) {
      const record = live(id, now());
      return Promise.resolve(record === undefined ? undefined : copyOf(record));
    },

    touch(id, at) {
      const record = live(id, now());
      if (record !== undefined && at > record.lastAccessedAt) record.lastAccessedAt = at;
      return Promise.resolve();
    },

    delete(id, owner) {
      const record = sessions.get(id);
      if (record === undefined || (owner !== undefined && record.userId !== owner)) return Promise.resolve(false);
      const wasLive = deadlineOf(record) > now();
      remove(record);
      return Promise.resolve(wasLive);
    },

    listByUser(userId) {
      return Promise.resolve(liveOfUser(userId, now()).map(copyOf));
    },

    deleteByUser(userId) {
      const records = liveOfUser(userId, now());
      for (const record of records) remove(record);
      // Rare (erasure, deactivation), so a walk over the evictions beats keeping a second index per user.
      for (const [id, eviction] of evictions) if (eviction.record.userId === userId) evictions.delete(id);
      return Promise.resolve(records.length);
    },

    evicted(id) {
      const record = evictedAt(id, now());
      return Promise.resolve(record === undefined ? undefined : { ...record });
    },
  };
}
