/** The health module's public API: probes, start-up tracking and the event-loop watchdog. */
export { createHealthModule } from './health.module.js';
export { type HealthService } from './health.service.js';
