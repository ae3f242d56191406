import { ServiceUnavailableError } from './errors.js';
import { type Shutdown, ShutdownErrorCode } from './ports/shutdown.js';

/**
 * The process's phase, shared by everything that must behave differently while starting or stopping: probes
 * report it, the start-up gate refuses traffic before `running`, and long-lived streams close on `stopping`.
 */
export type Phase = 'starting' | 'running' | 'stopping' | 'stopped';

/**
 * The longest wind-down: the part of the drain kept, after the deadline, for work still running to say why it ends
 * (write its final error event, store what it must) before the listeners cut what is left.
 */
const MAX_WIND_DOWN_MS = 1_000;

/** What a turn or stream still running at the drain's deadline ends with, and what a new one is refused with. */
export function serviceStopping(): ServiceUnavailableError {
  return new ServiceUnavailableError('The service is stopping; send the request again to reach another instance', {
    code: ShutdownErrorCode.ServiceStopping,
    headers: { 'Retry-After': '1' },
  });
}

/** Whether an error is the service stopping (an outcome of shutdown, not a failure to log as one). */
export function isServiceStopping(error: { code?: string }): boolean {
  return error.code === ShutdownErrorCode.ServiceStopping;
}

export class Lifecycle implements Shutdown {
  #phase: Phase = 'starting';
  readonly #stopHooks = new Set<() => void>();
  readonly #stopping = new AbortController();
  readonly #deadline = new AbortController();
  #deadlineTimer: NodeJS.Timeout | undefined;
  readonly startedAt = new Date();

  get phase(): Phase {
    return this.#phase;
  }

  get stopping(): AbortSignal {
    return this.#stopping.signal;
  }

  get deadline(): AbortSignal {
    return this.#deadline.signal;
  }

  markRunning(): void {
    if (this.#phase === 'starting') this.#phase = 'running';
  }

  /**
   * Enters `stopping` and tells every registered stream to wind down. Work in flight has `drainMs` (the time the
   * listeners give it before cutting connections) less a wind-down of a fifth of it, at most a second; then
   * `deadline` aborts. Without `drainMs` the deadline is now. Idempotent.
   */
  beginStop(options: { drainMs?: number } = {}): void {
    if (this.#phase === 'stopping' || this.#phase === 'stopped') return;
    this.#phase = 'stopping';
    this.#stopping.abort(serviceStopping());
    for (const hook of this.#stopHooks) hook();
    this.#stopHooks.clear();
    const drainMs = options.drainMs ?? 0;
    const untilDeadline = drainMs - Math.min(MAX_WIND_DOWN_MS, drainMs / 5);
    if (untilDeadline <= 0) this.#reachDeadline();
    else this.#deadlineTimer = setTimeout(() => this.#reachDeadline(), untilDeadline).unref();
  }

  markStopped(): void {
    this.#phase = 'stopped';
    this.#reachDeadline();
  }

  #reachDeadline(): void {
    clearTimeout(this.#deadlineTimer);
    if (!this.#deadline.signal.aborted) this.#deadline.abort(serviceStopping());
  }

  /**
   * Registers work to do when shutdown begins (end an SSE stream, close a socket). Returns the function that
   * unregisters it, for streams that end on their own first.
   */
  onStop(hook: () => void): () => void {
    if (this.#phase === 'stopping' || this.#phase === 'stopped') {
      hook();
      return () => undefined;
    }
    this.#stopHooks.add(hook);
    return () => this.#stopHooks.delete(hook);
  }
}
