import { describe, expect, it } from 'vitest';
import { CONTRACT_START, type StoreFactory, freshStorePerTest } from './harness.js';
import type { CounterStore } from '../../src/adapters/counters/port.js';

const START = CONTRACT_START;
const WINDOW = 15 * 60_000;

/**
 * What every CounterStore must do. `make` builds a fresh, empty store whose `now()` is the given clock; the
 * clock starts at 2030-01-01 and only moves when a test advances it.
 */
export function counterStoreContract(name: string, make: StoreFactory<CounterStore>): void {
  describe(`${name} (CounterStore contract)`, () => {
    let store!: CounterStore;
    const clock = freshStorePerTest(make, (made) => {
      store = made;
    });

    it('starts a window at the first hit and counts within it without moving its end', async () => {
      expect(await store.hit('login:alice', WINDOW)).toEqual({ count: 1, resetAt: START + WINDOW });
      // Near the end, yet a second of real time before it: Redis expires the key by its own clock, so a window
      // left 1 ms by the test's clock would end for real between the two hits below.
      clock.advance(WINDOW - 1_000);
      expect(await store.hit('login:alice', WINDOW)).toEqual({ count: 2, resetAt: START + WINDOW });
      expect(await store.hit('login:alice', WINDOW)).toEqual({ count: 3, resetAt: START + WINDOW });
    });

    it('starts counting again at 1 once the window has ended', async () => {
      await store.hit('login:alice', WINDOW);
      await store.hit('login:alice', WINDOW);
      clock.advance(WINDOW);
      expect(await store.hit('login:alice', WINDOW)).toEqual({ count: 1, resetAt: START + 2 * WINDOW });
      expect(await store.peek('login:alice')).toEqual({ count: 1, resetAt: START + 2 * WINDOW });
    });

    it('peeks without adding a hit and without creating a window', async () => {
      expect(await store.peek('login:alice')).toEqual({ count: 0, resetAt: START });
      clock.advance(1_000);
      // Had peek created a window, this hit would land in it rather than start one now.
      expect(await store.hit('login:alice', WINDOW)).toEqual({ count: 1, resetAt: START + 1_000 + WINDOW });
      expect(await store.peek('login:alice')).toEqual({ count: 1, resetAt: START + 1_000 + WINDOW });
      expect(await store.peek('login:alice')).toEqual({ count: 1, resetAt: START + 1_000 + WINDOW });
      expect(await store.hit('login:alice', WINDOW)).toMatchObject({ count: 2 });
    });

    it('peeks a count of 0 once the window has ended', async () => {
      await store.hit('login:alice', WINDOW);
      clock.advance(WINDOW);
      expect(await store.peek('login:alice')).toEqual({ count: 0, resetAt: START + WINDOW });
    });

    it('forgets a key on reset', async () => {
      await store.hit('login:alice', WINDOW);
      await store.hit('login:alice', WINDOW);
      await store.reset('login:alice');
      expect(await store.peek('login:alice')).toEqual({ count: 0, resetAt: START });
      clock.advance(5);
      expect(await store.hit('login:alice', WINDOW)).toEqual({ count: 1, resetAt: START + 5 + WINDOW });
      await store.reset('never-hit');
    });

    it('counts each key on its own', async () => {
      await store.hit('login:alice', WINDOW);
      await store.hit('login:alice', WINDOW);
      clock.advance(10);
      expect(await store.hit('login:bob', 2 * WINDOW)).toEqual({ count: 1, resetAt: START + 10 + 2 * WINDOW });
      await store.reset('login:bob');
      expect(await store.peek('login:alice')).toEqual({ count: 2, resetAt: START + WINDOW });
    });

    it('counts every one of many concurrent hits exactly once', async () => {
      const results = await Promise.all(Array.from({ length: 25 }, () => store.hit('api:key1', WINDOW)));
      expect(results.map((result) => result.count).sort((a, b) => a - b)).toEqual(
        Array.from({ length: 25 }, (_, i) => i + 1),
      );
      expect(new Set(results.map((result) => result.resetAt))).toEqual(new Set([START + WINDOW]));
      expect(await store.peek('api:key1')).toEqual({ count: 25, resetAt: START + WINDOW });
    });

    it('rejects a window that is not a positive number', async () => {
      await expect(store.hit('k', 0)).rejects.toThrow(RangeError);
      await expect(store.hit('k', Number.NaN)).rejects.toThrow(RangeError);
      expect(await store.peek('k')).toEqual({ count: 0, resetAt: START });
    });
  });
}
