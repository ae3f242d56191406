import { type Logger, pino } from 'pino';

export type { Logger };

/** Paths pino must never print: credentials in headers and bodies. */
export const REDACT = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-api-key"]',
  // A browser's WebSocket presents its token as the subprotocol `bearer.<token>`.
  'req.headers["sec-websocket-protocol"]',
  'req.headers["mcp-session-id"]',
  'res.headers["set-cookie"]',
  '*.password',
  '*.client_secret',
  '*.refresh_token',
  '*.access_token',
  '*.api_key',
  '*.token',
];

export interface LoggerOptions {
  level: string;
  /** stdio mode keeps stdout for JSON-RPC, so its logs go to stderr. */
  destination?: 'stdout' | 'stderr';
}

/** Lines are held until this much is buffered, or until the next periodic flush. */
const WRITE_BATCH_BYTES = 4096;
/** How long a line may wait in the buffer (a quiet service's lines still appear at once to a reader's eye). */
const FLUSH_EVERY_MS = 100;

/**
 * The service's logger. Lines are written asynchronously: a write in flight never blocks the event loop (a slow
 * reader of a pipe would otherwise stall every request). They are written in batches of a few kilobytes, or every
 * FLUSH_EVERY_MS: each write costs tens of microseconds of a core whatever its size, and a busy service's request
 * lines each had a write of their own. Whatever is still buffered is flushed synchronously when the process exits.
 */
export function createLogger({ level, destination = 'stdout' }: LoggerOptions): Logger {
  return pino(
    { level, base: { service: 'agent-service' }, redact: { paths: REDACT, censor: '[redacted]' } },
    pino.destination({
      fd: destination === 'stderr' ? 2 : 1,
      sync: false,
      minLength: WRITE_BATCH_BYTES,
      periodicFlush: FLUSH_EVERY_MS,
    }),
  );
}
