import type { Redis } from 'ioredis';
import type { HealthCheck } from '../../ports/health.js';
import type { RedisOutage } from '../redis/outage.js';
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

/**
 * Redis: connected, answers PING, and how many clients and how much memory it has. Unreachable is `degraded` while
 * the service still serves access tokens on what it last saw (the outage's grace period), else unhealthy.
 */
export function redisSessionStoreHealthCheck(
  redis: Redis,
  url: string,
  outage?: { breaker: RedisOutage; graceSeconds: number },
): HealthCheck {
  return {
    name: NAME,
    critical: true,
    timeoutMs: TIMEOUT_MS,
    details: { provider: 'redis', url: redactRedisUrl(url) },
    run: async () => {
      try {
        await (outage ? outage.breaker.run(() => redis.ping()) : redis.ping());
      } catch (error) {
        if (!outage?.breaker.withinGrace(outage.graceSeconds * 1000)) throw error;
        return {
          status: 'degraded',
          message:
            `unreachable: access tokens are honoured for ${outage.graceSeconds} s of the outage; ` +
            'logins and sessions answer 503',
        };
      }
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
