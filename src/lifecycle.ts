/**
 * The process's phase, shared by everything that must behave differently while starting or stopping: probes
 * report it, the start-up gate refuses traffic before `running`, and long-lived streams close on `stopping`.
 */
export type Phase = 'starting' | 'running' | 'stopping' | 'stopped';

export class Lifecycle {
  #phase: Phase = 'starting';
  readonly #stopHooks = new Set<() => void>();
  readonly startedAt = new Date();

  get phase(): Phase {
    return this.#phase;
  }

  markRunning(): void {
    if (this.#phase === 'starting') this.#phase = 'running';
  }

  /** Enters `stopping` and tells every registered stream to wind down. Idempotent. */
  beginStop(): void {
    if (this.#phase === 'stopping' || this.#phase === 'stopped') return;
    this.#phase = 'stopping';
    for (const hook of this.#stopHooks) hook();
    this.#stopHooks.clear();
  }

  markStopped(): void {
    this.#phase = 'stopped';
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
