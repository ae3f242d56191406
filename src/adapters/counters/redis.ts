import type { Redis } from 'ioredis';
import type { CounterStore } from './port.js';

/*
 * KEYS: the counter hash {count, resetAt}. ARGV: now, resetAt of a window starting now.
 * The window end is kept in the hash rather than left to the key TTL so that it is judged by the caller's
 * clock (a fake one in tests) and a hit can restart it atomically. The TTL follows the same remaining time, so
 * keys nobody hits again disappear on their own.
 */
const HIT = `
local now = tonumber(ARGV[1])
local reset_at = redis.call('HGET', KEYS[1], 'resetAt')
local count
if reset_at and tonumber(reset_at) > now then
  count = redis.call('HINCRBY', KEYS[1], 'count', 1)
else
  reset_at = ARGV[2]
  count = 1
  redis.call('HSET', KEYS[1], 'count', 1, 'resetAt', reset_at)
end
redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil(tonumber(reset_at) - now)))
return {count, reset_at}
`;

/**
 * Fixed-window counters in Redis, shared by every instance. Keys are `${prefix}counter:<key>`, each a hash
 * {count, resetAt} updated by one atomic Lua script per hit. Windows end by `now()` (default Date.now).
 */
export function createRedisCounterStore(redis: Redis, options: { prefix: string; now?: () => number }): CounterStore {
  const now = options.now ?? Date.now;
  const keyOf = (key: string): string => `${options.prefix}counter:${key}`;

  return {
    async hit(key, windowMs) {
      if (!Number.isFinite(windowMs) || windowMs <= 0) {
        throw new RangeError(`windowMs must be a positive number, got ${windowMs}`);
      }
      const at = now();
      // A short script: EVAL's cost of sending it each time is not worth a SHA cache here.
      const [count, resetAt] = (await redis.eval(HIT, 1, keyOf(key), at, at + windowMs)) as [number, string];
      return { count, resetAt: Number(resetAt) };
    },

    async peek(key) {
      const at = now();
      const [count, resetAt] = await redis.hmget(keyOf(key), 'count', 'resetAt');
      if (count === null || resetAt === null || Number(resetAt) <= at) return { count: 0, resetAt: at };
      return { count: Number(count), resetAt: Number(resetAt) };
    },

    async reset(key) {
      await redis.del(keyOf(key));
    },
  };
}
