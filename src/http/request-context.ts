import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pinoHttp } from 'pino-http';
import type { Logger } from '../logger.js';

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const QUIET_PATHS = /^\/(health(\/|$)|metrics$|api\/(playground|builder)\/health$)/;

/**
 * Gives every request an id (the caller's `X-Request-Id` when it is sane, else a UUID), echoes it in the
 * response, and binds a child logger to `req.log` so every line logged for the request carries it.
 */
export function requestContext(logger: Logger, listener: string) {
  return pinoHttp({
    logger,
    genReqId(req: IncomingMessage, res: ServerResponse) {
      const given = req.headers['x-request-id'];
      const id = typeof given === 'string' && SAFE_REQUEST_ID.test(given) ? given : randomUUID();
      res.setHeader('X-Request-Id', id);
      return id;
    },
    customProps: () => ({ listener }),
    customLogLevel(req, res, err) {
      if (err || res.statusCode >= 500) return 'error';
      // Probes and scrapes arrive every few seconds; they are only worth a line when debugging.
      if (QUIET_PATHS.test(req.url ?? '')) return 'debug';
      return res.statusCode >= 400 ? 'warn' : 'info';
    },
    serializers: {
      req: (req: { id: unknown; method: string; url: string }) => ({ id: req.id, method: req.method, url: req.url }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
  });
}
