import { randomBytes } from 'node:crypto';
import type {
  AuthorizationServerMetadata,
  OAuthClientInformationMixed,
  OAuthTokens,
} from '@modelcontextprotocol/client';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.js';
import { BadRequestError, CommonErrorCode, ServiceUnavailableError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { SERVICE_VERSION } from '../../version.js';
import {
  type ConnectionRow,
  deleteAccount,
  findAccount,
  findReachable,
  insertSignIn,
  saveAccount,
  takeSignIn,
  recordOAuthClient,
} from './connections.store.js';
import type { OutboundFetch } from './outbound.js';

/** The MCP client SDK's OAuth helpers, loaded when an upstream is first authorized. */
const mcpClient = () => import('@modelcontextprotocol/client');

/** Seals secrets at rest with the service's key-encryption key, bound to where they are kept. */
export interface Sealer {
  seal(context: string, plaintext: string): string;
  open(context: string, stored: string): string;
}

/** Where the upstream's authorization server is, and what it says of itself. */
interface AuthorizationServer {
  url: string;
  metadata: AuthorizationServerMetadata | undefined;
  /** The resource the tokens are for (RFC 8707): the upstream's MCP endpoint, as its metadata names it. */
  resource: string;
}

interface StoredTokens {
  access_token: string;
  refresh_token?: string;
  scope?: string;
}

export interface OAuthClientDeps {
  db: Kysely<Database>;
  fetch: OutboundFetch;
  sealer: Sealer;
  logger: Logger;
  now: () => Date;
  /** Where the upstream's authorization server sends the browser back: this service's callback. */
  redirectUri: string;
  /** Told once a connection's client registration is recorded (the connection's row changed). */
  onRecorded?: () => Promise<void>;
}

const SIGN_IN_TTL_MS = 10 * 60_000;
/** A token this close to its expiry is refreshed before use. */
const REFRESH_EARLY_MS = 60_000;

/** Why a user's account at an upstream cannot be used: they must (re)connect it. */
export class AccountMissing extends Error {}

/**
 * The service as an OAuth 2.1 client of an upstream MCP server, for each user: discovery (RFC 9728 protected
 * resource metadata, then RFC 8414), dynamic registration once per connection, the authorization code flow with
 * PKCE S256 and the RFC 8707 resource, refresh with rotation, revocation on disconnect. Tokens are sealed per user
 * and connection in the database, so any instance uses them. Every request goes through the outbound guard.
 */
export class UpstreamOAuth {
  readonly #servers = new Map<string, Promise<AuthorizationServer>>();
  /** One refresh at a time per account, so that a rotating refresh token is used once. */
  readonly #refreshing = new Map<string, Promise<string>>();

  constructor(private readonly deps: OAuthClientDeps) {}

  /** Starts a user's sign-in at the upstream: the URL to send their browser to. */
  async start(row: ConnectionRow, userId: string, returnTo: string | undefined, binding: string): Promise<string> {
    const server = await this.#server(row);
    const clientInformation = await this.#client(row, server);
    const state = randomBytes(24).toString('base64url');
    const { startAuthorization } = await mcpClient();
    const { authorizationUrl, codeVerifier } = await startAuthorization(server.url, {
      metadata: server.metadata,
      clientInformation,
      redirectUrl: this.deps.redirectUri,
      state,
      resource: server.resource,
      ...(row.scopes && { scope: row.scopes }),
    });
    await insertSignIn(this.deps.db, {
      state,
      connection_id: row.id,
      user_id: userId,
      verifier: this.deps.sealer.seal(`sign-in:${state}`, JSON.stringify({ codeVerifier, binding })),
      return_to: returnTo ?? null,
      expires_at: new Date(this.deps.now().getTime() + SIGN_IN_TTL_MS).toISOString(),
    });
    return authorizationUrl.toString();
  }

  /** Completes a sign-in with the code the browser brought back; what the user came from, and the connection. */
  async finish(state: string, code: string, iss: string | undefined, matches: (binding: string) => boolean) {
    const signIn = await takeSignIn(this.deps.db, state, this.deps.now().toISOString());
    if (!signIn)
      throw new BadRequestError('This sign-in is unknown or has expired; start again', {
        code: CommonErrorCode.BadRequest,
      });
    const sealed = JSON.parse(this.deps.sealer.open(`sign-in:${state}`, signIn.verifier)) as {
      codeVerifier: string;
      binding: string;
    };
    // Finished in the browser that started it, or not at all: else a stranger's sign-in could land in this account.
    if (!matches(sealed.binding))
      throw new BadRequestError('This sign-in was started in another browser; start again', {
        code: CommonErrorCode.BadRequest,
      });
    const row = await findReachable(this.deps.db, signIn.user_id, signIn.connection_id);
    if (!row) throw new BadRequestError('The connection no longer exists', { code: CommonErrorCode.BadRequest });
    const server = await this.#server(row);
    const clientInformation = await this.#client(row, server);
    const { exchangeAuthorization } = await mcpClient();
    const tokens = await exchangeAuthorization(server.url, {
      metadata: server.metadata,
      clientInformation,
      authorizationCode: code,
      codeVerifier: sealed.codeVerifier,
      redirectUri: this.deps.redirectUri,
      resource: server.resource,
      fetchFn: this.deps.fetch,
      ...(iss !== undefined && { iss }),
    });
    await this.#save(row.id, signIn.user_id, tokens, true);
    return { connectionId: row.id, userId: signIn.user_id, returnTo: signIn.return_to };
  }

  /** Ends a sign-in the upstream turned down (the user declined, say): where it started, to say so there. */
  async abandon(state: string) {
    const signIn = await takeSignIn(this.deps.db, state, this.deps.now().toISOString());
    return signIn && { connectionId: signIn.connection_id, returnTo: signIn.return_to };
  }

  /** The user's access token at the connection, refreshed first when it is about to expire. */
  async accessToken(row: ConnectionRow, userId: string, options: { forceRefresh?: boolean } = {}): Promise<string> {
    const account = await findAccount(this.deps.db, userId, row.id);
    if (!account) throw new AccountMissing();
    const tokens = this.#open(row.id, userId, account.tokens);
    const expiring =
      account.expires_at !== null && Date.parse(account.expires_at) - REFRESH_EARLY_MS <= this.deps.now().getTime();
    if (!options.forceRefresh && !expiring) return tokens.access_token;
    if (!tokens.refresh_token) {
      if (!options.forceRefresh && account.expires_at === null) return tokens.access_token;
      // Nothing to renew it with: the account is gone until the user connects again.
      await deleteAccount(this.deps.db, userId, row.id);
      throw new AccountMissing();
    }
    const key = `${row.id}:${userId}`;
    let refreshing = this.#refreshing.get(key);
    if (!refreshing) {
      refreshing = this.#refresh(row, userId, tokens.refresh_token).finally(() => this.#refreshing.delete(key));
      this.#refreshing.set(key, refreshing);
    }
    return refreshing;
  }

  /** Revokes the user's tokens at the upstream where it offers revocation, then forgets them. */
  async disconnect(row: ConnectionRow, userId: string): Promise<boolean> {
    const account = await findAccount(this.deps.db, userId, row.id);
    if (!account) return false;
    await this.#revoke(row, this.#open(row.id, userId, account.tokens)).catch((error: unknown) =>
      this.deps.logger.warn({ err: error, connection: row.id }, 'upstream token revocation failed'),
    );
    return deleteAccount(this.deps.db, userId, row.id);
  }

  /** Forgets what was discovered about a connection's upstream (its URL changed, or it was deleted). */
  forget(connectionId: string): void {
    this.#servers.delete(connectionId);
  }

  async #refresh(row: ConnectionRow, userId: string, refreshToken: string): Promise<string> {
    const server = await this.#server(row);
    const clientInformation = await this.#client(row, server);
    let tokens: OAuthTokens;
    try {
      const { refreshAuthorization } = await mcpClient();
      tokens = await refreshAuthorization(server.url, {
        metadata: server.metadata,
        clientInformation,
        refreshToken,
        resource: server.resource,
        fetchFn: this.deps.fetch,
      });
    } catch (error) {
      // A refresh token the upstream no longer honours (revoked, expired): the user must connect again.
      if (isGrantRejected(error)) {
        await deleteAccount(this.deps.db, userId, row.id);
        throw new AccountMissing();
      }
      throw error;
    }
    // Rotation: a new refresh token replaces the old; without one, the old stays valid.
    await this.#save(row.id, userId, { ...tokens, refresh_token: tokens.refresh_token ?? refreshToken }, false);
    return tokens.access_token;
  }

  async #save(connectionId: string, userId: string, tokens: OAuthTokens, connected: boolean): Promise<void> {
    const now = this.deps.now();
    const stored: StoredTokens = {
      access_token: tokens.access_token,
      ...(tokens.refresh_token && { refresh_token: tokens.refresh_token }),
      ...(tokens.scope && { scope: tokens.scope }),
    };
    await saveAccount(this.deps.db, {
      connection_id: connectionId,
      user_id: userId,
      tokens: this.deps.sealer.seal(`account:${connectionId}:${userId}`, JSON.stringify(stored)),
      expires_at: tokens.expires_in ? new Date(now.getTime() + tokens.expires_in * 1000).toISOString() : null,
      connected_at: now.toISOString(),
      updated_at: now.toISOString(),
    });
    if (connected) this.deps.logger.info({ connection: connectionId }, 'upstream account connected');
  }

  #open(connectionId: string, userId: string, stored: string): StoredTokens {
    return JSON.parse(this.deps.sealer.open(`account:${connectionId}:${userId}`, stored)) as StoredTokens;
  }

  async #revoke(row: ConnectionRow, tokens: StoredTokens): Promise<void> {
    const server = await this.#server(row);
    const endpoint = (server.metadata as { revocation_endpoint?: string } | undefined)?.revocation_endpoint;
    if (!endpoint) return;
    const client = await this.#client(row, server);
    for (const [token, hint] of [
      [tokens.refresh_token, 'refresh_token'],
      [tokens.access_token, 'access_token'],
    ] as const) {
      if (!token) continue;
      const body = new URLSearchParams({ token, token_type_hint: hint, client_id: client.client_id });
      const response = await this.deps.fetch(endpoint, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body,
      });
      await response.body?.cancel();
    }
  }

  #server(row: ConnectionRow): Promise<AuthorizationServer> {
    let server = this.#servers.get(row.id);
    if (!server) {
      server = this.#discover(row);
      server.catch(() => this.#servers.delete(row.id));
      this.#servers.set(row.id, server);
    }
    return server;
  }

  async #discover(row: ConnectionRow): Promise<AuthorizationServer> {
    const url = row.url!;
    try {
      const { discoverOAuthProtectedResourceMetadata, discoverAuthorizationServerMetadata } = await mcpClient();
      const resource = await discoverOAuthProtectedResourceMetadata(url, {}, this.deps.fetch).catch(() => undefined);
      const authorizationServer = resource?.authorization_servers?.[0] ?? new URL('/', url).toString();
      const metadata = await discoverAuthorizationServerMetadata(authorizationServer, { fetchFn: this.deps.fetch });
      return { url: authorizationServer, metadata, resource: resource?.resource ?? url };
    } catch (error) {
      throw new ServiceUnavailableError(`The sign-in service of ${row.name} could not be reached`, {
        code: CommonErrorCode.ServiceUnavailable,
        cause: error,
      });
    }
  }

  /** The client this service registered at the upstream (dynamic registration, once per connection). */
  async #client(row: ConnectionRow, server: AuthorizationServer): Promise<OAuthClientInformationMixed> {
    const current = await findReachable(this.deps.db, row.owner_id || undefined, row.id);
    if (current?.oauth_client) {
      return JSON.parse(
        this.deps.sealer.open(`oauth-client:${row.id}`, current.oauth_client),
      ) as OAuthClientInformationMixed;
    }
    const { registerClient } = await mcpClient();
    const registered = await registerClient(server.url, {
      metadata: server.metadata,
      clientMetadata: {
        client_name: 'Agent Service',
        software_id: 'agent-service',
        software_version: SERVICE_VERSION,
        redirect_uris: [this.deps.redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        ...(row.scopes && { scope: row.scopes }),
      },
      fetchFn: this.deps.fetch,
    });
    // Two first sign-ins at once both register; the first to record its client wins, and both use that one.
    await recordOAuthClient(
      this.deps.db,
      row.owner_id,
      row.id,
      this.deps.sealer.seal(`oauth-client:${row.id}`, JSON.stringify(registered)),
    );
    await this.deps.onRecorded?.();
    const recorded = await findReachable(this.deps.db, row.owner_id || undefined, row.id);
    if (!recorded?.oauth_client) return registered;
    return JSON.parse(
      this.deps.sealer.open(`oauth-client:${row.id}`, recorded.oauth_client),
    ) as OAuthClientInformationMixed;
  }
}

function isGrantRejected(error: unknown): boolean {
  const code = (error as { code?: unknown; errorCode?: unknown }).errorCode ?? (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : '';
  return code === 'invalid_grant' || /invalid_grant|unauthorized_client|invalid_client/.test(message);
}
