import { randomBytes, randomUUID } from 'node:crypto';
import type { OAuthRegisteredClientsStore } from '@modelcontextprotocol/sdk/server/auth/clients.js';
import {
  InvalidClientMetadataError,
  InvalidGrantError,
  InvalidScopeError,
  InvalidTargetError,
  TemporarilyUnavailableError,
} from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { OAuthClientInformationFull, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Kysely, Transaction } from 'kysely';
import type { EphemeralStore } from '../../adapters/ephemeral/port.js';
import type { Database } from '../../db/database.js';
import { NotFoundError } from '../../errors.js';
import { type AuditRecorder } from '../../ports/audit.js';
import type { ExportedOAuthGrant } from '../../ports/data-export.js';
import { type ClientInfo, MCP_SCOPES } from '../../ports/caller.js';
import { hashSecret, matchesHash, opaqueToken } from '../auth/index.js';
import type { User } from '../users/index.js';
import { type ClientMetadataDocuments, isMetadataDocumentUrl } from './client-metadata.js';

/** The token family of access tokens issued through a grant: `oauth:<grant id>`. */
export const OAUTH_TOKEN_FAMILY = 'oauth';

/** The grant an access token's `sid` names, when it is one of this family's. */
export function grantOfSid(sid: string): string | undefined {
  return sid.startsWith(`${OAUTH_TOKEN_FAMILY}:`) ? sid.slice(OAUTH_TOKEN_FAMILY.length + 1) : undefined;
}

/**
 * Whose grant a statement may reach: the user who approved it (their grant list, their token's liveness) or the
 * client it was approved for (the token endpoint, revocation). Every statement on a grant names one of them.
 */
