/**
 * What start-up has done so far, for `/health/startup` (spec values: completed, loaded, in_progress, pending;
 * `failed` when a dependency could not be reached — the service still starts and readiness reports it).
 */
export type StepState = 'pending' | 'in_progress' | 'completed' | 'loaded' | 'failed';

export interface StartupSnapshot {
  started: boolean;
  durationSeconds: number | undefined;
  progressPercent: number;
  initialization: Record<string, StepState>;
}

export class StartupTracker {
  readonly #steps = new Map<string, StepState>();
  readonly #began = performance.now();
  #durationSeconds: number | undefined;

  constructor(steps: string[]) {
    for (const step of steps) this.#steps.set(step, 'pending');
  }

  set(step: string, state: StepState): void {
    this.#steps.set(step, state);
  }

  /** Marks start-up complete: from now on the service takes traffic. */
  finish(): void {
    this.#durationSeconds = Math.round(performance.now() - this.#began) / 1000;
  }

  get started(): boolean {
    return this.#durationSeconds !== undefined;
  }

  snapshot(): StartupSnapshot {
    const states = [...this.#steps.values()];
    const done = states.filter((s) => s !== 'pending' && s !== 'in_progress').length;
    return {
      started: this.started,
      durationSeconds: this.#durationSeconds,
      progressPercent: states.length === 0 ? 100 : Math.floor((done / states.length) * 100),
      initialization: Object.fromEntries(this.#steps),
    };
  }
}
