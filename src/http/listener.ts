import { IncomingMessage, type Server, ServerResponse, createServer } from 'node:http';
import { type AddressInfo, Server as NetServer, type Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import express, { type ErrorRequestHandler, type RequestHandler, type Router } from 'express';
import { BadRequestError, CommonErrorCode, HeadersTooLargeError, ServiceUnavailableError } from '../errors.js';
import type { Lifecycle } from '../lifecycle.js';
import type { Audience } from '../ports/caller.js';
import type { Logger } from '../logger.js';
import { apiVersion } from './api-version.js';
import { jsonBody } from './json-body.js';
import type { Metrics } from './metrics.js';
import { refuseNulInBody, refuseNulInUrl } from './nul-text.js';
import { ErrorAreas, errorHandler, notFoundHandler, rawHttpResponse, renderError } from './render-errors.js';
import { requestContext } from './request-context.js';
import { type RouteGroup, mountRoutes } from './route.js';
import { StaticRoutes, inSequence } from './static-routes.js';
import { boundedTurns } from './turns.js';

export type ListenerName = 'main' | 'playground' | 'builder';

export interface ListenerAppOptions {
  name: ListenerName;
  logger: Logger;
  metrics: Metrics;
  lifecycle: Lifecycle;
  bodyLimitBytes: number;
  /** Express `trust proxy`: whose X-Forwarded-For and X-Forwarded-Proto to believe. */
  trustProxy?: boolean | number | string;
  /** Route groups that answer only once start-up has finished. */
  groups: RouteGroup[];
  /** Route groups that answer from the first moment (probes, metrics). */
  alwaysOn?: RouteGroup[];
  /**
   * Routers outside the route registry (documentation pages, static front ends), and error handlers that answer
   * refusals on their paths in their own shape (ahead of the area renderer).
   */
  extra?: (Router | ErrorRequestHandler)[];
  /** The authentication middleware for routes of an audience (MCP routes also accept MCP-bound tokens). */
  authenticate?: (audience: Audience) => RequestHandler;
  /** Runs before everything else (Host and Origin checks). */
  guard?: RequestHandler;
  /** The WWW-Authenticate challenge of every 401 (it may point at the protected-resource metadata). */
  wwwAuthenticate?: string;
}

/** Answers 503 until start-up has finished, so no request meets an unmigrated database. */
function startupGate(lifecycle: Lifecycle): RequestHandler {
  return (_req, res, next) => {
    if (lifecycle.phase !== 'starting') {
      next();
      return;
    }
    res.setHeader('Retry-After', '1');
    next(
      new ServiceUnavailableError('The service is starting; retry shortly', { code: CommonErrorCode.ServiceStarting }),
    );
  };
}

/** Builds one listener's express app: the common plumbing, then its route groups, then 404 and error rendering. */
export function createListenerApp(options: ListenerAppOptions): express.Express {
  const { name, logger, metrics, lifecycle, bodyLimitBytes } = options;
  const app = express();
  app.disable('x-powered-by');
  // Responses are dynamic and mostly authenticated: hashing every body for a weak ETag costs more than it saves.
  // Routes that version a resource set their own ETag.
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.set('trust proxy', options.trustProxy ?? false);
  const areas = new ErrorAreas();

  // Routes without parameters are found by their exact path, right after the plumbing every request passes
  // through; express's routers serve the rest.
  const statics = new StaticRoutes();
  app.use(
    inSequence([
      (_req, res, next) => {
        res.locals.listener = name;
        res.setHeader('X-Content-Type-Options', 'nosniff');
        res.setHeader('Referrer-Policy', 'no-referrer');
        next();
      },
      requestContext(logger, name),
      ...(options.guard ? [options.guard] : []),
      metrics.httpMiddleware,
      apiVersion(),
      refuseNulInUrl(),
      jsonBody(bodyLimitBytes),
      express.urlencoded({ limit: bodyLimitBytes, extended: false, verify: refuseNulInBody('form') }),
      statics.middleware(),
    ]),
  );

  const gate = startupGate(lifecycle);
  const mount = (group: RouteGroup, gated: boolean) => {
    const router = express.Router({ mergeParams: true });
    // The gate sits on each route, not on the mount: a group at the root must not gate every other path.
    mountRoutes(
      router,
      group.routes,
      {
        ...(options.authenticate && { authenticate: options.authenticate(group.area === 'mcp' ? 'mcp' : 'service') }),
        ...(gated && { gate }),
      },
      { table: statics, prefix: group.prefix },
    );
    app.use(group.prefix || '/', router);
    if (group.prefix) areas.add(group.prefix, group.area);
  };
  for (const group of options.alwaysOn ?? []) mount(group, false);
  for (const group of options.groups) mount(group, true);
  for (const router of options.extra ?? []) app.use(router);

  const challenge = options.wwwAuthenticate ? { wwwAuthenticate: options.wwwAuthenticate } : {};
  app.use(notFoundHandler(areas, challenge));
  app.use(errorHandler(areas, challenge));
  return app;
}

/**
 * What Node's HTTP parser refused before any request existed: a request line and headers over 16 KiB (431), or
 * bytes that are not HTTP (400). Node's own answer is a bare status line; this one carries the envelope body every
 * other refusal has. A connection the client already left, or one that timed out, is handled as Node would.
 */
function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  const answered = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
  if (error.code === 'ECONNRESET' || !socket.writable || answered) {
    socket.destroy();
    return;
  }
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    socket.end('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n');
    return;
  }
  const refusal =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? new HeadersTooLargeError('The request line and headers are larger than 16 KiB', {
          code: CommonErrorCode.HeadersTooLarge,
        })
      : new BadRequestError('The request is not well-formed HTTP/1.1', { code: CommonErrorCode.BadRequest });
  socket.end(rawHttpResponse(renderError('envelope', refusal, randomUUID())));
}

