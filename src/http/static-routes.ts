import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * Routes whose path holds no parameter, found by one map lookup instead of express's walk through every mounted
 * router and route layer before them (each layer tried costs a path match and a closure, and every request paid
 * for all of them: under load express's router was a tenth of the time of `GET /health/live` and 30 % of what it
 * allocated). The same routes stay mounted in express, which still serves what the table does not hold exactly:
 * another case, a trailing slash, HEAD.
 *
 * A route goes in the table only when express would run it for its exact path: no route registered before it for
 * the same method could match that path. Registering them in express's order (`add`, one route at a time) is what
 * makes that check possible; a later route never shadows an earlier one.
 */
export class StaticRoutes {
  readonly #table = new Map<string, RequestHandler[]>();
  /** Every route registered so far, static or not, by method: what a later static route must not be shadowed by. */
  readonly #earlier: { method: string; segments: string[] }[] = [];

  /**
   * Records a route in express's registration order. `path` is its full path (mount point and route path);
   * `handlers` run in order, as express would run them, once the path has matched exactly.
   */
  add(method: string, path: string, handlers: RequestHandler[]): void {
    const verb = method.toUpperCase();
    const segments = segmentsOf(path);
    const shadowed = this.#earlier.some((route) => route.method === verb && mayMatch(route.segments, segments));
    this.#earlier.push({ method: verb, segments });
    if (!shadowed && segments.every(isLiteral)) this.#table.set(`${verb} ${path}`, handlers);
  }

  get size(): number {
    return this.#table.size;
  }

  /** The middleware that serves a request whose method and path are in the table, and passes on every other. */
  middleware(): RequestHandler {
    return (req, res, next) => {
      const handlers = this.#table.size > 0 ? this.#table.get(`${req.method} ${req.path}`) : undefined;
      if (!handlers) {
        next();
        return;
      }
      req.params = {};
      run(handlers, req, res, next);
    };
  }
}

/** A path's segments: `/a/b` → ['a', 'b']; `/` and `` → []. */
function segmentsOf(path: string): string[] {
  return path.split('/').filter((segment) => segment !== '');
}

/** A segment that matches only itself (no parameter, wildcard, optional group or escape). */
function isLiteral(segment: string): boolean {
  return !/[:*{}()\\?+[\]]/.test(segment);
}

/**
 * Whether a pattern could match the literal path. Conservative: a segment with a parameter is taken to match any
 * segment, and from a wildcard or an optional part on, the pattern any rest of the path that starts as the text
 * before it; literals compare as express compares them by default, whatever their case.
 */
function mayMatch(pattern: string[], path: string[]): boolean {
  for (const [i, segment] of pattern.entries()) {
    const open = segment.search(/[*{}]/);
    if (open >= 0) return i >= path.length || path[i]!.toLowerCase().startsWith(segment.slice(0, open).toLowerCase());
    if (i >= path.length) return false;
    if (isLiteral(segment) && segment.toLowerCase() !== path[i]!.toLowerCase()) return false;
  }
  return pattern.length === path.length;
}

/**
 * Middleware that runs `handlers` in order as one: express tries each layer of an app against the path and
 * allocates as it goes, for every request, so the plumbing every request passes through is one layer, not one
 * per step.
 */
export function inSequence(handlers: RequestHandler[]): RequestHandler {
  return (req, res, next) => run(handlers, req, res, next);
}

/**
 * Runs handlers as express runs a route's: each may call `next()` to go on, or `next(error)` (or reject) to end in
 * the error handlers; `next('route')` and `next('router')` leave the route. Past the last, the request goes on.
 */
function run(handlers: RequestHandler[], req: Request, res: Response, done: NextFunction): void {
  let index = 0;
  const next: NextFunction = (error?: unknown) => {
    if (error === 'route' || error === 'router') return done();
    if (error !== undefined && error !== null) return done(error);
    const handler = handlers[index++];
    if (!handler) return done();
    try {
      const returned: unknown = handler(req, res, next);
      if (returned instanceof Promise)
        returned.catch((thrown: unknown) => next(thrown ?? new Error('Rejected promise')));
    } catch (thrown) {
      next(thrown);
    }
  };
  next();
}
