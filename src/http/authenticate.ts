import type { IncomingHttpHeaders } from 'node:http';
import { parse as parseCookies } from 'cookie';
import type { Request, RequestHandler } from 'express';
import { UnauthorizedError } from '../errors.js';
import { type Audience, type Caller, CallerErrorCode } from '../ports/caller.js';

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
 * Establishes the caller from request headers, or throws UnauthorizedError. A credential bound to the MCP endpoint
 * is accepted only where `audience` is `mcp`: the default, the whole service, refuses it.
 */
export type CallerResolver = (headers: IncomingHttpHeaders, audience?: Audience) => Promise<Caller>;

/**
 * Establishes the caller from request headers: `Authorization: Bearer`, then `X-API-Key`, then the `session_id`
 * cookie. A credential that is presented and bad is refused: it never falls back to a weaker credential behind it.
 * Shared by the middleware and the WebSocket upgrade, which has headers but no express request.
 */
export function createCallerResolver(verifiers: CredentialVerifiers): CallerResolver {
  const resolve = async (headers: IncomingHttpHeaders): Promise<Caller> => {
    const authorization = headers.authorization;
    if (authorization !== undefined) {
      const match = /^Bearer\s+([A-Za-z0-9\-._~+/]+=*)\s*$/i.exec(authorization);
      if (!match)
        throw new UnauthorizedError('Authorization header must be "Bearer <token>"', {
          code: CallerErrorCode.InvalidToken,
        });
      return verifiers.bearer(match[1]!);
    }
    const apiKey = headers['x-api-key'];
    if (apiKey !== undefined) {
      if (!verifiers.apiKey)
        throw new UnauthorizedError('API keys are not accepted', { code: CallerErrorCode.InvalidToken });
      return verifiers.apiKey(Array.isArray(apiKey) ? (apiKey[0] ?? '') : apiKey);
    }
    const cookie = headers.cookie ? parseCookies(headers.cookie)[SESSION_COOKIE] : undefined;
    if (cookie) return verifiers.sessionCookie(cookie);
    throw new UnauthorizedError('Authentication required', { code: CallerErrorCode.InvalidToken });
  };
  return async (headers, audience = 'service') => {
    const caller = await resolve(headers);
    if (caller.resource !== undefined && audience !== 'mcp')
      throw new UnauthorizedError('This token was issued for the MCP endpoint only', {
        code: CallerErrorCode.InvalidToken,
      });
    return caller;
  };
}

/** The one authentication middleware of every listener: it sets `req.caller` or answers 401. */
export function createAuthenticate(resolve: CallerResolver): (audience: Audience) => RequestHandler {
  const middleware = (audience: Audience): RequestHandler => {
    return async (req, _res, next) => {
      req.caller = await resolve(req.headers, audience);
      next();
    };
  };
  const byAudience = { service: middleware('service'), mcp: middleware('mcp') };
  return (audience) => byAudience[audience];
}

export function sessionCookieOf(req: Request): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  return parseCookies(header)[SESSION_COOKIE] || undefined;
}

/** The authenticated caller of a protected route. */
export function callerOf(req: Request): Caller {
  if (!req.caller) throw new UnauthorizedError('Authentication required', { code: CallerErrorCode.InvalidToken });
  return req.caller;
}
