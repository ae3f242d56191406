import { isUnreachableDependency } from './errors.js';
import type { Logger } from './logger.js';
import type { Metrics } from './http/metrics.js';
import type { RequestScope } from './http/request-context.js';

/**
 * Errors from a socket or stream whose peer went away: they concern that one connection, which is already closed
 * or closing, and say nothing about the rest of the process.
 */
const CONNECTION_LOST = /^(ECONNRESET|EPIPE|ECONNABORTED|ERR_STREAM_DESTROYED|ERR_STREAM_PREMATURE_CLOSE)$/;

function isConnectionLoss(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (typeof code === 'string' && CONNECTION_LOST.test(code)) || isUnreachableDependency(error);
}

export interface ProcessGuardOptions {
  logger: Logger;
  metrics: Pick<Metrics, 'unhandledErrors'>;
  /** The request whose code was running, when there was one. */
  currentRequest: () => RequestScope | undefined;
  /** Called once for an exception that leaves the process in an unknown state: drain and exit. */
  stop: (error: unknown) => void;
  /** The process to guard; tests pass an emitter of their own. */
  target?: Pick<NodeJS.Process, 'on'>;
}

/**
 * The last resort for errors that no caller handled. Every client and stream has its own error handling; reaching
 * here is a bug to fix, so each case is logged with the request it happened in and counted
 * (`process_unhandled_errors_total`). What then happens is decided by what can be known of the damage:
 * - an unhandled promise rejection is logged and the process goes on: a promise that nobody awaited failed, and
 *   nothing was left half-done by a throw through other code;
 * - an uncaught exception that is a lost connection (a socket reset, a database or Redis connection dropped with no
 *   listener) is logged and the process goes on: it belongs to one connection, already gone;
 * - any other uncaught exception unwound code at an unknown point, so state may be inconsistent: it is logged as
 *   fatal and the service shuts down as on SIGTERM (in-flight requests drain), exiting with status 70 for the
 *   supervisor to restart it.
 */
export function installProcessGuards(options: ProcessGuardOptions): void {
  const { logger, metrics, currentRequest, stop, target = process } = options;
  let stopping = false;
  target.on('unhandledRejection', (reason) => {
    metrics.unhandledErrors.inc({ kind: 'rejection', outcome: 'continued' });
    logger.error({ err: reason, req: currentRequest() }, 'unhandled promise rejection; continuing');
  });
  target.on('uncaughtException', (error) => {
    if (isConnectionLoss(error)) {
      metrics.unhandledErrors.inc({ kind: 'exception', outcome: 'continued' });
      logger.error({ err: error, req: currentRequest() }, 'uncaught connection error; continuing');
      return;
    }
    metrics.unhandledErrors.inc({ kind: 'exception', outcome: 'stopped' });
    logger.fatal({ err: error, req: currentRequest() }, 'uncaught exception; shutting down');
    if (stopping) return;
    stopping = true;
    stop(error);
  });
}
