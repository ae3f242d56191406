import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, PASSWORD } from '../helpers/auth.js';
import { TASKS_CAPABILITY, modernBody } from '../helpers/mcp.js';
import { PATCH_OP, SEARCH_REQUEST, USER, BULK_REQUEST } from '../scim/helpers.js';
import { linear } from '../builder/helpers.js';
import {
  ATTACKERS,
  type Attacker,
  type Caller,
  type Identity,
  MARKER,
  UNAUTHENTICATED,
  type World,
  buildWorld,
  credentialOf,
  freshToken,
  modernHeaders,
  principalToken,
  sessionHeaders,
} from './fixtures.js';
import { type Answer, type Listener, type Request, converse, send } from './wire.js';

/**
 * The impersonation matrix. Every operation of /openapi.json (the one description of all three listeners; an
 * operation of the playground or builder listener names that listener as its server) is sent by the owner of what
 * it names and by six callers who must not reach it: another user, that user's service principal, that user's API
 * key, the owner's expired access token, the owner's token of a session that was logged out, and no credential.
 * Ids of the owner's things go where the operation takes them (path, query, body, `Mcp-Session-Id`,
 * `Last-Event-ID`, task ids, request state). After each operation's refused requests the owner's data is read back
 * through the owner's own API and must be as it was; then the owner's own requests prove each route works.
 */

type Kind =
  /** Open to anyone: no caller may get the owner's data through it. */
  | { kind: 'public' }
  /** Acts on the caller's own account or makes something new of the caller's: the owner's data stays out of it. */
  | { kind: 'self' }
  /** Names something of the owner's: anyone else is refused (403 or 404). */
  | { kind: 'owned'; resource: string }
  /** For administrators (the owner is one): anyone else is refused (403). */
  | { kind: 'admin' };

/** A request of a case: on the listener that serves the operation unless it names another. */
type CaseRequest = Omit<Request, 'listener'> & { listener?: Listener };

interface Case {
  /** Names the variant when an operation has several. */
  name?: string;
  /** The request a caller sends; its credential is added unless the request carries one of its own. */
  request: (caller: Caller, world: World, identity: Identity) => CaseRequest;
  /** What the owner's answer must show: a status, and the marker when the route reads the owner's data. */
  owner: { status: number[]; marker?: boolean; check?: (answer: Answer) => string | undefined };
  /** How an authenticated attacker's refusal looks, when not as the kind says (a JSON-RPC error, a tool error). */
  refused?: (answer: Answer) => string | undefined;
  /**
   * The owner's request changes or ends what it names: it runs after every other, in this order (lowest first).
   */
  last?: number;
}

interface Entry {
  kind: Kind;
  cases: Case[];
  /**
   * The attackers send their requests one after another (not at once), and with credentials made for this
   * operation: it ends the caller's own session or account.
   */
  fresh?: boolean;
  /** Attack with the third user's identity instead of the other user's (the operation erases the caller). */
  spare?: boolean;
}

// Answers as the owner should get them.
const OK = { status: [200] };
const OK_MARKED = { status: [200], marker: true };
const CREATED = { status: [201] };
const NO_CONTENT = { status: [204] };

const json = (answer: Answer) => answer.json as Record<string, unknown> | undefined;

/** A JSON-RPC answer that refuses: an error, or a tool result that failed. */
function rpcRefused(answer: Answer): string | undefined {
  const body = json(answer);
  if (answer.status === 404 || answer.status === 403) return undefined;
  if (answer.status !== 200) return `expected a JSON-RPC refusal, got HTTP ${answer.status}`;
  if (body?.error) return undefined;
  const result = body?.result as { isError?: boolean } | undefined;
  if (result?.isError === true) return undefined;
  return `expected a JSON-RPC error or a failed tool result, got ${answer.text.slice(0, 200)}`;
}

/** A REST-style MCP answer that refuses: 403 or 404, or a tool result that failed. */
function restRefused(answer: Answer): string | undefined {
  if (answer.status === 403 || answer.status === 404) return undefined;
  if (answer.status === 200 && (json(answer) as { isError?: boolean } | undefined)?.isError === true) return undefined;
  return `expected 403, 404 or a failed tool result, got ${answer.status} ${answer.text.slice(0, 200)}`;
}

const rpcResult = (answer: Answer) =>
  json(answer)?.result !== undefined && json(answer)?.error === undefined
    ? undefined
    : `expected a JSON-RPC result, got ${answer.text.slice(0, 200)}`;

const scim = { 'Content-Type': 'application/scim+json' };
/** Where connections registered by the matrix point: registering one does not contact it, and nothing answers. */
const CONNECTION_URL = 'https://upstream.example/mcp';
/** A JSON-RPC request; requests that may share a session at once carry ids of their own. */
const jsonRpc = (method: string, params: Record<string, unknown> = {}, id = 1) => ({
  jsonrpc: '2.0',
  id,
  method,
  params,
});

