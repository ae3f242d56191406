import { createRequire } from 'node:module';
import type * as IORedis from 'ioredis';
import type { Redis } from 'ioredis';
import type { Logger } from '../../logger.js';

/** The URL without its password, for logs and health details. */
export function redactRedisUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}

/**
 * One Redis connection for the process (sessions, rate limits, fan-out). Commands fail at once while the
 * server is unreachable instead of queueing, so callers and health checks see the outage; ioredis keeps
 * reconnecting in the background.
 */
export function createRedisClient(url: string, logger: Logger): Redis {
  // Loaded only when Redis is configured: the embedded defaults never need the client.
  const { Redis: Client } = createRequire(import.meta.url)('ioredis') as typeof IORedis;
  const redis = new Client(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    // A server that accepts connections but never answers must not hang callers.
    commandTimeout: 2_000,
    // Reconnect soon after the server returns (within a second), at the cost of one connection attempt a second
    // while it is away.
    retryStrategy: (attempt) => Math.min(attempt * 100, 1_000),
  });
  let down = false;
  redis.on('error', (err: Error) => {
    // Reconnection repeats the same error every few hundred ms; say it once per outage.
    if (down) return;
    down = true;
    logger.warn({ err, redis: redactRedisUrl(url) }, 'redis unavailable');
  });
  redis.on('ready', () => {
    if (down) logger.info({ redis: redactRedisUrl(url) }, 'redis reconnected');
    down = false;
  });
  return redis;
}

/** Connects, giving up after `timeoutMs` (ioredis goes on retrying in the background). */
export async function connectWithin(redis: Redis, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      redis.connect(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Fields of `INFO` output (`name:value` lines). */
export function parseRedisInfo(info: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of info.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) fields[line.slice(0, colon)] = line.slice(colon + 1).trim();
  }
  return fields;
}
