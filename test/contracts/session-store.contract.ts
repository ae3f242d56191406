import { describe, expect, it } from 'vitest';
import { CONTRACT_START, type StoreFactory, freshStorePerTest } from './harness.js';
import type { SessionRecord, SessionStore } from '../../src/adapters/session-store/port.js';

const START = CONTRACT_START;
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const IDLE = 30 * MINUTE;
const LIFETIME = 8 * HOUR;

/**
 * What every SessionStore must do. `make` builds a fresh, empty store whose `now()` is the given clock; the
 * clock starts at 2030-01-01 and only moves when a test advances it.
 */
export function sessionStoreContract(name: string, make: StoreFactory<SessionStore>): void {
  describe(`${name} (SessionStore contract)`, () => {
    let store!: SessionStore;
    let seq = 0;
    const clock = freshStorePerTest(make, (made) => {
      store = made;
      seq = 0;
    });

    /** A session created now, live for IDLE idle and LIFETIME in all; ids sort in creation order. */
    function session(overrides: Partial<SessionRecord> = {}): SessionRecord {
      seq += 1;
      const createdAt = overrides.createdAt ?? clock.now();
      return {
        id: `s${String(seq).padStart(3, '0')}`,
        secretHash: 'a'.repeat(64),
        userId: 'alice',
        createdAt,
        lastAccessedAt: createdAt,
        expiresAt: createdAt + LIFETIME,
        idleTimeoutMs: IDLE,
        ipAddress: '203.0.113.7',
        userAgent: 'Mozilla/5.0 (X11; Linux x86_64) ☃',
        data: { id_token: 'eyJ.x.y', provider: 'oidc' },
        ...overrides,
      };
    }

    async function ids(userId: string): Promise<string[]> {
      return (await store.listByUser(userId)).map((record) => record.id);
    }

    it('stores a session and reads back exactly what was stored', async () => {
      const record = session({ ipAddress: null, userAgent: null, data: {} });
      const other = session();
      expect(await store.create(record, 5)).toEqual({ evicted: [] });
      expect(await store.create(other, 5)).toEqual({ evicted: [] });
      expect(await store.get(record.id)).toEqual(record);
      expect(await store.get(other.id)).toEqual(other);
    });

    it('returns undefined for an unknown id', async () => {
      expect(await store.get('nope')).toBeUndefined();
    });

    it('hands out copies: changing a returned record does not change the stored session', async () => {
      const record = session();
      await store.create(record, 5);
      record.data.provider = 'changed';
      const read = await store.get(record.id);
      read!.lastAccessedAt = 0;
      read!.data.extra = 'x';
      expect(await store.get(record.id)).toEqual(session({ id: record.id }));
    });

    it('ends a session exactly when it has been idle for idleTimeoutMs', async () => {
      const record = session();
      await store.create(record, 5);
      clock.advance(IDLE - 1);
      expect(await store.get(record.id)).toEqual(record);
      clock.advance(1);
      expect(await store.get(record.id)).toBeUndefined();
      expect(await store.listByUser('alice')).toEqual([]);
    });

    it('touch records use, extending the idle window', async () => {
      const record = session();
      await store.create(record, 5);
      clock.advance(20 * MINUTE);
      await store.touch(record.id, clock.now());
      clock.advance(20 * MINUTE);
      expect(await store.get(record.id)).toEqual({ ...record, lastAccessedAt: START + 20 * MINUTE });
      clock.advance(IDLE - 20 * MINUTE);
      expect(await store.get(record.id)).toBeUndefined();
    });

    it('touch never moves lastAccessedAt backwards', async () => {
      const record = session();
      await store.create(record, 5);
      clock.advance(10 * MINUTE);
      await store.touch(record.id, START + 10 * MINUTE);
      await store.touch(record.id, START + 5 * MINUTE);
      expect((await store.get(record.id))?.lastAccessedAt).toBe(START + 10 * MINUTE);
      clock.advance(IDLE - 1);
      expect(await store.get(record.id)).toBeDefined();
    });

    it('ends a session at its absolute expiry however recently it was used', async () => {
      const record = session({ expiresAt: START + HOUR });
      await store.create(record, 5);
      for (let elapsed = 0; elapsed < HOUR - 10 * MINUTE; elapsed += 10 * MINUTE) {
        clock.advance(10 * MINUTE);
        await store.touch(record.id, clock.now());
      }
      clock.advance(9 * MINUTE);
      await store.touch(record.id, clock.now());
      expect(await store.get(record.id)).toBeDefined();
      clock.advance(MINUTE);
      expect(clock.now()).toBe(record.expiresAt);
      await store.touch(record.id, clock.now());
      expect(await store.get(record.id)).toBeUndefined();
      expect(await store.listByUser('alice')).toEqual([]);
    });

    it('touching a missing or expired session is a no-op', async () => {
      await store.touch('nope', clock.now());
      expect(await store.get('nope')).toBeUndefined();
      const record = session();
      await store.create(record, 5);
      clock.advance(IDLE);
      await store.touch(record.id, clock.now());
      expect(await store.get(record.id)).toBeUndefined();
      expect(await store.listByUser('alice')).toEqual([]);
    });

    it('deletes a session once: true, then false', async () => {
      const record = session();
      const kept = session();
      await store.create(record, 5);
      await store.create(kept, 5);
      expect(await store.delete(record.id)).toBe(true);
      expect(await store.delete(record.id)).toBe(false);
      expect(await store.get(record.id)).toBeUndefined();
      expect(await ids('alice')).toEqual([kept.id]);
      expect(await store.delete('nope')).toBe(false);
    });

    it("deletes a session given its owner, and leaves another user's session as it is", async () => {
      const record = session();
      await store.create(record, 5);
      expect(await store.delete(record.id, 'mallory')).toBe(false);
      expect(await store.get(record.id)).toMatchObject({ id: record.id, userId: 'alice' });
      expect(await ids('alice')).toEqual([record.id]);
      expect(await store.delete(record.id, 'alice')).toBe(true);
      expect(await store.get(record.id)).toBeUndefined();
      expect(await store.delete('nope', 'alice')).toBe(false);
    });

    it('reports false when deleting a session that has already expired', async () => {
      const record = session();
      await store.create(record, 5);
      clock.advance(IDLE);
      expect(await store.delete(record.id)).toBe(false);
    });

    it("lists a user's live sessions oldest first, and only that user's", async () => {
      const middle = session({ createdAt: START - 2 * MINUTE });
      const newest = session({ createdAt: START - MINUTE });
      const oldest = session({ createdAt: START - 3 * MINUTE });
      const bobs = session({ userId: 'bob' });
      for (const record of [middle, newest, oldest, bobs]) await store.create(record, 5);
      expect(await store.listByUser('alice')).toEqual([oldest, middle, newest]);
      expect(await store.listByUser('bob')).toEqual([bobs]);
      expect(await store.listByUser('carol')).toEqual([]);
    });

    it('leaves expired sessions out of the list and keeps the live ones', async () => {
      const stale = session();
      await store.create(stale, 5);
      clock.advance(20 * MINUTE);
      const fresh = session();
      await store.create(fresh, 5);
      clock.advance(10 * MINUTE);
      expect(await ids('alice')).toEqual([fresh.id]);
      expect(await store.get(fresh.id)).toEqual(fresh);
    });

    it('deletes every session of a user, counts them, and leaves other users alone', async () => {
      const a1 = session();
      const a2 = session();
      const b1 = session({ userId: 'bob' });
      for (const record of [a1, a2, b1]) await store.create(record, 5);
      expect(await store.deleteByUser('alice')).toBe(2);
      expect(await store.get(a1.id)).toBeUndefined();
      expect(await store.get(a2.id)).toBeUndefined();
      expect(await store.listByUser('alice')).toEqual([]);
      expect(await store.get(b1.id)).toEqual(b1);
      expect(await store.deleteByUser('alice')).toBe(0);
    });

    it('does not count expired sessions when deleting by user', async () => {
      await store.create(session(), 5);
      clock.advance(20 * MINUTE);
      await store.create(session(), 5);
      clock.advance(10 * MINUTE);
      expect(await store.deleteByUser('alice')).toBe(1);
    });

    it('evicts the oldest session by createdAt beyond maxPerUser and returns its id', async () => {
      const records = [
        session({ createdAt: START + 2 }),
        session({ createdAt: START }),
        session({ createdAt: START + 1 }),
      ];
      for (const record of records) expect(await store.create(record, 3)).toEqual({ evicted: [] });
      const fourth = session({ createdAt: START + 3 });
      expect(await store.create(fourth, 3)).toEqual({ evicted: [records[1]!.id] });
      expect(await store.get(records[1]!.id)).toBeUndefined();
      expect(await ids('alice')).toEqual([records[2]!.id, records[0]!.id, fourth.id]);
    });

    it('evicts as many as needed when the limit is lower than the sessions held', async () => {
      const records = Array.from({ length: 4 }, (_, i) => session({ createdAt: START + i }));
      for (const record of records) await store.create(record, 10);
      const fifth = session({ createdAt: START + 10 });
      expect(await store.create(fifth, 2)).toEqual({ evicted: records.slice(0, 3).map((r) => r.id) });
      expect(await ids('alice')).toEqual([records[3]!.id, fifth.id]);
    });

    it('counts only live sessions against the limit', async () => {
      const stale = session();
      await store.create(stale, 2);
      clock.advance(20 * MINUTE);
      const live = session();
      await store.create(live, 2);
      clock.advance(10 * MINUTE);
      const latest = session();
      expect(await store.create(latest, 2)).toEqual({ evicted: [] });
      expect(await ids('alice')).toEqual([live.id, latest.id]);
    });

    it('keeps exactly maxPerUser sessions, the newest, when logins race', async () => {
      const records = Array.from({ length: 12 }, (_, i) => session({ createdAt: START + i }));
      // Shuffled so arrival order differs from creation order.
      const arrival = [5, 0, 11, 3, 8, 1, 10, 2, 7, 4, 9, 6].map((i) => records[i]!);
      const results = await Promise.all(arrival.map((record) => store.create(record, 3)));
      const evicted = results.flatMap((result) => result.evicted);
      expect(new Set(evicted).size).toBe(evicted.length);
      expect(evicted.sort()).toEqual(records.slice(0, 9).map((record) => record.id));
      expect(await ids('alice')).toEqual(records.slice(9).map((record) => record.id));
    });

    it("never evicts another user's sessions", async () => {
      const bobs = [session({ userId: 'bob' }), session({ userId: 'bob' })];
      for (const record of bobs) await store.create(record, 2);
      clock.advance(MINUTE);
      const alices = [session(), session(), session()];
      const results = await Promise.all(alices.map((record) => store.create(record, 1)));
      expect(results.flatMap((result) => result.evicted)).toHaveLength(2);
      expect(await ids('alice')).toHaveLength(1);
      expect(await store.listByUser('bob')).toEqual(bobs);
    });

    it('replaces a session re-created with the same id', async () => {
      const record = session();
      await store.create(record, 5);
      const moved = { ...record, userId: 'bob', createdAt: START + 1, lastAccessedAt: START + 1 };
      expect(await store.create(moved, 5)).toEqual({ evicted: [] });
      expect(await store.get(record.id)).toEqual(moved);
      expect(await store.listByUser('alice')).toEqual([]);
      expect(await store.listByUser('bob')).toEqual([moved]);
    });

    it('stores nothing for a session that has already expired', async () => {
      const record = session({ createdAt: START - IDLE });
      expect(await store.create(record, 5)).toEqual({ evicted: [] });
      expect(await store.get(record.id)).toBeUndefined();
      expect(await store.listByUser('alice')).toEqual([]);
    });

    it('remembers an evicted session, without its record, until it would have ended by itself', async () => {
      const oldest = session({ secretHash: 'c'.repeat(64) });
      await store.create(oldest, 1);
      clock.advance(10 * MINUTE);
      const newer = session();
      expect(await store.create(newer, 1)).toEqual({ evicted: [oldest.id] });
      expect(await store.get(oldest.id)).toBeUndefined();
      expect(await store.evicted(oldest.id)).toEqual({
        id: oldest.id,
        userId: 'alice',
        secretHash: 'c'.repeat(64),
        evictedAt: START + 10 * MINUTE,
      });
      // Its idle window, as it stood when it was evicted, ends 30 minutes after its last use.
      clock.advance(IDLE - 10 * MINUTE - 1);
      expect(await store.evicted(oldest.id)).toMatchObject({ id: oldest.id });
      clock.advance(1);
      expect(await store.evicted(oldest.id)).toBeUndefined();
    });

    it('forgets an eviction at the absolute expiry when that comes first', async () => {
      const oldest = session({ expiresAt: START + 5 * MINUTE });
      await store.create(oldest, 1);
      await store.create(session(), 1);
      clock.advance(5 * MINUTE - 1);
      expect(await store.evicted(oldest.id)).toBeDefined();
      clock.advance(1);
      expect(await store.evicted(oldest.id)).toBeUndefined();
    });

    it('tells only evicted sessions: not live, deleted, expired or unknown ones', async () => {
      const deleted = session();
      const expired = session({ createdAt: START - IDLE + MINUTE });
      const live = session();
      for (const record of [deleted, expired, live]) await store.create(record, 5);
      await store.delete(deleted.id);
      clock.advance(MINUTE);
      expect(await store.get(expired.id)).toBeUndefined();
      for (const id of [deleted.id, expired.id, live.id, 'nope']) expect(await store.evicted(id)).toBeUndefined();
    });

    it('keeps an eviction when the evicted id is deleted, and forgets it when the id is created again', async () => {
      const oldest = session();
      await store.create(oldest, 1);
      await store.create(session(), 1);
      expect(await store.delete(oldest.id)).toBe(false);
      expect(await store.evicted(oldest.id)).toBeDefined();
      await store.create({ ...oldest, userId: 'bob' }, 1);
      expect(await store.evicted(oldest.id)).toBeUndefined();
      expect(await store.get(oldest.id)).toMatchObject({ userId: 'bob' });
    });

    it('remembers every session evicted when logins race', async () => {
      const records = Array.from({ length: 8 }, (_, i) => session({ createdAt: START + i }));
      await Promise.all(records.map((record) => store.create(record, 2)));
      const remembered = await Promise.all(records.map((record) => store.evicted(record.id)));
      expect(remembered.map((eviction) => eviction?.id)).toEqual([
        ...records.slice(0, 6).map((record) => record.id),
        undefined,
        undefined,
      ]);
    });

    it("forgets a user's evictions when deleting by user, and only theirs", async () => {
      const alices = [session(), session()];
      const bobs = [session({ userId: 'bob' }), session({ userId: 'bob' })];
      for (const record of [...alices, ...bobs]) await store.create(record, 1);
      expect(await store.deleteByUser('alice')).toBe(1);
      expect(await store.evicted(alices[0]!.id)).toBeUndefined();
      expect(await store.evicted(bobs[0]!.id)).toMatchObject({ userId: 'bob' });
    });

    it('rejects a limit that is not a positive integer', async () => {
      await expect(store.create(session(), 0)).rejects.toThrow(RangeError);
      await expect(store.create(session(), 1.5)).rejects.toThrow(RangeError);
    });
  });
}
