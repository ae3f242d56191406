import type { Redis } from 'ioredis';
import type { EphemeralStore } from './port.js';

/** What is stored: the value with its expiry, so expiry is judged by the caller's clock (a fake one in tests). */
interface Stored {
  value: string;
  expiresAt: number;
}

/**
 * Single-use values in Redis, shared by every instance, under `${prefix}ephemeral:<key>`. `take` is GETDEL
 * (Redis ≥ 6.2), so two instances handling a replayed callback cannot both get the value. The key TTL is the
 * value's lifetime, so values nobody takes disappear on their own; expiry is judged with `now()` (default
 * Date.now).
 */
export function createRedisEphemeralStore(
  redis: Redis,
  options: { prefix: string; now?: () => number },
): EphemeralStore {
  const now = options.now ?? Date.now;
  const keyOf = (key: string): string => `${options.prefix}ephemeral:${key}`;
  const valueOf = (raw: string | null): string | undefined => {
    if (raw === null) return undefined;
    const stored = JSON.parse(raw) as Stored;
    return stored.expiresAt > now() ? stored.value : undefined;
  };

  return {
    async put(key, value, ttlMs) {
      if (!Number.isFinite(ttlMs) || ttlMs <= 0) {
        throw new RangeError(`ttlMs must be a positive number, got ${ttlMs}`);
      }
      const stored: Stored = { value, expiresAt: now() + ttlMs };
      await redis.set(keyOf(key), JSON.stringify(stored), 'PX', Math.max(1, Math.ceil(ttlMs)));
    },

    async take(key) {
      return valueOf(await redis.getdel(keyOf(key)));
    },

    async peek(key) {
      return valueOf(await redis.get(keyOf(key)));
    },

    async delete(key) {
      await redis.del(keyOf(key));
    },
  };
}
