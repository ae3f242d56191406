import type { Kysely } from 'kysely';
import type { CounterStore } from '../../adapters/counters/port.js';
import type { EphemeralStore } from '../../adapters/ephemeral/port.js';
import type { Database } from '../../db/database.js';
import { expirySweep } from '../../db/expiry-sweep.js';
import type { Logger } from '../../logger.js';
import type { AuditRecorder } from '../../ports/audit.js';
import { mcpResourceUrl } from '../../ports/caller.js';
import type { Module } from '../../ports/module.js';
import type { User } from '../users/index.js';
import { type OAuthRouteDeps, oauthEndpoints, oauthProvider, oauthRefusals, oauthRoutes } from './oauth.routes.js';
import { ClientMetadataDocuments } from './client-metadata.js';
import {
  type IssueAccessToken,
  OAUTH_TOKEN_FAMILY,
  grantOfSid,
  type OAuthLimits,
  OAuthService,
  applicationTypeFor,
} from './oauth.service.js';

export interface OAuthModuleDeps {
  db: Kysely<Database>;
  publicUrl: string;
  stores: { ephemeral: EphemeralStore; counters: CounterStore };
  users: { get(id: string): Promise<User | undefined> };
  audit: AuditRecorder;
  now: () => Date;
  logger: Logger;
  limits: OAuthLimits;
  /** Hosts whose client metadata documents may be fetched although they resolve to private addresses. */
  clientMetadataPrivateHosts: string[];
  issueAccessToken: IssueAccessToken;
  /** Tells token verification how to check a token issued through a grant (AuthService.registerTokenFamily). */
  registerTokenFamily: (family: string, isLive: (sid: string, subject: string) => Promise<boolean>) => void;
  /** The `sid` of a valid access token of ours, or undefined. */
  sessionOfAccessToken: (token: string) => Promise<string | undefined>;
  signedInUser: OAuthRouteDeps['signedInUser'];
  checkPassword: OAuthRouteDeps['checkPassword'];
  /** Present when users sign in through an identity provider: the consent page offers it. */
  ssoLoginUrl?: OAuthRouteDeps['ssoLoginUrl'];
}

/**
 * The MCP authorization server (OAuth 2.1) for the local identity provider: metadata, dynamic client
 * registration, a sign-in and consent page, authorization codes with PKCE, rotating refresh tokens, revocation,
 * tokens bound to the MCP endpoint, and the grants users see and revoke.
 */
export function createOAuthModule(deps: OAuthModuleDeps): Module<OAuthService> {
  const service = new OAuthService({
    db: deps.db,
    ephemeral: deps.stores.ephemeral,
    users: deps.users,
    issueAccessToken: deps.issueAccessToken,
    audit: deps.audit,
    resource: mcpResourceUrl(deps.publicUrl),
    limits: deps.limits,
    now: deps.now,
    clientMetadata: new ClientMetadataDocuments({
      privateHosts: deps.clientMetadataPrivateHosts,
      now: () => deps.now().getTime(),
      applicationType: applicationTypeFor,
    }),
  });
  deps.registerTokenFamily(OAUTH_TOKEN_FAMILY, (sid, subject) => service.isLive(sid, subject));
  const expired = expirySweep(deps.db, ['oauth_codes', 'oauth_refresh_tokens'], deps);
  const routeDeps: OAuthRouteDeps = {
    service,
    publicUrl: deps.publicUrl,
    counters: deps.stores.counters,
    signedInUser: deps.signedInUser,
    checkPassword: deps.checkPassword,
    ...(deps.ssoLoginUrl && { ssoLoginUrl: deps.ssoLoginUrl }),
    grantOfAccessToken: async (token) => {
      const sid = await deps.sessionOfAccessToken(token);
      return sid === undefined ? undefined : grantOfSid(sid);
    },
    requestTtlSeconds: deps.limits.requestTtlSeconds,
  };
  return {
    name: 'oauth',
    service,
    routes: { main: oauthRoutes(routeDeps) },
    pages: { main: [oauthEndpoints(routeDeps, oauthProvider(routeDeps)), oauthRefusals()] },
    erasure: [{ step: 'oauth_grants', run: ({ user, db }) => service.deleteGrantsOf(user.id, db) }],
    exports: [{ section: 'oauth_grants', collect: (userId) => service.listGrants(userId) }],
    start() {
      expired.start();
      return Promise.resolve();
    },
    stop: () => expired.stop(),
  };
}
