import type { Config } from '../../config.js';
import type { Db } from '../../db/create-db.js';
import type { HealthCheck } from '../../ports/health.js';

const NAME = 'identity_provider';
const TIMEOUT_MS = 2_000;

type OidcConfig = NonNullable<Config['auth']['oidc']>;

/** Local users and groups live in the service's database. */
export function localIdentityHealthCheck(db: Db): HealthCheck {
  return {
    name: NAME,
    critical: true,
    timeoutMs: TIMEOUT_MS,
    embedded: true,
    details: { provider: 'local', url: null, realm: 'local' },
    run: async () => {
      await db.ping();
      return { status: 'healthy' };
    },
  };
}

/** The realm an issuer URL names: Keycloak's `/realms/<name>`, else the issuer's host. */
export function realmOf(issuerUrl: string): string {
  const url = new URL(issuerUrl);
  return /\/realms\/([^/]+)/.exec(url.pathname)?.[1] ?? url.host;
}

/**
 * An OIDC provider: its discovery document loads from the issuer (so the endpoint is reachable and the realm
 * exists), names the same issuer, and offers what our client needs (authorization code with PKCE S256).
 */
export function oidcIdentityHealthCheck(config: OidcConfig): HealthCheck {
  const issuer = new URL(config.issuerUrl);
  return {
    name: NAME,
    critical: true,
    timeoutMs: TIMEOUT_MS,
    details: { provider: 'oidc', url: config.issuerUrl, realm: realmOf(config.issuerUrl), client_id: config.clientId },
    run: async () => {
      // Loaded here rather than with the module: a service signing users in locally never needs it.
      const oidc = await import('openid-client');
      const discovered = await oidc.discovery(issuer, config.clientId, config.clientSecret, undefined, {
        timeout: TIMEOUT_MS / 1000,
        // Plain http is for development identity providers on this machine only.
        ...(issuer.protocol === 'http:' && { execute: [oidc.allowInsecureRequests] }),
      });
      const metadata = discovered.serverMetadata();
      if (!metadata.authorization_endpoint || !metadata.token_endpoint) {
        return { status: 'unhealthy', message: 'discovery document lacks authorization or token endpoint' };
      }
      if (!metadata.supportsPKCE()) {
        return { status: 'degraded', message: 'identity provider does not advertise PKCE S256' };
      }
      return { status: 'healthy', details: { issuer: metadata.issuer } };
    },
  };
}
