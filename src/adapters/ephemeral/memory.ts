import type { EphemeralStore } from './port.js';

/**
 * Entries examined per put by the timer-free sweep: a full pass over N values takes N / SWEEP_BATCH puts,
 * during which at most that many values are added, so values nobody takes are still reclaimed.
 */
const SWEEP_BATCH = 4;

interface Entry {
  value: string;
  expiresAt: number;
}

/**
 * In-process single-use values, the default when no Redis is configured; a value put on one instance can only
 * be taken on the same one. Expiry is judged with `now()` (default Date.now); values nobody takes are swept a
 * few at a time on puts, so there is no timer and nothing to close.
 */
export function createMemoryEphemeralStore(options: { now?: () => number } = {}): EphemeralStore {
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>();
  let cursor: Iterator<[string, Entry]> | undefined;

  function sweep(at: number): void {
    for (let examined = 0; examined < SWEEP_BATCH; examined++) {
      cursor ??= entries.entries();
      const next = cursor.next();
      if (next.done === true) {
        cursor = undefined;
        return;
      }
      // Deleting the entry just visited is safe: Map iterators tolerate deletion.
      if (next.value[1].expiresAt <= at) entries.delete(next.value[0]);
    }
  }

  return {
    put(key, value, ttlMs) {
      if (!Number.isFinite(ttlMs) || ttlMs <= 0) {
        return Promise.reject(new RangeError(`ttlMs must be a positive number, got ${ttlMs}`));
      }
      const at = now();
      sweep(at);
      entries.set(key, { value, expiresAt: at + ttlMs });
      return Promise.resolve();
    },

    take(key) {
      // Read and delete in one synchronous step: nothing can run in between, so a value is taken once.
      const entry = entries.get(key);
      entries.delete(key);
      return Promise.resolve(entry !== undefined && entry.expiresAt > now() ? entry.value : undefined);
    },

    peek(key) {
      const entry = entries.get(key);
      return Promise.resolve(entry !== undefined && entry.expiresAt > now() ? entry.value : undefined);
    },

    delete(key) {
      entries.delete(key);
      return Promise.resolve();
    },
  };
}
