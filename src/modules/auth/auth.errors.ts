import { ServiceUnavailableError, UnauthorizedError } from '../../errors.js';
import { CallerErrorCode } from '../../ports/caller.js';

/**
 * The auth module's own error codes (spec "Errors"). The codes of a refused caller, AUTH_INVALID_TOKEN and
 * AUTH_ACCESS_DENIED, are the caller port's `CallerErrorCode`: the HTTP plumbing raises them too.
 */
export const AuthErrorCode = {
  /** A wrong username, password or client secret. */
  InvalidCredentials: 'AUTH_INVALID_CREDENTIALS',
  /** Too many failed attempts for one account or from one address. */
  RateLimit: 'AUTH_RATE_LIMIT',
  /** The identity provider could not be reached. */
  ServiceError: 'AUTH_SERVICE_ERROR',
  /** No such session (of the caller's). */
  SessionNotFound: 'SESSION_NOT_FOUND',
  /**
   * The credential's session was ended by a newer sign-in of the same account beyond the concurrent-session limit
   * (`SESSION_MAX_CONCURRENT`), not revoked: signing in again is the remedy.
   */
  SessionEvicted: 'SESSION_EVICTED',
} as const;
export type AuthErrorCode = (typeof AuthErrorCode)[keyof typeof AuthErrorCode];

/** A single sign-on login the identity provider, or its answer, refused: 401 `authentication_failed`. */
export function ssoLoginRefused(message: string, cause?: unknown): UnauthorizedError {
  return new UnauthorizedError(message, {
    code: CallerErrorCode.AccessDenied,
    error: 'authentication_failed',
    ...(cause !== undefined && { cause }),
  });
}

/** The identity provider did not answer: 503, and the login may be tried again. */
export function identityProviderUnavailable(cause: unknown): ServiceUnavailableError {
  return new ServiceUnavailableError('The identity provider is unavailable', {
    code: AuthErrorCode.ServiceError,
    cause,
  });
}

/**
 * A credential (access token, refresh token or session cookie) of a session that the concurrent-session limit
 * ended: 401, told apart from a revoked or expired one so that a client knows why it has to sign in again.
 */
export function sessionEvicted(): UnauthorizedError {
  return new UnauthorizedError(
    'Session was ended by a newer sign-in of this account (concurrent-session limit); sign in again',
    { code: AuthErrorCode.SessionEvicted },
  );
}
