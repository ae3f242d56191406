/**
 * Fixed-window counters for brute-force protection and rate limits, shared by every instance when they live
 * in Redis. Implementations: in-process (`memory.ts`) and Redis (`redis.ts`); both pass
 * `test/contracts/counter-store.contract.ts`.
 */
export interface WindowCount {
  /** Hits in the current window, this one included. */
  count: number;
  /** When the current window ends (epoch ms). */
  resetAt: number;
}

export interface CounterStore {
  /** Adds one hit to `key`. The window starts with the first hit and lasts `windowMs`. */
  hit(key: string, windowMs: number): Promise<WindowCount>;
  /** The current window without adding a hit (count 0 when there is none). */
  peek(key: string): Promise<WindowCount>;
  /** Forgets the key (e.g. after a successful login). */
  reset(key: string): Promise<void>;
}