/**
 * How long an idle kept-alive connection stays open: longer than the 60 s idle timeout of common load balancers and
 * reverse proxies. Whoever closes an idle connection first must be the client: a request sent on a connection the
 * server is closing at that moment is lost as a reset (a 502 behind a proxy). Node's default is 5 s.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;

/** Gives `born` (a class's prototype) what `proto` holds, and its place in the prototype chain. */
function takeOver(born: object, proto: object): void {
  Object.defineProperties(born, Object.getOwnPropertyDescriptors(proto));
  Object.setPrototypeOf(born, Object.getPrototypeOf(proto) as object | null);
}

/**
 * The request and response classes for an express app's server, whose objects are born with the app's prototypes.
 * Express sets them with `Object.setPrototypeOf` as it takes a request, and V8 gives an object whose prototype
 * changes a hidden class of its own: every request and response allocated a class and its descriptors (some 2 KB
 * between them, held as long as a stream lasts), and no property access on them could be cached. Each class's
 * prototype holds what the app's (`app.request`, `app.response`) held and becomes the app's, so that express's own
 * `setPrototypeOf` changes nothing; being subclasses of Node's, they keep Node's layout of their fields.
 */
function bornForExpress(app: express.Express): {
  IncomingMessage: typeof IncomingMessage;
  ServerResponse: typeof ServerResponse;
} {
  const AppRequest = class extends IncomingMessage {};
  const AppResponse = class extends ServerResponse {};
  takeOver(AppRequest.prototype, app.request);
  takeOver(AppResponse.prototype, app.response);
  app.request = AppRequest.prototype as unknown as express.Request;
  app.response = AppResponse.prototype as unknown as express.Response;
  // Node makes every response with its request, whatever subclass of IncomingMessage that is.
  return { IncomingMessage: AppRequest, ServerResponse: AppResponse as typeof ServerResponse };
}

/** An HTTP server that binds, reports its address, and closes gracefully. */
export class HttpListener {
  readonly server: Server;
  #address: AddressInfo | undefined;
  readonly #inFlight = new Set<ServerResponse>();
  #draining = false;
  /** Draining, and idle keep-alive connections have had their time to bring a request: none is kept now. */
  #lingered = false;

  constructor(
    readonly name: ListenerName,
    app: express.Express,
  ) {
    this.server = createServer({ keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS, ...bornForExpress(app) }, boundedTurns(app));
    this.server.on('clientError', answerClientError);
    // Runs after the app has taken the request (or queued it for a later turn), before any response is written.
    this.server.on('request', (_req, res: ServerResponse) => {
      if (this.#draining) {
        HttpListener.#closeAfter(res);
        return;
      }
      this.#inFlight.add(res);
      res.once('close', () => {
        this.#inFlight.delete(res);
        // A response that began before the drain (a stream, whose headers went out without `Connection: close`)
        // leaves its connection idle: past the linger, it is closed now rather than when the drain runs out.
        if (this.#lingered) this.server.closeIdleConnections();
      });
    });
  }

  /** Tells the client to reconnect (to another instance) after this response, and frees the socket. */
  static #closeAfter(res: ServerResponse): void {
    if (!res.headersSent) res.setHeader('Connection', 'close');
  }

  async listen(host: string, port: number): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      this.server.once('error', onError);
      this.server.listen(port, host, () => {
        this.server.off('error', onError);
        resolve();
      });
    });
    this.#address = this.server.address() as AddressInfo;
    return this.#address;
  }

  /** `http://host:port` of the bound socket. */
  get url(): string {
    if (!this.#address) throw new Error(`${this.name} listener is not listening`);
    const { address, family, port } = this.#address;
    return `http://${family === 'IPv6' ? `[${address}]` : address}:${port}`;
  }

  get listening(): boolean {
    return this.server.listening;
  }

  /**
   * Stops accepting connections, lets in-flight requests finish, and after `graceMs` cuts whatever is left
   * (a client that never finishes must not keep the process alive). Idle keep-alive connections are kept for
   * `idleLingerMs` first: a request a client already sent on one is answered (with `Connection: close`) instead of
   * being cut unread, which a client that does not retry would see as a reset.
   */
  async close(graceMs: number, idleLingerMs = 0): Promise<void> {
    if (!this.server.listening) return;
    this.#draining = true;
    for (const res of this.#inFlight) HttpListener.#closeAfter(res);
    // net.Server's close stops the listening socket only; http.Server's would also cut idle connections at once.
    const closed = new Promise<void>((resolve) => NetServer.prototype.close.call(this.server, () => resolve()));
    const linger = setTimeout(
      () => {
        this.#lingered = true;
        this.server.closeIdleConnections();
      },
      Math.min(idleLingerMs, graceMs),
    );
    const timer = setTimeout(() => this.server.closeAllConnections(), graceMs);
    try {
      await closed;
    } finally {
      clearTimeout(linger);
      clearTimeout(timer);
    }
  }
}
