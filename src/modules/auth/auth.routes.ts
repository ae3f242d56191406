import type { Request, Response } from 'express';
import { z } from 'zod';
import { BadRequestError, CommonErrorCode, UnauthorizedError } from '../../errors.js';
import { SESSION_COOKIE, callerOf, sessionCookieOf } from '../../http/authenticate.js';
import { type RouteGroup, defineRoute } from '../../http/route.js';
import type { UsersService } from '../users/index.js';
import { clientInfo } from '../../http/request-context.js';
import type { AuthService, LoginResult, StartedSession } from './auth.service.js';
import {
  CallerErrorCode,
  MCP_SCOPES,
  mcpResourceUrl,
  principalIdOf,
  publicPath,
  userIdOf,
} from '../../ports/caller.js';
import type { KeyRing } from './keys.js';

export interface AuthRouteDeps {
  auth: AuthService;
  users: UsersService;
  keys: KeyRing;
  /** Whether the service is reached over https (then cookies are Secure). */
  publicUrl: string;
  /** Who issues the tokens this service accepts (OAuth protected-resource metadata). */
  authorizationServers: string[];
  /** Facts about a service principal, for `GET /auth/me` called with its token. */
  describePrincipal?: (id: string) => Promise<{ name: string; created_at: string } | undefined>;
}

const TAGS = ['Authentication'];
const iso = (ms: number) => new Date(ms).toISOString();

export const LoginUser = z
  .object({ id: z.string(), username: z.string(), email: z.string().nullable(), roles: z.array(z.string()) })
  .meta({ id: 'LoginUser' });

export const TokenResponse = z
  .object({
    access_token: z.string().describe('JWT access token'),
    refresh_token: z.string().describe('Opaque, single-use refresh token'),
    token_type: z.literal('Bearer'),
    expires_in: z.number().int().describe('Seconds until the access token expires'),
    user: LoginUser.optional().describe('Present on login only'),
  })
  .meta({ id: 'TokenResponse' });

export const SessionLoginResponse = z
  .object({
    session_id: z
      .string()
      .describe(
        'The session id, as GET /auth/sessions lists it and DELETE /auth/sessions/{session_id} takes it. The ' +
          '`session_id` cookie carries it with a secret appended (`<session_id>.<secret>`)',
      ),
    user: LoginUser,
    expires_at: z.iso.datetime(),
  })
  .meta({ id: 'SessionLoginResponse' });

const LoginRequest = z
  .object({
    username: z.string().min(1).max(254).describe('Username or email address'),
    password: z.string().min(1).max(1024).optional(),
    grant_type: z.enum(['password', 'refresh_token']).default('password'),
    refresh_token: z.string().optional().describe('With grant_type refresh_token'),
  })
  .meta({ id: 'LoginRequest' });

// Any string is checked as a token (an access token pasted by mistake is 401 like any other wrong token, not 400);
// the body limit bounds its length.
const RefreshRequest = z
  .object({ refresh_token: z.string().describe('The refresh token of the last login or refresh') })
  .meta({ id: 'RefreshRequest' });
const Message = z.object({ message: z.string() }).meta({ id: 'Message' });

const CurrentUser = z
  .object({
    id: z.string(),
    username: z.string(),
    email: z.string().nullable(),
    email_verified: z.boolean(),
    name: z.string().nullable(),
    roles: z.array(z.string()),
    groups: z.array(z.string()).describe('Path-like group names'),
    created_at: z.iso.datetime(),
    last_login: z.iso.datetime().nullable(),
  })
  .meta({ id: 'CurrentUser' });

const SessionInfo = z
  .object({
    session_id: z.string(),
    created_at: z.iso.datetime(),
    expires_at: z.iso.datetime(),
    last_accessed: z.iso.datetime(),
    ip_address: z.string().nullable(),
    user_agent: z.string().nullable(),
    is_current: z.boolean(),
  })
  .meta({ id: 'SessionRecord' });

const SignInState = z
  .object({ signed_in: z.boolean().describe("Whether the request's session cookie is a live session") })
  .meta({ id: 'SignInState' });

