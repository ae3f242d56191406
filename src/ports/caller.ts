import { ForbiddenError } from '../errors.js';

/**
 * The codes of a refused caller, which every layer raises: the HTTP authentication middleware and the modules
 * that check credentials (no valid credential, 401), and anything that checks what a caller may do (403). They
 * belong to the auth area (spec "Errors"), but are declared with the caller so that the HTTP plumbing and the
 * ports, which know no module, can raise them too. The auth module's other codes are its `AuthErrorCode`.
 */
export const CallerErrorCode = {
  /** No credential, or one that does not establish a caller: malformed, unknown, expired or revoked. */
  InvalidToken: 'AUTH_INVALID_TOKEN',
  /** The caller may not do this. */
  AccessDenied: 'AUTH_ACCESS_DENIED',
} as const;
export type CallerErrorCode = (typeof CallerErrorCode)[keyof typeof CallerErrorCode];

/**
 * Who a caller is, typed: `user:<uuid>` for a person, `service_principal:<service_id>` for a non-human identity.
 * Users and principals live in different id spaces, so a bare id never identifies a caller on its own.
 */
export type Subject = `user:${string}` | `service_principal:${string}`;

/**
 * Who is making a request, as the authentication middleware established it. Every protected route of every
 * listener sees the same shape, whichever credential was presented.
 */
export interface Caller {
  /** A person, or a non-human identity (service principal). */
  kind: 'user' | 'service';
  /** The typed identity: what ownership, sessions, audit and authorization key on. */
  subject: Subject;
  username: string;
  roles: string[];
  /** The login session behind the credential; undefined for credentials without one (API keys). */
  sessionId: string | undefined;
  /** Which credential was presented. */
  via: 'bearer' | 'cookie' | 'api_key' | 'stdio';
  /** When the credential stops working (epoch seconds), if it expires. */
  expiresAt?: number;
  /**
   * The one resource the credential is bound to (RFC 8707), when it is not the whole service: a token issued to
   * an MCP client is accepted by the MCP wires only.
   */
  resource?: string;
  /** OAuth scopes that narrow what the caller may do (see `MCP_SCOPES`); absent: no narrowing. */
  scopes?: string[];
}

/** The URL of the MCP endpoint as a protected resource (RFC 9728 `resource`), from the service's public URL. */
export const mcpResourceUrl = (publicUrl: string): string => `${publicUrl}/mcp`;

/**
 * The path of the service's public URL (`/agent` behind a gateway at `https://host/agent`; empty at a host's root).
 * Well-known metadata of an issuer or resource with a path is also looked up with that path after the well-known
 * name (RFC 8414 §3.1, RFC 9728 §3.1): `/.well-known/oauth-authorization-server/agent`.
 */
export const publicPath = (publicUrl: string): string => new URL(publicUrl).pathname.replace(/\/$/, '');

/**
 * Scopes an MCP client may ask for. `mcp:read` lists tools, resources and prompts and calls read-only tools;
 * `mcp:tools` calls any tool the user may call.
 */
export const MCP_SCOPES = ['mcp:read', 'mcp:tools'] as const;

/** What a wire accepts: a credential for the whole service, or also one bound to the MCP endpoint. */
export type Audience = 'service' | 'mcp';

/** Where a request came from, as the audit log and session lists record it. */
export interface ClientInfo {
  ip: string | null;
  userAgent: string | null;
}

/** For work no request started (start-up, commands). */
export const NO_CLIENT: ClientInfo = { ip: null, userAgent: null };

/** A caller that is a person, with the id of their user record. */
export type UserCaller = Caller & { kind: 'user'; userId: string };

export const userSubject = (userId: string): Subject => `user:${userId}`;
export const principalSubject = (serviceId: string): Subject => `service_principal:${serviceId}`;

/** The caller a person's credential stands for: the user, with their roles. */
export function userCaller(
  user: { id: string; username: string; roles: string[] },
  credential: { via: Caller['via']; sessionId?: string; expiresAt?: number },
): Caller {
  return {
    kind: 'user',
    subject: userSubject(user.id),
    username: user.username,
    roles: user.roles,
    sessionId: credential.sessionId,
    via: credential.via,
    ...(credential.expiresAt !== undefined && { expiresAt: credential.expiresAt }),
  };
}

/** The caller's user id when the caller is a person; undefined for a service principal. */
export function userIdOf(caller: Caller): string | undefined {
  return caller.kind === 'user' && caller.subject.startsWith('user:')
    ? caller.subject.slice('user:'.length)
    : undefined;
}

/** The principal's service_id when the caller is a service principal; undefined for a person. */
export function principalIdOf(caller: Caller): string | undefined {
  return caller.kind === 'service' && caller.subject.startsWith('service_principal:')
    ? caller.subject.slice('service_principal:'.length)
    : undefined;
}

/**
 * The caller as a person, for routes about a person's own records (profile, keys, data-subject rights, owning
 * principals). A service principal is refused with 403: it has no such records, and never stands in for a user.
 */
export function asUser(caller: Caller, message = 'Only users may do this'): UserCaller {
  const userId = userIdOf(caller);
  if (userId === undefined) throw new ForbiddenError(message, { code: CallerErrorCode.AccessDenied });
  return { ...caller, kind: 'user', userId };
}
