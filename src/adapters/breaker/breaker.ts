import { CommonErrorCode, ServiceUnavailableError } from '../../errors.js';
import type { Logger } from '../../logger.js';

/** Thrown without calling the dependency while its breaker is open: a 503 telling the client when to retry. */
export class CircuitOpenError extends ServiceUnavailableError {
  constructor(
    readonly dependency: string,
    retryAfterSeconds: number,
  ) {
    super(`The ${dependency} is unavailable; retry shortly`, {
      code: CommonErrorCode.ServiceUnavailable,
      headers: { 'Retry-After': String(retryAfterSeconds) },
    });
    this.name = 'CircuitOpenError';
  }
}

export interface BreakerOptions {
  /** The dependency, as logs and error messages name it: "database", "authorization service", "LLM provider". */
  dependency: string;
  now: () => number;
  logger: Logger;
  /** Whether a failure says the dependency is out of reach (a refused or timed-out connection, a 5xx), not that the call was wrong. */
  isOutage: (error: unknown) => boolean;
  /** After an outage failure, calls fail at once for this long instead of waiting on a dead server. Default 1 s. */
  cooldownMs?: number;
  /** What a caller is told to wait (Retry-After) while the breaker is open. Default 5 s. */
  retryAfterSeconds?: number;
}

/**
 * A circuit breaker around one dependency: a call that fails for lack of the dependency opens it; while open, calls
 * fail at once with `CircuitOpenError` (no request piles up behind a dead or hung server) until the cool-down
 * passes and calls are let through to try again; the first success closes it. Other failures pass through
 * untouched. `since` tells how long the outage has lasted, for whatever may stand in for the dependency meanwhile.
 */
export class CircuitBreaker {
  #since: number | undefined;
  #retryAt = 0;
  #reached = false;

  constructor(private readonly options: BreakerOptions) {}

  /** When the current outage began (epoch ms), or undefined while the dependency answers. */
  get since(): number | undefined {
    return this.#since;
  }

  /** Whether the dependency has answered at least once since start-up. */
  get reached(): boolean {
    return this.#reached;
  }

  get isOpen(): boolean {
    return this.#since !== undefined && this.options.now() < this.#retryAt;
  }

  /**
   * Lets the next call through at once, cool-down or not: for a client that learns by itself that the dependency
   * is back (a reconnected socket). The first success then closes the breaker as usual.
   */
  retryNow(): void {
    this.#retryAt = 0;
  }

  async run<T>(call: () => Promise<T>): Promise<T> {
    if (this.isOpen) throw new CircuitOpenError(this.options.dependency, this.options.retryAfterSeconds ?? 5);
    try {
      const result = await call();
      this.#reached = true;
      if (this.#since !== undefined) {
        this.options.logger.info(
          { dependency: this.options.dependency, outage_ms: this.options.now() - this.#since },
          `${this.options.dependency} reachable again`,
        );
        this.#since = undefined;
      }
      return result;
    } catch (error) {
      if (!this.options.isOutage(error)) throw error;
      const now = this.options.now();
      if (this.#since === undefined) {
        this.#since = now;
        this.options.logger.warn(
          { err: error, dependency: this.options.dependency },
          `${this.options.dependency} unreachable: failing fast`,
        );
      }
      this.#retryAt = now + (this.options.cooldownMs ?? 1_000);
      throw error;
    }
  }
}
