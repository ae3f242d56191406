import type { Redis } from 'ioredis';
import type { HealthCheck } from '../../ports/health.js';
import { parseRedisInfo, redactRedisUrl } from '../redis/redis.js';

const NAME = 'session_store';
const TIMEOUT_MS = 100;

/** The in-process store lives and dies with the process: there is nothing to reach. */
export function memorySessionStoreHealthCheck(): HealthCheck {
  return {
    name: NAME,
    critical: true,
    timeoutMs: TIMEOUT_MS,
    embedded: true,
    details: { provider: 'memory' },
    run: () => Promise.resolve({ status: 'healthy' }),
  };
}

/** Redis: connected, answers PING, and how many clients and how much memory it has. */
export function redisSessionStoreHealthCheck(redis: Redis, url: string): HealthCheck {
  return {
    name: NAME,
    critical: true,
    timeoutMs: TIMEOUT_MS,
    details: { provider: 'redis', url: redactRedisUrl(url) },
    run: async () => {
      await redis.ping();
      const info = parseRedisInfo(await redis.info());
      const usedMemory = Number(info.used_memory);
      return {
        status: 'healthy',
        details: {
          connected_clients: Number(info.connected_clients),
          used_memory_mb: Number.isFinite(usedMemory) ? Math.round((usedMemory / 1_048_576) * 100) / 100 : null,
          redis_version: info.redis_version,
        },
      };
    },
  };
}
