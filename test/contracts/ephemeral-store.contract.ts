import { describe, expect, it } from 'vitest';
import { type StoreFactory, freshStorePerTest } from './harness.js';
import type { EphemeralStore } from '../../src/adapters/ephemeral/port.js';

const TTL = 10 * 60_000;

/**
 * What every EphemeralStore must do. `make` builds a fresh, empty store whose `now()` is the given clock; the
 * clock starts at 2030-01-01 and only moves when a test advances it.
 */
export function ephemeralStoreContract(name: string, make: StoreFactory<EphemeralStore>): void {
  describe(`${name} (EphemeralStore contract)`, () => {
    let store!: EphemeralStore;
    const clock = freshStorePerTest(make, (made) => {
      store = made;
    });

    it('gives a value back once: a second take finds nothing', async () => {
      await store.put('sso:state1', '{"nonce":"n1","verifier":"v1"}', TTL);
      expect(await store.take('sso:state1')).toBe('{"nonce":"n1","verifier":"v1"}');
      expect(await store.take('sso:state1')).toBeUndefined();
    });

    it('finds nothing for a key never put', async () => {
      expect(await store.take('nope')).toBeUndefined();
    });

    it('keeps values exactly, including empty and non-ASCII ones', async () => {
      const values = ['', ' spaced ', 'ünïcødé ☃ 🎉', 'line\nbreak', '{"json":true}', 'x'.repeat(10_000)];
      for (const [i, value] of values.entries()) await store.put(`k${i}`, value, TTL);
      for (const [i, value] of values.entries()) expect(await store.take(`k${i}`)).toBe(value);
    });

    it('expires a value exactly ttlMs after it was put', async () => {
      await store.put('early', 'a', TTL);
      await store.put('late', 'b', TTL);
      clock.advance(TTL - 1);
      expect(await store.take('early')).toBe('a');
      clock.advance(1);
      expect(await store.take('late')).toBeUndefined();
      expect(await store.take('late')).toBeUndefined();
    });

    it('replaces the value and its lifetime when a key is put again', async () => {
      await store.put('k', 'first', TTL);
      clock.advance(TTL - 1);
      await store.put('k', 'second', TTL);
      clock.advance(TTL - 1);
      expect(await store.take('k')).toBe('second');
    });

    it('keeps keys apart', async () => {
      await store.put('a', '1', TTL);
      await store.put('b', '2', TTL);
      expect(await store.take('b')).toBe('2');
      expect(await store.take('a')).toBe('1');
    });

    it('hands a value to exactly one of many concurrent takes', async () => {
      await store.put('callback', 'once', TTL);
      const taken = await Promise.all(Array.from({ length: 20 }, () => store.take('callback')));
      expect(taken.filter((value) => value !== undefined)).toEqual(['once']);
    });

    it('lets a value be peeked at any number of times until it expires, and then taken once', async () => {
      await store.put('mcp-session:1', 'record', TTL);
      expect(await store.peek('mcp-session:1')).toBe('record');
      expect(await store.peek('mcp-session:1')).toBe('record');
      clock.advance(TTL - 1);
      expect(await store.take('mcp-session:1')).toBe('record');
      expect(await store.peek('mcp-session:1')).toBeUndefined();

      await store.put('mcp-session:2', 'record', TTL);
      clock.advance(TTL);
      expect(await store.peek('mcp-session:2')).toBeUndefined();
    });

    it('deletes a value, and deleting a missing one is no error', async () => {
      await store.put('a', '1', TTL);
      await store.put('b', '2', TTL);
      await store.delete('a');
      await store.delete('never-put');
      expect(await store.peek('a')).toBeUndefined();
      expect(await store.take('a')).toBeUndefined();
      expect(await store.peek('b')).toBe('2');
    });

    it('rejects a ttl that is not a positive number', async () => {
      await expect(store.put('k', 'v', 0)).rejects.toThrow(RangeError);
      await expect(store.put('k', 'v', Number.POSITIVE_INFINITY)).rejects.toThrow(RangeError);
      expect(await store.take('k')).toBeUndefined();
    });
  });
}
