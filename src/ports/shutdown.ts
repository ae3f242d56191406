/**
 * The code of what a turn refused or stopped by shutdown ends with (a 503): declared with the port, so that the
 * lifecycle that raises it and the HTTP plumbing that renders it can reach it.
 */
export const ShutdownErrorCode = {
  /** The service is stopping: a new turn is refused, and one still running at the drain's deadline stops. */
  ServiceStopping: 'SERVICE_STOPPING',
} as const;
export type ShutdownErrorCode = (typeof ShutdownErrorCode)[keyof typeof ShutdownErrorCode];

/**
 * How work in flight learns that the service is stopping. Shutdown has two moments: the service stops taking new
 * work (`stopping`), and later the drain's time for work in flight runs out (`deadline`), leaving just enough of
 * the drain for that work to tell its client why it ends before connections are cut. The lifecycle implements it;
 * the wires receive it with their other dependencies and hand it to what outlives a request (streams, chat turns).
 */
export interface Shutdown {
  /**
   * Aborted when the service begins to stop. Start nothing new; work already running may finish within the drain.
   * A stream that only waits for events (no work of its own in flight) ends here.
   */
  readonly stopping: AbortSignal;
  /**
   * Aborted when work in flight has had its share of the drain (`SHUTDOWN_TIMEOUT_MS`, less a short wind-down):
   * what still runs stops now and ends with its area's final error event. Its `reason` is that error: a 503 with
   * the code `SERVICE_STOPPING`.
   */
  readonly deadline: AbortSignal;
}