/** The matrix: every operation of /openapi.json, by `METHOD path`, with its kind and what it is sent. */
const MATRIX: Record<string, Entry> = {
  // Health, metrics, version, discovery: open to all.
  'GET /health': {
    kind: { kind: 'public' },
    cases: [{ request: () => ({ method: 'GET', path: '/health' }), owner: { status: [200, 503] } }],
  },
  'GET /health/ready': {
    kind: { kind: 'public' },
    cases: [{ request: () => ({ method: 'GET', path: '/health/ready' }), owner: OK }],
  },
  'GET /health/live': {
    kind: { kind: 'public' },
    cases: [{ request: () => ({ method: 'GET', path: '/health/live' }), owner: OK }],
  },
  'GET /health/startup': {
    kind: { kind: 'public' },
    cases: [{ request: () => ({ method: 'GET', path: '/health/startup' }), owner: OK }],
  },
  'GET /health/dependencies': {
    kind: { kind: 'public' },
    cases: [{ request: () => ({ method: 'GET', path: '/health/dependencies' }), owner: OK }],
  },
  'GET /metrics': {
    kind: { kind: 'public' },
    cases: [{ request: () => ({ method: 'GET', path: '/metrics' }), owner: OK }],
  },
  'GET /api/version': {
    kind: { kind: 'public' },
    cases: [{ request: () => ({ method: 'GET', path: '/api/version' }), owner: OK }],
  },
  'GET /.well-known/jwks.json': {
    kind: { kind: 'public' },
    cases: [{ request: () => ({ method: 'GET', path: '/.well-known/jwks.json' }), owner: OK }],
  },
  'GET /.well-known/oauth-protected-resource': {
    kind: { kind: 'public' },
    cases: [{ request: () => ({ method: 'GET', path: '/.well-known/oauth-protected-resource' }), owner: OK }],
  },
  'GET /.well-known/oauth-protected-resource/mcp': {
    kind: { kind: 'public' },
    cases: [{ request: () => ({ method: 'GET', path: '/.well-known/oauth-protected-resource/mcp' }), owner: OK }],
  },
  'GET /.well-known/oauth-authorization-server': {
    kind: { kind: 'public' },
    cases: [{ request: () => ({ method: 'GET', path: '/.well-known/oauth-authorization-server' }), owner: OK }],
  },
  'GET /.well-known/openid-configuration': {
    kind: { kind: 'public' },
    cases: [{ request: () => ({ method: 'GET', path: '/.well-known/openid-configuration' }), owner: OK }],
  },
  'GET /api/playground/health': {
    kind: { kind: 'public' },
    cases: [{ request: () => ({ method: 'GET', path: '/api/playground/health' }), owner: OK }],
  },
  'GET /api/playground/config': {
    kind: { kind: 'public' },
    cases: [{ request: () => ({ method: 'GET', path: '/api/playground/config' }), owner: OK }],
  },
  'GET /api/builder/health': {
    kind: { kind: 'public' },
    cases: [{ request: () => ({ method: 'GET', path: '/api/builder/health' }), owner: OK }],
  },
  'GET /api/builder/config': {
    kind: { kind: 'public' },
    cases: [{ request: () => ({ method: 'GET', path: '/api/builder/config' }), owner: OK }],
  },

  // Authentication.
  'POST /auth/login': {
    kind: { kind: 'public' },
    cases: [
      {
        // Anyone may try the owner's name; only the owner's password opens it.
        request: (caller) => ({
          method: 'POST',
          path: '/auth/login',
          body: { username: 'admin', password: caller === 'owner' ? ADMIN_PASSWORD : PASSWORD },
        }),
        owner: OK,
        refused: (a) => (a.status === 401 ? undefined : `expected 401, got ${a.status}`),
      },
    ],
  },
  'POST /auth/refresh': {
    kind: { kind: 'public' },
    cases: [
      {
        request: (caller, w) => ({
          method: 'POST',
          path: '/auth/refresh',
          body: { refresh_token: caller === 'owner' ? w.owned.spareRefreshToken : `${w.owned.spareRefreshToken}x` },
        }),
        owner: OK,
        refused: (a) => (a.status === 401 ? undefined : `expected 401, got ${a.status}`),
        last: 1,
      },
    ],
  },
  'POST /auth/logout': {
    kind: { kind: 'self' },
    fresh: true,
    cases: [{ request: () => ({ method: 'POST', path: '/auth/logout' }), owner: OK, last: 90 }],
  },
  'GET /auth/me': {
    kind: { kind: 'self' },
    cases: [{ request: () => ({ method: 'GET', path: '/auth/me' }), owner: OK_MARKED }],
  },
  'GET /auth/session': {
    // Whether the request's own session cookie is live: it names no one, and says nothing of whose it is.
    kind: { kind: 'public' },
    cases: [{ request: () => ({ method: 'GET', path: '/auth/session' }), owner: OK }],
  },
  'GET /auth/sessions': {
    kind: { kind: 'self' },
    cases: [{ request: () => ({ method: 'GET', path: '/auth/sessions' }), owner: OK }],
  },
  'DELETE /auth/sessions/{session_id}': {
    kind: { kind: 'owned', resource: 'login session' },
    cases: [
      {
        request: (_c, w) => ({ method: 'DELETE', path: `/auth/sessions/${w.owned.spareSessionId}` }),
        owner: OK,
        last: 2,
      },
    ],
  },
  'POST /auth/verify': {
    kind: { kind: 'public' },
    cases: [
      {
        request: () => ({ method: 'POST', path: '/auth/verify' }),
        owner: { status: [200], check: (a) => (json(a)?.valid === true ? undefined : 'not valid') },
      },
    ],
  },
  'POST /auth/token': {
    kind: { kind: 'public' },
    cases: [
      {
        // The owner's principal with another's secret.
        request: (caller, w, id) => ({
          method: 'POST',
          path: '/auth/token',
          form: {
            grant_type: 'client_credentials',
            client_id: w.owned.principalId,
            client_secret: caller === 'owner' ? w.owned.principalSecret : id.principalSecret,
          },
        }),
        owner: OK,
        refused: (a) => (a.status === 401 ? undefined : `expected 401, got ${a.status}`),
        last: 3,
      },
    ],
  },

  // OAuth for MCP clients.
  'GET /oauth/consent': {
    kind: { kind: 'public' },
    cases: [
      {
        request: (caller, w) => ({
          method: 'GET',
          path: `/oauth/consent?request=${w.owned.consent.request}`,
          ...(caller === 'owner' && { headers: { Cookie: w.owned.consent.cookie } }),
        }),
        owner: OK,
      },
    ],
  },
  'POST /oauth/consent': {
    kind: { kind: 'public' },
    cases: [
      {
        // The owner's pending consent, answered by another browser (without the owner's consent cookie).
        request: (caller, w, id) => ({
          method: 'POST',
          path: '/oauth/consent',
          headers: { ...(caller === 'owner' && { Cookie: w.owned.consent.cookie }) },
          form: {
            request: w.owned.consent.request,
            csrf: w.owned.consent.csrf,
            decision: 'approve',
            username: caller === 'owner' ? 'admin' : id.username,
            password: caller === 'owner' ? ADMIN_PASSWORD : PASSWORD,
          },
        }),
        owner: {
          status: [302, 303],
          check: (a) => (a.headers.get('location')?.includes('code=') ? undefined : 'no code issued'),
        },
        refused: (a) =>
          a.status === 403 && !a.headers.get('location')
            ? undefined
            : `expected 403, got ${a.status} ${a.text.slice(0, 100)}`,
        last: 4,
      },
    ],
  },
  'GET /api/v1/oauth/grants': {
    kind: { kind: 'self' },
    cases: [{ request: () => ({ method: 'GET', path: '/api/v1/oauth/grants' }), owner: OK_MARKED }],
  },
  'DELETE /api/v1/oauth/grants/{grant_id}': {
    kind: { kind: 'owned', resource: 'OAuth grant' },
    cases: [
      {
        request: (_c, w) => ({ method: 'DELETE', path: `/api/v1/oauth/grants/${w.owned.grantId}` }),
        owner: { status: [200, 204] },
        last: 10,
      },
    ],
  },

  // API keys.
  'POST /api/v1/api-keys': {
    kind: { kind: 'self' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'POST',
          path: '/api/v1/api-keys',
          body: { name: 'made by the caller', user_id: w.owned.userId },
        }),
        owner: CREATED,
        last: 11,
      },
    ],
  },
  'GET /api/v1/api-keys': {
    kind: { kind: 'self' },
    cases: [{ request: () => ({ method: 'GET', path: '/api/v1/api-keys?include_expired=true' }), owner: OK_MARKED }],
  },
  'POST /api/v1/api-keys/{key_id}/rotate': {
    kind: { kind: 'owned', resource: 'API key' },
    cases: [
      {
        request: (_c, w) => ({ method: 'POST', path: `/api/v1/api-keys/${w.owned.apiKeyId}/rotate` }),
        owner: OK,
        last: 12,
      },
    ],
  },
  'DELETE /api/v1/api-keys/{key_id}': {
    kind: { kind: 'owned', resource: 'API key' },
    cases: [
      {
        request: (_c, w) => ({ method: 'DELETE', path: `/api/v1/api-keys/${w.owned.apiKeyId}` }),
        owner: NO_CONTENT,
        last: 13,
      },
    ],
  },

  // Service principals.
  'POST /api/v1/service-principals': {
    kind: { kind: 'self' },
    cases: [
      {
        // A principal acting for the owner, asked for by someone else.
        request: (caller, w) => ({
          method: 'POST',
          path: '/api/v1/service-principals',
          body: {
            name: `acting ${caller}`,
            description: 'acts for the owner',
            authentication_mode: 'service_account_user',
            associated_user_id: `user:${w.owned.username}`,
            inherit_permissions: true,
          },
        }),
        owner: CREATED,
        refused: (a) => (a.status === 403 ? undefined : `expected 403, got ${a.status} ${a.text.slice(0, 200)}`),
        last: 14,
      },
    ],
  },
  'GET /api/v1/service-principals': {
    kind: { kind: 'self' },
    cases: [{ request: () => ({ method: 'GET', path: '/api/v1/service-principals' }), owner: OK_MARKED }],
  },
  'GET /api/v1/service-principals/{service_id}': {
    kind: { kind: 'owned', resource: 'service principal' },
    cases: [
      {
        request: (_c, w) => ({ method: 'GET', path: `/api/v1/service-principals/${w.owned.principalId}` }),
        owner: OK_MARKED,
      },
    ],
  },
  'POST /api/v1/service-principals/{service_id}/rotate-secret': {
    kind: { kind: 'owned', resource: 'service principal' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'POST',
          path: `/api/v1/service-principals/${w.owned.principalId}/rotate-secret`,
          body: {},
        }),
        owner: OK,
        last: 15,
      },
    ],
  },
  'POST /api/v1/service-principals/{service_id}/associate-user': {
    kind: { kind: 'owned', resource: 'service principal' },
    cases: [
      {
        request: (caller, w, id) => ({
          method: 'POST',
          path: `/api/v1/service-principals/${w.owned.principalId}/associate-user?user_id=${encodeURIComponent(
            `user:${caller === 'owner' ? w.owned.username : id.username}`,
          )}&inherit_permissions=true`,
        }),
        owner: OK,
        last: 16,
      },
    ],
  },
  'DELETE /api/v1/service-principals/{service_id}': {
    kind: { kind: 'owned', resource: 'service principal' },
    cases: [
      {
        request: (_c, w) => ({ method: 'DELETE', path: `/api/v1/service-principals/${w.owned.principalId}` }),
        owner: NO_CONTENT,
        last: 17,
      },
    ],
  },

  // The audit log: administrators only.
  'GET /api/v1/audit-log': {
    kind: { kind: 'admin' },
    cases: [
      { request: (_c, w) => ({ method: 'GET', path: `/api/v1/audit-log?user_id=${w.owned.userId}` }), owner: OK },
    ],
  },

  // Data-subject rights: each caller's own data only.
  'GET /api/v1/users/me/data': {
    kind: { kind: 'self' },
    cases: [{ request: () => ({ method: 'GET', path: '/api/v1/users/me/data' }), owner: OK_MARKED }],
  },
  'GET /api/v1/users/me/export': {
    kind: { kind: 'self' },
    cases: [{ request: () => ({ method: 'GET', path: '/api/v1/users/me/export?format=csv' }), owner: OK_MARKED }],
  },
  'PATCH /api/v1/users/me': {
    kind: { kind: 'self' },
    cases: [
      {
        request: (caller) => ({ method: 'PATCH', path: '/api/v1/users/me', body: { name: `renamed by ${caller}` } }),
        owner: OK,
        last: 20,
      },
    ],
  },
  'DELETE /api/v1/users/me': {
    kind: { kind: 'self' },
    fresh: true,
    spare: true,
    cases: [
      {
        request: (_c, w) => ({ method: 'DELETE', path: `/api/v1/users/me?confirm=true&user_id=${w.owned.userId}` }),
        owner: { status: [200, 400, 403, 409] },
        last: 100,
      },
    ],
  },
  'POST /api/v1/users/me/consent': {
    kind: { kind: 'self' },
    cases: [
      {
        request: () => ({
          method: 'POST',
          path: '/api/v1/users/me/consent',
          body: { consent_type: 'analytics', granted: false },
        }),
        owner: OK,
        last: 21,
      },
    ],
  },
  'GET /api/v1/users/me/consent': {
    kind: { kind: 'self' },
    cases: [{ request: () => ({ method: 'GET', path: '/api/v1/users/me/consent' }), owner: OK }],
  },

  // SCIM: administrators (or provisioners) only.
  'GET /scim/v2/ServiceProviderConfig': {
    kind: { kind: 'admin' },
    cases: [{ request: () => ({ method: 'GET', path: '/scim/v2/ServiceProviderConfig' }), owner: OK }],
  },
  'GET /scim/v2/ResourceTypes': {
    kind: { kind: 'admin' },
    cases: [{ request: () => ({ method: 'GET', path: '/scim/v2/ResourceTypes' }), owner: OK }],
  },
  'GET /scim/v2/ResourceTypes/{name}': {
    kind: { kind: 'admin' },
    cases: [{ request: () => ({ method: 'GET', path: '/scim/v2/ResourceTypes/User' }), owner: OK }],
  },
  'GET /scim/v2/Schemas': {
    kind: { kind: 'admin' },
    cases: [{ request: () => ({ method: 'GET', path: '/scim/v2/Schemas' }), owner: OK }],
  },
  'GET /scim/v2/Schemas/{schema_id}': {
    kind: { kind: 'admin' },
    cases: [{ request: () => ({ method: 'GET', path: `/scim/v2/Schemas/${USER}` }), owner: OK }],
  },
  'GET /scim/v2/Users': {
    kind: { kind: 'admin' },
    cases: [
      {
        request: () => ({ method: 'GET', path: '/scim/v2/Users?filter=userName%20eq%20%22provisioned%22' }),
        owner: OK_MARKED,
      },
    ],
  },
  'POST /scim/v2/Users': {
    kind: { kind: 'admin' },
    cases: [
      {
        request: (caller) => ({
          method: 'POST',
          path: '/scim/v2/Users',
          headers: scim,
          body: { schemas: [USER], userName: `made-by-${caller}` },
        }),
        owner: CREATED,
        last: 30,
      },
    ],
  },
  'POST /scim/v2/Users/.search': {
    kind: { kind: 'admin' },
    cases: [
      {
        request: () => ({
          method: 'POST',
          path: '/scim/v2/Users/.search',
          headers: scim,
          body: { schemas: [SEARCH_REQUEST], filter: 'userName eq "provisioned"' },
        }),
        owner: OK_MARKED,
      },
    ],
  },
  'GET /scim/v2/Users/{user_id}': {
    kind: { kind: 'admin' },
    cases: [
      { request: (_c, w) => ({ method: 'GET', path: `/scim/v2/Users/${w.owned.scimUserId}` }), owner: OK_MARKED },
    ],
  },
  'PUT /scim/v2/Users/{user_id}': {
    kind: { kind: 'admin' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'PUT',
          path: `/scim/v2/Users/${w.owned.scimUserId}`,
          headers: scim,
          body: { schemas: [USER], userName: 'provisioned', name: { givenName: 'Replaced', familyName: 'Person' } },
        }),
        owner: OK,
        last: 31,
      },
    ],
  },
  'PATCH /scim/v2/Users/{user_id}': {
    kind: { kind: 'admin' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'PATCH',
          path: `/scim/v2/Users/${w.owned.scimUserId}`,
          headers: scim,
          body: { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: false }] },
        }),
        owner: OK,
        last: 32,
      },
    ],
  },
  'DELETE /scim/v2/Users/{user_id}': {
    kind: { kind: 'admin' },
    cases: [
      {
        request: (_c, w) => ({ method: 'DELETE', path: `/scim/v2/Users/${w.owned.scimUserId}` }),
        owner: NO_CONTENT,
        last: 35,
      },
    ],
  },
  'GET /scim/v2/Groups': {
    kind: { kind: 'admin' },
    cases: [{ request: () => ({ method: 'GET', path: '/scim/v2/Groups' }), owner: OK_MARKED }],
  },
  'POST /scim/v2/Groups': {
    kind: { kind: 'admin' },
    cases: [
      {
        request: (caller, w) => ({
          method: 'POST',
          path: '/scim/v2/Groups',
          headers: scim,
          body: {
            schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
            displayName: `by ${caller}`,
            members: [{ value: w.owned.scimUserId }],
          },
        }),
        owner: CREATED,
        last: 30,
      },
    ],
  },
  'POST /scim/v2/Groups/.search': {
    kind: { kind: 'admin' },
    cases: [
      {
        request: () => ({
          method: 'POST',
          path: '/scim/v2/Groups/.search',
          headers: scim,
          body: { schemas: [SEARCH_REQUEST] },
        }),
        owner: OK_MARKED,
      },
    ],
  },
  'GET /scim/v2/Groups/{group_id}': {
    kind: { kind: 'admin' },
    cases: [
      { request: (_c, w) => ({ method: 'GET', path: `/scim/v2/Groups/${w.owned.scimGroupId}` }), owner: OK_MARKED },
    ],
  },
  'PUT /scim/v2/Groups/{group_id}': {
    kind: { kind: 'admin' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'PUT',
          path: `/scim/v2/Groups/${w.owned.scimGroupId}`,
          headers: scim,
          body: { schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: 'Replaced', members: [] },
        }),
        owner: OK,
        last: 33,
      },
    ],
  },
  'PATCH /scim/v2/Groups/{group_id}': {
    kind: { kind: 'admin' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'PATCH',
          path: `/scim/v2/Groups/${w.owned.scimGroupId}`,
          headers: scim,
          body: { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'displayName', value: 'Patched' }] },
        }),
        owner: { status: [200, 204] },
        last: 34,
      },
    ],
  },
  'DELETE /scim/v2/Groups/{group_id}': {
    kind: { kind: 'admin' },
    cases: [
      {
        request: (_c, w) => ({ method: 'DELETE', path: `/scim/v2/Groups/${w.owned.scimGroupId}` }),
        owner: NO_CONTENT,
        last: 36,
      },
    ],
  },
  'POST /scim/v2/Bulk': {
    kind: { kind: 'admin' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'POST',
          path: '/scim/v2/Bulk',
          headers: scim,
          body: {
            schemas: [BULK_REQUEST],
            Operations: [{ method: 'DELETE', path: `/Users/${w.owned.scimUserId}` }],
          },
        }),
        owner: OK,
        last: 37,
      },
    ],
  },

  // MCP over REST-style routes.
  'POST /mcp/initialize': {
    kind: { kind: 'self' },
    cases: [
      {
        request: () => ({
          method: 'POST',
          path: '/mcp/initialize',
          body: {
            params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'matrix', version: '1' } },
          },
        }),
        owner: OK,
      },
    ],
  },
  'POST /mcp/tools/list': {
    kind: { kind: 'self' },
    cases: [{ request: () => ({ method: 'POST', path: '/mcp/tools/list', body: {} }), owner: OK }],
  },
  'POST /mcp/tools/call': {
    kind: { kind: 'owned', resource: 'conversation, workflow, run' },
    cases: [
      {
        name: "the owner's conversation",
        request: (_c, w) => ({
          method: 'POST',
          path: '/mcp/tools/call',
          body: { params: { name: 'conversation_get', arguments: { conversation_id: w.owned.conversationId } } },
        }),
        owner: OK_MARKED,
        refused: restRefused,
      },
      {
        name: "the owner's workflow",
        request: (_c, w) => ({
          method: 'POST',
          path: '/mcp/tools/call',
          body: {
            params: { name: 'workflow_run', arguments: { workflow_id: w.owned.askingWorkflowId, input: 'hijack' } },
          },
        }),
        owner: OK,
        refused: restRefused,
        last: 40,
      },
      {
        name: "the owner's waiting run",
        request: (_c, w) => ({
          method: 'POST',
          path: '/mcp/tools/call',
          body: {
            params: {
              name: 'workflow_resume',
              arguments: { workflow_id: w.owned.askingWorkflowId, run_id: w.owned.runId, answer: 'hijacked' },
            },
          },
        }),
        owner: OK,
        refused: restRefused,
        last: 41,
      },
    ],
  },
  'POST /mcp/resources/list': {
    kind: { kind: 'self' },
    cases: [{ request: () => ({ method: 'POST', path: '/mcp/resources/list', body: {} }), owner: OK }],
  },
  'POST /mcp/resources/read': {
    kind: { kind: 'owned', resource: 'conversation' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'POST',
          path: '/mcp/resources/read',
          body: { params: { uri: `conversation://${w.owned.conversationId}` } },
        }),
        owner: OK_MARKED,
        refused: restRefused,
      },
    ],
  },
  'POST /mcp/prompts/list': {
    kind: { kind: 'self' },
    cases: [{ request: () => ({ method: 'POST', path: '/mcp/prompts/list', body: {} }), owner: OK }],
  },
  'POST /mcp/prompts/get': {
    kind: { kind: 'owned', resource: 'conversation' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'POST',
          path: '/mcp/prompts/get',
          body: { params: { name: 'summarize_conversation', arguments: { conversation_id: w.owned.conversationId } } },
        }),
        owner: OK_MARKED,
        refused: restRefused,
      },
    ],
  },
  'POST /mcp/logging/setLevel': {
    kind: { kind: 'self' },
    cases: [
      {
        request: () => ({ method: 'POST', path: '/mcp/logging/setLevel', body: { params: { level: 'info' } } }),
        owner: OK,
      },
    ],
  },
  'POST /mcp/message': {
    kind: { kind: 'owned', resource: 'conversation' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'POST',
          path: '/mcp/message',
          body: { query: 'What did I say?', conversation_id: w.owned.conversationId, use_tools: false },
        }),
        owner: OK,
        last: 42,
      },
    ],
  },
  'POST /message': {
    kind: { kind: 'owned', resource: 'conversation' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'POST',
          path: '/message',
          body: { query: 'What did I say?', conversation_id: w.owned.conversationId, use_tools: false },
        }),
        owner: OK,
        last: 42,
      },
    ],
  },
  'GET /tools': { kind: { kind: 'self' }, cases: [{ request: () => ({ method: 'GET', path: '/tools' }), owner: OK }] },
  'GET /resources': {
    kind: { kind: 'self' },
    cases: [{ request: () => ({ method: 'GET', path: '/resources' }), owner: OK }],
  },
  'GET /': { kind: { kind: 'self' }, cases: [{ request: () => ({ method: 'GET', path: '/' }), owner: OK }] },

  // MCP over streamable HTTP.
  'POST /mcp': {
    kind: { kind: 'owned', resource: 'MCP session, task, request state, conversation' },
    cases: [
      {
        name: "the owner's Mcp-Session-Id",
        request: (_c, w) => ({
          method: 'POST',
          path: '/mcp',
          headers: sessionHeaders(w.owned.mcpSessionId),
          body: jsonRpc(
            'tools/call',
            {
              name: 'conversation_get',
              arguments: { conversation_id: w.owned.conversationId },
            },
            11,
          ),
        }),
        owner: OK_MARKED,
        refused: (a) => (a.status === 404 ? undefined : `expected 404, got ${a.status}`),
      },
      {
        name: "the owner's conversation on the caller's own session",
        request: (caller, w) => ({
          method: 'POST',
          path: '/mcp',
          headers: sessionHeaders(w.attackerSessions[caller] ?? w.owned.mcpSessionId),
          body: jsonRpc(
            'tools/call',
            {
              name: 'conversation_get',
              arguments: { conversation_id: w.owned.conversationId },
            },
            12,
          ),
        }),
        owner: OK_MARKED,
        refused: rpcRefused,
      },
      {
        name: 'conversation://{id} of the owner (2026-07-28)',
        request: (_c, w) => ({
          method: 'POST',
          path: '/mcp',
          headers: modernHeaders('resources/read', `conversation://${w.owned.conversationId}`),
          body: modernBody('resources/read', { uri: `conversation://${w.owned.conversationId}` }),
        }),
        owner: { ...OK_MARKED, check: rpcResult },
        refused: rpcRefused,
      },
      {
        name: 'following conversation://{id} of the owner (2026-07-28 subscriptions/listen)',
        request: (_c, w) => ({
          method: 'POST',
          path: '/mcp',
          headers: modernHeaders('subscriptions/listen'),
          open: true,
          body: modernBody('subscriptions/listen', {
            notifications: { resourceSubscriptions: [`conversation://${w.owned.conversationId}`] },
          }),
        }),
        // The owner's stream stays open: it is read for a moment, then left.
        owner: { status: [200] },
        refused: rpcRefused,
      },
      {
        name: 'summarize_conversation of the owner (2026-07-28 prompts/get)',
        request: (_c, w) => ({
          method: 'POST',
          path: '/mcp',
          headers: modernHeaders('prompts/get', 'summarize_conversation'),
          body: modernBody('prompts/get', {
            name: 'summarize_conversation',
            arguments: { conversation_id: w.owned.conversationId },
          }),
        }),
        owner: { ...OK_MARKED, check: rpcResult },
        refused: rpcRefused,
      },
      {
        name: "tasks/get of the owner's task",
        request: (_c, w) => ({
          method: 'POST',
          path: '/mcp',
          headers: modernHeaders('tasks/get', w.owned.answerTaskId),
          body: modernBody('tasks/get', { taskId: w.owned.answerTaskId }, TASKS_CAPABILITY),
        }),
        owner: {
          status: [200],
          check: (a) =>
            (json(a)?.result as { status?: string } | undefined)?.status === 'input_required'
              ? undefined
              : `expected the task waiting for its answer, got ${a.text.slice(0, 200)}`,
        },
        refused: rpcRefused,
      },
      {
        name: "tasks/update of the owner's task",
        request: (_c, w) => ({
          method: 'POST',
          path: '/mcp',
          headers: modernHeaders('tasks/update', w.owned.answerTaskId),
          body: modernBody(
            'tasks/update',
            {
              taskId: w.owned.answerTaskId,
              inputResponses: { [w.owned.inputKey]: { action: 'accept', content: { answer: 'hijacked' } } },
            },
            TASKS_CAPABILITY,
          ),
        }),
        owner: { status: [200], check: rpcResult },
        refused: rpcRefused,
        last: 43,
      },
      {
        name: "tasks/cancel of the owner's task",
        request: (_c, w) => ({
          method: 'POST',
          path: '/mcp',
          headers: modernHeaders('tasks/cancel', w.owned.cancelTaskId),
          body: modernBody('tasks/cancel', { taskId: w.owned.cancelTaskId }, TASKS_CAPABILITY),
        }),
        owner: { status: [200], check: rpcResult },
        refused: rpcRefused,
        last: 44,
      },
      {
        name: "the owner's requestState on the input_required retry",
        request: (_c, w) => ({
          method: 'POST',
          path: '/mcp',
          headers: modernHeaders('tools/call', w.owned.askingTool),
          body: modernBody(
            'tools/call',
            {
              name: w.owned.askingTool,
              arguments: { input: MARKER },
              inputResponses: { [w.owned.inputKey]: { action: 'accept', content: { answer: 'hijacked' } } },
              requestState: w.owned.requestState,
            },
            { elicitation: { form: {} } },
          ),
        }),
        owner: { status: [200], check: rpcResult },
        refused: rpcRefused,
        last: 45,
      },
    ],
  },
  'GET /mcp': {
    kind: { kind: 'owned', resource: 'MCP session, stream events' },
    cases: [
      {
        name: "the owner's Mcp-Session-Id",
        request: (_c, w) => ({ method: 'GET', path: '/mcp', headers: sessionHeaders(w.owned.mcpSessionId) }),
        owner: OK,
        refused: (a) => (a.status === 404 ? undefined : `expected 404, got ${a.status}`),
      },
      {
        name: "Last-Event-ID of the owner's events, on the caller's own session",
        request: (caller, w) => ({
          method: 'GET',
          path: '/mcp',
          headers: {
            ...sessionHeaders(w.attackerSessions[caller] ?? w.owned.mcpSessionId),
            'Last-Event-ID': w.owned.lastEventId,
          },
        }),
        owner: OK_MARKED,
        refused: (a) => (a.status < 500 ? undefined : `got ${a.status}`),
      },
    ],
  },
  'DELETE /mcp': {
    kind: { kind: 'owned', resource: 'MCP session' },
    cases: [
      {
        request: (_c, w) => ({ method: 'DELETE', path: '/mcp', headers: sessionHeaders(w.owned.mcpSessionId) }),
        owner: OK,
        refused: (a) => (a.status === 404 ? undefined : `expected 404, got ${a.status}`),
        last: 50,
      },
    ],
  },
  // Legacy SSE.
  'GET /sse': {
    kind: { kind: 'self' },
    cases: [{ request: (_c, w) => ({ method: 'GET', path: `/sse?sessionId=${w.owned.sseSessionId}` }), owner: OK }],
  },
  'POST /messages': {
    kind: { kind: 'owned', resource: 'legacy SSE session' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'POST',
          path: `/messages?sessionId=${w.owned.sseSessionId}`,
          body: jsonRpc(
            'tools/call',
            {
              name: 'conversation_get',
              arguments: { conversation_id: w.owned.conversationId },
            },
            13,
          ),
        }),
        owner: { status: [202] },
      },
    ],
  },

  // Playground.
  'POST /api/playground/sessions': {
    kind: { kind: 'self' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'POST',
          path: '/api/playground/sessions',
          body: { name: 'mine', user_id: w.owned.userId },
        }),
        owner: CREATED,
      },
    ],
  },
  'GET /api/playground/sessions': {
    kind: { kind: 'self' },
    cases: [{ request: () => ({ method: 'GET', path: '/api/playground/sessions' }), owner: OK_MARKED }],
  },
  'GET /api/playground/views': {
    kind: { kind: 'self' },
    cases: [{ request: () => ({ method: 'GET', path: '/api/playground/views' }), owner: OK }],
  },
  'POST /api/playground/views/tools/call': {
    kind: { kind: 'owned', resource: 'workflow run' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'POST',
          path: '/api/playground/views/tools/call',
          body: {
            name: 'workflow_run_view',
            arguments: { workflow_id: w.owned.askingWorkflowId, run_id: w.owned.runId },
          },
        }),
        owner: {
          status: [200],
          check: (a) => (json(a)?.isError === false ? undefined : `the owner's view was refused: ${a.text}`),
        },
        // Another caller's view is answered as for a run that does not exist (a tool error, nothing of the run),
        // or refused outright by the policy point (a principal may not call the tool).
        refused: (a) =>
          (a.status === 200 && json(a)?.isError === true) || a.status === 403 || a.status === 401
            ? a.text.includes(MARKER)
              ? 'the answer shows the run'
              : undefined
            : `expected a tool error, got ${a.status} ${a.text.slice(0, 200)}`,
      },
    ],
  },
  'GET /api/playground/sessions/{session_id}': {
    kind: { kind: 'owned', resource: 'playground session' },
    cases: [
      {
        request: (_c, w) => ({ method: 'GET', path: `/api/playground/sessions/${w.owned.playgroundSessionId}` }),
        owner: OK_MARKED,
      },
    ],
  },
  'PATCH /api/playground/sessions/{session_id}': {
    kind: { kind: 'owned', resource: 'playground session' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'PATCH',
          path: `/api/playground/sessions/${w.owned.playgroundSessionId}`,
          body: { name: 'renamed' },
        }),
        owner: OK,
        last: 60,
      },
    ],
  },
  'DELETE /api/playground/sessions/{session_id}': {
    kind: { kind: 'owned', resource: 'playground session' },
    cases: [
      {
        request: (_c, w) => ({ method: 'DELETE', path: `/api/playground/sessions/${w.owned.playgroundSessionId}` }),
        owner: { status: [200, 204] },
        last: 62,
      },
    ],
  },
  'POST /api/playground/sessions/{session_id}/cancel': {
    kind: { kind: 'owned', resource: 'playground session' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'POST',
          path: `/api/playground/sessions/${w.owned.playgroundSessionId}/cancel`,
        }),
        // Nothing runs: the owner is told so (409), which shows the session was found.
        owner: { status: [202, 409] },
      },
    ],
  },
  'GET /api/playground/observability/traces': {
    kind: { kind: 'owned', resource: 'playground session' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'GET',
          path: `/api/playground/observability/traces?session_id=${w.owned.playgroundSessionId}`,
        }),
        owner: OK,
      },
    ],
  },
  'GET /api/playground/observability/logs': {
    kind: { kind: 'owned', resource: 'playground session' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'GET',
          path: `/api/playground/observability/logs?session_id=${w.owned.playgroundSessionId}&level=DEBUG`,
        }),
        owner: OK,
      },
    ],
  },
  'GET /api/playground/observability/metrics': {
    kind: { kind: 'owned', resource: 'playground session' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'GET',
          path: `/api/playground/observability/metrics?session_id=${w.owned.playgroundSessionId}`,
        }),
        owner: OK,
      },
    ],
  },
  'POST /api/playground/chat': {
    kind: { kind: 'owned', resource: 'playground session' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'POST',
          path: '/api/playground/chat',
          body: { session_id: w.owned.playgroundSessionId, message: 'What did I say before?' },
        }),
        owner: OK,
        last: 61,
      },
      {
        name: 'streamed',
        request: (_c, w) => ({
          method: 'POST',
          path: '/api/playground/chat',
          headers: { Accept: 'text/event-stream' },
          body: { session_id: w.owned.playgroundSessionId, message: 'And now?', stream: true },
        }),
        owner: OK,
        last: 61,
      },
    ],
  },

  // Builder.
  'POST /api/builder/workflows': {
    kind: { kind: 'self' },
    cases: [
      {
        request: () => ({ method: 'POST', path: '/api/builder/workflows', body: linear('Made by the caller') }),
        owner: CREATED,
      },
    ],
  },
  'GET /api/builder/workflows': {
    kind: { kind: 'self' },
    cases: [{ request: () => ({ method: 'GET', path: '/api/builder/workflows?tag=matrix' }), owner: OK_MARKED }],
  },
  'GET /api/builder/workflows/{workflow_id}': {
    kind: { kind: 'owned', resource: 'workflow' },
    cases: [
      {
        request: (_c, w) => ({ method: 'GET', path: `/api/builder/workflows/${w.owned.workflowId}` }),
        owner: OK_MARKED,
      },
    ],
  },
  'PUT /api/builder/workflows/{workflow_id}': {
    kind: { kind: 'owned', resource: 'workflow' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'PUT',
          path: `/api/builder/workflows/${w.owned.workflowId}`,
          body: linear('Overwritten'),
        }),
        owner: OK,
        last: 70,
      },
    ],
  },
  'DELETE /api/builder/workflows/{workflow_id}': {
    kind: { kind: 'owned', resource: 'workflow' },
    cases: [
      {
        request: (_c, w) => ({ method: 'DELETE', path: `/api/builder/workflows/${w.owned.workflowId}` }),
        owner: NO_CONTENT,
        last: 79,
      },
    ],
  },
  'GET /api/builder/workflows/{workflow_id}/versions': {
    kind: { kind: 'owned', resource: 'workflow' },
    cases: [
      {
        request: (_c, w) => ({ method: 'GET', path: `/api/builder/workflows/${w.owned.workflowId}/versions` }),
        owner: OK_MARKED,
      },
    ],
  },
  'GET /api/builder/workflows/{workflow_id}/versions/{version}': {
    kind: { kind: 'owned', resource: 'workflow' },
    cases: [
      {
        request: (_c, w) => ({ method: 'GET', path: `/api/builder/workflows/${w.owned.workflowId}/versions/1` }),
        owner: OK_MARKED,
      },
    ],
  },
  'POST /api/builder/workflows/{workflow_id}/rollback': {
    kind: { kind: 'owned', resource: 'workflow' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'POST',
          path: `/api/builder/workflows/${w.owned.workflowId}/rollback`,
          body: { version: 1 },
        }),
        owner: OK,
        last: 71,
      },
    ],
  },
  'GET /api/builder/workflows/{workflow_id}/diff': {
    kind: { kind: 'owned', resource: 'workflow' },
    cases: [
      {
        request: (_c, w) => ({ method: 'GET', path: `/api/builder/workflows/${w.owned.workflowId}/diff?from=1&to=2` }),
        owner: OK_MARKED,
      },
    ],
  },
  'POST /api/builder/workflows/{workflow_id}/publish': {
    kind: { kind: 'owned', resource: 'workflow' },
    cases: [
      {
        request: (_c, w) => ({ method: 'POST', path: `/api/builder/workflows/${w.owned.workflowId}/publish` }),
        owner: OK,
        last: 72,
      },
    ],
  },
  'DELETE /api/builder/workflows/{workflow_id}/publish': {
    kind: { kind: 'owned', resource: 'workflow' },
    cases: [
      {
        request: (_c, w) => ({ method: 'DELETE', path: `/api/builder/workflows/${w.owned.askingWorkflowId}/publish` }),
        owner: { status: [200, 204] },
        last: 73,
      },
    ],
  },
  'GET /api/builder/workflows/{workflow_id}/runs': {
    kind: { kind: 'owned', resource: 'workflow' },
    cases: [
      {
        request: (_c, w) => ({ method: 'GET', path: `/api/builder/workflows/${w.owned.askingWorkflowId}/runs` }),
        owner: OK_MARKED,
      },
    ],
  },
  'GET /api/builder/workflows/{workflow_id}/runs/{run_id}': {
    kind: { kind: 'owned', resource: 'workflow run' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'GET',
          path: `/api/builder/workflows/${w.owned.askingWorkflowId}/runs/${w.owned.runId}`,
        }),
        owner: OK_MARKED,
      },
    ],
  },
  'GET /api/builder/workflows/{workflow_id}/runs/{run_id}/events': {
    kind: { kind: 'owned', resource: 'workflow run' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'GET',
          path: `/api/builder/workflows/${w.owned.askingWorkflowId}/runs/${w.owned.runId}/events`,
        }),
        owner: OK,
      },
    ],
  },
  'POST /api/builder/workflows/{workflow_id}/run': {
    kind: { kind: 'owned', resource: 'workflow' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'POST',
          path: `/api/builder/workflows/${w.owned.workflowId}/run`,
          headers: { Accept: 'text/event-stream' },
          body: { input: 'hijack' },
        }),
        owner: OK,
        last: 74,
      },
    ],
  },
  'POST /api/builder/workflows/{workflow_id}/runs/{run_id}/resume': {
    kind: { kind: 'owned', resource: 'workflow run' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'POST',
          path: `/api/builder/workflows/${w.owned.askingWorkflowId}/runs/${w.owned.runId}/resume`,
          headers: { Accept: 'text/event-stream' },
          body: { answer: 'hijacked' },
        }),
        owner: OK,
        last: 39,
      },
    ],
  },
  'POST /api/builder/validate': {
    kind: { kind: 'self' },
    cases: [{ request: () => ({ method: 'POST', path: '/api/builder/validate', body: linear() }), owner: OK }],
  },
  'POST /api/builder/generate': {
    kind: { kind: 'self' },
    cases: [{ request: () => ({ method: 'POST', path: '/api/builder/generate', body: linear() }), owner: OK }],
  },
  'GET /api/builder/tools': {
    kind: { kind: 'self' },
    cases: [{ request: () => ({ method: 'GET', path: '/api/builder/tools' }), owner: OK }],
  },
  'GET /api/builder/resources': {
    kind: { kind: 'self' },
    cases: [{ request: () => ({ method: 'GET', path: '/api/builder/resources' }), owner: OK }],
  },

  // Connected MCP servers: a personal connection, its tools, the owner's account at it and the calls waiting for
  // the owner's approval are the owner's alone; anyone else finds none (404), as if it did not exist.
  'GET /api/v1/connections': {
    kind: { kind: 'self' },
    cases: [{ request: () => ({ method: 'GET', path: '/api/v1/connections' }), owner: OK_MARKED }],
  },
  'GET /api/v1/connections/commands': {
    kind: { kind: 'self' },
    cases: [{ request: () => ({ method: 'GET', path: '/api/v1/connections/commands' }), owner: OK }],
  },
  'POST /api/v1/connections': {
    kind: { kind: 'self' },
    cases: [
      {
        name: "personal: the caller's own",
        request: (caller) => ({
          method: 'POST',
          path: '/api/v1/connections',
          body: { name: `made by ${caller}`, transport: 'streamable_http', url: CONNECTION_URL },
        }),
        owner: CREATED,
      },
      {
        // A shared connection is in everyone's list, the owner's too: administrators only.
        name: 'shared',
        request: (caller) => ({
          method: 'POST',
          path: '/api/v1/connections',
          body: { name: `shared by ${caller}`, scope: 'shared', transport: 'streamable_http', url: CONNECTION_URL },
        }),
        owner: CREATED,
        refused: (a) => (a.status === 403 ? undefined : `expected 403, got ${a.status} ${a.text.slice(0, 200)}`),
      },
    ],
  },
  'GET /api/v1/connections/{id}': {
    kind: { kind: 'owned', resource: 'connection' },
    cases: [
      {
        request: (_c, w) => ({ method: 'GET', path: `/api/v1/connections/${w.owned.connectionId}` }),
        owner: OK_MARKED,
      },
    ],
  },
  'PATCH /api/v1/connections/{id}': {
    kind: { kind: 'owned', resource: 'connection' },
    cases: [
      {
        // Pointed elsewhere, the owner's calls (and the owner's account's token) would go there.
        request: (caller, w) => ({
          method: 'PATCH',
          path: `/api/v1/connections/${w.owned.oauthConnectionId}`,
          body: { name: `renamed by ${caller}`, url: 'https://elsewhere.example/mcp' },
        }),
        owner: OK,
        last: 84,
      },
    ],
  },
  'DELETE /api/v1/connections/{id}': {
    kind: { kind: 'owned', resource: 'connection' },
    cases: [
      {
        request: (_c, w) => ({ method: 'DELETE', path: `/api/v1/connections/${w.owned.connectionId}` }),
        owner: NO_CONTENT,
        last: 86,
      },
    ],
  },
  'POST /api/v1/connections/{id}/test': {
    kind: { kind: 'owned', resource: 'connection' },
    cases: [
      {
        request: (_c, w) => ({ method: 'POST', path: `/api/v1/connections/${w.owned.connectionId}/test` }),
        // Nothing answers at its URL: the outcome says so, which shows the connection was found.
        owner: {
          status: [200],
          check: (a) => (json(a)?.ok === false ? undefined : `expected ok: false, got ${a.text.slice(0, 200)}`),
        },
      },
    ],
  },
  'GET /api/v1/connections/{id}/tools': {
    kind: { kind: 'owned', resource: 'connection' },
    cases: [
      {
        request: (_c, w) => ({ method: 'GET', path: `/api/v1/connections/${w.owned.connectionId}/tools` }),
        owner: OK_MARKED,
      },
    ],
  },
  'POST /api/v1/connections/{id}/tools/{tool}/approve': {
    kind: { kind: 'owned', resource: 'connection' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'POST',
          path: `/api/v1/connections/${w.owned.connectionId}/tools/${w.owned.heldTool}/approve`,
        }),
        owner: {
          status: [200],
          check: (a) => (json(a)?.status === 'approved' ? undefined : `not approved: ${a.text.slice(0, 200)}`),
        },
        last: 81,
      },
    ],
  },
  'POST /api/v1/connections/{id}/account': {
    kind: { kind: 'owned', resource: 'connection' },
    cases: [
      {
        name: 'the OAuth connection',
        request: (_c, w) => ({
          method: 'POST',
          path: `/api/v1/connections/${w.owned.oauthConnectionId}/account`,
          body: { return_to: '/' },
        }),
        // Its sign-in service is looked up, and cannot be reached: the owner got past every check to it.
        owner: { status: [503] },
      },
      {
        name: 'the connection without OAuth',
        request: (_c, w) => ({ method: 'POST', path: `/api/v1/connections/${w.owned.connectionId}/account`, body: {} }),
        owner: { status: [400] },
      },
    ],
  },
  'DELETE /api/v1/connections/{id}/account': {
    kind: { kind: 'owned', resource: 'connection' },
    cases: [
      {
        // Only ever the caller's own account: anyone else finds no connection.
        request: (_c, w) => ({ method: 'DELETE', path: `/api/v1/connections/${w.owned.oauthConnectionId}/account` }),
        owner: NO_CONTENT,
        last: 83,
      },
    ],
  },
  'GET /api/v1/connections/oauth/callback': {
    kind: { kind: 'public' },
    cases: [
      {
        // A sign-in nobody started: refused alike for everyone, the owner included.
        request: () => ({
          method: 'GET',
          path: '/api/v1/connections/oauth/callback?state=unknown-sign-in&code=stolen-code',
          headers: { Cookie: 'connection_sign_in=guessed' },
        }),
        owner: { status: [400] },
        refused: (a) => (a.status === 400 ? undefined : `expected 400, got ${a.status} ${a.text.slice(0, 200)}`),
      },
    ],
  },
  'GET /api/v1/connections/approvals/{approval_id}': {
    kind: { kind: 'owned', resource: 'tool call approval' },
    cases: [
      {
        request: (_c, w) => ({ method: 'GET', path: `/api/v1/connections/approvals/${w.owned.approvalId}` }),
        owner: OK_MARKED,
      },
    ],
  },
  'POST /api/v1/connections/approvals/{approval_id}': {
    kind: { kind: 'owned', resource: 'tool call approval' },
    cases: [
      {
        request: (_c, w) => ({
          method: 'POST',
          path: `/api/v1/connections/approvals/${w.owned.approvalId}`,
          body: { approve: true },
        }),
        owner: {
          status: [200],
          check: (a) => (json(a)?.approved === true ? undefined : `not approved: ${a.text.slice(0, 200)}`),
        },
        last: 82,
      },
    ],
  },
};

