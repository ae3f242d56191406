import type { CounterStore } from '../../adapters/counters/port.js';
import { RateLimitError } from '../../errors.js';
import { AuthErrorCode } from './auth.errors.js';

export interface ThrottleKey {
  key: string;
  /** Failures allowed in the window before the key is locked for the rest of it. */
  max: number;
}

/**
 * Brute-force protection for anything that checks a secret (passwords, client secrets): failures are counted
 * per key in a fixed window, and a key that reached its limit is refused with 429 until the window ends.
 */
export class FailureThrottle {
  constructor(
    private readonly counters: CounterStore,
    private readonly windowMs: number,
    private readonly now: () => Date,
  ) {}

  /** Throws 429 (code `AUTH_RATE_LIMIT`) if any key is locked. */
  async guard(keys: ThrottleKey[]): Promise<void> {
    for (const { key, max } of keys) {
      const window = await this.counters.peek(key);
      if (window.count >= max) {
        const retryAfter = Math.max(1, Math.ceil((window.resetAt - this.now().getTime()) / 1000));
        throw new RateLimitError(`Too many failed attempts; retry in ${retryAfter} s`, retryAfter, {
          code: AuthErrorCode.RateLimit,
        });
      }
    }
  }

  async fail(keys: ThrottleKey[]): Promise<void> {
    await Promise.all(keys.map(({ key }) => this.counters.hit(key, this.windowMs)));
  }

  async succeed(key: ThrottleKey): Promise<void> {
    await this.counters.reset(key.key);
  }
}
