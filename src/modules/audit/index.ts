/** The audit module's public API: the append-only audit log and its route. */
export { createAuditModule } from './audit.module.js';
export { type AuditService } from './audit.service.js';
