/**
 * Messages to every instance of the service (a playground turn to cancel, wherever it runs). Delivery is at most
 * once and only to instances listening at the time: use it for signals, not for state. Implementations:
 * in-process (`memory.ts`, the only instance) and Redis pub/sub (`redis.ts`).
 */
export interface Broadcast {
  /** Sends `message` to every subscriber of `channel` on every instance, this one included. */
  publish(channel: string, message: string): Promise<void>;
  /** Calls `listener` with each message on `channel`; returns the function that stops it. */
  subscribe(channel: string, listener: (message: string) => void): () => void;
  /** Stops listening altogether (shutdown). */
  close(): Promise<void>;
}