type GrantScope = { column: 'user_id' | 'client_id'; value: string };
const ofUser = (userId: string): GrantScope => ({ column: 'user_id', value: userId });
const ofClient = (client: { client_id: string }): GrantScope => ({ column: 'client_id', value: client.client_id });

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** The scope a client asks for to be given refresh tokens (OpenID Connect's, as SEP-2207 describes for MCP). */
export const OFFLINE_ACCESS = 'offline_access';

/** The scopes asked for that are about access: `offline_access` asks for a refresh token, and is no part of a grant. */
const accessScopes = (scopes: string[] | undefined): string[] =>
  (scopes ?? []).filter((scope) => scope && scope !== OFFLINE_ACCESS);

/** What the service needs to mint the service's access tokens for a grant. */
export type IssueAccessToken = (
  user: User,
  sid: string,
  binding: { audience: string; scope: string },
) => Promise<{ token: string; expiresIn: number }>;

export interface OAuthLimits {
  /** How long an authorization code may wait for its exchange. */
  codeTtlSeconds: number;
  /** How long a sign-in and consent page stays valid. */
  requestTtlSeconds: number;
  /** How long a refresh token lives (each refresh starts a new one). */
  refreshTokenTtlSeconds: number;
  /** Registered clients kept at most; beyond it, registrations without any grant older than a day are pruned. */
  maxClients: number;
}

export interface OAuthServiceDeps {
  db: Kysely<Database>;
  ephemeral: EphemeralStore;
  users: { get(id: string): Promise<User | undefined> };
  issueAccessToken: IssueAccessToken;
  audit: AuditRecorder;
  /** The MCP endpoint's URL: the one resource this authorization server issues tokens for. */
  resource: string;
  limits: OAuthLimits;
  now: () => Date;
  /** Clients identified by the URL of their metadata document, instead of a registration. */
  clientMetadata: ClientMetadataDocuments;
}

/** An authorization request waiting for the user's sign-in and consent. */
export interface PendingAuthorization {
  id: string;
  clientId: string;
  clientName: string;
  redirectUri: string;
  codeChallenge: string;
  state: string | undefined;
  scopes: string[];
  resource: string;
  /** SHA-256 of the value of the browser's consent cookie: only that browser may answer. */
  csrfHash: string;
}

/** A grant as its user sees it (and their data export shows it). */
export type GrantView = ExportedOAuthGrant;

function parsedRedirect(uri: string): URL | undefined {
  if (!URL.canParse(uri)) return undefined;
  const url = new URL(uri);
  return url.hash || url.username || url.password ? undefined : url;
}

const isLoopback = (url: URL) =>
  (url.protocol === 'http:' || url.protocol === 'https:') && LOOPBACK_HOSTS.has(url.hostname);

/** A native app's private-use scheme (RFC 8252 §7.1): a reversed domain name, such as `com.example.app:`. */
const isPrivateUseScheme = (url: URL) => /^[a-z][a-z0-9-]*(\.[a-z0-9-]+)+:$/.test(url.protocol);

export type ApplicationType = 'web' | 'native';

/**
 * The kind of application a client registers as (OpenID Connect Dynamic Client Registration §2, which the
 * 2026-07-28 MCP authorization spec asks clients to send), checked against its redirect URIs: a `web` client
 * redirects to https pages of a site, a `native` one to a loopback address or a private-use scheme. A client that
 * does not say (2025-era clients) gets the type its redirect URIs show, under the earlier rules. Answers the type,
 * or what is wrong.
 */
export function applicationTypeFor(declared: unknown, redirectUris: string[]): ApplicationType | { problem: string } {
  const urls = redirectUris.map((uri) => ({ uri, url: parsedRedirect(uri) }));
  const invalid = urls.find(({ url }) => url === undefined);
  if (invalid) return { problem: `redirect_uri ${invalid.uri} is not an absolute URI without a fragment` };
  const parsed = urls as { uri: string; url: URL }[];
  if (declared === 'web') {
    const bad = parsed.find(({ url }) => url.protocol !== 'https:' || LOOPBACK_HOSTS.has(url.hostname));
    return bad
      ? { problem: `a web client's redirect_uri ${bad.uri} must be https, on a host other than loopback` }
      : 'web';
  }
  if (declared === 'native') {
    const bad = parsed.find(({ url }) => !isLoopback(url) && !isPrivateUseScheme(url));
    return bad
      ? { problem: `a native client's redirect_uri ${bad.uri} must be on a loopback address or a private-use scheme` }
      : 'native';
  }
  if (declared !== undefined) return { problem: 'application_type must be web or native' };
  const bad = parsed.find(({ url }) => url.protocol !== 'https:' && !isLoopback(url));
  if (bad) return { problem: `redirect_uri ${bad.uri} must use https, or http on a loopback address` };
  return parsed.every(({ url }) => isLoopback(url)) ? 'native' : 'web';
}

/**
 * The MCP authorization server's state and rules: client registrations (public clients with PKCE only), pending
 * authorizations, the grants users approve, authorization codes and rotating refresh tokens. Every access token
 * names its grant (`oauth:<grant id>`): deleting the grant (revocation, code or refresh-token reuse, the user's
 * own revocation, erasure) ends every token issued through it.
 */
export class OAuthService {
  constructor(private readonly deps: OAuthServiceDeps) {}

  get resource(): string {
    return this.deps.resource;
  }

  // ---- Clients (RFC 7591) ----

  readonly clientsStore: OAuthRegisteredClientsStore = this.clientsStoreFor(undefined);

  /**
   * The clients store for one registration request: the SDK's handler drops the `application_type` it does not
   * know, so the route reads it from the request and registers through this.
   */
  clientsStoreFor(applicationType: unknown): OAuthRegisteredClientsStore {
    return {
      getClient: (clientId) => this.getClient(clientId),
      registerClient: (client) => this.registerClient(client, applicationType),
    };
  }

  async getClient(clientId: string): Promise<OAuthClientInformationFull | undefined> {
    if (isMetadataDocumentUrl(clientId)) return this.#documentedClient(clientId);
    if (clientId.length > 200) return undefined;
    const row = await this.deps.db
      .selectFrom('oauth_clients')
      .select(['client_id', 'metadata'])
      .where('client_id', '=', clientId)
      .executeTakeFirst();
    return (
      row && {
        ...(JSON.parse(row.metadata) as Omit<OAuthClientInformationFull, 'client_id'>),
        client_id: row.client_id,
      }
    );
  }

  /**
   * A client whose id is the URL of its metadata document. It is recorded like a registration (its grants refer to
   * it), refreshed whenever the document is fetched again.
   */
  async #documentedClient(url: string): Promise<OAuthClientInformationFull | undefined> {
    if (url.length > 2048) return undefined;
    const client = await this.deps.clientMetadata.resolve(url);
    if (!client) return undefined;
    const { client_id: _id, ...metadata } = client;
    await this.deps.db
      .insertInto('oauth_clients')
      .values({
        client_id: url,
        metadata: JSON.stringify(metadata),
        secret_hash: null,
        created_at: this.deps.now().toISOString(),
      })
      .onConflict((oc) => oc.column('client_id').doUpdateSet({ metadata: JSON.stringify(metadata) }))
      .execute();
    return client;
  }

  /**
   * Registers a client as a public client: the authorization code flow with PKCE, no client secret (whatever
   * authentication method was asked for: RFC 7591 lets the server choose). Redirect URIs must be https, or http
   * on a loopback address.
   */
  async registerClient(
    client: Omit<OAuthClientInformationFull, 'client_id' | 'client_id_issued_at'> & Partial<OAuthClientInformationFull>,
    declaredType?: unknown,
  ): Promise<OAuthClientInformationFull> {
    if (client.redirect_uris.length === 0 || client.redirect_uris.length > 10)
      throw new InvalidClientMetadataError('redirect_uris must list between 1 and 10 URIs');
    const applicationType = applicationTypeFor(declaredType, client.redirect_uris);
    if (typeof applicationType === 'object') throw new InvalidClientMetadataError(applicationType.problem);
    const grantTypes = client.grant_types ?? ['authorization_code', 'refresh_token'];
    if (
      !grantTypes.includes('authorization_code') ||
      grantTypes.some((g) => !['authorization_code', 'refresh_token'].includes(g))
    )
      throw new InvalidClientMetadataError('grant_types may list only authorization_code and refresh_token');
    if (client.response_types && client.response_types.some((t) => t !== 'code'))
      throw new InvalidClientMetadataError('response_types may list only code');
    const scopes = client.scope?.split(' ').filter(Boolean) ?? [];
    if (scopes.some((scope) => scope !== OFFLINE_ACCESS && !(MCP_SCOPES as readonly string[]).includes(scope)))
      throw new InvalidClientMetadataError(`scope may list only ${[...MCP_SCOPES, OFFLINE_ACCESS].join(', ')}`);
    await this.#makeRoomForClient();

    const { client_secret: _secret, client_secret_expires_at: _expires, ...metadata } = client;
    const registered = {
      ...metadata,
      client_name: (metadata.client_name ?? 'Unnamed client').slice(0, 200),
      grant_types: grantTypes,
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      application_type: applicationType,
    };
    const clientId = randomUUID();
    const issuedAt = Math.floor(this.deps.now().getTime() / 1000);
    const { client_id: _id, client_id_issued_at: _at, ...stored } = registered;
    await this.deps.db
      .insertInto('oauth_clients')
      .values({
        client_id: clientId,
        metadata: JSON.stringify({ ...stored, client_id_issued_at: issuedAt }),
        secret_hash: null,
        created_at: this.deps.now().toISOString(),
      })
      .execute();
    return { ...stored, client_id: clientId, client_id_issued_at: issuedAt };
  }

  /** Keeps the number of registrations bounded: anyone may register, so unused registrations are pruned. */
  async #makeRoomForClient(): Promise<void> {
    const { db, now, limits } = this.deps;
    const { count } = await db
      .selectFrom('oauth_clients')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .executeTakeFirstOrThrow();
    if (Number(count) < limits.maxClients) return;
    const dayAgo = new Date(now().getTime() - 86_400_000).toISOString();
    await db
      .deleteFrom('oauth_clients')
      .where('created_at', '<', dayAgo)
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom('oauth_grants')
              .select('id')
              .whereRef('oauth_grants.client_id', '=', 'oauth_clients.client_id'),
          ),
        ),
      )
      .execute();
    const after = await db
      .selectFrom('oauth_clients')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .executeTakeFirstOrThrow();
    if (Number(after.count) >= limits.maxClients)
      throw new TemporarilyUnavailableError('Too many registered clients; try again later');
  }

  // ---- Authorization requests ----

  /**
   * Scopes granted for a request: what was asked for, all of them when nothing was. `offline_access` asks for a
   * refresh token (SEP-2207), not for access: it is accepted and left out of the grant.
   */
  grantableScopes(requested: string[] | undefined): string[] {
    const asked = accessScopes(requested);
    const unknown = asked.find((scope) => !(MCP_SCOPES as readonly string[]).includes(scope));
    if (unknown !== undefined)
      throw new InvalidScopeError(`Unknown scope ${unknown}; supported: ${MCP_SCOPES.join(' ')}`);
    return asked.length > 0 ? [...new Set(asked)] : [...MCP_SCOPES];
  }

  /** The resource a token will be bound to: this server's MCP endpoint, whether named or not (RFC 8707). */
  checkResource(resource: URL | string | undefined): string {
    if (resource === undefined) return this.deps.resource;
    const named = new URL(resource.toString());
    const ours = new URL(this.deps.resource);
    const trim = (path: string) => path.replace(/\/+$/, '');
    if (named.origin !== ours.origin || trim(named.pathname) !== trim(ours.pathname) || named.search || named.hash)
      throw new InvalidTargetError(`This server issues tokens only for ${this.deps.resource}`);
    return this.deps.resource;
  }

  /** Keeps an authorization request for the consent page; answers it with the browser's consent secret. */
  async startAuthorization(
    request: Omit<PendingAuthorization, 'id' | 'csrfHash'>,
  ): Promise<{ pending: PendingAuthorization; csrf: string }> {
    const csrf = randomBytes(32).toString('base64url');
    const pending: PendingAuthorization = { ...request, id: randomUUID(), csrfHash: hashSecret(csrf) };
    await this.#keep(pending);
    return { pending, csrf };
  }

  /** The pending request, taken out of the store: answer it, or keep it again with `keepPending`. */
  async takePending(id: string): Promise<PendingAuthorization | undefined> {
    if (!/^[0-9a-f-]{36}$/.test(id)) return undefined;
    const raw = await this.deps.ephemeral.take(`oauth:authorize:${id}`);
    return raw === undefined ? undefined : (JSON.parse(raw) as PendingAuthorization);
  }

  /**
   * The pending request a consent page or form names, if the browser asking is the one the page was shown to: it
   * holds the consent secret (`browserSecret`, read by the request's id), and a form repeats it (`formSecret`).
   * Another browser's request stays for its own browser. `keep`: put the request back (a page shown again) rather
   * than hand it over to be answered.
   */
  async pendingForBrowser(
    id: string,
    browserSecret: (pendingId: string) => string | undefined,
    options: { formSecret?: string; keep: boolean },
  ): Promise<
    { kind: 'missing' } | { kind: 'foreign' } | { kind: 'found'; pending: PendingAuthorization; secret: string }
  > {
    const pending = await this.takePending(id);
    if (!pending) return { kind: 'missing' };
    const secret = browserSecret(pending.id);
    const sameBrowser =
      secret !== undefined &&
      matchesHash(secret, pending.csrfHash) &&
      (options.formSecret === undefined || options.formSecret === secret);
    if (options.keep || !sameBrowser) await this.keepPending(pending);
    return sameBrowser ? { kind: 'found', pending, secret } : { kind: 'foreign' };
  }

  async keepPending(pending: PendingAuthorization): Promise<void> {
    await this.#keep(pending);
  }

  #keep(pending: PendingAuthorization): Promise<void> {
    return this.deps.ephemeral.put(
      `oauth:authorize:${pending.id}`,
      JSON.stringify(pending),
      this.deps.limits.requestTtlSeconds * 1000,
    );
  }

  /** The user approved: a new grant, and the authorization code that redeems it. */
  async approve(pending: PendingAuthorization, user: User, client: ClientInfo): Promise<{ code: string }> {
    const { db, now, limits } = this.deps;
    const grantId = randomUUID();
    const code = opaqueToken('oc_');
    const at = now();
    await db.transaction().execute(async (trx) => {
      await trx
        .insertInto('oauth_grants')
        .values({
          id: grantId,
          client_id: pending.clientId,
          user_id: user.id,
          scope: pending.scopes.join(' '),
          resource: pending.resource,
          created_at: at.toISOString(),
          last_used_at: null,
        })
        .execute();
      await trx
        .insertInto('oauth_codes')
        .values({
          code_hash: hashSecret(code),
          grant_id: grantId,
          client_id: pending.clientId,
          redirect_uri: pending.redirectUri,
          code_challenge: pending.codeChallenge,
          expires_at: new Date(at.getTime() + limits.codeTtlSeconds * 1000).toISOString(),
          used_at: null,
        })
        .execute();
    });
    await this.deps.audit.record({
      type: 'oauth.consent_granted',
      actorId: user.id,
      ipAddress: client.ip,
      userAgent: client.userAgent,
      details: {
        grant_id: grantId,
        client_id: pending.clientId,
        client_name: pending.clientName,
        scope: pending.scopes.join(' '),
      },
    });
    return { code };
  }

  async recordDenial(pending: PendingAuthorization, userId: string | null, client: ClientInfo): Promise<void> {
    await this.deps.audit.record({
      type: 'oauth.consent_denied',
      actorId: userId,
      ipAddress: client.ip,
      userAgent: client.userAgent,
      details: { client_id: pending.clientId, client_name: pending.clientName },
    });
  }

  // ---- Token endpoint ----

  /**
   * The PKCE challenge of a code the client may redeem. A code presented after it was redeemed ends the grant it
   * created (RFC 6749 §4.1.2: the tokens issued for it are revoked).
   */
  async challengeFor(client: OAuthClientInformationFull, code: string): Promise<string> {
    const row = await this.#code(code);
    if (!row || row.client_id !== client.client_id) throw new InvalidGrantError('Invalid authorization code');
    if (row.used_at !== null) {
      await this.#endGrant(row.grant_id, ofClient(client), 'authorization_code_reused');
      throw new InvalidGrantError('Authorization code was already used; the tokens issued for it are revoked');
    }
    if (Date.parse(row.expires_at) <= this.deps.now().getTime())
      throw new InvalidGrantError('Authorization code has expired');
    return row.code_challenge;
  }

  /** Redeems a code whose PKCE verifier the token endpoint has checked. */
  async redeemCode(
    client: OAuthClientInformationFull,
    code: string,
    redirectUri: string | undefined,
    resource: URL | undefined,
  ): Promise<OAuthTokens> {
    const row = await this.#code(code);
    if (!row || row.client_id !== client.client_id) throw new InvalidGrantError('Invalid authorization code');
    if (redirectUri !== undefined && redirectUri !== row.redirect_uri)
      throw new InvalidGrantError('redirect_uri does not match the authorization request');
    const grant = await this.#grant(row.grant_id, ofClient(client));
    if (!grant) throw new InvalidGrantError('Invalid authorization code');
    if (resource !== undefined && this.checkResource(resource) !== grant.resource)
      throw new InvalidTargetError('resource does not match the authorization request');
    const used = await this.deps.db
      .updateTable('oauth_codes')
      .set({ used_at: this.deps.now().toISOString() })
      .where('code_hash', '=', row.code_hash)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    if (Number(used.numUpdatedRows) !== 1) {
      // Two exchanges raced: the loser is a reuse.
      await this.#endGrant(row.grant_id, ofClient(client), 'authorization_code_reused');
      throw new InvalidGrantError('Authorization code was already used; the tokens issued for it are revoked');
    }
    return this.#tokens(client, grant, grant.scope);
  }

  /** Rotates a refresh token: the old one is spent, and presenting it again ends the grant (reuse detection). */
  async refresh(
    client: OAuthClientInformationFull,
    refreshToken: string,
    scopes: string[] | undefined,
    resource: URL | undefined,
  ): Promise<OAuthTokens> {
    const { db, now } = this.deps;
    const row = await db
      .selectFrom('oauth_refresh_tokens')
      .selectAll()
      .where('token_hash', '=', hashSecret(refreshToken))
      .executeTakeFirst();
    const grant = row && (await this.#grant(row.grant_id, ofClient(client)));
    if (!row || !grant) throw new InvalidGrantError('Invalid refresh token');
    if (row.used_at !== null) {
      await this.#endGrant(grant.id, ofClient(client), 'refresh_token_reused');
      throw new InvalidGrantError('Refresh token was already used; the grant is revoked');
    }
    if (Date.parse(row.expires_at) <= now().getTime()) throw new InvalidGrantError('Refresh token has expired');
    if (resource !== undefined && this.checkResource(resource) !== grant.resource)
      throw new InvalidTargetError('resource does not match the grant');
    const granted = grant.scope.split(' ');
    const narrowed = accessScopes(scopes);
    const beyond = narrowed.find((scope) => !granted.includes(scope));
    if (beyond !== undefined) throw new InvalidScopeError(`The grant does not include ${beyond}`);
    const spent = await db
      .updateTable('oauth_refresh_tokens')
      .set({ used_at: now().toISOString() })
      .where('token_hash', '=', row.token_hash)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    if (Number(spent.numUpdatedRows) !== 1) {
      await this.#endGrant(grant.id, ofClient(client), 'refresh_token_reused');
      throw new InvalidGrantError('Refresh token was already used; the grant is revoked');
    }
    return this.#tokens(client, grant, narrowed.length > 0 ? narrowed.join(' ') : grant.scope);
  }

  /**
   * RFC 7009: revokes the grant behind a refresh token or an access token of this client. Unknown tokens and other
   * clients' tokens are ignored (the endpoint answers 200 either way).
   */
  async revoke(
    client: OAuthClientInformationFull,
    token: string,
    grantOfAccessToken: (token: string) => Promise<string | undefined>,
  ): Promise<void> {
    const row = await this.deps.db
      .selectFrom('oauth_refresh_tokens')
      .select('grant_id')
      .where('token_hash', '=', hashSecret(token))
      .executeTakeFirst();
    const grantId = row?.grant_id ?? (await grantOfAccessToken(token));
    if (grantId !== undefined) await this.#endGrant(grantId, ofClient(client), 'revoked_by_client');
  }

  /** An access token for the grant, and a refresh token when the client registered for them (RFC 7591 grant_types). */
  async #tokens(
    client: OAuthClientInformationFull,
    grant: { id: string; user_id: string; resource: string },
    scope: string,
  ): Promise<OAuthTokens> {
    const { db, now, limits } = this.deps;
    const user = await this.deps.users.get(grant.user_id);
    if (!user?.active) {
      await this.#endGrant(grant.id, ofClient(client), 'user_inactive');
      throw new InvalidGrantError('The user who authorized this client can no longer sign in');
    }
    const access = await this.deps.issueAccessToken(user, `${OAUTH_TOKEN_FAMILY}:${grant.id}`, {
      audience: grant.resource,
      scope,
    });
    const at = now();
    const refreshable = (client.grant_types ?? ['authorization_code', 'refresh_token']).includes('refresh_token');
    const refreshToken = refreshable ? opaqueToken('ort_') : undefined;
    if (refreshToken !== undefined) {
      await db
        .insertInto('oauth_refresh_tokens')
        .values({
          token_hash: hashSecret(refreshToken),
          grant_id: grant.id,
          created_at: at.toISOString(),
          expires_at: new Date(at.getTime() + limits.refreshTokenTtlSeconds * 1000).toISOString(),
          used_at: null,
        })
        .execute();
    }
    await db
      .updateTable('oauth_grants')
      .set({ last_used_at: at.toISOString() })
      .where('id', '=', grant.id)
      .where('client_id', '=', client.client_id)
      .execute();
    return {
      access_token: access.token,
      token_type: 'Bearer',
      expires_in: access.expiresIn,
      ...(refreshToken !== undefined && { refresh_token: refreshToken }),
      scope,
    };
  }

  // ---- Grants ----

  /** Whether an access token of the grant is still good: the grant exists and belongs to the token's subject. */
  async isLive(sid: string, userId: string): Promise<boolean> {
    const grantId = grantOfSid(sid);
    return grantId !== undefined && (await this.#grant(grantId, ofUser(userId))) !== undefined;
  }

  /** The clients a user authorised, newest first. */
  async listGrants(userId: string): Promise<GrantView[]> {
    const rows = await this.deps.db
      .selectFrom('oauth_grants as g')
      .innerJoin('oauth_clients as c', 'c.client_id', 'g.client_id')
      .select(['g.id', 'g.client_id', 'g.scope', 'g.resource', 'g.created_at', 'g.last_used_at', 'c.metadata'])
      .where('g.user_id', '=', userId)
      .orderBy('g.created_at', 'desc')
      .orderBy('g.id')
      .execute();
    return rows.map((row) => {
      const metadata = JSON.parse(row.metadata) as {
        client_name?: string;
        client_uri?: string;
        redirect_uris: string[];
      };
      return {
        grant_id: row.id,
        client_id: row.client_id,
        client_name: metadata.client_name ?? 'Unnamed client',
        client_uri: metadata.client_uri ?? null,
        redirect_uris: metadata.redirect_uris,
        scope: row.scope,
        resource: row.resource,
        created_at: row.created_at,
        last_used_at: row.last_used_at,
      };
    });
  }

  /** The user revokes one of their grants: every token issued through it stops working at once. */
  async revokeOwnGrant(userId: string, grantId: string, client: ClientInfo): Promise<void> {
    if (!(await this.#endGrant(grantId, ofUser(userId), 'revoked_by_user', { actorId: userId, client })))
      throw new NotFoundError('No such authorization', { code: 'OAUTH_GRANT_NOT_FOUND' });
  }

  /** Erasure (by user id, on the erasure's transaction): deletes the user's grants, their codes and tokens with them. */
  async deleteGrantsOf(userId: string, db: Kysely<Database> | Transaction<Database>): Promise<number> {
    const result = await db.deleteFrom('oauth_grants').where('user_id', '=', userId).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /**
   * Ends a grant of the user's or the client's, as `scope` says; false when it has none by that id (and then
   * nothing changed). Its codes and refresh tokens go with it (the foreign keys cascade).
   */
  async #endGrant(
    grantId: string,
    scope: GrantScope,
    reason: string,
    by: { actorId?: string; client?: ClientInfo } = {},
  ): Promise<boolean> {
    const grant = await this.#grant(grantId, scope);
    if (!grant) return false;
    const deleted = await this.deps.db
      .deleteFrom('oauth_grants')
      .where('id', '=', grantId)
      .where(scope.column, '=', scope.value)
      .executeTakeFirst();
    if (Number(deleted.numDeletedRows) === 0) return false;
    await this.deps.audit.record({
      type: 'oauth.grant_revoked',
      actorId: by.actorId ?? null,
      subjectId: grant.user_id,
      ipAddress: by.client?.ip ?? null,
      userAgent: by.client?.userAgent ?? null,
      details: { grant_id: grantId, client_id: grant.client_id, reason },
    });
    return true;
  }

  /** The grant, if it is the one `scope` names its user or its client. */
  #grant(id: string, scope: GrantScope) {
    return this.deps.db
      .selectFrom('oauth_grants')
      .selectAll()
      .where('id', '=', id)
      .where(scope.column, '=', scope.value)
      .executeTakeFirst();
  }

  /** A code found by the hash of what the client presented: the code is the proof, so no other scope applies. */
  #code(code: string) {
    if (code.length > 200) return Promise.resolve(undefined);
    return this.deps.db
      .selectFrom('oauth_codes')
      .selectAll()
      .where('code_hash', '=', hashSecret(code))
      .executeTakeFirst();
  }
}
