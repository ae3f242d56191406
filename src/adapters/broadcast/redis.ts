import type { Redis } from 'ioredis';
import type { RedisOutage } from '../redis/outage.js';
import type { Broadcast } from './port.js';

/**
 * Broadcast through Redis pub/sub: one subscriber connection per process (a subscribed connection can do nothing
 * else), channels under the service's key prefix. Publishing goes through the outage breaker (503 while Redis is
 * away); the subscriber reconnects and subscribes again by itself.
 */
export function createRedisBroadcast(redis: Redis, options: { prefix: string; outage: RedisOutage }): Broadcast {
  const subscriber = redis.duplicate({ lazyConnect: true });
  subscriber.on('error', () => undefined); // the main connection reports outages
  const listeners = new Map<string, Set<(message: string) => void>>();
  const name = (channel: string) => `${options.prefix}bus:${channel}`;
  let connecting: Promise<void> | undefined;

  subscriber.on('message', (channel: string, message: string) => {
    for (const listener of listeners.get(channel) ?? []) listener(message);
  });

  const ensureConnected = () => {
    connecting ??= subscriber.connect().catch(() => {
      connecting = undefined;
    });
    return connecting;
  };

  return {
    publish: async (channel, message) => {
      await options.outage.run(() => redis.publish(name(channel), message));
    },
    subscribe(channel, listener) {
      const key = name(channel);
      let set = listeners.get(key);
      if (!set) {
        listeners.set(key, (set = new Set()));
        void ensureConnected().then(() => subscriber.subscribe(key).catch(() => undefined));
      }
      set.add(listener);
      return () => {
        set.delete(listener);
        if (set.size === 0) {
          listeners.delete(key);
          void subscriber.unsubscribe(key).catch(() => undefined);
        }
      };
    },
    async close() {
      listeners.clear();
      await subscriber.quit().catch(() => subscriber.disconnect());
    },
  };
}
