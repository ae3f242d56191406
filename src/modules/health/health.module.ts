import type { Lifecycle } from '../../lifecycle.js';
import type { HealthCheck } from '../../ports/health.js';
import type { Module } from '../../ports/module.js';
import { builderHealthRoutes, healthRoutes, playgroundHealthRoutes } from './health.routes.js';
import { HealthService } from './health.service.js';
import { EventLoopWatchdog } from './liveness.js';
import { StartupTracker } from './startup.js';

export interface HealthModuleDeps {
  /** How long a health result is shared between probes (HEALTH_CACHE_MS). */
  cacheMs: number;
  /** The start-up steps `/health/startup` reports, in order. */
  startupSteps: string[];
  lifecycle: Lifecycle;
  now: () => Date;
}

export interface Health {
  health: HealthService;
  startup: StartupTracker;
  /** Adds the checks of a component or module (a second check of one name replaces the first). */
  register(checks: HealthCheck[]): void;
}

/** The probes of every listener, the start-up tracker and the event-loop watchdog. They answer from the start. */
export function createHealthModule(deps: HealthModuleDeps): Module<Health> {
  const health = new HealthService(deps.cacheMs, deps.now);
  const startup = new StartupTracker(deps.startupSteps);
  const watchdog = new EventLoopWatchdog();
  const routeDeps = { health, startup, lifecycle: deps.lifecycle, watchdog, now: deps.now };
  return {
    name: 'health',
    service: { health, startup, register: (checks) => checks.forEach((check) => health.register(check)) },
    openRoutes: {
      main: [healthRoutes(routeDeps)],
      playground: [playgroundHealthRoutes(routeDeps)],
      builder: [builderHealthRoutes(routeDeps)],
    },
    start: () => {
      watchdog.start();
      return Promise.resolve();
    },
    stop: () => watchdog.stop(),
  };
}