/** The wires that /openapi.json cannot describe (WebSocket upgrades), attacked and proven the same way. */
interface Wire {
  name: string;
  /** What the caller's attempt answered that it should not have; undefined when it was refused as it should be. */
  attack: (world: World, caller: Attacker) => Promise<string | undefined>;
  owner: (world: World) => Promise<string | undefined>;
}

const typesOf = (messages: string[]) => messages.map((m) => (JSON.parse(m) as { type?: string }).type);

/** The token a caller would put in a playground socket's auth message. */
function socketToken(world: World, caller: Caller): string {
  switch (caller) {
    case 'owner':
      return world.owner.token;
    case 'other':
      return world.other.token;
    case 'principal':
      return world.other.principalToken;
    case 'apiKey':
      return world.other.apiKey;
    case 'expired':
      return world.owner.expired;
    case 'revoked':
      return world.owner.revoked;
    case 'none':
      return '';
  }
}

const WIRES: Wire[] = [
  {
    name: 'WS /ws/playground/{session_id}',
    attack: async (world, caller) => {
      const url = `${world.app.url('playground').replace('http', 'ws')}/ws/playground/${world.owned.playgroundSessionId}`;
      const outcome = await converse(url, {
        messages: [{ type: 'auth', token: socketToken(world, caller) }, { type: 'ping' }],
        done: (received) => typesOf(received).some((t) => t === 'pong'),
      });
      const types = typesOf(outcome.messages);
      if (outcome.messages.some((m) => m.toLowerCase().includes(MARKER.toLowerCase()))) return 'leaks owner data';
      if (types.includes('auth_success') || types.includes('pong')) return `accepted: ${outcome.messages.join(' ')}`;
      const expected = UNAUTHENTICATED.includes(caller) || caller === 'apiKey' ? [4401, 'auth_error'] : [4404, 'error'];
      if (outcome.closeCode !== expected[0] || types[0] !== expected[1])
        return `expected ${String(expected[1])} and close ${String(expected[0])}, got ${outcome.closeCode} ${outcome.messages.join(' ')}`;
      return undefined;
    },
    owner: async (world) => {
      const url = `${world.app.url('playground').replace('http', 'ws')}/ws/playground/${world.owned.playgroundSessionId}`;
      const outcome = await converse(url, {
        messages: [{ type: 'auth', token: world.owner.token }, { type: 'ping' }],
        done: (received) => typesOf(received).includes('pong'),
      });
      return typesOf(outcome.messages).includes('pong') ? undefined : `no pong: ${outcome.messages.join(' ')}`;
    },
  },
  {
    name: 'WS /mcp/ws (conversation://{id} of the owner)',
    attack: async (world, caller) => {
      const outcome = await readOverMcpSocket(world, credentialOf(world, caller));
      if (outcome.messages.some((m) => m.toLowerCase().includes(MARKER.toLowerCase()))) return 'leaks owner data';
      if (UNAUTHENTICATED.includes(caller))
        return outcome.status === 401 ? undefined : `expected 401 on the upgrade, got ${outcome.status}`;
      const answer = outcome.messages
        .map((m) => JSON.parse(m) as { id?: number; error?: unknown })
        .find((m) => m.id === 2);
      return answer?.error
        ? undefined
        : `expected a JSON-RPC error, got ${outcome.status} ${outcome.messages.join(' ')}`;
    },
    owner: async (world) => {
      const outcome = await readOverMcpSocket(world, credentialOf(world, 'owner'));
      return outcome.messages.some((m) => m.includes(MARKER))
        ? undefined
        : `no conversation: ${outcome.messages.join(' ')}`;
    },
  },
];

