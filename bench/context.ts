import type { Baseline } from './baseline-servers.js';
import type { RoundsOptions } from './load.js';

/**
 * How long and how much. wrk runs whole seconds: a normal run measures each target in 5 interleaved rounds of 2 s
 * after 1 s of warm-up (about 9 minutes in all): a median of five stands when one or two rounds meet a pause of the
 * machine or a major collection, where one of three moved with a single one. `--quick` runs 1 round of 1 s after 1 s
 * (about 2 minutes in all, under one for a single case), a smoke test more than a measurement.
 */
export interface Settings extends RoundsOptions {
  quick: boolean;
  /** Long-lived SSE streams opened at once (the target is stated for 10,000). */
  streams: number;
  /** Idle streamable HTTP sessions opened to measure heap per session. */
  sessions: number;
  /** Requests between the two heap readings of the leak check, after `heapWarmup` unmeasured ones. */
  heapRequests: number;
  heapWarmup: number;
  /** Streamed chat turns timed for the first-token overhead. */
  chatTurns: number;
  /** Start-ups timed per database. */
  startupRounds: number;
  /** Concurrent logins (and argon2 verifications in the baseline). */
  loginConcurrency: number;
  /** Seconds per measured login round, and per phase of the login burst. */
  loginSeconds: number;
  /** Users in the large SCIM database. */
  scimUsers: number;
}

export const QUICK: Settings = {
  quick: true,
  rounds: 1,
  seconds: 1,
  warmupSeconds: 1,
  streams: 1_000,
  sessions: 500,
  heapRequests: 6_000,
  heapWarmup: 2_000,
  chatTurns: 15,
  startupRounds: 2,
  loginConcurrency: 4,
  loginSeconds: 1,
  scimUsers: 100_000,
};

export const NORMAL: Settings = {
  quick: false,
  rounds: 5,
  seconds: 2,
  warmupSeconds: 1,
  streams: 10_000,
  sessions: 1_000,
  heapRequests: 100_000,
  heapWarmup: 5_000,
  chatTurns: 50,
  startupRounds: 3,
  loginConcurrency: 4,
  loginSeconds: 3,
  scimUsers: 100_000,
};

/** What every case gets: settings, a scratch folder for databases and logs, and the running baseline servers. */
export interface Context {
  settings: Settings;
  tmp: string;
  logDir: string;
  raw: Baseline;
  express: Baseline;
  bareMcp: Baseline;
  /** The 2026-07-28 revision served by the SDK's own `createMcpHandler`. */
  bareMcpModern: Baseline;
  /** Progress lines (stderr, so that the table on stdout stays clean). */
  log: (line: string) => void;
}
