/**
 * One error hierarchy for the whole service. Stores and services throw these; only the HTTP layer turns them
 * into bodies, in the shape of the area the request belongs to (see src/http/render-errors.ts).
 */

/**
 * A stable, switchable error code, in upper snake case. Every AppError has one. The codes used across areas are
 * declared here (`CommonErrorCode`); an area's own codes are declared by the area (`AuthErrorCode` in the auth
 * module, `CallerErrorCode` in the caller port…), and throw sites use those constants, never a bare string.
 * The values are part of the interface: the envelope body shows them (spec "Errors"), so they never change.
 */
export type ErrorCode = Uppercase<string>;

/** The codes no single area owns: framework and HTTP conditions, and the generic outcomes every area uses. */
export const CommonErrorCode = {
  MalformedJson: 'MALFORMED_JSON',
  PayloadTooLarge: 'PAYLOAD_TOO_LARGE',
  HeadersTooLarge: 'HEADERS_TOO_LARGE',
  UnsupportedMediaType: 'UNSUPPORTED_MEDIA_TYPE',
  UnsupportedApiVersion: 'UNSUPPORTED_API_VERSION',
  RouteNotFound: 'ROUTE_NOT_FOUND',
  BadRequest: 'BAD_REQUEST',
  Validation: 'VALIDATION_ERROR',
  NotFound: 'NOT_FOUND',
  Forbidden: 'FORBIDDEN',
  Conflict: 'CONFLICT',
  RateLimit: 'RATE_LIMIT',
  Internal: 'INTERNAL_ERROR',
  ServiceUnavailable: 'SERVICE_UNAVAILABLE',
  ServiceStarting: 'SERVICE_STARTING',
} as const;
export type CommonErrorCode = (typeof CommonErrorCode)[keyof typeof CommonErrorCode];

export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 415 | 422 | 429 | 431 | 500 | 503;

/** The spec's `error` strings of the authentication envelope, plus the few HTTP conditions it does not name. */
export type ErrorName =
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'rate_limit_exceeded'
  | 'internal_error'
  | 'validation_error'
  | 'conflict'
  | 'authentication_failed'
  | 'payload_too_large'
  | 'headers_too_large'
  | 'unsupported_media_type'
  | 'service_unavailable';

/** The SCIM `scimType` values (RFC 7644 §3.12). */
export type ScimType =
  | 'invalidValue'
  | 'tooMany'
  | 'uniqueness'
  | 'mutability'
  | 'invalidSyntax'
  | 'invalidFilter'
  | 'invalidPath'
  | 'notFound'
  | 'invalidVers'
  | 'sensitive';

/** One problem with one input field: `loc` is the path into the request (`['body', 'name']`). */
export interface FieldIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

export interface AppErrorOptions {
  /** Required: a client (or a log reader) can always switch on what went wrong. */
  code: ErrorCode;
  cause?: unknown;
  issues?: FieldIssue[];
  scimType?: ScimType;
  headers?: Record<string, string>;
  /** More fields for the envelope body (a validation report, the current version of a conflict). */
  extra?: Record<string, unknown>;
}

export abstract class AppError extends Error {
  abstract readonly status: ErrorStatus;
  abstract readonly error: ErrorName;
  readonly code: ErrorCode;
  readonly issues: FieldIssue[] | undefined;
  readonly scimType: ScimType | undefined;
  readonly headers: Record<string, string>;
  readonly extra: Record<string, unknown> | undefined;

  constructor(message: string, options: AppErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = options.code;
    this.issues = options.issues;
    this.scimType = options.scimType;
    this.headers = options.headers ?? {};
    this.extra = options.extra;
  }

  /** Whether the message may be shown to the client. 5xx details never leave the process. */
  get expose(): boolean {
    return this.status < 500;
  }
}

export class BadRequestError extends AppError {
  readonly status = 400;
  readonly error = 'validation_error';
}

/** Input that does not match the schema; `issues` names every bad field. */
export class ValidationError extends AppError {
  readonly status = 400;
  readonly error = 'validation_error';
  constructor(message: string, issues: FieldIssue[], options: Partial<Omit<AppErrorOptions, 'issues'>> = {}) {
    super(message, { ...options, code: options.code ?? CommonErrorCode.Validation, issues });
  }
}

export class UnauthorizedError extends AppError {
  readonly status = 401;
  readonly error: ErrorName;
  /** When the presented credential had expired, its expiry (ISO 8601): the verify form reports it. */
  readonly expiredAt: string | undefined;
  constructor(message: string, options: AppErrorOptions & { error?: ErrorName; expiredAt?: string }) {
    super(message, options);
    this.error = options.error ?? 'unauthorized';
    this.expiredAt = options.expiredAt;
  }
}