function readOverMcpSocket(world: World, headers: Record<string, string>) {
  return converse(`${world.app.url('main').replace('http', 'ws')}/mcp/ws`, {
    headers,
    messages: [
      jsonRpc('initialize', {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'matrix', version: '1' },
      }),
      jsonRpc('resources/read', { uri: `conversation://${world.owned.conversationId}` }, 2),
    ],
    done: (received) => received.some((m) => (JSON.parse(m) as { id?: number }).id === 2),
  });
}

// ---------------------------------------------------------------------------------------------------------------
// What the owner has, read back through the owner's own API.

/** Parts of an answer that move by themselves (an export's own id and time, the audit trail of the reads). */
function stable(name: string, answer: Answer): string {
  const body = answer.json as Record<string, unknown> | undefined;
  if (name === 'data' && body) {
    const { audit_log: _audit, export_id: _id, export_timestamp: _at, ...rest } = body;
    return `${answer.status} ${JSON.stringify(rest)}`;
  }
  return `${answer.status} ${answer.json === undefined ? answer.text : JSON.stringify(answer.json)}`;
}

async function snapshot(world: World): Promise<Record<string, string>> {
  const o = world.owned;
  const auth = credentialOf(world, 'owner');
  const reads: [string, Request][] = [
    ['me', { listener: 'main', method: 'GET', path: '/auth/me' }],
    ['login sessions', { listener: 'main', method: 'GET', path: '/auth/sessions' }],
    ['api keys', { listener: 'main', method: 'GET', path: '/api/v1/api-keys?include_expired=true' }],
    ['principals', { listener: 'main', method: 'GET', path: '/api/v1/service-principals' }],
    ['principal', { listener: 'main', method: 'GET', path: `/api/v1/service-principals/${o.principalId}` }],
    ['grants', { listener: 'main', method: 'GET', path: '/api/v1/oauth/grants' }],
    ['consents', { listener: 'main', method: 'GET', path: '/api/v1/users/me/consent' }],
    ['data', { listener: 'main', method: 'GET', path: '/api/v1/users/me/data' }],
    ['playground sessions', { listener: 'playground', method: 'GET', path: '/api/playground/sessions' }],
    [
      'playground session',
      { listener: 'playground', method: 'GET', path: `/api/playground/sessions/${o.playgroundSessionId}` },
    ],
    [
      'playground metrics',
      {
        listener: 'playground',
        method: 'GET',
        path: `/api/playground/observability/metrics?session_id=${o.playgroundSessionId}`,
      },
    ],
    ['workflows', { listener: 'builder', method: 'GET', path: '/api/builder/workflows' }],
    ['workflow', { listener: 'builder', method: 'GET', path: `/api/builder/workflows/${o.workflowId}` }],
    ['versions', { listener: 'builder', method: 'GET', path: `/api/builder/workflows/${o.workflowId}/versions` }],
    ['asking workflow', { listener: 'builder', method: 'GET', path: `/api/builder/workflows/${o.askingWorkflowId}` }],
    ['runs', { listener: 'builder', method: 'GET', path: `/api/builder/workflows/${o.askingWorkflowId}/runs` }],
    [
      'run',
      { listener: 'builder', method: 'GET', path: `/api/builder/workflows/${o.askingWorkflowId}/runs/${o.runId}` },
    ],
    ['tools', { listener: 'main', method: 'GET', path: '/tools' }],
    [
      'conversation',
      {
        listener: 'main',
        method: 'POST',
        path: '/mcp/resources/read',
        body: { params: { uri: `conversation://${o.conversationId}` } },
      },
    ],
    ...[o.answerTaskId, o.cancelTaskId].map((taskId): [string, Request] => [
      `task ${taskId}`,
      {
        listener: 'main',
        method: 'POST',
        path: '/mcp',
        headers: modernHeaders('tasks/get', taskId),
        body: modernBody('tasks/get', { taskId }, TASKS_CAPABILITY),
      },
    ]),
    [
      'mcp session',
      {
        listener: 'main',
        method: 'POST',
        path: '/mcp',
        headers: sessionHeaders(o.mcpSessionId),
        body: jsonRpc('ping', {}, 21),
      },
    ],
    [
      'sse session',
      { listener: 'main', method: 'POST', path: `/messages?sessionId=${o.sseSessionId}`, body: jsonRpc('ping') },
    ],
    ['connections', { listener: 'main', method: 'GET', path: '/api/v1/connections' }],
    // Each with the owner's account at it (connected or not).
    ['connection', { listener: 'main', method: 'GET', path: `/api/v1/connections/${o.connectionId}` }],
    ['OAuth connection', { listener: 'main', method: 'GET', path: `/api/v1/connections/${o.oauthConnectionId}` }],
    // The held tool stays held until the owner approves it.
    ['connection tools', { listener: 'main', method: 'GET', path: `/api/v1/connections/${o.connectionId}/tools` }],
    ['tool call approval', { listener: 'main', method: 'GET', path: `/api/v1/connections/approvals/${o.approvalId}` }],
    ['scim user', { listener: 'main', method: 'GET', path: `/scim/v2/Users/${o.scimUserId}` }],
    ['scim group', { listener: 'main', method: 'GET', path: `/scim/v2/Groups/${o.scimGroupId}` }],
  ];
  const answers = await Promise.all(
    reads.map(async ([name, request]) => {
      const answer = await send(world.app, { ...request, headers: { ...auth, ...request.headers } });
      return [name, stable(name, answer)] as const;
    }),
  );
  return Object.fromEntries(answers);
}

