import { CommonErrorCode, ServiceUnavailableError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { CircuitBreaker } from '../breaker/breaker.js';

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
 * Knows whether Redis is reachable, from the calls made to it: the breaker every Redis call goes through. Any
 * failure to reach Redis, or the breaker being open, is a `RedisUnavailableError` (503), which the stores that may
 * stand in for Redis for a while (`withinGrace`) recognise.
 */
export class RedisOutage {
  readonly #breaker: CircuitBreaker;
  #connections = 0;

  constructor(private readonly options: OutageOptions) {
    this.#breaker = new CircuitBreaker({
      dependency: 'session store',
      now: options.now,
      logger: options.logger,
      isOutage: (error) => !isReplyError(error),
      cooldownMs: options.cooldownMs ?? 1_000,
      retryAfterSeconds: RETRY_AFTER_SECONDS,
    });
  }

  /** When the current outage began (epoch ms), or undefined while Redis answers. */
  get since(): number | undefined {
    return this.#breaker.since;
  }

  /**
   * Whether the current outage is younger than `graceMs`, after Redis had been reached at least once (an instance
   * that never reached it has nothing to stand in with).
   */
  withinGrace(graceMs: number): boolean {
    const since = this.#breaker.since;
    return this.#breaker.reached && since !== undefined && this.options.now() - since < graceMs;
  }

  /** How many times the connection to Redis has become ready: the server may have restarted in between. */
  get connections(): number {
    return this.#connections;
  }

  /** The connection is up again: calls may try at once instead of waiting out the cool-down. */
  reconnected(): void {
    this.#connections += 1;
    this.#breaker.retryNow();
  }

  /** Runs a Redis call; a failure to reach Redis becomes a `RedisUnavailableError` (503). */
  async run<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await this.#breaker.run(call);
    } catch (error) {
      if (isReplyError(error)) throw error;
      throw new RedisUnavailableError(error);
    }
  }
}
