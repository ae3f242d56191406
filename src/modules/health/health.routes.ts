import { z } from 'zod';
import { Reply, type RouteDefinition, type RouteGroup, defineRoute } from '../../http/route.js';
import type { Lifecycle } from '../../lifecycle.js';
import { SERVICE_NAME, SERVICE_VERSION } from '../../version.js';
import type { HealthReport, HealthService } from './health.service.js';
import type { EventLoopWatchdog } from './liveness.js';
import type { StartupTracker } from './startup.js';

export interface HealthDeps {
  health: HealthService;
  startup: StartupTracker;
  lifecycle: Lifecycle;
  watchdog: EventLoopWatchdog;
  now: () => Date;
}

const status = z.enum(['healthy', 'degraded', 'unhealthy', 'unknown']);
const readiness = z.enum(['ready', 'not_ready']);
const stepState = z.enum(['pending', 'in_progress', 'completed', 'loaded', 'failed']);

const HealthResponse = z
  .object({
    status: status.exclude(['unknown']),
    service: z.string(),
    version: z.string(),
    timestamp: z.iso.datetime(),
    checks: z.record(z.string(), status).describe('Status of each component by name'),
    warnings: z.array(z.string()).optional().describe('Why the service is degraded'),
    errors: z.array(z.string()).optional().describe('Why the service is unhealthy'),
  })
  .meta({ id: 'HealthResponse' });

const ReadyResponse = z
  .object({
    ready: z.boolean(),
    service: z.string(),
    timestamp: z.iso.datetime(),
    dependencies: z.record(z.string(), readiness),
    blocking: z.array(z.string()).optional().describe('Critical dependencies (or phases) keeping the service unready'),
  })
  .meta({ id: 'ReadyResponse' });

const LiveResponse = z
  .object({
    alive: z.boolean(),
    service: z.string(),
    timestamp: z.iso.datetime(),
    uptime_seconds: z.number().int().optional(),
    reason: z.string().optional(),
  })
  .meta({ id: 'LiveResponse' });

const StartupResponse = z
  .object({
    started: z.boolean(),
    service: z.string(),
    timestamp: z.iso.datetime(),
    startup_duration_seconds: z.number().optional(),
    initialization: z.record(z.string(), stepState),
    progress: z.string().optional().describe('Share of start-up steps done, e.g. "60%"'),
  })
  .meta({ id: 'StartupResponse' });

const DependencyReport = z
  .object({
    status,
    critical: z.boolean(),
    response_time_ms: z.number(),
    last_check: z.iso.datetime(),
    error: z.string().optional(),
  })
  .catchall(z.unknown())
  .meta({ id: 'DependencyReport' });

const DependenciesResponse = z
  .object({
    timestamp: z.iso.datetime(),
    overall_status: status.exclude(['unknown']),
    dependencies: z.record(z.string(), DependencyReport),
  })
  .meta({ id: 'DependenciesResponse' });

const ListenerHealthResponse = z
  .object({
    status: status.exclude(['unknown']),
    version: z.string(),
    dependencies: z.record(z.string(), status),
  })
  .meta({ id: 'ListenerHealthResponse' });

const TAGS = ['Health'];

/** A component is usable while healthy or degraded (slow, rate-limited): only unhealthy blocks traffic. */
function isUsable(componentStatus: string): boolean {
  return componentStatus === 'healthy' || componentStatus === 'degraded';
}