/** The reads whose answer differs between two snapshots, before and after. */
function changes(before: Record<string, string>, after: Record<string, string>): string[] {
  return Object.keys(before)
    .filter((name) => before[name] !== after[name])
    .map((name) => `${name}: ${before[name]!.slice(0, 300)} → ${after[name]!.slice(0, 300)}`);
}

// ---------------------------------------------------------------------------------------------------------------
// The description, and how each answer is judged.

interface Described {
  key: string;
  listener: Listener;
  secured: boolean;
  responses: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }>;
}

interface OpenApi {
  paths: Record<string, Record<string, Described & { security?: unknown[]; servers?: { url: string }[] }>>;
  components: { schemas: Record<string, { required?: string[] }> };
}

function describedOperations(world: World, document: OpenApi): Map<string, Described> {
  const listenerAt = (url: string | undefined): Listener =>
    url === world.app.url('playground') ? 'playground' : url === world.app.url('builder') ? 'builder' : 'main';
  const operations = new Map<string, Described>();
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      const key = `${method.toUpperCase()} ${path}`;
      // An operation served by several listeners names the main one first; one of another listener names it alone.
      const servers = operation.servers?.map((s) => s.url) ?? ['/'];
      operations.set(key, {
        key,
        listener: servers.includes('/') ? 'main' : listenerAt(servers[0]),
        secured: (operation.security ?? []).length > 0,
        responses: operation.responses,
      });
    }
  }
  return operations;
}

