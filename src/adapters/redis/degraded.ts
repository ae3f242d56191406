import type { CounterStore } from '../counters/port.js';
import { createMemoryCounterStore } from '../counters/memory.js';
import type { EphemeralStore } from '../ephemeral/port.js';
import type { SessionRecord, SessionStore } from '../session-store/port.js';
import { RedisUnavailableError, type RedisOutage } from './outage.js';

/** Sessions kept in memory to stand in for Redis during an outage (the most recently read first). */
const LAST_KNOWN_LIMIT = 10_000;

export interface DegradedSessionOptions {
  /** How long into an outage a session read before it may still vouch for an access token; 0: never (fail closed). */
  graceMs: number;
  now: () => number;
}

/**
 * The Redis session store, for an outage: every call goes through the breaker (503, never a 500), and the sessions
 * last read are remembered so that, for `graceMs` into an outage, a valid access token whose session was live is
 * still accepted (`get(id, { staleOk: true })`: a logout or revocation made elsewhere meanwhile is seen when Redis is
 * back). Cookies, logins and every write answer 503. Recording a session's use is best-effort.
 */
export function degradableSessionStore(
  inner: SessionStore,
  outage: RedisOutage,
  options: DegradedSessionOptions,
): SessionStore {
  const lastKnown = new Map<string, SessionRecord>();
  const remember = (id: string, record: SessionRecord | undefined) => {
    lastKnown.delete(id);
    if (!record) return;
    lastKnown.set(id, record);
    if (lastKnown.size > LAST_KNOWN_LIMIT) lastKnown.delete(lastKnown.keys().next().value!);
  };
  return {
    async create(record, maxPerUser) {
      const created = await outage.run(() => inner.create(record, maxPerUser));
      remember(record.id, record);
      for (const id of created.evicted) lastKnown.delete(id);
      return created;
    },
    async get(id, read) {
      try {
        const record = await outage.run(() => inner.get(id));
        remember(id, record);
        return record;
      } catch (error) {
        const known = lastKnown.get(id);
        const usable = read?.staleOk && known && known.expiresAt > options.now();
        if (error instanceof RedisUnavailableError && usable && outage.withinGrace(options.graceMs)) return known;
        throw error;
      }
    },
    async touch(id, at) {
      const known = lastKnown.get(id);
      if (known) known.lastAccessedAt = at;
      await outage
        .run(() => inner.touch(id, at))
        .catch((error: unknown) => {
          if (!(error instanceof RedisUnavailableError)) throw error;
        });
    },
    async delete(id, owner) {
      const deleted = await outage.run(() => inner.delete(id, owner));
      if (owner === undefined || deleted) lastKnown.delete(id);
      return deleted;
    },
    listByUser: (userId) => outage.run(() => inner.listByUser(userId)),
    async deleteByUser(userId) {
      for (const [id, record] of lastKnown) if (record.userId === userId) lastKnown.delete(id);
      return outage.run(() => inner.deleteByUser(userId));
    },
    // Asked only once a credential's session is gone: in an outage that cannot be told, so 503 like the read.
    evicted: (id) => outage.run(() => inner.evicted(id)),
    epoch: () => outage.connections,
  };
}

/**
 * Rate limits and login throttling in Redis, falling back to counters in this process while Redis is unreachable:
 * limits keep holding (per instance) instead of failing every request.
 */
export function degradableCounterStore(inner: CounterStore, outage: RedisOutage, now: () => number): CounterStore {
  const local = createMemoryCounterStore({ now });
  const either = <T>(remote: () => Promise<T>, fallback: () => Promise<T>) =>
    outage.run(remote).catch((error: unknown) => {
      if (error instanceof RedisUnavailableError) return fallback();
      throw error;
    });
  return {
    hit: (key, windowMs) =>
      either(
        () => inner.hit(key, windowMs),
        () => local.hit(key, windowMs),
      ),
    peek: (key) =>
      either(
        () => inner.peek(key),
        () => local.peek(key),
      ),
    reset: async (key) => {
      await local.reset(key);
      await either(
        () => inner.reset(key),
        () => Promise.resolve(),
      );
    },
  };
}

/** Single-use values (sign-in state in flight): there is nothing to stand in with, so an outage is a 503. */
export function degradableEphemeralStore(inner: EphemeralStore, outage: RedisOutage): EphemeralStore {
  return {
    put: (key, value, ttlMs) => outage.run(() => inner.put(key, value, ttlMs)),
    take: (key) => outage.run(() => inner.take(key)),
    peek: (key) => outage.run(() => inner.peek(key)),
    delete: (key) => outage.run(() => inner.delete(key)),
  };
}
