import { randomBytes } from 'node:crypto';
import { type JWTVerifyGetKey, createRemoteJWKSet, decodeJwt, errors as joseErrors, jwtVerify } from 'jose';
import type * as Oidc from 'openid-client';
import type { EphemeralStore } from '../../adapters/ephemeral/port.js';
import type { Config } from '../../config.js';
import { BadRequestError, CommonErrorCode, ConflictError, UnauthorizedError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import type { AuditRecorder } from '../../ports/audit.js';
import {
  DEFAULT_ROLE,
  type User,
  type UsersService,
  groupNameSchema,
  roleSchema,
  usernameSchema,
} from '../users/index.js';
import { type Caller, CallerErrorCode, type ClientInfo, MCP_SCOPES, userCaller } from '../../ports/caller.js';
import { identityProviderUnavailable, ssoLoginRefused } from './auth.errors.js';
import type { AuthService, LoginResult } from './auth.service.js';

/** The OpenID Connect client, loaded when single sign-on is first used (only a service configured for it does). */
const openidClient = () => import('openid-client');

type OidcSettings = NonNullable<Config['auth']['oidc']>;

/** A login in flight at the identity provider: what its callback needs, kept server-side for ten minutes. */
interface PendingLogin {
  verifier: string;
  nonce: string;
  returnTo?: string;
}

const PENDING_TTL_MS = 10 * 60_000;
const SCOPE = 'openid email profile';
/** The session keeps the identity provider's ID token for RP-initiated logout. */
const ID_TOKEN_KEY = 'idp_id_token';

/**
 * Where a login may return the browser: a path on this service, or a page of one of its other listeners (the
 * playground, the builder) on the same host, given as an absolute URL. Anything else would make the login an open
 * redirect.
 */
export function safeReturnPath(value: string | undefined, serviceHost?: string): string | undefined {
  if (value === undefined || value === '') return undefined;
  const refused = () =>
    new BadRequestError('redirect_uri must be a path on this service (such as /docs), or a page of its listeners', {
      code: CommonErrorCode.Validation,
    });
  if (/[\r\n]/.test(value)) throw refused();
  if (value.startsWith('/') && !value.startsWith('//') && !value.startsWith('/\\')) return value;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw refused();
  }
  const sameHost = serviceHost !== undefined && url.hostname === serviceHost;
  if (!sameHost || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password) {
    throw refused();
  }
  return url.href;
}

