import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createMemoryCounterStore } from '../../src/adapters/counters/memory.js';
import { createRedisCounterStore } from '../../src/adapters/counters/redis.js';
import { createMemoryEphemeralStore } from '../../src/adapters/ephemeral/memory.js';
import { createRedisEphemeralStore } from '../../src/adapters/ephemeral/redis.js';
import { createMemorySessionStore } from '../../src/adapters/session-store/memory.js';
import type { SessionRecord } from '../../src/adapters/session-store/port.js';
import { createRedisSessionStore } from '../../src/adapters/session-store/redis.js';
import { counterStoreContract } from '../contracts/counter-store.contract.js';
import { ephemeralStoreContract } from '../contracts/ephemeral-store.contract.js';
import { sessionStoreContract } from '../contracts/session-store.contract.js';
import { REDIS_URL, describeWithService, probeRedis } from '../helpers/services.js';

const nothingToClean = (): Promise<void> => Promise.resolve();

sessionStoreContract('memory', (clock) =>
  Promise.resolve({ store: createMemorySessionStore({ now: clock.now }), cleanup: nothingToClean }),
);
counterStoreContract('memory', (clock) =>
  Promise.resolve({ store: createMemoryCounterStore({ now: clock.now }), cleanup: nothingToClean }),
);
ephemeralStoreContract('memory', (clock) =>
  Promise.resolve({ store: createMemoryEphemeralStore({ now: clock.now }), cleanup: nothingToClean }),
);

/** A prefix no other test or run shares, so tests can run in parallel against one Redis. */
function uniquePrefix(): string {
  return `test:stores:${randomBytes(8).toString('hex')}:`;
}

/** Deletes every key under the prefix (SCAN, not KEYS, so a busy server is not blocked). */
async function deleteByPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    if (keys.length > 0) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
}

async function keysUnder(redis: Redis, prefix: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    found.push(...keys);
    cursor = next;
  } while (cursor !== '0');
  return found.sort();
}

function connect(): Promise<Redis> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  return redis.connect().then(() => redis);
}

