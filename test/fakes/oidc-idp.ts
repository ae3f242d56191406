import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Provider, errors, interactionPolicy } from 'oidc-provider';
import type { Account, ClientMetadata, Configuration } from 'oidc-provider';

/** What the test IdP knows about one user; the map key is the user's login and `sub`. */
export interface TestIdpAccount {
  email?: string;
  email_verified?: boolean;
  name?: string;
  preferred_username?: string;
  groups?: string[];
  roles?: string[];
}

export interface TestIdpOptions {
  /** Redirect URIs registered for the client (default: the service's default SSO callback on port 8000). */
  redirectUris?: string[];
  /** Users who can sign in, keyed by login (= `sub`). Defaults to `alice` (see DEFAULT_TEST_IDP_ACCOUNTS). */
  accounts?: Record<string, TestIdpAccount>;
  /** Where RP-initiated logout may send the browser back to (default: the origin of each redirect URI, with `/`). */
  postLogoutRedirectUris?: string[];
  /**
   * How the client authenticates at the token endpoint. oidc-provider accepts only the registered method, and
   * openid-client's default for a string secret is ClientSecretPost, hence that default.
   */
  tokenEndpointAuthMethod?: 'client_secret_post' | 'client_secret_basic';
  /**
   * Resource servers (RFC 8707) the provider issues JWT access tokens for, by resource indicator, with the scopes
   * each accepts. A resource not listed is refused with invalid_target.
   */
  resourceServers?: Record<string, { scope: string }>;
}

/** A real OpenID Connect provider (oidc-provider) on a loopback port, with one confidential client. */
export interface TestIdp {
  issuer: string;
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  /** The live account map: tests may edit it (e.g. change a user's groups) between sign-ins. */
  accounts: Record<string, TestIdpAccount>;
  /** The underlying provider, for tests that listen to its events (e.g. `end_session.success`). */
  provider: Provider;
  close: () => Promise<void>;
}

export const DEFAULT_TEST_IDP_REDIRECT_URI = 'http://127.0.0.1:8000/auth/sso/callback';

export const DEFAULT_TEST_IDP_ACCOUNTS: Readonly<Record<string, TestIdpAccount>> = {
  alice: {
    email: 'alice@example.test',
    email_verified: true,
    name: 'Alice Example',
    preferred_username: 'alice',
    groups: ['engineering'],
    roles: ['member'],
  },
};

/**
 * Scope → claims. `groups` and `roles` hang off `openid` so that every OpenID request gets them (like an IdP
 * configured to always emit group claims); the relying party needs no extra scope.
 */
const CLAIMS: Configuration['claims'] = {
  openid: ['sub', 'groups', 'roles'],
  email: ['email', 'email_verified'],
  profile: ['name', 'preferred_username'],
};

/**
 * devInteractions accept any login, and oidc-provider v9 then fails with a server_error when findAccount knows no
 * such account (its consent check needs a grant, which needs an account). This extra login check instead asks for a
 * sign-in again, as a real IdP rejecting bad credentials would.
 */
function loginRequiresKnownAccount(): interactionPolicy.DefaultPolicy {
  const policy = interactionPolicy.base();
  policy
    .get('login')
    ?.checks.add(
      new interactionPolicy.Check('unknown_account', 'the signed-in account does not exist', (ctx) =>
        ctx.oidc.session?.accountId !== undefined && ctx.oidc.account === undefined
          ? interactionPolicy.Check.REQUEST_PROMPT
          : interactionPolicy.Check.NO_NEED_TO_PROMPT,
      ),
    );
  return policy;
}

export async function startTestIdp(options: TestIdpOptions = {}): Promise<TestIdp> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const issuer = `http://127.0.0.1:${port}`;
  const redirectUris = options.redirectUris ?? [DEFAULT_TEST_IDP_REDIRECT_URI];
  const postLogoutRedirectUris = options.postLogoutRedirectUris ?? [
    ...new Set(redirectUris.map((uri) => `${new URL(uri).origin}/`)),
  ];
  // A copy, so tests editing `idp.accounts` never touch the caller's object or the shared defaults.
  const accounts: Record<string, TestIdpAccount> = structuredClone(options.accounts ?? DEFAULT_TEST_IDP_ACCOUNTS);
  const client: ClientMetadata = {
    client_id: 'agent-service',
    client_secret: 'idp-test-secret',
    redirect_uris: redirectUris,
    post_logout_redirect_uris: postLogoutRedirectUris,
    token_endpoint_auth_method: options.tokenEndpointAuthMethod ?? 'client_secret_post',
  };
  const provider = new Provider(issuer, {
    clients: [client],
    pkce: { required: () => true },
    claims: CLAIMS,
    // By default (true) an ID Token issued next to an access token for userinfo carries only the `openid` scope's
    // claims, and email/profile would be reachable only through userinfo. SSO code commonly reads the ID Token
    // alone, so every granted scope's claims go into it, as with most hosted IdPs.
    conformIdTokenClaims: false,
    // devInteractions renders the login and consent forms the browser driver submits; rpInitiatedLogout (on by
    // default in v9, spelled out because logout tests depend on it) serves /session/end and its confirm form.
    features: {
      devInteractions: { enabled: true },
      rpInitiatedLogout: { enabled: true },
      resourceIndicators: {
        enabled: true,
        getResourceServerInfo: (_ctx, indicator) => {
          const server = options.resourceServers?.[indicator];
          if (!server) throw new errors.InvalidTarget();
          return { scope: server.scope, audience: indicator, accessTokenFormat: 'jwt', accessTokenTTL: 600 };
        },
      },
    },
    interactions: { policy: loginRequiresKnownAccount() },
    // oidc-provider's defaults, spelled out so it does not print a notice per default lifetime in every test run.
    // The start-up warnings that remain (Node 20 "unsupported", in-memory adapter, dev signing keys, devInteractions)
    // concern production use only, so they are left alone rather than muted by patching console.
    ttl: { AccessToken: 3600, IdToken: 3600, Interaction: 3600, Session: 14 * 86400, Grant: 14 * 86400 },
    findAccount: (_ctx, sub): Account | undefined => {
      if (!Object.hasOwn(accounts, sub)) return undefined;
      return {
        accountId: sub,
        // Read at issue time, so edits to `accounts` show in the next token. oidc-provider filters by scope.
        claims: () => ({ ...accounts[sub], sub }),
      };
    },
  });
  const handle = provider.callback();
  server.on('request', (req, res) => void handle(req, res));
  return {
    issuer,
    clientId: client.client_id,
    clientSecret: client.client_secret as string,
    redirectUris,
    postLogoutRedirectUris,
    accounts,
    provider,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
