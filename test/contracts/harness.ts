import { afterEach, beforeEach } from 'vitest';

/** Contract clocks start here and move only when a test advances them. */
export const CONTRACT_START = Date.UTC(2030, 0, 1);

export interface ContractClock {
  now: () => number;
  advance: (ms: number) => void;
}

/** Builds a fresh, empty store whose `now()` is the given clock. */
export type StoreFactory<S> = (clock: ContractClock) => Promise<{ store: S; cleanup: () => Promise<void> }>;

/**
 * Gives every test of a contract a fresh store on a clock reset to CONTRACT_START, and cleans it up afterwards.
 * `onStore` receives each new store (contracts keep it in a `let`).
 */
export function freshStorePerTest<S>(make: StoreFactory<S>, onStore: (store: S) => void): ContractClock {
  let time = CONTRACT_START;
  let cleanup: () => Promise<void> = () => Promise.resolve();
  const clock: ContractClock = {
    now: () => time,
    advance: (ms) => {
      time += ms;
    },
  };
  beforeEach(async () => {
    time = CONTRACT_START;
    const made = await make(clock);
    cleanup = made.cleanup;
    onStore(made.store);
  });
  afterEach(() => cleanup());
  return clock;
}
