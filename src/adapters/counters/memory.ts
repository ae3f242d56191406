import type { CounterStore, WindowCount } from './port.js';

/**
 * Entries examined per hit by the timer-free sweep: a full pass over N counters takes N / SWEEP_BATCH hits,
 * during which at most that many counters are added, so windows nobody hits again are still reclaimed.
 */
const SWEEP_BATCH = 4;

/**
 * In-process fixed-window counters, the default when no Redis is configured; each instance counts on its own.
 * A window ends by `now()` (default Date.now); ended windows are dropped when next touched or swept a few at a
 * time on hits, so there is no timer and nothing to close.
 */
export function createMemoryCounterStore(options: { now?: () => number } = {}): CounterStore {
  const now = options.now ?? Date.now;
  const windows = new Map<string, WindowCount>();
  let cursor: Iterator<[string, WindowCount]> | undefined;

  /** The key's window if it has not ended at `at`; an ended one is dropped. */
  function current(key: string, at: number): WindowCount | undefined {
    const window = windows.get(key);
    if (window === undefined) return undefined;
    if (window.resetAt <= at) {
      windows.delete(key);
      return undefined;
    }
    return window;
  }

  function sweep(at: number): void {
    for (let examined = 0; examined < SWEEP_BATCH; examined++) {
      cursor ??= windows.entries();
      const next = cursor.next();
      if (next.done === true) {
        cursor = undefined;
        return;
      }
      // Deleting the entry just visited is safe: Map iterators tolerate deletion.
      current(next.value[0], at);
    }
  }

  return {
    hit(key, windowMs) {
      if (!Number.isFinite(windowMs) || windowMs <= 0) {
        return Promise.reject(new RangeError(`windowMs must be a positive number, got ${windowMs}`));
      }
      const at = now();
      sweep(at);
      const window = current(key, at);
      if (window === undefined) {
        const started = { count: 1, resetAt: at + windowMs };
        windows.set(key, started);
        return Promise.resolve({ ...started });
      }
      window.count += 1;
      return Promise.resolve({ ...window });
    },

    peek(key) {
      const at = now();
      const window = current(key, at);
      return Promise.resolve(window === undefined ? { count: 0, resetAt: at } : { ...window });
    },

    reset(key) {
      windows.delete(key);
      return Promise.resolve();
    },
  };
}
