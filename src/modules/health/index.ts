/** The health module's public API: probes, start-up tracking and the event-loop watchdog. */
export { builderHealthRoutes, healthRoutes, playgroundHealthRoutes, type HealthDeps } from './health.routes.js';
export { HealthService } from './health.service.js';
export { EventLoopWatchdog } from './liveness.js';
export { StartupTracker } from './startup.js';
