import { parse as parseCookies } from 'cookie';
import type { Request, Response } from 'express';
import { z } from 'zod';
import { callerOf } from '../../http/authenticate.js';
import { clientInfo } from '../../http/request-context.js';
import { Reply, type RouteGroup, defineRoute } from '../../http/route.js';
import {
  SessionLoginResponse,
  TokenResponse,
  clearSessionCookie,
  loginUser,
  setSessionCookie,
  tokenBody,
} from './auth.routes.js';
import type { AuthService } from './auth.service.js';
import type { OidcSso } from './sso.js';

/** Binds a login to the browser that started it (login CSRF): the callback must bring the same state back. */
const STATE_COOKIE = 'sso_state';
const STATE_COOKIE_PATH = '/auth/sso';
const TAGS = ['Single sign-on'];

function redirect(res: Response, location: string): Reply {
  res.set('Cache-Control', 'no-store');
  return new Reply(302, undefined, { Location: location });
}

function callbackUrl(req: Request, publicUrl: string): URL {
  // The URL as the browser reached us, which the identity provider's response is checked against.
  return new URL(req.originalUrl, publicUrl);
}

export function ssoRoutes(deps: { sso: OidcSso; auth: AuthService; publicUrl: string }): RouteGroup {
  const { sso, auth, publicUrl } = deps;
  return {
    prefix: '/auth/sso',
    area: 'envelope',
    tags: TAGS,
    routes: [
      defineRoute({
        method: 'get',
        path: '/login',
        operationId: 'ssoLogin',
        summary: 'Start single sign-on at the identity provider',
        access: 'public',
        request: {
          query: z.object({
            redirect_uri: z.string().max(2048).optional().describe('Path on this service to return to after login'),
          }),
        },
        responses: {
          302: { description: "Redirect to the identity provider's authorization endpoint" },
          503: { description: 'The identity provider is unavailable' },
        },
        handler: async ({ query, req, res }) => {
          const { url, state } = await sso.begin(query.redirect_uri);
          res.cookie(STATE_COOKIE, state, {
            httpOnly: true,
            sameSite: 'lax',
            secure: req.secure || publicUrl.startsWith('https:'),
            path: STATE_COOKIE_PATH,
            maxAge: 10 * 60_000,
          });
          return redirect(res, url.toString());
        },
      }),
      defineRoute({
        method: 'get',
        path: '/callback',
        operationId: 'ssoCallback',
        summary: 'Finish single sign-on (the identity provider redirects the browser here)',
        description:
          'Exchanges the code, links or provisions the local user and starts a session (cookie). Redirects to the ' +
          'path given at login, or answers with the login response of the deployment’s mode.',
        access: 'public',
        request: {
          query: z.object({
            code: z.string().max(2048).optional(),
            state: z.string().max(512).optional(),
            error: z.string().max(256).optional(),
            error_description: z.string().max(2048).optional(),
            iss: z.string().max(2048).optional(),
          }),
        },
        responses: {
          200: { description: 'Logged in', schema: z.union([TokenResponse, SessionLoginResponse]) },
          302: { description: 'Logged in; redirect to the path given at login' },
          401: { description: 'The login failed or was not started in this browser' },
        },
        handler: async ({ req, res }) => {
          const browserState = req.headers.cookie ? parseCookies(req.headers.cookie)[STATE_COOKIE] : undefined;
          res.clearCookie(STATE_COOKIE, { path: STATE_COOKIE_PATH });
          const { result, returnTo } = await sso.complete(callbackUrl(req, publicUrl), browserState, clientInfo(req));
          // The browser gets a session cookie in either mode; token mode also answers with tokens.
          setSessionCookie(req, res, result.session, publicUrl);
          if (returnTo) return redirect(res, returnTo);
          if (result.tokens) return { ...tokenBody(result.tokens), user: loginUser(result.user) };
          return {
            session_id: result.session.id,
            user: loginUser(result.user),
            expires_at: result.session.expiresAt,
          };
        },
      }),
      defineRoute({
        method: 'get',
        path: '/logout',
        operationId: 'ssoLogout',
        summary: 'End the session here and at the identity provider',
        responses: {
          200: {
            description: 'Logged out here; the provider has no end-session endpoint',
            schema: z.object({ message: z.string() }),
          },
          302: { description: "Redirect to the identity provider's end-session endpoint" },
        },
        handler: async ({ req, res }) => {
          const caller = callerOf(req);
          const session = caller.sessionId ? await auth.session(caller.sessionId) : undefined;
          await auth.logout(caller, clientInfo(req), 'sso');
          clearSessionCookie(res);
          const endSession = await sso.endSessionUrl(session?.data);
          return endSession ? redirect(res, endSession.toString()) : { message: 'Logged out' };
        },
      }),
    ],
  };
}
