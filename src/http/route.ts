import type { Request, RequestHandler, Response, Router } from 'express';
import type { z } from 'zod';
import { CommonErrorCode, type FieldIssue, UnsupportedMediaTypeError, ValidationError } from '../errors.js';
import type { ErrorArea } from './render-errors.js';
import type { StaticRoutes } from './static-routes.js';
import { isPlainJson } from './json-body.js';

/**
 * A route is declared once: its zod schemas validate the request at run time and describe it in the OpenAPI
 * document. Nothing about a route's shape lives anywhere else.
 */

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** Who may call a route. `authenticated` routes get the authentication middleware the listener provides. */
export type RouteAccess = 'public' | 'authenticated';

export interface ResponseSpec {
  description: string;
  schema?: z.ZodType;
  /** Defaults to application/json. */
  contentType?: string;
}

type ObjectSchema = z.ZodObject<z.ZodRawShape>;

export interface RouteRequestSpec<P extends ObjectSchema, Q extends ObjectSchema, B extends z.ZodType> {
  params?: P;
  query?: Q;
  body?: B;
  /** Media types the body may arrive in; defaults to application/json. */
  bodyContentTypes?: string[];
}

export interface RouteInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  req: Request;
  res: Response;
}

/** Return this from a handler to choose the status or headers; a plain value is sent with the first 2xx status. */
export class Reply {
  constructor(
    readonly status: number,
    readonly body?: unknown,
    readonly headers: Record<string, string> = {},
  ) {}
}

export interface RouteDefinition<
  P extends ObjectSchema = ObjectSchema,
  Q extends ObjectSchema = ObjectSchema,
  B extends z.ZodType = z.ZodType,
> {
  method: HttpMethod;
  /** Express path syntax (`/api/v1/api-keys/:key_id`). */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  /** OpenAPI tags; the group's when absent. */
  tags?: string[];
  /** Who may call it: authenticated callers unless declared `public`. */
  access: RouteAccess;
  request?: RouteRequestSpec<P, Q, B>;
  responses: Record<number, ResponseSpec>;
  /** Marked `deprecated: true` in the OpenAPI document (spec "Versioning" 5). */
  deprecated?: boolean;
  /** Served but left out of the public document (e.g. the gateway's internal API-key exchange). */
  internal?: boolean;
  /**
   * Returns the body to send (with the first 2xx status), a Reply, or undefined when the handler wrote the
   * response itself (streams, files).
   */
  handler: (input: RouteInput<z.output<P>, z.output<Q>, z.output<B>>) => unknown;
}

/** Identity function that infers a route's types from its schemas. */
export function defineRoute<P extends ObjectSchema, Q extends ObjectSchema, B extends z.ZodType>(
  route: Omit<RouteDefinition<P, Q, B>, 'access'> & { access?: RouteAccess },
): RouteDefinition {
  // Protected unless declared public: a route that forgets to say is not left open.
  return { access: 'authenticated', ...route } as RouteDefinition;
}

/** A group of routes sharing a path prefix and an error area (the unit a listener mounts). */
export interface RouteGroup {
  prefix: string;
  area: ErrorArea;
  /** OpenAPI tags of the group's routes (a route may name its own). */
  tags?: string[];
  routes: RouteDefinition[];
}

/** How a listener serves a route: the error area of its group, and whether the start-up gate stands before it. */
export interface RouteMounting {
  area: ErrorArea;
  gated: boolean;
}

/**
 * The error statuses the framework itself answers on a route, whatever its handler does, each with the
 * conditions that cause it. They follow from the route's declaration and from what the listener puts in front of
 * every route (`createListenerApp`: Host/Origin guard, X-API-Version, JSON and form body parsers, start-up gate)
 * and what `mountRoutes` adds (authentication, media type and schema validation). The OpenAPI document adds them
 * to every operation, so a route declares only what its handler answers.
 */
export function frameworkResponses(route: RouteDefinition, mounting: RouteMounting): Map<number, string[]> {
  const statuses = new Map<number, string[]>();
  const add = (status: number, reason: string) => statuses.set(status, [...(statuses.get(status) ?? []), reason]);
  const req = route.request;
  // Before routing, for every path: the parsers read any body sent (whatever the method), then the version check.
  add(400, 'the body is not valid JSON or could not be read');
  add(400, 'X-API-Version names an unsupported version');
  add(403, 'the Host or Origin header names another site (while the service listens on loopback only)');
  add(413, 'larger than the configured limit (BODY_LIMIT_BYTES)');
  add(431, 'the request line and headers are larger than 16 KiB');
  add(415, 'the body has an unsupported charset or Content-Encoding');
  if (mounting.gated) add(503, 'the service is still starting (see Retry-After)');
  if (route.access === 'authenticated') add(401, 'the credential is missing, invalid or expired');
  if (req?.body) add(415, `the body is not ${(req.bodyContentTypes ?? ['application/json']).join(' or ')}`);
  if (req?.params || req?.query || req?.body) {
    // The data-subject area reports field-level problems as 422, like the API it mirrors.
    add(mounting.area === 'data-subject' ? 422 : 400, 'a path, query or body value does not match its schema');
  }
  add(500, 'an unexpected error (the body carries the trace_id to quote)');
  return statuses;
}