/** Whether a refusal has the body the description promises for its status (the area's error shape). */
function shapeProblem(document: OpenApi, operation: Described, answer: Answer): string | undefined {
  if (answer.status < 400) return undefined;
  const declared = operation.responses[String(answer.status)];
  if (!declared) return `status ${answer.status} is not in the description`;
  const contentType = (answer.headers.get('content-type') ?? '').split(';')[0]!.trim();
  const ref = (declared.content?.[contentType] ?? Object.values(declared.content ?? {})[0])?.schema?.$ref;
  if (!ref) return undefined;
  const required = document.components.schemas[ref.split('/').at(-1)!]?.required ?? [];
  const body = answer.json as Record<string, unknown> | undefined;
  const missing = required.filter((name) => body?.[name] === undefined);
  return missing.length === 0
    ? undefined
    : `body lacks ${missing.join(', ')} of ${ref.split('/').at(-1)}: ${answer.text.slice(0, 200)}`;
}

const leaks = (answer: Answer) => answer.text.toLowerCase().includes(MARKER.toLowerCase());

/** The ids of the owner's things, which no answer to anyone else may name unless the request named it. */
function ownerIds(world: World): [string, string][] {
  const o = world.owned;
  return Object.entries({
    'owner id': o.userId,
    'login session': o.spareSessionId,
    'API key': o.apiKeyId,
    'OAuth grant': o.grantId,
    conversation: o.conversationId,
    'playground session': o.playgroundSessionId,
    workflow: o.workflowId,
    'asking workflow': o.askingWorkflowId,
    run: o.runId,
    'task to answer': o.answerTaskId,
    'task to cancel': o.cancelTaskId,
    'MCP session': o.mcpSessionId,
    'SSE session': o.sseSessionId,
    'SCIM user': o.scimUserId,
    'SCIM group': o.scimGroupId,
    connection: o.connectionId,
    'OAuth connection': o.oauthConnectionId,
    'tool call approval': o.approvalId,
  });
}

