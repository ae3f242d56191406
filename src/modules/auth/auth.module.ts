import type { Kysely } from 'kysely';
import type { CounterStore } from '../../adapters/counters/port.js';
import type { EphemeralStore } from '../../adapters/ephemeral/port.js';
import type { SessionStore } from '../../adapters/session-store/port.js';
import type { Config } from '../../config.js';
import type { Database } from '../../db/database.js';
import type { Logger } from '../../logger.js';
import type { AuditRecorder } from '../../ports/audit.js';
import type { Module } from '../../ports/module.js';
import { type Caller, mcpResourceUrl } from '../../ports/caller.js';
import type { UsersService } from '../users/index.js';
import { authRoutes } from './auth.routes.js';
import { AuthService } from './auth.service.js';
import { ensureAdminEmail } from './bootstrap-admin.js';
import type { KeyEncryption } from './key-encryption.js';
import { KeyRing } from './keys.js';
import { ssoRoutes } from './sso.routes.js';
import { OidcSso } from './sso.js';
import { TokenService } from './tokens.js';
import { expirySweep } from '../../db/expiry-sweep.js';

export interface AuthModuleDeps {
  config: Pick<Config, 'auth' | 'publicUrl'>;
  db: Kysely<Database>;
  users: UsersService;
  stores: { sessions: SessionStore; counters: CounterStore; ephemeral: EphemeralStore };
  /** Opens and seals the signing keys stored in the database. */
  keyEncryption: KeyEncryption;
  audit: AuditRecorder;
  logger: Logger;
  now: () => Date;
  /** Shows the generated bootstrap password once, outside the structured logs. */
  announce: (message: string) => void;
  /** Facts about a service principal, for `GET /auth/me` called with its token. */
  describePrincipal: (id: string) => Promise<{ name: string; created_at: string } | undefined>;
}

export interface Auth {
  auth: AuthService;
  /**
   * The caller a Bearer token stands for: one of the service's tokens, or, when MCP clients get their tokens from
   * the identity provider, one of the provider's (accepted on the MCP wires only).
   */
  authenticateBearer: (token: string) => Promise<Caller>;
  tokens: TokenService;
  keys: KeyRing;
  sso: OidcSso | undefined;
}

/**
 * Local identity and the credentials built on it: logins, sessions, access and refresh tokens, the signing keys
 * that sign them (published as a JWKS), single sign-on through an OIDC provider, and the bootstrap administrator.
 */
export function createAuthModule(deps: AuthModuleDeps): Module<Auth> {
  const { config, db, users, stores, audit, logger, now } = deps;
  // Retired keys verify for one access-token lifetime more, plus a minute of clock leeway.
  const keys = new KeyRing(db, (config.auth.accessTokenTtlSeconds + 60) * 1000, {
    encryption: deps.keyEncryption,
    now,
    logger,
  });
  // Tokens may also be bound to the MCP endpoint alone (RFC 8707), as the MCP authorization server issues them.
  const tokens = new TokenService(keys, config.publicUrl, config.auth.accessTokenTtlSeconds, now, [
    mcpResourceUrl(config.publicUrl),
  ]);
  const auth = new AuthService({ config: config.auth, db, users, tokens, logger, audit, now, ...stores });
  const expired = expirySweep(db, ['refresh_tokens'], { now, logger });
  const sso = config.auth.oidc
    ? new OidcSso(config.auth.oidc, { auth, users, ephemeral: stores.ephemeral, logger, audit })
    : undefined;

  const idpTokens = sso && config.auth.mcpAuthorizationServer === 'identity_provider' ? sso : undefined;
  const authenticateBearer = (token: string): Promise<Caller> =>
    idpTokens?.issued(token)
      ? idpTokens.authenticateAccessToken(token, config.auth.mcpTokenAudience)
      : auth.authenticateBearer(token);

  const [signIn, verify, wellKnown] = authRoutes({
    auth,
    users,
    keys,
    publicUrl: config.publicUrl,
    authorizationServers: [idpTokens ? config.auth.oidc!.issuerUrl : config.publicUrl],
    describePrincipal: deps.describePrincipal,
  });
  return {
    name: 'auth',
    service: { auth, authenticateBearer, tokens, keys, sso },
    // A session ended on any instance is forgotten by every instance's session cache.
    shares: [auth],
    routes: {
      main: [signIn, verify, wellKnown, ...(sso ? [ssoRoutes({ sso, auth, publicUrl: config.publicUrl })] : [])],
      // The web UIs sign in on their own origin (their strict CSP allows no other).
      playground: [signIn],
      builder: [signIn],
    },
    erasure: [
      { step: 'refresh_tokens', run: ({ user, db }) => auth.deleteRefreshTokensOf(user.id, db) },
      {
        step: 'rate_limit_counters',
        run: ({ user }) => auth.forgetLoginFailures([user.username, ...(user.email ? [user.email] : [])]),
      },
      // The erasure's last step: it ends every token and cookie (see the data-subject module's plan).
      { step: 'sessions', run: ({ user }) => auth.deleteSessionsOf(user.id) },
    ],
    exports: [
      {
        section: 'sessions',
        collect: async (userId) =>
          (await auth.listSessions(userId)).map((s) => ({
            session_id: s.id,
            created_at: new Date(s.createdAt).toISOString(),
            last_accessed: new Date(s.lastAccessedAt).toISOString(),
            ip_address: s.ipAddress,
          })),
      },
    ],
    async start() {
      await keys.start();
      expired.start();
      const { adminUsername, adminPassword } = config.auth;
      const admin = await users.ensureBootstrapAdmin(adminUsername, adminPassword);
      if (admin.created) logger.info({ username: adminUsername }, 'bootstrap administrator created');
      await ensureAdminEmail(users, config.auth, logger);
      if (admin.generatedPassword) {
        deps.announce(
          `Bootstrap administrator "${adminUsername}" created with password: ${admin.generatedPassword}\n` +
            `It is shown only this once. Change it with: agent-service users set-password ${adminUsername}`,
        );
      }
    },
    stop: () => {
      expired.stop();
      return keys.stop();
    },
  };
}
