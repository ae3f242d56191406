import { z } from 'zod';
import type { AuthzService } from '../../adapters/authz/port.js';
import { ForbiddenError } from '../../errors.js';
import { callerOf } from '../../http/authenticate.js';
import { PageMetaSchema, pageMeta, paginationQuery } from '../../http/pagination.js';
import { type RouteGroup, defineRoute } from '../../http/route.js';
import { SYSTEM, subjectOf } from '../../ports/subjects.js';
import { AUDIT_EVENT_TYPES } from '../../ports/audit.js';
import { CallerErrorCode } from '../../ports/caller.js';
import type { AuditService } from './audit.service.js';

const TAGS = ['Audit log'];
const pagination = paginationQuery(50);

/** Any ISO 8601 date-time, normalised to the stored form (UTC, milliseconds) so that text comparison orders it. */
const instant = z.iso
  .datetime({ offset: true })
  .transform((value) => new Date(value).toISOString())
  .optional();

const AuditLogQuery = pagination.in
  .safeExtend({
    user_id: z.string().min(1).max(200).optional().describe('Events this user did or that concern them'),
    type: z.enum(AUDIT_EVENT_TYPES).optional(),
    from: instant.describe('Events at or after this time'),
    to: instant.describe('Events before this time'),
  })
  .meta({ id: 'AuditLogQuery' });

const AuditEntry = z
  .object({
    event_id: z.string(),
    event_type: z.enum(AUDIT_EVENT_TYPES),
    timestamp: z.iso.datetime(),
    actor_id: z.string().nullable().describe('User id, service_principal:<id>, anon:<keyed hash> after erasure'),
    subject_id: z.string().nullable(),
    ip_address: z.string().nullable(),
    user_agent: z.string().nullable(),
    details: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'AuditEntry' });

const AuditPage = PageMetaSchema.extend({ items: z.array(AuditEntry) }).meta({ id: 'AuditLogPage' });

/** The audit log for administrators: newest first, filtered and paged by the shared pagination model. */
export function auditRoutes(deps: { audit: AuditService; authz: AuthzService }): RouteGroup {
  const { audit, authz } = deps;
  return {
    prefix: '/api/v1/audit-log',
    area: 'envelope',
    tags: TAGS,
    routes: [
      defineRoute({
        method: 'get',
        path: '/',
        operationId: 'listAuditLog',
        summary: 'Security events (administrators)',
        description:
          'Logins and failures, logouts, credential and SCIM changes, consents, exports and erasures, newest ' +
          'first. Page with page/page_size or offset/limit.',
        request: { query: AuditLogQuery },
        responses: {
          200: { description: 'One page of events', schema: AuditPage },
          403: { description: 'Not an administrator' },
        },
        handler: async ({ query, req }) => {
          if (!(await authz.check(subjectOf(callerOf(req)), 'admin', SYSTEM))) {
            throw new ForbiddenError('The audit log is for administrators', { code: CallerErrorCode.AccessDenied });
          }
          const { page, page_size, offset, limit, user_id, type, from, to } = query;
          const window = pagination.parse({ page, page_size, offset, limit });
          const { items, total } = await audit.list(
            {
              ...(user_id && { userId: user_id }),
              ...(type && { type }),
              ...(from && { from }),
              ...(to && { to }),
            },
            window,
          );
          return { items, ...pageMeta(total, window) };
        },
      }),
    ],
  };
}
