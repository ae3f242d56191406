import type { OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import { InvalidRequestError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { authorizationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/authorize.js';
import { clientRegistrationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/register.js';
import { revocationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/revoke.js';
import { tokenHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/token.js';
import { parse as parseCookies } from 'cookie';
import express, {
  type ErrorRequestHandler,
  type Request,
  type RequestHandler,
  type Response,
  type Router,
} from 'express';
import { z } from 'zod';
import type { CounterStore } from '../../adapters/counters/port.js';
import { RateLimitError, UnauthorizedError, toAppError } from '../../errors.js';
import { callerOf } from '../../http/authenticate.js';
import { clientInfo } from '../../http/request-context.js';
import { type RouteGroup, Reply, defineRoute } from '../../http/route.js';
import { MCP_SCOPES, asUser, publicPath } from '../../ports/caller.js';
import type { User } from '../users/index.js';
import { CONSENT_COOKIE, sendConsentError, sendConsentPage } from './oauth.page.js';
import { OFFLINE_ACCESS, type OAuthService, type PendingAuthorization } from './oauth.service.js';

/** Where the authorization server's endpoints live under the public URL. */
export const OAUTH_PATHS = {
  authorize: '/oauth/authorize',
  consent: '/oauth/consent',
  token: '/oauth/token',
  register: '/oauth/register',
  revoke: '/oauth/revoke',
} as const;

export interface OAuthRouteDeps {
  service: OAuthService;
  publicUrl: string;
  counters: CounterStore;
  /** The person signed in on this browser through the `session_id` cookie (session mode), if any. */
  signedInUser(req: Request): Promise<User | undefined>;
  /** A password sign-in, throttled and audited as logins are; UnauthorizedError when wrong. */
  checkPassword(login: string, password: string, req: Request): Promise<User>;
  /** The URL that starts single sign-on and comes back to `returnTo` (a path here); absent without SSO. */
  ssoLoginUrl?: (returnTo: string) => string;
  /** The grant an access token of ours was issued through, if it is a valid one. */
  grantOfAccessToken(token: string): Promise<string | undefined>;
  requestTtlSeconds: number;
}

/** RFC 8414 metadata of this authorization server (also served at the OpenID discovery path clients try). */
export function authorizationServerMetadata(publicUrl: string) {
  return {
    issuer: publicUrl,
    authorization_endpoint: `${publicUrl}${OAUTH_PATHS.authorize}`,
    token_endpoint: `${publicUrl}${OAUTH_PATHS.token}`,
    registration_endpoint: `${publicUrl}${OAUTH_PATHS.register}`,
    revocation_endpoint: `${publicUrl}${OAUTH_PATHS.revoke}`,
    jwks_uri: `${publicUrl}/.well-known/jwks.json`,
    // offline_access: a client asks for refresh tokens by it (SEP-2207); they are issued to clients registered for them.
    scopes_supported: [...MCP_SCOPES, OFFLINE_ACCESS],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    authorization_response_iss_parameter_supported: true,
    client_id_metadata_document_supported: true,
    service_documentation: `${publicUrl}/docs`,
  };
}

const AuthorizationServerMetadata = z
  .object({
    issuer: z.url(),
    authorization_endpoint: z.url(),
    token_endpoint: z.url(),
    registration_endpoint: z.url(),
    revocation_endpoint: z.url(),
    scopes_supported: z.array(z.string()),
    code_challenge_methods_supported: z.array(z.literal('S256')),
  })
  .loose();

const Grant = z.object({
  grant_id: z.string(),
  client_id: z.string(),
  client_name: z.string(),
  client_uri: z.string().nullable(),
  redirect_uris: z.array(z.string()),
  scope: z.string(),
  resource: z.string(),
  created_at: z.string(),
  last_used_at: z.string().nullable(),
});

/** An OAuth error body (RFC 6749 §5.2) for limits the SDK's handlers leave to us. */
function tooMany(res: Response, retryAfterSeconds: number): void {
  res
    .status(429)
    .set('Retry-After', String(retryAfterSeconds))
    .json({ error: 'too_many_requests', error_description: 'Too many requests from this address; try again later' });
}

/** A fixed-window limit per client address, in the shared counter store (so it holds across instances). */
function perAddress(counters: CounterStore, name: string, max: number, windowMs: number): RequestHandler {
  return (req, res, next) => {
    void counters.hit(`oauth:${name}:${req.ip ?? 'unknown'}`, windowMs).then(
      ({ count, resetAt }) => {
        if (count > max) tooMany(res, Math.max(1, Math.ceil((resetAt - Date.now()) / 1000)));
        else next();
      },
      (error: unknown) => next(error),
    );
  };
}

/**
 * What the listener refused before the SDK's endpoints were reached (a malformed JSON body, one too large or in an
 * unsupported encoding, a foreign Origin), answered as the OAuth error body their clients read (RFC 6749 §5.2), with
 * its status. Mounted after the endpoints, at the listener: errors raised before routing never enter a router.
 * Errors of the service itself go on to the listener's renderer, which logs them.
 */
export function oauthRefusals(): ErrorRequestHandler {
  const endpoints: string[] = [OAUTH_PATHS.authorize, OAUTH_PATHS.token, OAUTH_PATHS.register, OAUTH_PATHS.revoke];
  return (thrown, req, res, next) => {
    const error = toAppError(thrown);
    if (!endpoints.includes(req.path.replace(/\/+$/, '')) || !error.expose || res.headersSent) {
      next(thrown);
      return;
    }
    res.status(error.status).set(error.headers).json(new InvalidRequestError(error.message).toResponseObject());
  };
}

/**
 * The endpoints the MCP SDK's authorization-server handlers serve (authorize, token, register, revoke), each
 * behind a per-address limit kept in the shared counter store. The handlers validate the requests and speak the
 * RFC error codes; the provider is this service.
 */
export function oauthEndpoints(deps: OAuthRouteDeps, provider: OAuthServerProvider): Router {
  const { counters } = deps;
  const router = express.Router();
  router.use(
    OAUTH_PATHS.authorize,
    perAddress(counters, 'authorize', 60, 60_000),
    authorizationHandler({ provider, rateLimit: false }),
  );
  router.use(
    OAUTH_PATHS.token,
    perAddress(counters, 'token', 120, 60_000),
    tokenHandler({ provider, rateLimit: false }),
  );
  router.use(
    OAUTH_PATHS.register,
    perAddress(counters, 'register', 20, 3_600_000),
    // Built per request (20 an hour at most), to hand the registration's `application_type` to the service.
    (req, res, next) => {
      const body: unknown = req.body;
      const declared =
        typeof body === 'object' && body !== null ? (body as Record<string, unknown>).application_type : undefined;
      clientRegistrationHandler({
        clientsStore: deps.service.clientsStoreFor(declared),
        rateLimit: false,
        clientSecretExpirySeconds: 0,
      })(req, res, next);
    },
  );
  router.use(
    OAUTH_PATHS.revoke,
    perAddress(counters, 'revoke', 120, 60_000),
    revocationHandler({ provider, rateLimit: false }),
  );
  return router;
}

/** The consent page of a pending request, as this browser sees it (signed in or not, with SSO when there is one). */
async function consentView(deps: OAuthRouteDeps, req: Request, pending: PendingAuthorization, csrf: string) {
  const user = await deps.signedInUser(req);
  return {
    pending,
    csrf,
    action: OAUTH_PATHS.consent,
    ...(user && { signedInAs: user.username }),
    ...(deps.ssoLoginUrl && { ssoUrl: deps.ssoLoginUrl(`${OAUTH_PATHS.consent}?request=${pending.id}`) }),
  };
}

/** The SDK's authorization provider interface, answered by the service and the consent page. */
export function oauthProvider(deps: OAuthRouteDeps): OAuthServerProvider {
  const { service } = deps;
  return {
    clientsStore: service.clientsStore,
    async authorize(client, params, res) {
      const scopes = service.grantableScopes(params.scopes);
      const resource = service.checkResource(params.resource);
      const { pending, csrf } = await service.startAuthorization({
        clientId: client.client_id,
        clientName: client.client_name ?? 'Unnamed client',
        redirectUri: params.redirectUri,
        codeChallenge: params.codeChallenge,
        state: params.state,
        scopes,
        resource,
      });
      res.cookie(`${CONSENT_COOKIE}_${pending.id}`, csrf, {
        httpOnly: true,
        sameSite: 'lax',
        secure: deps.publicUrl.startsWith('https:'),
        path: OAUTH_PATHS.consent,
        maxAge: deps.requestTtlSeconds * 1000,
      });
      sendConsentPage(res, await consentView(deps, res.req, pending, csrf));
    },
    challengeForAuthorizationCode: (client, code) => service.challengeFor(client, code),
    exchangeAuthorizationCode: (client, code, _verifier, redirectUri, resource) =>
      service.redeemCode(client, code, redirectUri, resource),
    exchangeRefreshToken: (client, refreshToken, scopes, resource) =>
      service.refresh(client, refreshToken, scopes, resource),
    verifyAccessToken: () =>
      // The MCP wires authenticate with the service's own middleware; the SDK's bearer middleware is not used.
      Promise.reject(new Error('not used')),
    revokeToken: (client, request) => service.revoke(client, request.token, (token) => deps.grantOfAccessToken(token)),
  };
}

const ConsentForm = z.object({
  request: z.string().max(100).optional(),
  csrf: z.string().max(200).optional(),
  decision: z.string().max(20).optional(),
  username: z.string().max(320).optional(),
  password: z.string().max(1024).optional(),
});

/** Sends the browser back to the client with the answer (RFC 6749 §4.1.2, with `iss` per RFC 9207). */
function backToClient(
  res: Response,
  pending: PendingAuthorization,
  issuer: string,
  params: Record<string, string>,
): void {
  const url = new URL(pending.redirectUri);
  for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
  if (pending.state !== undefined) url.searchParams.set('state', pending.state);
  url.searchParams.set('iss', issuer);
  res.clearCookie(`${CONSENT_COOKIE}_${pending.id}`, { path: OAUTH_PATHS.consent });
  res.redirect(303, url.href);
}

const html = (description: string) => ({ description, schema: z.string(), contentType: 'text/html' });

/**
 * The pending request a consent page or form names, when this browser is the one it was shown to; otherwise the
 * answer is sent here (404 unknown or expired, 403 another browser) and undefined returned.
 */
async function pendingOfBrowser(
  service: OAuthService,
  req: Request,
  res: Response,
  id: string,
  options: { formSecret?: string; keep: boolean },
): Promise<{ pending: PendingAuthorization; cookie: string } | undefined> {
  const cookies = parseCookies(req.headers.cookie ?? '');
  const found = await service.pendingForBrowser(id, (pendingId) => cookies[`${CONSENT_COOKIE}_${pendingId}`], options);
  if (found.kind === 'missing')
    sendConsentError(res, 404, 'This authorization request has expired', 'The sign-in page is no longer valid.');
  if (found.kind === 'foreign')
    sendConsentError(
      res,
      403,
      'This page could not be accepted',
      'It was not opened or sent from the page shown to you.',
    );
  return found.kind === 'found' ? { pending: found.pending, cookie: found.secret } : undefined;
}

/** Metadata, the consent form's answer, and the grants users manage. */
export function oauthRoutes(deps: OAuthRouteDeps): RouteGroup[] {
  const { service, publicUrl } = deps;
  const metadata = authorizationServerMetadata(publicUrl);

  const wellKnown: RouteGroup = {
    prefix: '/.well-known',
    area: 'envelope',
    tags: ['MCP authorization'],
    // At the root, and with the issuer's path inserted when the public URL has one (RFC 8414 §3.1).
    routes: [
      ...new Set(
        ['/oauth-authorization-server', '/openid-configuration'].flatMap((name) => [
          name,
          `${name}${publicPath(publicUrl)}`,
        ]),
      ),
    ].map((path) =>
      defineRoute({
        method: 'get',
        path,
        operationId: `${path.startsWith('/openid-configuration') ? 'getOpenIdConfiguration' : 'getAuthorizationServerMetadata'}${
          path.endsWith('/openid-configuration') || path.endsWith('/oauth-authorization-server') ? '' : 'AtPath'
        }`,
        summary: 'Authorization server metadata (RFC 8414) for MCP clients',
        access: 'public',
        responses: { 200: { description: 'Authorization server metadata', schema: AuthorizationServerMetadata } },
        handler: ({ res }) => {
          res.set('Cache-Control', 'public, max-age=300');
          return metadata;
        },
      }),
    ),
  };

  const consent: RouteGroup = {
    prefix: OAUTH_PATHS.consent,
    area: 'envelope',
    tags: ['MCP authorization'],
    routes: [
      defineRoute({
        method: 'get',
        path: '/',
        operationId: 'showOAuthConsent',
        summary: 'The sign-in and consent page again (where single sign-on returns to)',
        access: 'public',
        request: { query: z.object({ request: z.string().max(100).optional() }) },
        responses: {
          200: html('The page'),
          404: html('The request is unknown or expired'),
          403: html('The request was started in another browser'),
        },
        handler: async ({ req, res, query }) => {
          const found = await pendingOfBrowser(service, req, res, query.request ?? '', { keep: true });
          if (!found) return;
          const { pending, cookie } = found;
          sendConsentPage(res, await consentView(deps, req, pending, cookie));
        },
      }),
      defineRoute({
        method: 'post',
        path: '/',
        operationId: 'answerOAuthConsent',
        summary: 'The sign-in and consent form of an MCP client authorization',
        description:
          'Posted by the page `GET /oauth/authorize` shows, from the same browser (its cookie must match the form). ' +
          'Allow redirects to the client with a code; Deny with `error=access_denied`.',
        access: 'public',
        request: {
          body: ConsentForm,
          bodyContentTypes: ['application/x-www-form-urlencoded'],
        },
        responses: {
          303: { description: 'Back to the client, with `code` or `error`, `state` and `iss`' },
          404: html('The request is unknown or expired (an HTML page)'),
          401: html('Wrong username or password (the page again)'),
          403: html('The form did not come from the page this browser was shown'),
          429: html('Too many failed sign-ins (the page again)'),
        },
        handler: async ({ req, res, body }) => {
          const found = await pendingOfBrowser(service, req, res, body.request ?? '', {
            formSecret: body.csrf ?? '',
            keep: false,
          });
          if (!found) return;
          const { pending, cookie } = found;
          const client = clientInfo(req);
          const view = await consentView(deps, req, pending, cookie);
          if (body.decision !== 'approve') {
            await service.recordDenial(pending, (await deps.signedInUser(req))?.id ?? null, client);
            backToClient(res, pending, publicUrl, {
              error: 'access_denied',
              error_description: 'The user denied access',
            });
            return;
          }
          let user: User | undefined;
          try {
            user =
              body.username || body.password
                ? await deps.checkPassword(body.username ?? '', body.password ?? '', req)
                : await deps.signedInUser(req);
          } catch (error) {
            if (!(error instanceof UnauthorizedError || error instanceof RateLimitError)) throw error;
            await service.keepPending(pending);
            const status = error instanceof RateLimitError ? 429 : 401;
            sendConsentPage(res, { ...view, error: error.message, username: body.username ?? '' }, status);
            return;
          }
          if (!user) {
            await service.keepPending(pending);
            sendConsentPage(res, { ...view, error: 'Sign in to allow access' }, 401);
            return;
          }
          const { code } = await service.approve(pending, user, client);
          backToClient(res, pending, publicUrl, { code });
        },
      }),
    ],
  };

  const grants: RouteGroup = {
    prefix: '/api/v1/oauth/grants',
    area: 'envelope',
    tags: ['MCP authorization'],
    routes: [
      defineRoute({
        method: 'get',
        path: '/',
        operationId: 'listOAuthGrants',
        summary: 'The MCP clients you authorised',
        responses: { 200: { description: 'Your grants, newest first', schema: z.object({ grants: z.array(Grant) }) } },
        handler: async ({ req }) => ({ grants: await service.listGrants(asUser(callerOf(req)).userId) }),
      }),
      defineRoute({
        method: 'delete',
        path: '/:grant_id',
        operationId: 'revokeOAuthGrant',
        summary: 'Revoke an MCP client’s access',
        description: 'Every token issued through the grant stops working at once.',
        request: { params: z.object({ grant_id: z.string().max(100) }) },
        responses: { 204: { description: 'Revoked' }, 404: { description: 'You have no such grant' } },
        handler: async ({ req, params }) => {
          await service.revokeOwnGrant(asUser(callerOf(req)).userId, params.grant_id, clientInfo(req));
          return new Reply(204);
        },
      }),
    ],
  };

  return [wellKnown, consent, grants];
}