const SessionList = z
  .object({ sessions: z.array(SessionInfo), total: z.number().int(), max_concurrent: z.number().int() })
  .meta({ id: 'SessionList' });

const VerifyResult = z
  .object({
    valid: z.literal(true),
    user_id: z.string(),
    username: z.string(),
    expires_at: z.iso.datetime(),
    issued_at: z.iso.datetime(),
  })
  .meta({ id: 'VerifyResult' });

const Jwks = z
  .object({
    keys: z.array(
      z.object({ kty: z.string(), kid: z.string(), alg: z.string(), use: z.string() }).catchall(z.unknown()),
    ),
  })
  .meta({ id: 'JsonWebKeySet' });

const ResourceMetadata = z
  .object({
    resource: z.string(),
    authorization_servers: z.array(z.string()),
    bearer_methods_supported: z.array(z.string()),
    jwks_uri: z.string(),
    scopes_supported: z.array(z.string()),
    resource_name: z.string(),
    resource_documentation: z.string(),
  })
  .meta({ id: 'ProtectedResourceMetadata' });

export function loginUser(user: LoginResult['user']) {
  return { id: user.id, username: user.username, email: user.email, roles: user.roles };
}

/** Sets the session cookie: HttpOnly, SameSite=Lax, Secure whenever the client reached us over https. */
export function setSessionCookie(req: Request, res: Response, session: StartedSession, publicUrl: string): void {
  res.cookie(SESSION_COOKIE, session.credential, {
    httpOnly: true,
    sameSite: 'lax',
    secure: req.secure || publicUrl.startsWith('https:'),
    path: '/',
    expires: new Date(session.expiresAt),
  });
}

export function clearSessionCookie(res: Response): void {
  res.clearCookie(SESSION_COOKIE, { path: '/', httpOnly: true, sameSite: 'lax' });
}

/** An access and refresh token pair as every token response carries it. */
export function tokenBody(pair: { accessToken: string; refreshToken: string; expiresIn: number }) {
  return {
    access_token: pair.accessToken,
    refresh_token: pair.refreshToken,
    token_type: 'Bearer' as const,
    expires_in: pair.expiresIn,
  };
}

/** The login response of the deployment's mode (TokenResponse or SessionLoginResponse). */
export function loginResponse(req: Request, res: Response, result: LoginResult, publicUrl: string) {
  if (result.tokens) return { ...tokenBody(result.tokens), user: loginUser(result.user) };
  setSessionCookie(req, res, result.session, publicUrl);
  return { session_id: result.session.id, user: loginUser(result.user), expires_at: result.session.expiresAt };
}

