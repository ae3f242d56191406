import type { Kysely } from 'kysely';
import type { AuthzService } from '../../adapters/authz/port.js';
import type { Database } from '../../db/database.js';
import type { Logger } from '../../logger.js';
import type { Module } from '../../ports/module.js';
import { auditRoutes } from './audit.routes.js';
import { AuditService } from './audit.service.js';

export interface AuditModuleDeps {
  db: Kysely<Database>;
  logger: Logger;
  /** Who may read the log (administrators). */
  authz: AuthzService;
  now: () => Date;
}

/** The append-only audit log every module records security events in, and its administrators' route. */
export function createAuditModule(deps: AuditModuleDeps): Module<AuditService> {
  const service = new AuditService(deps.db, deps.logger, deps.now);
  return {
    name: 'audit',
    service,
    routes: { main: [auditRoutes({ audit: service, authz: deps.authz })] },
    // The log is kept, and the person in it is replaced by a pseudonym; their addresses, user agents, login names
    // and the names they gave things go (see `AuditService.anonymize`).
    erasure: [
      {
        step: 'audit_logs',
        run: ({ user, db }) => service.anonymize(user.id, db, [user.username, ...(user.email ? [user.email] : [])]),
      },
    ],
    exports: [
      {
        section: 'audit_log',
        collect: async (userId) =>
          (await service.eventsOf(userId)).map((e) => ({
            event_id: e.event_id,
            event_type: e.event_type,
            timestamp: e.timestamp,
            ip_address: e.ip_address,
          })),
      },
    ],
  };
}
