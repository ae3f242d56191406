import { STATUS_CODES } from 'node:http';
import type { ErrorRequestHandler, Request, RequestHandler } from 'express';
import {
  type AppError,
  CommonErrorCode,
  NotFoundError,
  UnauthorizedError,
  ValidationError,
  toAppError,
} from '../errors.js';
import { ShutdownErrorCode } from '../ports/shutdown.js';

/**
 * Each area of the interface has its own error body (spec "Errors"). A router declares its area when it is
 * mounted (see `mountArea`), so errors raised before routing — bad JSON, an oversized body, an unknown path —
 * are still rendered in the shape the client of that area expects.
 */
export type ErrorArea = 'envelope' | 'mcp' | 'data-subject' | 'scim' | 'verify';

export interface RenderedError {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

const SCIM_ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';
const GENERIC_500 = 'Internal server error';

const GENERIC_503 = 'A service this request needs is unavailable; retry shortly';

function publicMessage(err: AppError): string {
  if (err.expose) return err.message;
  return err.status === 503 ? GENERIC_503 : GENERIC_500;
}

/**
 * The MCP error code of an error, the same on every wire: HTTP bodies, stream `error` events. The spec's four,
 * and `service_stopping` for a turn refused or stopped because the service is shutting down (a client retries it
 * elsewhere; an `internal_error` would say the service failed).
 */
export function mcpErrorCode(
  err: AppError,
): 'invalid_request' | 'permission_denied' | 'rate_limit_exceeded' | 'internal_error' | 'service_stopping' {
  if (err.code === ShutdownErrorCode.ServiceStopping) return 'service_stopping';
  if (err.status === 403) return 'permission_denied';
  if (err.status === 429) return 'rate_limit_exceeded';
  if (err.status >= 500) return 'internal_error';
  return 'invalid_request';
}

function scimType(err: AppError): string | undefined {
  if (err.scimType) return err.scimType;
  if (err.code === CommonErrorCode.MalformedJson) return 'invalidSyntax';
  if (err instanceof ValidationError || err.status === 400) return 'invalidValue';
  if (err.status === 404) return 'notFound';
  if (err.status === 409) return 'uniqueness';
  return undefined;
}

/**
 * One renderer per area. Every error has a code, but only the envelope body has a field for it (spec "Errors",
 * "Body shapes by area"), so only the envelope shows it: the MCP body's `code` is the MCP code (`mcpErrorCode`),
 * and the data-subject, SCIM and verify (401) bodies have no code field.
 */
const renderers: Record<ErrorArea, (err: AppError, traceId: string) => RenderedError> = {
  envelope(err, traceId) {
    return {
      status: err.status,
      headers: {},
      body: {
        ...(err.expose && err.extra),
        error: err.error,
        message: publicMessage(err),
        code: err.code,
        ...(err.issues && { details: err.issues }),
        ...(err.status >= 500 && { trace_id: traceId }),
        ...(err.status === 429 && 'retryAfterSeconds' in err && { retry_after: err.retryAfterSeconds }),
        timestamp: new Date().toISOString(),
      },
    };
  },
  mcp(err, traceId) {
    if (err.status === 401) return { status: 401, headers: {}, body: { detail: err.message } };
    return {
      status: err.status,
      headers: {},
      body: {
        error: {
          code: mcpErrorCode(err),
          message: publicMessage(err),
          ...(err.status >= 500 && { trace_id: traceId }),
          ...(err.status === 429 && 'retryAfterSeconds' in err && { retry_after: err.retryAfterSeconds }),
        },
      },
    };
  },
  'data-subject'(err, traceId) {
    // Field-level validation is 422 with FastAPI-style details; everything else is a plain {detail}.
    if (err.issues) return { status: 422, headers: {}, body: { detail: err.issues } };
    return {
      status: err.status,
      headers: {},
      body: { detail: publicMessage(err), ...(err.status >= 500 && { trace_id: traceId }) },
    };
  },
  scim(err, traceId) {
    const type = scimType(err);
    const detail = err.issues ? `${err.message}: ${err.issues.map(describeIssue).join('; ')}` : publicMessage(err);
    return {
      status: err.status,
      headers: { 'Content-Type': 'application/scim+json; charset=utf-8' },
      body: {
        schemas: [SCIM_ERROR_SCHEMA],
        status: err.status,
        detail: err.status >= 500 ? `${detail} (trace_id ${traceId})` : detail,
        ...(type && { scimType: type }),
      },
    };
  },
  verify(err, traceId) {
    if (err.status !== 401) return renderers.envelope(err, traceId);
    const expiredAt = err instanceof UnauthorizedError ? err.expiredAt : undefined;
    return {
      status: 401,
      headers: {},
      body: { valid: false, error: err.message, ...(expiredAt && { expired_at: expiredAt }) },
    };
  },
};

function describeIssue(issue: { loc: (string | number)[]; msg: string }): string {
  return `${issue.loc.join('.')}: ${issue.msg}`;
}

export const DEFAULT_CHALLENGE = 'Bearer realm="agent-service"';

/** Renders any thrown value as the given area's error response. */
export function renderError(
  area: ErrorArea,
  thrown: unknown,
  traceId: string,
  wwwAuthenticate = DEFAULT_CHALLENGE,
): RenderedError {
  const err = toAppError(thrown);
  const rendered = renderers[area](err, traceId);
  const headers = { ...rendered.headers, ...err.headers };
  if (rendered.status === 401 && !('WWW-Authenticate' in headers)) headers['WWW-Authenticate'] = wwwAuthenticate;
  if ((rendered.status === 429 || rendered.status === 503) && 'retryAfterSeconds' in err)
    headers['Retry-After'] ??= String(err.retryAfterSeconds);
  return { ...rendered, headers };
}

/**
 * The same rendered error as a complete HTTP/1.1 response, for the places that hold a bare socket and no express
 * response (a refused WebSocket upgrade): the status line from node's table, the JSON body, its length, and every
 * header the HTTP renderer chose (WWW-Authenticate, Retry-After…). The connection closes after it.
 */
export function rawHttpResponse(rendered: RenderedError): string {
  const body = JSON.stringify(rendered.body);
  const headers: Record<string, string> = {
    'Content-Type': 'application/json; charset=utf-8',
    ...rendered.headers,
    'Content-Length': String(Buffer.byteLength(body)),
    Connection: 'close',
  };
  const lines = [
    `HTTP/1.1 ${rendered.status} ${STATUS_CODES[rendered.status] ?? 'Error'}`,
    // A header value never spans lines: a CR or LF in one would let it write headers of its own.
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value.replace(/[\r\n]+/g, ' ')}`),
  ];
  return `${lines.join('\r\n')}\r\n\r\n${body}`;
}

/** Longest-prefix table from mount path to error area, filled by `mountArea`. */
export class ErrorAreas {
  readonly #prefixes: { prefix: string; area: ErrorArea }[] = [];

  constructor(readonly fallback: ErrorArea = 'envelope') {}

  add(prefix: string, area: ErrorArea): void {
    this.#prefixes.push({ prefix, area });
    this.#prefixes.sort((a, b) => b.prefix.length - a.prefix.length);
  }

  areaFor(path: string): ErrorArea {
    for (const { prefix, area } of this.#prefixes) {
      if (path === prefix || path.startsWith(prefix.endsWith('/') ? prefix : `${prefix}/`)) return area;
    }
    return this.fallback;
  }
}

/** The request's id doubles as the trace id that a 500 body carries and every log line repeats. */
function traceIdOf(req: Request): string {
  return typeof req.id === 'string' ? req.id : JSON.stringify(req.id);
}

/** Final middleware: an unmatched route is a 404 in the area's shape. */
export interface ChallengeOptions {
  wwwAuthenticate?: string;
}

export function notFoundHandler(areas: ErrorAreas, options: ChallengeOptions = {}): RequestHandler {
  return (req, res) => {
    const err = new NotFoundError(`No route for ${req.method} ${req.path}`, { code: CommonErrorCode.RouteNotFound });
    const rendered = renderError(areas.areaFor(req.path), err, traceIdOf(req), options.wwwAuthenticate);
    res.status(rendered.status).set(rendered.headers).json(rendered.body);
  };
}

/** Final error middleware: logs 5xx with the request id and renders every error in the area's shape. */
export function errorHandler(areas: ErrorAreas, options: ChallengeOptions = {}): ErrorRequestHandler {
  return (thrown: unknown, req, res, next) => {
    const err = toAppError(thrown);
    if (err.status >= 500) req.log.error({ err: err.cause ?? err }, 'request failed');
    else req.log.debug({ code: err.code, status: err.status }, err.message);
    if (res.headersSent) {
      // A stream already started: all we can do is end it; express closes the socket for us.
      next(thrown);
      return;
    }
    const rendered = renderError(areas.areaFor(req.path), err, traceIdOf(req), options.wwwAuthenticate);
    res.status(rendered.status).set(rendered.headers).json(rendered.body);
  };
}