function stringArray(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** Roles from the claims the common providers use: `roles`, Keycloak's realm and client roles. */
export function rolesFromClaims(claims: Record<string, unknown>, clientId: string): string[] {
  const realm = (claims.realm_access as { roles?: unknown } | undefined)?.roles;
  const client = (claims.resource_access as Record<string, { roles?: unknown }> | undefined)?.[clientId]?.roles;
  const all = [...stringArray(claims.roles), ...stringArray(realm), ...stringArray(client)].map((r) => r.toLowerCase());
  return [...new Set([DEFAULT_ROLE, ...all.filter((r) => roleSchema.safeParse(r).success)])];
}

/** Path-like group names from a `groups` claim (Keycloak sends full paths; others plain names). */
export function groupsFromClaims(claims: Record<string, unknown>): string[] {
  const names = stringArray(claims.groups).map((g) => (g.startsWith('/') ? g : `/${g}`));
  return [...new Set(names.filter((g) => groupNameSchema.safeParse(g).success))];
}

/**
 * Single sign-on through any OpenID Connect provider (authorization code with PKCE S256, state and nonce).
 * Users are linked by issuer and subject, never by email, so an account at one provider cannot take over
 * another; roles and groups follow the provider's claims at every login.
 */
export class OidcSso {
  #configuration: Promise<Oidc.Configuration> | undefined;
  #jwks: JWTVerifyGetKey | undefined;

  constructor(
    private readonly settings: OidcSettings,
    private readonly deps: {
      auth: AuthService;
      users: UsersService;
      ephemeral: EphemeralStore;
      logger: Logger;
      audit: AuditRecorder;
    },
  ) {}

  /** Starts a login: where to send the browser, and the state the browser must bring back. */
  async begin(returnTo: string | undefined): Promise<{ url: URL; state: string }> {
    const config = await this.#config();
    const oidc = await openidClient();
    const pending: PendingLogin = { verifier: oidc.randomPKCECodeVerifier(), nonce: oidc.randomNonce() };
    const path = safeReturnPath(returnTo, new URL(this.settings.redirectUri).hostname);
    if (path) pending.returnTo = path;
    const state = oidc.randomState();
    await this.deps.ephemeral.put(`sso:${state}`, JSON.stringify(pending), PENDING_TTL_MS);
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: this.settings.redirectUri,
      scope: SCOPE,
      code_challenge: await oidc.calculatePKCECodeChallenge(pending.verifier),
      code_challenge_method: 'S256',
      state,
      nonce: pending.nonce,
    });
    return { url, state };
  }

  /**
   * Finishes a login at the callback: the state must be the one this browser was given and must not have been
   * used before; the code is exchanged with the PKCE verifier and the ID token's nonce checked.
   */
  async complete(
    callbackUrl: URL,
    browserState: string | undefined,
    client: ClientInfo,
  ): Promise<{ result: LoginResult; returnTo?: string }> {
    const params = callbackUrl.searchParams;
    const state = params.get('state');
    if (params.has('error')) {
      const reason = (params.get('error_description') ?? params.get('error') ?? '').slice(0, 200);
      if (state) await this.deps.ephemeral.take(`sso:${state}`);
      throw ssoLoginRefused(`The identity provider refused the login: ${reason}`);
    }
    if (!state || !params.get('code'))
      throw new BadRequestError('code and state are required', { code: CommonErrorCode.Validation });
    if (browserState !== state) throw ssoLoginRefused('This login was not started in this browser');
    const stored = await this.deps.ephemeral.take(`sso:${state}`);
    if (!stored) throw ssoLoginRefused('Unknown, expired or already completed login attempt');
    const pending = JSON.parse(stored) as PendingLogin;
    const config = await this.#config();
    const oidc = await openidClient();
    let tokens: Awaited<ReturnType<typeof Oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
        pkceCodeVerifier: pending.verifier,
        expectedState: state,
        expectedNonce: pending.nonce,
        idTokenExpected: true,
      });
    } catch (error) {
      if (error instanceof oidc.ResponseBodyError || error instanceof oidc.AuthorizationResponseError) {
        throw ssoLoginRefused(`The identity provider refused the code exchange: ${error.error}`);
      }
      if (error instanceof TypeError || (error instanceof Error && error.name === 'TimeoutError')) {
        throw identityProviderUnavailable(error);
      }
      throw ssoLoginRefused('The identity provider response could not be validated', error);
    }
    const claims = tokens.claims();
    if (!claims) throw ssoLoginRefused('No ID token');
    const user = await this.#provision(config.serverMetadata().issuer, claims);
    if (!user.active) {
      await this.deps.audit.record({
        type: 'login.failed',
        actorId: null,
        subjectId: user.id,
        ipAddress: client.ip,
        userAgent: client.userAgent,
        details: { method: 'sso', reason: 'account_deactivated' },
      });
      throw ssoLoginRefused('This account is deactivated');
    }
    const result = await this.deps.auth.startSession(
      user,
      client,
      tokens.id_token ? { [ID_TOKEN_KEY]: tokens.id_token } : {},
    );
    this.deps.logger.info({ event: 'sso_login', user_id: user.id }, 'SSO login succeeded');
    await this.deps.audit.record({
      type: 'sso.login',
      actorId: user.id,
      ipAddress: client.ip,
      userAgent: client.userAgent,
      details: { issuer: config.serverMetadata().issuer, session_id: result.session.id },
    });
    return { result, ...(pending.returnTo && { returnTo: pending.returnTo }) };
  }

  /** Where to send the browser to end its session at the identity provider, if the provider supports it. */
  async endSessionUrl(sessionData: Record<string, string> | undefined): Promise<URL | undefined> {
    const config = await this.#config();
    if (!config.serverMetadata().end_session_endpoint) return undefined;
    const idToken = sessionData?.[ID_TOKEN_KEY];
    const oidc = await openidClient();
    return oidc.buildEndSessionUrl(config, {
      post_logout_redirect_uri: new URL('/', this.settings.redirectUri).toString(),
      ...(idToken && { id_token_hint: idToken }),
      client_id: this.settings.clientId,
    });
  }

  /** Whether a bearer token claims to come from the identity provider (unverified: only to choose the verifier). */
  issued(token: string): boolean {
    try {
      return decodeJwt(token).iss === this.settings.issuerUrl;
    } catch {
      return false;
    }
  }

  /**
   * The caller an access token of the identity provider stands for, on the MCP wires (the token is bound to the
   * MCP resource, `audience`): signature by the provider's published keys, issuer, audience and expiry checked.
   * The person is the local user linked to the provider's subject, provisioned on first use as a login would.
   * The token's MCP scopes narrow what it may do; a token naming none of them is not narrowed.
   */
  async authenticateAccessToken(token: string, audience: string): Promise<Caller> {
    const configuration = await this.#config();
    const metadata = configuration.serverMetadata();
    if (!metadata.jwks_uri) throw identityProviderUnavailable(new Error('the provider publishes no jwks_uri'));
    this.#jwks ??= createRemoteJWKSet(new URL(metadata.jwks_uri), { timeoutDuration: 5_000 });
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, this.#jwks, { issuer: metadata.issuer, audience, clockTolerance: 5 }));
    } catch (error) {
      // The provider's keys could not be fetched: that says nothing about the token (503, not 401).
      if (error instanceof joseErrors.JWKSTimeout || !(error instanceof joseErrors.JOSEError))
        throw identityProviderUnavailable(error);
      throw new UnauthorizedError('Invalid token', { code: CallerErrorCode.InvalidToken });
    }
    if (typeof payload.sub !== 'string')
      throw new UnauthorizedError('Invalid token', { code: CallerErrorCode.InvalidToken });
    const claims = payload as Record<string, unknown> & { sub: string; exp?: number; scope?: unknown };
    const user =
      (await this.deps.users.findByIdentity(metadata.issuer, claims.sub)) ??
      (await this.#provision(metadata.issuer, claims));
    if (!user.active) throw new UnauthorizedError('Invalid token', { code: CallerErrorCode.InvalidToken });
    const scopes = (typeof claims.scope === 'string' ? claims.scope.split(' ') : []).filter((s) =>
      (MCP_SCOPES as readonly string[]).includes(s),
    );
    return {
      ...userCaller(user, { via: 'bearer', ...(typeof claims.exp === 'number' && { expiresAt: claims.exp }) }),
      resource: audience,
      ...(scopes.length > 0 && { scopes }),
    };
  }

  /** The local user for these claims: linked by issuer and subject, or provisioned on first login. */
  async #provision(issuer: string, claims: Record<string, unknown> & { sub: string }): Promise<User> {
    const { users } = this.deps;
    const roles = rolesFromClaims(claims, this.settings.clientId);
    const groups = groupsFromClaims(claims);
    let user = await users.findByIdentity(issuer, claims.sub);
    if (!user) {
      user = await this.#createLinkedUser(issuer, claims, roles);
    } else {
      await users.setRoles(user.id, roles);
      user = { ...user, roles };
    }
    await users.setGroups(user.id, groups);
    return user;
  }

  async #createLinkedUser(
    issuer: string,
    claims: Record<string, unknown> & { sub: string },
    roles: string[],
  ): Promise<User> {
    const email = typeof claims.email === 'string' ? claims.email : undefined;
    const preferred = [claims.preferred_username, email?.split('@')[0], claims.sub].find(
      (c): c is string => typeof c === 'string' && usernameSchema.safeParse(c).success,
    );
    const base = preferred ?? `sso-${randomBytes(4).toString('hex')}`;
    for (let attempt = 0; attempt < 5; attempt++) {
      // A local account may already use the name: suffix rather than link, which would hand it over.
      const username = attempt === 0 ? base : `${base.slice(0, 54)}-${randomBytes(3).toString('hex')}`;
      try {
        const user = await this.deps.users.create({
          username,
          roles,
          emailVerified: claims.email_verified === true,
          ...(typeof claims.name === 'string' && claims.name.trim() && { name: claims.name.trim().slice(0, 100) }),
          ...(email && attempt === 0 && { email }),
        });
        await this.deps.users.linkIdentity(user.id, issuer, claims.sub);
        return user;
      } catch (error) {
        if (!(error instanceof ConflictError)) throw error;
      }
    }
    throw new ConflictError('Could not choose a free username for this account', { code: CommonErrorCode.Conflict });
  }

  #config(): Promise<Oidc.Configuration> {
    const issuer = new URL(this.settings.issuerUrl);
    this.#configuration ??= openidClient()
      .then((oidc) =>
        oidc.discovery(issuer, this.settings.clientId, this.settings.clientSecret, undefined, {
          // Plain http is for development identity providers on this machine only.
          ...(issuer.protocol === 'http:' && { execute: [oidc.allowInsecureRequests] }),
          timeout: 5,
        }),
      )
      .catch((error: unknown) => {
        this.#configuration = undefined; // try again on the next login
        throw identityProviderUnavailable(error);
      });
    return this.#configuration;
  }
}