/** The sign-in routes (`/auth`), token verification (`/auth/verify`) and the published keys (`/.well-known`). */
export function authRoutes(deps: AuthRouteDeps): [RouteGroup, RouteGroup, RouteGroup] {
  const { auth, users, keys, publicUrl } = deps;

  const main: RouteGroup = {
    prefix: '/auth',
    area: 'envelope',
    tags: TAGS,
    routes: [
      defineRoute({
        method: 'post',
        path: '/login',
        operationId: 'login',
        summary: 'Log in with a username (or email) and password',
        description:
          'Token mode answers with a token pair; session mode with a session and a `session_id` cookie. Repeated ' +
          'failures for one account or from one address are refused with 429 for a while.',
        access: 'public',
        request: { body: LoginRequest, bodyContentTypes: ['application/json', 'application/x-www-form-urlencoded'] },
        responses: {
          200: { description: 'Logged in', schema: z.union([TokenResponse, SessionLoginResponse]) },
          401: { description: 'Invalid credentials' },
          429: { description: 'Too many failed attempts' },
        },
        handler: async ({ body, req, res }) => {
          if (body.grant_type === 'refresh_token') {
            if (!body.refresh_token)
              throw new BadRequestError('refresh_token is required with grant_type refresh_token', {
                code: CommonErrorCode.Validation,
              });
            if (auth.mode !== 'token')
              throw new BadRequestError('Refresh tokens are issued only in token mode', {
                code: CommonErrorCode.BadRequest,
              });
            return tokenBody(await auth.refresh(body.refresh_token, clientInfo(req)));
          }
          if (!body.password) throw new BadRequestError('password is required', { code: CommonErrorCode.Validation });
          const result = await auth.login(body.username, body.password, clientInfo(req));
          return loginResponse(req, res, result, publicUrl);
        },
      }),
      defineRoute({
        method: 'post',
        path: '/refresh',
        operationId: 'refreshToken',
        summary: 'Exchange a refresh token for a new token pair',
        description:
          'The refresh token is single-use: presenting a used one again revokes its whole session. Any string that ' +
          'is not a live refresh token (an access token, say) is refused with 401; only a missing or non-string ' +
          '`refresh_token` is a 400.',
        access: 'public',
        request: { body: RefreshRequest },
        responses: {
          200: { description: 'New token pair', schema: TokenResponse },
          401: { description: 'Not a valid refresh token: unknown, expired, reused, or another kind of token' },
        },
        handler: async ({ body, req }) => tokenBody(await auth.refresh(body.refresh_token, clientInfo(req))),
      }),
      defineRoute({
        method: 'post',
        path: '/logout',
        operationId: 'logout',
        summary: 'End the current session',
        description:
          'Revokes the session behind the credential: its refresh tokens, access tokens and cookie stop working at once.',
        responses: { 200: { description: 'Logged out', schema: Message } },
        handler: async ({ req, res }) => {
          await auth.logout(callerOf(req), clientInfo(req));
          clearSessionCookie(res);
          return { message: 'Logged out' };
        },
      }),
      defineRoute({
        method: 'get',
        path: '/me',
        operationId: 'getCurrentUser',
        summary: 'The authenticated user',
        responses: { 200: { description: 'Current user', schema: CurrentUser } },
        handler: async ({ req }) => {
          const caller = callerOf(req);
          const userId = userIdOf(caller);
          if (userId === undefined) {
            const serviceId = principalIdOf(caller) ?? '';
            const principal = await deps.describePrincipal?.(serviceId);
            if (!principal)
              throw new UnauthorizedError('No such service principal', { code: CallerErrorCode.InvalidToken });
            return {
              id: serviceId,
              username: caller.username,
              email: null,
              email_verified: false,
              name: principal.name,
              roles: caller.roles,
              groups: [],
              created_at: principal.created_at,
              last_login: null,
            };
          }
          const user = await users.get(userId);
          if (!user) throw new UnauthorizedError('No such user', { code: CallerErrorCode.InvalidToken });
          return {
            id: user.id,
            username: user.username,
            email: user.email,
            email_verified: user.emailVerified,
            name: user.name,
            roles: user.roles,
            groups: await users.groupsOf(user.id),
            created_at: user.createdAt,
            last_login: user.lastLogin,
          };
        },
      }),
      defineRoute({
        method: 'get',
        path: '/session',
        operationId: 'getSignInState',
        summary: 'Whether the session cookie signs this browser in',
        description:
          'For web apps, which cannot read their HttpOnly `session_id` cookie: whether it is a live session, ' +
          'answered 200 either way, so that a browser that is signed out is not refused (GET /auth/me answers it ' +
          '401). Only the cookie counts; it tells nothing of whose session it is (GET /auth/me does, with it).',
        access: 'public',
        responses: { 200: { description: 'The sign-in state', schema: SignInState } },
        handler: async ({ req }) => {
          const cookie = sessionCookieOf(req);
          if (!cookie) return { signed_in: false };
          try {
            await auth.authenticateSession(cookie);
            return { signed_in: true };
          } catch (error) {
            if (error instanceof UnauthorizedError) return { signed_in: false };
            throw error;
          }
        },
      }),
      defineRoute({
        method: 'get',
        path: '/sessions',
        operationId: 'listSessions',
        summary: "The caller's active sessions",
        responses: { 200: { description: 'Sessions, oldest first', schema: SessionList } },
        handler: async ({ req }) => {
          const caller = callerOf(req);
          // A service principal has no login sessions: its tokens are tied to its secret, not to a session.
          const userId = userIdOf(caller);
          const sessions = userId === undefined ? [] : await auth.listSessions(userId);
          return {
            sessions: sessions.map((s) => ({
              session_id: s.id,
              created_at: iso(s.createdAt),
              expires_at: iso(Math.min(s.expiresAt, s.lastAccessedAt + s.idleTimeoutMs)),
              last_accessed: iso(s.lastAccessedAt),
              ip_address: s.ipAddress,
              user_agent: s.userAgent,
              is_current: s.id === caller.sessionId,
            })),
            total: sessions.length,
            max_concurrent: auth.maxConcurrentSessions,
          };
        },
      }),
      defineRoute({
        method: 'delete',
        path: '/sessions/:session_id',
        operationId: 'revokeSession',
        summary: 'Revoke one of your sessions',
        request: { params: z.object({ session_id: z.string().min(1).max(256) }) },
        responses: {
          200: { description: 'Revoked', schema: Message },
          403: { description: "Another user's session" },
          404: { description: 'No such session' },
        },
        handler: async ({ params, req, res }) => {
          const caller = callerOf(req);
          await auth.revokeOwnSession(caller, params.session_id, clientInfo(req));
          if (params.session_id.split('.')[0] === caller.sessionId) clearSessionCookie(res);
          return { message: 'Session revoked' };
        },
      }),
    ],
  };

  const verify: RouteGroup = {
    prefix: '/auth/verify',
    area: 'verify',
    tags: TAGS,
    routes: [
      defineRoute({
        method: 'post',
        path: '/',
        operationId: 'verifyToken',
        summary: 'Verify a Bearer access token',
        description: 'For gateways and services: 200 with the token facts, or 401 with `valid: false`.',
        access: 'public',
        responses: {
          200: { description: 'The token is valid', schema: VerifyResult },
          401: { description: 'Missing, invalid, expired or revoked' },
        },
        handler: async ({ req }) => {
          const match = /^Bearer\s+(\S+)\s*$/i.exec(req.get('Authorization') ?? '');
          if (!match) throw new UnauthorizedError('Missing Bearer token', { code: CallerErrorCode.InvalidToken });
          const claims = await auth.verifyAccessToken(match[1]!);
          return {
            valid: true as const,
            user_id: claims.sub,
            username: claims.username,
            expires_at: iso(claims.exp * 1000),
            issued_at: iso(claims.iat * 1000),
          };
        },
      }),
    ],
  };

  const wellKnown: RouteGroup = {
    prefix: '/.well-known',
    area: 'envelope',
    tags: TAGS,
    routes: [
      defineRoute({
        method: 'get',
        path: '/jwks.json',
        operationId: 'getJwks',
        summary: 'Public keys that verify access tokens',
        access: 'public',
        responses: { 200: { description: 'JSON Web Key Set', schema: Jwks } },
        handler: ({ res }) => {
          res.set('Cache-Control', 'public, max-age=300');
          return keys.jwks();
        },
      }),
      ...[
        ...new Set([
          '/oauth-protected-resource',
          '/oauth-protected-resource/mcp',
          `/oauth-protected-resource${publicPath(publicUrl)}/mcp`,
        ]),
      ].map((path) =>
        defineRoute({
          method: 'get',
          path,
          operationId:
            path === '/oauth-protected-resource'
              ? 'getResourceMetadata'
              : path === '/oauth-protected-resource/mcp'
                ? 'getMcpResourceMetadata'
                : 'getMcpResourceMetadataAtPath',
          summary: 'OAuth protected-resource metadata (RFC 9728) for MCP clients',
          access: 'public',
          responses: { 200: { description: 'Protected-resource metadata', schema: ResourceMetadata } },
          handler: ({ res }) => {
            res.set('Cache-Control', 'public, max-age=300');
            return {
              resource: mcpResourceUrl(publicUrl),
              authorization_servers: deps.authorizationServers,
              bearer_methods_supported: ['header'],
              scopes_supported: [...MCP_SCOPES],
              jwks_uri: `${publicUrl}/.well-known/jwks.json`,
              resource_name: 'Agent Service',
              resource_documentation: `${publicUrl}/docs`,
            };
          },
        }),
      ),
    ],
  };

  return [main, verify, wellKnown];
}
