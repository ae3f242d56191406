/** The audit module's public API: the append-only audit log and its route. */
export { auditRoutes } from './audit.routes.js';
export { AuditService } from './audit.service.js';