function judge(
  world: World,
  document: OpenApi,
  operation: Described,
  entry: Entry,
  c: Case,
  caller: Attacker,
  answer: Answer,
) {
  const problems: string[] = [];
  if (answer.status >= 500) problems.push(`server error ${answer.status}`);
  if (leaks(answer)) problems.push(`answered the owner's data (${answer.status})`);
  const sent = JSON.stringify(c.request(caller, world, entry.spare ? world.spare : world.other));
  for (const [name, id] of ownerIds(world))
    if (!sent.includes(id) && answer.text.includes(id)) problems.push(`named the owner's ${name} (${answer.status})`);
  if (operation.secured && UNAUTHENTICATED.includes(caller)) {
    if (answer.status !== 401) problems.push(`expected 401, got ${answer.status} ${answer.text.slice(0, 200)}`);
  } else if (c.refused) {
    const problem = c.refused(answer);
    if (problem) problems.push(problem);
  } else if (entry.kind.kind === 'owned' && ![403, 404].includes(answer.status)) {
    problems.push(`expected 403 or 404, got ${answer.status} ${answer.text.slice(0, 200)}`);
  } else if (entry.kind.kind === 'admin' && answer.status !== 403) {
    problems.push(`expected 403, got ${answer.status} ${answer.text.slice(0, 200)}`);
  }
  const shape = shapeProblem(document, operation, answer);
  if (shape) problems.push(shape);
  return problems;
}

