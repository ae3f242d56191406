/**
 * Detects a stalled event loop: a timer that should fire every `intervalMs` records how late it ran. A process
 * whose loop was blocked longer than `maxLagMs` within the last window is reported as not alive, so that an
 * orchestrator restarts it.
 */
export class EventLoopWatchdog {
  #timer: NodeJS.Timeout | undefined;
  #expected = 0;
  #worstLagMs = 0;
  #worstAt = 0;

  constructor(
    private readonly maxLagMs = 10_000,
    private readonly intervalMs = 500,
    private readonly windowMs = 60_000,
  ) {}

  start(): void {
    if (this.#timer) return;
    this.#expected = performance.now() + this.intervalMs;
    this.#timer = setInterval(() => {
      const now = performance.now();
      const lag = now - this.#expected;
      if (lag > this.#worstLagMs || now - this.#worstAt > this.windowMs) {
        this.#worstLagMs = Math.max(lag, 0);
        this.#worstAt = now;
      }
      this.#expected = now + this.intervalMs;
    }, this.intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Undefined when the loop is healthy; otherwise why it is not. */
  problem(): string | undefined {
    const recent = performance.now() - this.#worstAt <= this.windowMs;
    if (recent && this.#worstLagMs > this.maxLagMs) {
      return `event loop blocked for ${(this.#worstLagMs / 1000).toFixed(1)} s`;
    }
    return undefined;
  }
}