/** `/health`, `/health/ready`, `/health/live`, `/health/startup`, `/health/dependencies` on the main listener. */
export function healthRoutes(deps: HealthDeps): RouteGroup {
  const { health, startup, lifecycle, watchdog, now } = deps;
  const routes: RouteDefinition[] = [
    defineRoute({
      method: 'get',
      path: '/',
      operationId: 'getHealth',
      summary: 'Overall health',
      description: '200 when every component is healthy; 503 when the service is degraded or unhealthy.',
      access: 'public',
      responses: {
        200: { description: 'All components healthy', schema: HealthResponse },
        503: { description: 'Degraded or unhealthy', schema: HealthResponse },
      },
      handler: async () => {
        const report = await health.report();
        const body = {
          status: report.status,
          service: SERVICE_NAME,
          version: SERVICE_VERSION,
          timestamp: now().toISOString(),
          checks: Object.fromEntries(Object.entries(report.components).map(([name, c]) => [name, c.status])),
          ...(report.warnings.length > 0 && { warnings: report.warnings }),
          ...(report.errors.length > 0 && { errors: report.errors }),
        };
        return new Reply(report.status === 'healthy' ? 200 : 503, body);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/ready',
      operationId: 'getReadiness',
      summary: 'Readiness: may this instance take traffic?',
      access: 'public',
      responses: {
        200: { description: 'Every critical dependency is available', schema: ReadyResponse },
        503: { description: 'Not ready', schema: ReadyResponse },
      },
      handler: async () => {
        const report = await health.report();
        const dependencies = Object.fromEntries(
          Object.entries(report.components).map(([name, c]) => [name, isUsable(c.status) ? 'ready' : 'not_ready']),
        );
        const blocking = Object.entries(report.components)
          .filter(([, c]) => c.critical && !isUsable(c.status))
          .map(([name]) => name);
        if (!startup.started) blocking.push('startup');
        if (lifecycle.phase === 'stopping' || lifecycle.phase === 'stopped') blocking.push('shutdown');
        const ready = blocking.length === 0;
        const body = {
          ready,
          service: SERVICE_NAME,
          timestamp: now().toISOString(),
          dependencies,
          ...(!ready && { blocking }),
        };
        return new Reply(ready ? 200 : 503, body);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/live',
      operationId: 'getLiveness',
      summary: 'Liveness: is the process able to make progress?',
      access: 'public',
      responses: {
        200: { description: 'Alive', schema: LiveResponse },
        503: { description: 'The event loop has been blocked; restart the process', schema: LiveResponse },
      },
      handler: () => {
        const reason = watchdog.problem();
        const base = { service: SERVICE_NAME, timestamp: now().toISOString() };
        if (reason) return new Reply(503, { alive: false, ...base, reason });
        const uptime = Math.floor((now().getTime() - lifecycle.startedAt.getTime()) / 1000);
        return { alive: true, ...base, uptime_seconds: uptime };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/startup',
      operationId: 'getStartup',
      summary: 'Start-up progress',
      access: 'public',
      responses: {
        200: { description: 'Start-up complete', schema: StartupResponse },
        503: { description: 'Still starting', schema: StartupResponse },
      },
      handler: () => {
        const snap = startup.snapshot();
        const base = { started: snap.started, service: SERVICE_NAME, timestamp: now().toISOString() };
        if (snap.started) {
          return {
            ...base,
            startup_duration_seconds: snap.durationSeconds,
            initialization: snap.initialization,
          };
        }
        return new Reply(503, { ...base, initialization: snap.initialization, progress: `${snap.progressPercent}%` });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/dependencies',
      operationId: 'getDependencies',
      summary: 'Every dependency with its status, timing and details',
      description: 'Always 200: the body says which dependencies are unhealthy.',
      access: 'public',
      responses: { 200: { description: 'Dependency reports', schema: DependenciesResponse } },
      handler: async () => {
        const report = await health.report();
        const dependencies = Object.fromEntries(
          Object.entries({ ...report.components, ...report.informational }).map(([name, { details, ...rest }]) => [
            name,
            { ...rest, ...details },
          ]),
        );
        return { timestamp: now().toISOString(), overall_status: report.status, dependencies };
      },
    }),
  ];
  return { prefix: '/health', area: 'envelope', tags: TAGS, routes };
}

/** The health of one listener's own dependencies (playground, builder): 503 with `unhealthy` when one is down. */
function listenerHealth(report: HealthReport, names: string[], started: boolean) {
  const dependencies: Record<string, string> = {};
  for (const name of names) {
    // Components not built yet in this deployment report `unknown`, which does not fail the probe.
    dependencies[name] = report.components[name]?.status ?? 'unknown';
  }
  const failing = Object.entries(dependencies).some(([name, s]) => {
    const critical = report.components[name]?.critical ?? false;
    return critical && s === 'unhealthy';
  });
  const status =
    !started || failing ? 'unhealthy' : Object.values(dependencies).includes('degraded') ? 'degraded' : 'healthy';
  return new Reply(status === 'unhealthy' ? 503 : 200, { status, version: SERVICE_VERSION, dependencies });
}

export function playgroundHealthRoutes(deps: HealthDeps): RouteGroup {
  return {
    prefix: '/api/playground',
    area: 'envelope',
    tags: TAGS,
    routes: [
      defineRoute({
        method: 'get',
        path: '/health',
        operationId: 'getPlaygroundHealth',
        summary: 'Playground health',
        tags: ['Playground'],
        access: 'public',
        responses: {
          200: { description: 'Healthy or degraded', schema: ListenerHealthResponse },
          503: { description: 'A dependency is unhealthy', schema: ListenerHealthResponse },
        },
        handler: async () =>
          listenerHealth(await deps.health.report(), ['session_store', 'mcp_server'], deps.startup.started),
      }),
    ],
  };
}

export function builderHealthRoutes(deps: HealthDeps): RouteGroup {
  return {
    prefix: '/api/builder',
    area: 'envelope',
    tags: TAGS,
    routes: [
      defineRoute({
        method: 'get',
        path: '/health',
        operationId: 'getBuilderHealth',
        summary: 'Workflow builder health',
        tags: ['Builder'],
        access: 'public',
        responses: {
          200: { description: 'Healthy or degraded', schema: ListenerHealthResponse },
          503: { description: 'A dependency is unhealthy', schema: ListenerHealthResponse },
        },
        handler: async () =>
          listenerHealth(await deps.health.report(), ['database', 'mcp_server'], deps.startup.started),
      }),
    ],
  };
}
