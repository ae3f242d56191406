import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { IncomingMessage, type ServerResponse } from 'node:http';
import type { Request, RequestHandler } from 'express';
import type { Logger } from '../logger.js';
import type { ClientInfo } from '../ports/caller.js';
import { arrivalOf } from './turns.js';

declare module 'node:http' {
  interface IncomingMessage {
    /** The request id: the caller's `X-Request-Id` when it is sane, else a UUID. */
    id: string;
    /** A logger whose every line carries the request id, method and listener. */
    log: Logger;
  }
}

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const QUIET_PATHS = /^\/(health(\/|$)|metrics$|api\/(playground|builder)\/health$)/;

/**
 * What the log says was requested: the route pattern when a route matched (`/auth/sessions/:session_id`), else
 * the path. Never the query string or path parameters, which can carry codes, states and credentials.
 */
function loggedUrl(req: IncomingMessage, res: ServerResponse): string {
  const route = (res as ServerResponse & { locals?: { route?: unknown } }).locals?.route;
  if (typeof route === 'string') return route;
  const path = pathOf(req);
  return path.length > 200 ? `${path.slice(0, 200)}…` : path;
}

/**
 * The path as the client sent it. Express strips a router's mount point from `req.url` while routing and leaves
 * it stripped once a route has answered (`/health/live` reads `/live` by then); `originalUrl` keeps it whole.
 */
function pathOf(req: IncomingMessage): string {
  const url = (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url ?? '';
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

/** Where the log line of a finished request goes: probes and scrapes only when debugging, failures louder. */
function levelOf(req: IncomingMessage, res: ServerResponse): 'error' | 'warn' | 'info' | 'debug' {
  // Probes and scrapes arrive every few seconds; they are only worth a line when debugging. A probe's 503 is its
  // answer (not ready: starting, stopping, a dependency away), not a failure of the request.
  if (QUIET_PATHS.test(pathOf(req))) return res.statusCode === 503 ? 'warn' : res.statusCode >= 500 ? 'error' : 'debug';
  if (res.statusCode >= 500) return 'error';
  return res.statusCode >= 400 ? 'warn' : 'info';
}

/** What the process-wide error handlers can say about the request whose code failed, when there was one. */
export interface RequestScope {
  id: string;
  listener: string;
  method: string;
  url: string;
}

/**
 * What the request scope holds: the request and its response until the response has finished, then only what
 * `currentRequest` tells. Every timer, promise and socket write made while a request runs keeps the scope it was
 * made in, and some outlive the request: the keep-alive timer of its connection, armed as the response finishes,
 * lives until the next response on that connection, up to the keep-alive timeout on an idle one. A scope that kept
 * the request and the response kept their whole graph (headers, body, parsed message, the response's head) alive
 * that long. A response that never finishes (its client left) keeps them only while the work it started lasts.
 */
interface Scope {
  id: string;
  listener: string;
  method: string;
  req?: IncomingMessage;
  res?: ServerResponse;
  /** Once the response has finished: the logged URL, as it was then. */
  url?: string;
}

const scope = new AsyncLocalStorage<Scope>();

/** The request whose work is running now (followed across awaits), or undefined outside of any request. */
export function currentRequest(): RequestScope | undefined {
  const current = scope.getStore();
  if (!current) return undefined;
  const { id, listener, method, req, res } = current;
  return { id, listener, method, url: req && res ? loggedUrl(req, res) : (current.url ?? '') };
}

/** Lets go of the request and its response, keeping what `currentRequest` tells of them: the logged URL. */
function endScope(current: Scope, url: string): void {
  current.url = url;
  current.req = undefined;
  current.res = undefined;
}

const LOG_SOURCE = Symbol('request log source');
/** What `req.log` is made from, set by `requestContext`; the child logger once something has logged through it. */
type WithLogSource = IncomingMessage & { [LOG_SOURCE]?: { logger: Logger; listener: string; child?: Logger } };

// `req.log` is a getter of every request, defined once here: a getter defined on each request object gave each one a
// hidden class of its own (the getter's closure is part of it), which made every later access to the request's
// properties slower, and cost memory for as long as the request lived (a stream's, for hours).
Object.defineProperty(IncomingMessage.prototype, 'log', {
  configurable: true,
  get(this: WithLogSource): Logger | undefined {
    const source = this[LOG_SOURCE];
    if (!source) return undefined;
    return (source.child ??= source.logger.child({
      listener: source.listener,
      req: { id: this.id, method: this.method },
    }));
  },
});

/**
 * Gives every request an id (the caller's `X-Request-Id` when it is sane, else a UUID), echoes it in the
 * response, offers `req.log` (a child logger carrying the id, made only when something logs through it), and
 * writes one line when the response finishes. Only what is known and safe is logged: the method, the route
 * pattern, the status and the time taken, never headers, query strings or bodies.
 *
 * Written for the hot path: a request that logs nothing itself costs one id, one header and, at a level that
 * prints it, one log call.
 */
export function requestContext(logger: Logger, listener: string): RequestHandler {
  // The finished request's line carries the listener from its bindings, serialised once here, and nothing but the
  // id, method, status, time and route pattern: none of what the redaction paths name, so it skips the redaction
  // pass, which cloned every line's `req` to look for headers that are never there.
  const lines = logger.child({ listener }, { redact: [] });
  return (req, res, next) => {
    const started = arrivalOf(req) ?? performance.now();
    const given = req.headers['x-request-id'];
    const id = typeof given === 'string' && SAFE_REQUEST_ID.test(given) ? given : randomUUID();
    req.id = id;
    res.setHeader('X-Request-Id', id);
    (req as WithLogSource)[LOG_SOURCE] = { logger, listener };
    const current: Scope = { id, listener, method: req.method ?? '', req, res, url: undefined };
    res.once('finish', () => {
      endScope(current, loggedUrl(req, res));
      const level = levelOf(req, res);
      if (!lines.isLevelEnabled(level)) return;
      const failed = res.statusCode >= 500;
      lines[level](
        {
          req: { id, method: req.method },
          res: { statusCode: res.statusCode },
          responseTime: Math.round(performance.now() - started),
          url: current.url,
        },
        failed ? 'request errored' : 'request completed',
      );
    });
    scope.run(current, next);
  };
}

/** Where a request came from, for the audit log and session lists. */
export function clientInfo(req: Request): ClientInfo {
  return { ip: req.ip ?? null, userAgent: req.get('User-Agent') ?? null };
}
