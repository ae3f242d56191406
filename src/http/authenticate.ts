import { parse as parseCookies } from 'cookie';
import type { Request, RequestHandler } from 'express';
import { UnauthorizedError } from '../errors.js';
import type { Caller } from '../modules/auth/caller.js';

declare module 'express-serve-static-core' {
  interface Request {
    /** Set by the authentication middleware on every protected route. */
    caller?: Caller;
  }
}

export const SESSION_COOKIE = 'session_id';

/** How each kind of credential is checked; each throws UnauthorizedError when the credential is bad. */
export interface CredentialVerifiers {
  bearer(token: string): Promise<Caller>;
  sessionCookie(value: string): Promise<Caller>;
  /** Plugged in by the API-key module; until then an X-API-Key header is refused. */
  apiKey?: (key: string) => Promise<Caller>;
}

/**
 * The one authentication middleware of every listener. It accepts, in this order, `Authorization: Bearer`,
 * `X-API-Key` and the `session_id` cookie. A credential that is presented and bad is refused: the middleware
 * never falls back to a weaker credential behind it.
 */
export function createAuthenticate(verifiers: CredentialVerifiers): RequestHandler {
  return async (req, _res, next) => {
    const authorization = req.get('Authorization');
    if (authorization !== undefined) {
      const match = /^Bearer\s+([A-Za-z0-9\-._~+/]+=*)\s*$/i.exec(authorization);
      if (!match)
        throw new UnauthorizedError('Authorization header must be "Bearer <token>"', { code: 'AUTH_INVALID_TOKEN' });
      req.caller = await verifiers.bearer(match[1]!);
      next();
      return;
    }
    const apiKey = req.get('X-API-Key');
    if (apiKey !== undefined) {
      if (!verifiers.apiKey) throw new UnauthorizedError('API keys are not accepted', { code: 'AUTH_INVALID_TOKEN' });
      req.caller = await verifiers.apiKey(apiKey);
      next();
      return;
    }
    const cookie = sessionCookieOf(req);
    if (cookie !== undefined) {
      req.caller = await verifiers.sessionCookie(cookie);
      next();
      return;
    }
    throw new UnauthorizedError('Authentication required', { code: 'AUTH_INVALID_TOKEN' });
  };
}

export function sessionCookieOf(req: Request): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  return parseCookies(header)[SESSION_COOKIE] || undefined;
}

/** The authenticated caller of a protected route. */
export function callerOf(req: Request): Caller {
  if (!req.caller) throw new UnauthorizedError('Authentication required', { code: 'AUTH_INVALID_TOKEN' });
  return req.caller;
}