function toFieldIssues(where: 'path' | 'query' | 'body', error: z.ZodError): FieldIssue[] {
  return error.issues.map((issue) => ({
    loc: [where, ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))],
    msg: issue.message,
    type: issue.code,
  }));
}

function parsePart(where: 'path' | 'query' | 'body', schema: z.ZodType | undefined, value: unknown): unknown {
  if (!schema) return value;
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw new ValidationError(`Invalid request ${where}`, toFieldIssues(where, result.error));
}

function firstSuccessStatus(route: RouteDefinition): number {
  const statuses = Object.keys(route.responses)
    .map(Number)
    .filter((s) => s >= 200 && s < 300)
    .sort((a, b) => a - b);
  return statuses[0] ?? 200;
}

function send(res: Response, status: number, result: unknown): void {
  if (result instanceof Reply) {
    res.status(result.status).set(result.headers);
    if (result.body === undefined) res.end();
    else sendJson(res, result.body);
    return;
  }
  if (status === 204 || result === null) res.status(status).end();
  else sendJson(res.status(status), result);
}

/**
 * `res.json` for what the routes answer: the same bytes and headers, written without express's `send`, which looked
 * the media type up in its MIME table, parsed it again to add the charset and ran the freshness check on every
 * response. A response that carries its own validators (an `ETag` or `Last-Modified`, which may make it a 304) or
 * its own media type still goes through express.
 */
function sendJson(res: Response, body: unknown): void {
  const text = plainJsonResponse(res) ? (JSON.stringify(body) as string | undefined) : undefined;
  if (text === undefined) {
    res.json(body);
    return;
  }
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

/** Whether express's `send` would add nothing to a JSON body but its type and length (see `sendJson`). */
function plainJsonResponse(res: Response): boolean {
  const status = res.statusCode;
  return (
    status !== 204 &&
    status !== 205 &&
    status !== 304 &&
    !res.hasHeader('content-type') &&
    !res.hasHeader('etag') &&
    !res.hasHeader('last-modified') &&
    !res.hasHeader('transfer-encoding')
  );
}

/** Mounts routes on an express router, validating each request against its route's schemas. */
export function mountRoutes(
  router: Router,
  routes: RouteDefinition[],
  middleware: { authenticate?: RequestHandler; gate?: RequestHandler } = {},
  statics?: { table: StaticRoutes; prefix: string },
): void {
  for (const route of routes) {
    const status = firstSuccessStatus(route);
    // Record the pattern first, so that even a request refused by authentication is counted under its route.
    const label = (prefix: string) => (route.path === '/' && prefix ? prefix : `${prefix}${route.path}`);
    const handlers: RequestHandler[] = [
      (req, res, next) => {
        res.locals.route = label(req.baseUrl);
        next();
      },
    ];
    if (middleware.gate) handlers.push(middleware.gate);
    if (route.access === 'authenticated') {
      if (!middleware.authenticate) {
        throw new Error(`Route ${route.operationId} needs authentication, but no authenticate middleware was given`);
      }
      handlers.push(middleware.authenticate);
    }
    const bodyTypes = route.request?.bodyContentTypes ?? ['application/json'];
    // Plain JSON, what nearly every request sends, is told without type-is (which parses the media type again).
    const jsonAccepted = bodyTypes.includes('application/json');
    handlers.push(async (req, res) => {
      // An empty body (Content-Length: 0, as clients send on a bare POST) is no body: it is validated as {}.
      const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
      const plainJson = jsonAccepted && isPlainJson(req);
      if (route.request?.body && hasBody && !plainJson && req.is(bodyTypes) === false) {
        throw new UnsupportedMediaTypeError(`Request body must be ${bodyTypes.join(' or ')}`, {
          code: CommonErrorCode.UnsupportedMediaType,
        });
      }
      const input = {
        params: parsePart('path', route.request?.params, req.params),
        query: parsePart('query', route.request?.query, req.query),
        body: parsePart('body', route.request?.body, req.body ?? {}),
        req,
        res,
      };
      const result: unknown = await route.handler(input as RouteInput<never, never, never>);
      if (result !== undefined && !res.headersSent) send(res, status, result);
    });
    router[route.method](route.path, ...handlers);
    if (statics) {
      const path = label(statics.prefix);
      const labelled: RequestHandler = (_req, res, next) => {
        res.locals.route = path;
        next();
      };
      statics.table.add(route.method, path, [labelled, ...handlers.slice(1)]);
    }
  }
}
