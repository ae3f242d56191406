import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request } from 'express';
import { pinoHttp } from 'pino-http';
import type { Logger } from '../logger.js';
import type { ClientInfo } from '../ports/caller.js';

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const QUIET_PATHS = /^\/(health(\/|$)|metrics$|api\/(playground|builder)\/health$)/;

/**
 * What the log says was requested: the route pattern when a route matched (`/auth/sessions/:session_id`), else
 * the path. Never the query string or path parameters, which can carry codes, states and credentials.
 */
function loggedUrl(req: IncomingMessage, res: ServerResponse): string {
  const route = (res as ServerResponse & { locals?: { route?: unknown } }).locals?.route;
  if (typeof route === 'string') return route;
  const path = (req.url ?? '').split('?')[0] ?? '';
  return path.length > 200 ? `${path.slice(0, 200)}…` : path;
}

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
    // Bound to every line logged for the request, when it arrives, so only what is known and safe then.
    serializers: {
      req: (req: { id: unknown; method: string }) => ({ id: req.id, method: req.method }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
    customSuccessObject: (req, res, fields: object) => ({ ...fields, url: loggedUrl(req, res) }),
    customErrorObject: (req, res, _err, fields: object) => ({ ...fields, url: loggedUrl(req, res) }),
  });
}

/** Where a request came from, for the audit log and session lists. */
export function clientInfo(req: Request): ClientInfo {
  return { ip: req.ip ?? null, userAgent: req.get('User-Agent') ?? null };
}
