import { CommonErrorCode, ServiceUnavailableError } from '../../errors.js';
import type { Logger } from '../../logger.js';

/** How long callers are told to wait before retrying while Redis is unreachable. */
export const RETRY_AFTER_SECONDS = 5;

/** The answer to a request that needs Redis while it is unreachable: 503 with Retry-After, never a 500 or 401. */
export class RedisUnavailableError extends ServiceUnavailableError {
  constructor(cause?: unknown) {
    super('The session store is unavailable; retry shortly', {
      code: CommonErrorCode.ServiceUnavailable,
      headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
      ...(cause !== undefined && { cause }),
    });
  }
}

const redisUnavailable = (cause?: unknown) => new RedisUnavailableError(cause);

/** A Redis command error that says something about the data (a bug), not about reaching the server. */
function isReplyError(error: unknown): boolean {
  return error instanceof Error && error.name === 'ReplyError';
}

export interface OutageOptions {
  now: () => number;
  logger: Logger;
  /** After a failure, calls fail at once for this long instead of waiting on a dead server (the breaker is open). */
  cooldownMs?: number;
}

/**
 * Knows whether Redis is reachable, from the calls made to it: a circuit breaker. A call that fails for lack of a
 * server opens it; while open, calls fail at once (no request piles up behind a dead or hung server) until the
 * cool-down passes and one call is let through to try again. `since` tells how long the outage has lasted, for the
 * stores that may stand in for Redis for a while.
 */
export class RedisOutage {
  #since: number | undefined;
  #retryAt = 0;
  #reached = false;

  constructor(private readonly options: OutageOptions) {}

  /** When the current outage began (epoch ms), or undefined while Redis answers. */
  get since(): number | undefined {
    return this.#since;
  }

  /**
   * Whether the current outage is younger than `graceMs`, after Redis had been reached at least once (an instance
   * that never reached it has nothing to stand in with).
   */
  withinGrace(graceMs: number): boolean {
    return this.#reached && this.#since !== undefined && this.options.now() - this.#since < graceMs;
  }

  /** Runs a Redis call; a failure to reach Redis becomes `redisUnavailable()` (503). */
  async run<T>(call: () => Promise<T>): Promise<T> {
    const now = this.options.now();
    if (this.#since !== undefined && now < this.#retryAt) throw redisUnavailable();
    try {
      const result = await call();
      this.#reached = true;
      if (this.#since !== undefined) {
        this.options.logger.info({ outage_ms: now - this.#since }, 'redis reachable again');
        this.#since = undefined;
      }
      return result;
    } catch (error) {
      if (isReplyError(error)) throw error;
      if (this.#since === undefined) {
        this.#since = now;
        this.options.logger.warn({ err: error }, 'redis unreachable: degrading');
      }
      this.#retryAt = now + (this.options.cooldownMs ?? 1_000);
      throw redisUnavailable(error);
    }
  }
}