/**
 * The credential a caller sends: its own, or, for an operation that ends the caller's own session or account, one
 * made for this request alone (made before any request of the operation is sent, since one may end them all).
 */
async function credentialFor(world: World, entry: Entry, caller: Caller): Promise<Record<string, string>> {
  const identity = entry.spare ? world.spare : world.other;
  if (!entry.fresh) return credentialOf(world, caller, identity);
  switch (caller) {
    case 'other':
      return { Authorization: `Bearer ${await freshToken(world.app, identity.username)}` };
    case 'principal':
      return {
        Authorization: `Bearer ${await principalToken(world.app, identity.principalId, identity.principalSecret)}`,
      };
    case 'owner': {
      const login = await send(world.app, {
        listener: 'main',
        method: 'POST',
        path: '/auth/login',
        body: { username: 'admin', password: ADMIN_PASSWORD },
      });
      return { Authorization: `Bearer ${(login.json as { access_token: string }).access_token}` };
    }
    default:
      return credentialOf(world, caller, identity);
  }
}

/** Sends a case's request as a caller, with the credential given. */
function sendAs(
  world: World,
  operation: Described,
  entry: Entry,
  c: Case,
  caller: Caller,
  credential: Record<string, string>,
): Promise<Answer> {
  const request = c.request(caller, world, entry.spare ? world.spare : world.other);
  return send(world.app, {
    listener: request.listener ?? operation.listener,
    ...request,
    headers: { ...credential, ...request.headers },
  });
}

/** Runs `work` over `items`, at most `limit` at a time. */
async function inBatches<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: Math.min(limit, queue.length) }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await work(item);
    }),
  );
}

const label = (key: string, c: Case) => (c.name ? `${key} [${c.name}]` : key);

describe('impersonation matrix over every operation of /openapi.json', () => {
  let world: World;
  let document: OpenApi;
  let operations: Map<string, Described>;
  let requests = 0;

  beforeAll(async () => {
    world = await buildWorld();
    const answer = await send(world.app, { listener: 'main', method: 'GET', path: '/openapi.json' });
    document = answer.json as OpenApi;
    operations = describedOperations(world, document);
  }, 60_000);
  afterAll(async () => {
    await world?.close();
  });

  it('classifies every operation the description names, and no operation it does not', async () => {
    // The playground and builder listeners have no description of their own: /openapi.json of the main one is all.
    for (const listener of ['playground', 'builder'] as const)
      expect((await send(world.app, { listener, method: 'GET', path: '/openapi.json' })).status).toBe(404);
    const described = [...operations.keys()];
    expect(
      described.filter((key) => !(key in MATRIX)),
      'operations missing from the matrix',
    ).toEqual([]);
    expect(
      Object.keys(MATRIX).filter((key) => !operations.has(key)),
      'classified operations that no longer exist',
    ).toEqual([]);
    expect(described.length).toBeGreaterThan(100);
  });

  it('refuses every other caller, in the area’s error shape, and leaves the owner’s data as it was', async () => {
    const failures: string[] = [];
    let before = await snapshot(world);
    // Reading twice changes nothing: what follows compares reads, not the passage of time.
    expect(changes(before, await snapshot(world))).toEqual([]);
    for (const [key, entry] of Object.entries(MATRIX)) {
      const operation = operations.get(key);
      if (!operation) continue;
      const attempts = await Promise.all(
        entry.cases.flatMap((c) =>
          ATTACKERS.map(async (caller) => ({ c, caller, credential: await credentialFor(world, entry, caller) })),
        ),
      );
      await inBatches(attempts, entry.fresh ? 1 : 6, async ({ c, caller, credential }) => {
        requests += 1;
        const answer = await sendAs(world, operation, entry, c, caller, credential).catch((error: unknown) => {
          failures.push(`${label(key, c)} as ${caller}: ${String(error)}`);
        });
        if (!answer) return;
        for (const problem of judge(world, document, operation, entry, c, caller, answer))
          failures.push(`${label(key, c)} as ${caller}: ${problem}`);
      });
      const after = await snapshot(world);
      for (const change of changes(before, after)) failures.push(`${key} changed the owner's ${change}`);
      before = after;
    }
    for (const wire of WIRES) {
      for (const caller of ATTACKERS) {
        const problem = await wire.attack(world, caller);
        requests += 1;
        if (problem) failures.push(`${wire.name} as ${caller}: ${problem}`);
      }
      const after = await snapshot(world);
      for (const change of changes(before, after)) failures.push(`${wire.name} changed the owner's ${change}`);
      before = after;
    }
    expect(failures).toEqual([]);
  }, 120_000);

  it('serves the owner every operation, with the owner’s data where it reads it', async () => {
    const failures: string[] = [];
    const all = Object.entries(MATRIX).flatMap(([key, entry]) => entry.cases.map((c) => ({ key, entry, c })));
    const check = async ({ key, entry, c }: (typeof all)[number]) => {
      const operation = operations.get(key);
      if (!operation) return;
      requests += 1;
      const answer = await sendAs(
        world,
        operation,
        entry,
        c,
        'owner',
        await credentialFor(world, entry, 'owner'),
      ).catch((error: unknown) => {
        failures.push(`${label(key, c)} as the owner: ${String(error)}`);
      });
      if (!answer) return;
      const problems = [
        ...(c.owner.status.includes(answer.status) ? [] : [`status ${answer.status}: ${answer.text.slice(0, 300)}`]),
        ...(c.owner.marker && !leaks(answer) ? ['the owner’s data is not in the answer'] : []),
        ...(c.owner.check?.(answer) !== undefined ? [c.owner.check(answer)!] : []),
      ];
      for (const problem of problems) failures.push(`${label(key, c)} as the owner: ${problem}`);
    };
    // Reads first, side by side; then what changes or ends the owner's things, in order.
    await inBatches(
      all.filter(({ c }) => c.last === undefined),
      6,
      check,
    );
    for (const wire of WIRES) {
      const problem = await wire.owner(world);
      requests += 1;
      if (problem) failures.push(`${wire.name} as the owner: ${problem}`);
    }
    for (const item of all.filter(({ c }) => c.last !== undefined).sort((a, b) => a.c.last! - b.c.last!))
      await check(item);
    const cases = all.length + WIRES.length;
    console.log(
      `impersonation matrix: ${operations.size} operations (${all.length} cases) + ${WIRES.length} WebSocket wires, ` +
        `${cases} cases × ${ATTACKERS.length + 1} callers = ${requests} requests`,
    );
    expect(failures).toEqual([]);
  }, 120_000);
});
