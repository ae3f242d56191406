import { type Caller, userIdOf } from './caller.js';

/**
 * Security-relevant events, appended to the audit log by every module. Implemented by the audit module
 * (`audit.service.ts`), which stores them append-only and anonymizes them on erasure.
 *
 * Every kind of event, as stored in `audit_log.type` and accepted by the admin endpoint's `type` filter.
 */
export const AUDIT_EVENT_TYPES = [
  'login.succeeded',
  'login.failed',
  'logout',
  'session.revoked',
  'session.evicted',
  'refresh_token.reused',
  'sso.login',
  'api_key.created',
  'api_key.rotated',
  'api_key.deleted',
  'service_principal.created',
  'service_principal.secret_rotated',
  'service_principal.associated',
  'service_principal.deleted',
  'client_credentials.failed',
  'scim.user.created',
  'scim.user.updated',
  'scim.user.deactivated',
  'scim.user.reactivated',
  'scim.user.deleted',
  'scim.group.created',
  'scim.group.updated',
  'scim.group.deleted',
  'profile.updated',
  'consent.changed',
  'data.exported',
  'account.erased',
  'oauth.consent_granted',
  'oauth.consent_denied',
  'oauth.grant_revoked',
  'connection.created',
  'connection.updated',
  'connection.deleted',
  'connection.account_connected',
  'connection.account_disconnected',
  'connection.tool_approved',
  'connection.tool_called',
] as const;

export type AuditEventType = (typeof AUDIT_EVENT_TYPES)[number];

export interface AuditEvent {
  type: AuditEventType;
  /** Who acted: a user id, `service_principal:<id>`, or null for anonymous attempts. */
  actorId: string | null;
  /** The user the event concerns, when it is not the actor (an admin deactivating someone, say). */
  subjectId?: string | null;
  ipAddress?: string | null;
  userAgent?: string | null;
  /** Non-secret facts (key ids, service ids, consent types). Never passwords, tokens or keys. */
  details?: Record<string, string | number | boolean | null>;
}

export interface AuditRecorder {
  record(event: AuditEvent): Promise<void>;
}

/** How an event names whoever acted: a user by id, a service principal as `service_principal:<id>`. */
export function actorOf(caller: Caller): string {
  return userIdOf(caller) ?? caller.subject;
}