describeWithService('Redis stores', await probeRedis(), () => {
  let redis: Redis;

  beforeAll(async () => {
    redis = await connect();
  });

  afterAll(async () => {
    await redis.quit();
  });

  /** A store under a fresh prefix; cleanup deletes its keys. */
  function underPrefix<T>(build: (prefix: string) => T): Promise<{ store: T; cleanup: () => Promise<void> }> {
    const prefix = uniquePrefix();
    return Promise.resolve({ store: build(prefix), cleanup: () => deleteByPrefix(redis, prefix) });
  }

  sessionStoreContract('redis', (clock) =>
    underPrefix((prefix) => createRedisSessionStore(redis, { prefix, now: clock.now })),
  );
  counterStoreContract('redis', (clock) =>
    underPrefix((prefix) => createRedisCounterStore(redis, { prefix, now: clock.now })),
  );
  ephemeralStoreContract('redis', (clock) =>
    underPrefix((prefix) => createRedisEphemeralStore(redis, { prefix, now: clock.now })),
  );

  describe('keys and their TTLs', () => {
    const START = Date.UTC(2030, 0, 1);
    const MINUTE = 60_000;
    let prefix: string;
    let time: number;
    const now = (): number => time;

    beforeEach(() => {
      prefix = uniquePrefix();
      time = START;
    });

    afterEach(async () => {
      await deleteByPrefix(redis, prefix);
    });

    function session(id: string, overrides: Partial<SessionRecord> = {}): SessionRecord {
      return {
        id,
        secretHash: 'b'.repeat(64),
        userId: 'alice',
        createdAt: START,
        lastAccessedAt: START,
        expiresAt: START + 60 * MINUTE,
        idleTimeoutMs: 30 * MINUTE,
        ipAddress: null,
        userAgent: null,
        data: {},
        ...overrides,
      };
    }

    it('gives a session and its user index the session’s remaining time, capped by absolute expiry', async () => {
      const store = createRedisSessionStore(redis, { prefix, now });
      await store.create(session('s1'), 5);
      expect(await keysUnder(redis, prefix)).toEqual([`${prefix}sess:s1`, `${prefix}user-sess:alice`]);
      expect(await redis.pttl(`${prefix}sess:s1`)).toBeGreaterThan(30 * MINUTE - 5_000);
      expect(await redis.pttl(`${prefix}sess:s1`)).toBeLessThanOrEqual(30 * MINUTE);
      expect(await redis.pttl(`${prefix}user-sess:alice`)).toBeGreaterThan(30 * MINUTE - 5_000);

      // 50 minutes in, the absolute expiry (60) comes before the idle window (50 + 30) ends.
      time += 25 * MINUTE;
      await store.touch('s1', time);
      time += 25 * MINUTE;
      await store.touch('s1', time);
      expect(await redis.pttl(`${prefix}sess:s1`)).toBeLessThanOrEqual(10 * MINUTE);
      expect(await redis.pttl(`${prefix}sess:s1`)).toBeGreaterThan(10 * MINUTE - 5_000);
    });

    it('extends the index TTL when a touch outlives it', async () => {
      const store = createRedisSessionStore(redis, { prefix, now });
      await store.create(session('s1', { expiresAt: START + 8 * 60 * MINUTE }), 5);
      // As if the index had been given the TTL of a session that ends sooner.
      await redis.pexpire(`${prefix}user-sess:alice`, 1_000);
      time += 20 * MINUTE;
      await store.touch('s1', time);
      expect(await redis.pttl(`${prefix}user-sess:alice`)).toBeGreaterThan(30 * MINUTE - 5_000);
    });

    it('deletes the keys of a session found expired by the injected clock', async () => {
      const store = createRedisSessionStore(redis, { prefix, now });
      await store.create(session('s1'), 5);
      time += 30 * MINUTE;
      expect(await store.get('s1')).toBeUndefined();
      expect(await keysUnder(redis, prefix)).toEqual([]);
    });

    it('keeps an eviction as long as the evicted session had left, and deletes it with the user’s sessions', async () => {
      const store = createRedisSessionStore(redis, { prefix, now });
      await store.create(session('s1'), 1);
      time += 10 * MINUTE;
      expect(await store.create(session('s2', { createdAt: time, lastAccessedAt: time }), 1)).toEqual({
        evicted: ['s1'],
      });
      expect(await keysUnder(redis, prefix)).toEqual([
        `${prefix}evicted:s1`,
        `${prefix}sess:s2`,
        `${prefix}user-evicted:alice`,
        `${prefix}user-sess:alice`,
      ]);
      // s1 was last used at the start: its idle window had 20 of its 30 minutes left.
      for (const key of ['evicted:s1', 'user-evicted:alice']) {
        expect(await redis.pttl(`${prefix}${key}`)).toBeLessThanOrEqual(20 * MINUTE);
        expect(await redis.pttl(`${prefix}${key}`)).toBeGreaterThan(20 * MINUTE - 5_000);
      }
      expect(await store.deleteByUser('alice')).toBe(1);
      expect(await keysUnder(redis, prefix)).toEqual([]);
    });

    it('stores the record as JSON beside the fields expiry is judged by', async () => {
      const store = createRedisSessionStore(redis, { prefix, now });
      const record = session('s1', { data: { id_token: 'eyJ.x.y' } });
      await store.create(record, 5);
      const stored = await redis.hgetall(`${prefix}sess:s1`);
      expect(JSON.parse(stored.json!)).toEqual(record);
      expect(stored).toMatchObject({ userId: 'alice', lastAccessedAt: String(START) });
    });

    it('keeps exactly maxPerUser sessions when two instances race on logins', async () => {
      const other = await connect();
      try {
        const stores = [
          createRedisSessionStore(redis, { prefix, now }),
          createRedisSessionStore(other, { prefix, now }),
        ];
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            stores[i % 2]!.create(session(`s${String(i).padStart(2, '0')}`, { createdAt: START + i }), 3),
          ),
        );
        expect(results.flatMap((result) => result.evicted)).toHaveLength(17);
        expect((await stores[0]!.listByUser('alice')).map((record) => record.id)).toEqual(['s17', 's18', 's19']);
        expect(await redis.zcard(`${prefix}user-sess:alice`)).toBe(3);
      } finally {
        await other.quit();
      }
    });

    it('gives a counter the remaining time of its window', async () => {
      const store = createRedisCounterStore(redis, { prefix, now });
      await store.hit('login:alice', 15 * MINUTE);
      time += 10 * MINUTE;
      await store.hit('login:alice', 15 * MINUTE);
      expect(await redis.pttl(`${prefix}counter:login:alice`)).toBeLessThanOrEqual(5 * MINUTE);
      expect(await redis.pttl(`${prefix}counter:login:alice`)).toBeGreaterThan(5 * MINUTE - 5_000);
      await store.peek('never-hit');
      expect(await keysUnder(redis, prefix)).toEqual([`${prefix}counter:login:alice`]);
    });

    it('gives an ephemeral value its ttl and hands it to exactly one of two instances', async () => {
      const other = await connect();
      try {
        const a = createRedisEphemeralStore(redis, { prefix, now });
        const b = createRedisEphemeralStore(other, { prefix, now });
        await a.put('state', 'v', 10 * MINUTE);
        expect(await redis.pttl(`${prefix}ephemeral:state`)).toBeGreaterThan(10 * MINUTE - 5_000);
        const taken = await Promise.all([a.take('state'), b.take('state'), a.take('state'), b.take('state')]);
        expect(taken.filter((value) => value !== undefined)).toEqual(['v']);
        expect(await keysUnder(redis, prefix)).toEqual([]);
      } finally {
        await other.quit();
      }
    });
  });
});