export class ForbiddenError extends AppError {
  readonly status = 403;
  readonly error = 'forbidden';
}

export class NotFoundError extends AppError {
  readonly status = 404;
  readonly error = 'not_found';
}

export class ConflictError extends AppError {
  readonly status = 409;
  readonly error = 'conflict';
}

export class PayloadTooLargeError extends AppError {
  readonly status = 413;
  readonly error = 'payload_too_large';
}

/** A request line and headers longer than Node accepts (16 KiB): refused before any route sees the request. */
export class HeadersTooLargeError extends AppError {
  readonly status = 431;
  readonly error = 'headers_too_large';
}

export class UnsupportedMediaTypeError extends AppError {
  readonly status = 415;
  readonly error = 'unsupported_media_type';
}

export class UnprocessableError extends AppError {
  readonly status = 422;
  readonly error = 'validation_error';
}

export class RateLimitError extends AppError {
  readonly status = 429;
  readonly error = 'rate_limit_exceeded';
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
    options: Partial<AppErrorOptions> = {},
  ) {
    super(message, { ...options, code: options.code ?? CommonErrorCode.RateLimit });
  }
}

export class InternalError extends AppError {
  readonly status = 500;
  readonly error = 'internal_error';
}

export class ServiceUnavailableError extends AppError {
  readonly status = 503;
  readonly error = 'service_unavailable';
  override get expose(): boolean {
    return true;
  }
}

/** Shape of the errors that body-parser and the router raise (they follow the `http-errors` convention). */
interface HttpLikeError {
  status?: unknown;
  statusCode?: unknown;
  type?: unknown;
  expose?: unknown;
}

/** Why a request holding the NUL character is refused (see src/http/nul-text.ts). */
export const NUL_MESSAGE = 'Text in a request may not contain the NUL character (U+0000)';

/** Socket errors, and PostgreSQL's "cannot connect now" and connection-exception classes (SQLSTATE 57P0x, 08xxx). */
const UNREACHABLE_CODES =
  /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENOTFOUND|EAI_AGAIN|57P0[1-3]|08\w{3})$/;
const UNREACHABLE_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed and is not queryable/;

/**
 * Whether an error says a dependency could not be reached (a database or network outage), not that the request or
 * the code was wrong: such a failure is a 503 to retry, never a 500.
 */
export function isUnreachableDependency(err: unknown): boolean {
  for (let cause = err, depth = 0; cause instanceof Error && depth < 4; cause = cause.cause, depth++) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string' && UNREACHABLE_CODES.test(code)) return true;
    if (UNREACHABLE_MESSAGES.test(cause.message)) return true;
  }
  return false;
}

/**
 * Turns anything thrown into an AppError. Framework errors with a client status become their 4xx; a dependency
 * that could not be reached, a 503; everything else becomes an InternalError that keeps the original as its cause (for the log, never the client).
 */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const http = (typeof err === 'object' && err !== null ? err : {}) as HttpLikeError;
  const status = typeof http.status === 'number' ? http.status : http.statusCode;
  switch (http.type) {
    case 'entity.parse.failed':
      return new BadRequestError('Request body is not valid JSON', { code: CommonErrorCode.MalformedJson, cause: err });
    case 'entity.too.large':
      return new PayloadTooLargeError('Request body is too large', {
        code: CommonErrorCode.PayloadTooLarge,
        cause: err,
      });
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new UnsupportedMediaTypeError('Unsupported request body encoding', {
        code: CommonErrorCode.UnsupportedMediaType,
        cause: err,
      });
    case 'entity.nul':
      return new BadRequestError(NUL_MESSAGE, { code: CommonErrorCode.BadRequest, cause: err });
    case 'request.aborted':
    case 'request.size.invalid':
    case 'stream.encoding.set':
      return new BadRequestError('Request body could not be read', { code: CommonErrorCode.BadRequest, cause: err });
  }
  if (isUnreachableDependency(err))
    return new ServiceUnavailableError('A service this request needs is unavailable; retry shortly', {
      code: CommonErrorCode.ServiceUnavailable,
      headers: { 'Retry-After': '5' },
      cause: err,
    });
  if (typeof status === 'number' && status >= 400 && status < 500 && http.expose !== false) {
    if (status === 404) return new NotFoundError('Not found', { code: CommonErrorCode.NotFound, cause: err });
    if (status === 413)
      return new PayloadTooLargeError('Request body is too large', { code: CommonErrorCode.PayloadTooLarge });
    return new BadRequestError('Bad request', { code: CommonErrorCode.BadRequest, cause: err });
  }
  return new InternalError('Internal server error', { code: CommonErrorCode.Internal, cause: err });
}
