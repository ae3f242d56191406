import { connectWithin } from './adapters/redis/redis.js';
import { type Infrastructure, buildInfrastructure } from './compose/infrastructure.js';
import { LISTENERS, buildListeners } from './compose/listeners.js';
import { type Base, STARTUP_STEPS, type Services, buildModules } from './compose/modules.js';
import { type McpWires, buildMcpWires } from './compose/wires.js';
import type { Config } from './config.js';
import { migrateToLatest } from './db/migrate.js';
import { createCallerResolver } from './http/authenticate.js';
import { hostPolicy } from './http/host-validation.js';
import type { ListenerName } from './http/listener.js';
import { createMetrics } from './http/metrics.js';
import type { RouteGroup } from './http/route.js';
import { Lifecycle } from './lifecycle.js';
import { type Logger, createLogger } from './logger.js';
import { toolObject } from './mcp/policy.js';
import type { ErasureStep } from './modules/data-subject/index.js';
import { SYSTEM } from './ports/subjects.js';
import { TOOLS } from '../tools/index.js';

export type { Infrastructure } from './compose/infrastructure.js';
export type { Services } from './compose/modules.js';

/** What tests and embedders may replace; everything else comes from the config. */
export interface AppOverrides {
  logger?: Logger;
  now?: () => Date;
  /**
   * Shows a one-time secret to the operator (the generated bootstrap password). Defaults to stderr, outside the
   * structured logs, which must never carry secrets.
   */
  announce?: (message: string) => void;
  /** Adjusts the account erasure's ordered steps (tests make one fail, to see the erasure stop and resume). */
  erasureSteps?: (steps: ErasureStep[]) => ErasureStep[];
}

export interface App extends Base {
  readonly config: Config;
  /** The adapters the configuration picked (database, Redis, stores, authorization, LLM). */
  readonly infrastructure: Infrastructure;
  /** Each module's service, by module. */
  readonly services: Services;
  /** The connection-based MCP wires (their open sessions and connections). */
  readonly wires: Omit<McpWires, 'routes'>;
  /**
   * Binds every listener, then migrates and initialises; resolves once the service takes traffic. With
   * `listen: false` (the stdio command) nothing is bound.
   */
  start(options?: { listen?: boolean }): Promise<void>;
  /**
   * Stops accepting, drains in-flight requests and streams, closes connections. Idempotent. `idleLingerMs` keeps
   * idle keep-alive connections that long, to answer a request a client already sent on one (a signal-driven
   * shutdown behind a load balancer); by default they are closed at once.
   */
  close(options?: { idleLingerMs?: number }): Promise<void>;
  /** Base URL of a bound listener (`http://127.0.0.1:8000`). */
  url(listener: ListenerName): string;
  /** Every route each listener serves through the registry (the OpenAPI document is built from these). */
  routeGroups(listener: ListenerName): RouteGroup[];
}

/**
 * The composition root: the adapters the config picks, the modules built on them, the MCP wires, and the
 * listeners that serve what each module contributes. Start-up and shutdown run the modules in order.
 */
export function buildApp(config: Config, overrides: AppOverrides = {}): App {
  const base: Base = {
    logger: overrides.logger ?? createLogger({ level: config.logLevel }),
    now: overrides.now ?? (() => new Date()),
    lifecycle: new Lifecycle(),
    metrics: createMetrics(),
    announce: overrides.announce ?? ((message: string) => process.stderr.write(`${message}\n`)),
    listenerUrl: (name) => {
      const listener = http.listeners.get(name);
      if (!listener) throw new Error(`unknown listener ${name}`);
      return listener.url;
    },
  };
  const { logger, lifecycle } = base;
  const infrastructure = buildInfrastructure(config, base);
  const { db, redis, authz } = infrastructure;
  const { system, health, started: modules, services } = buildModules(config, infrastructure, base, overrides);

  // What one instance's caches forget (a session ended, a key rotated, a conversation grown), every instance's do.
  const stopSharing = modules
    .flatMap((module) => module.shares ?? [])
    .map((service) => service.shareForgetting(infrastructure.broadcast));
  const resolveCaller = createCallerResolver({
    bearer: (token) => services.auth.authenticateBearer(token),
    sessionCookie: (credential) => services.auth.auth.authenticateSession(credential),
    apiKey: (key) => services.apiKeys.authenticate(key),
  });
  const hosts = hostPolicy(config.host, config.publicUrl);
  // Every 401, over HTTP or on a refused WebSocket upgrade, points at the protected-resource metadata.
  const resourceMetadataUrl = `${config.publicUrl}/.well-known/oauth-protected-resource/mcp`;
  const wwwAuthenticate = `Bearer realm="agent-service", resource_metadata="${resourceMetadataUrl}"`;
  const { routes: wireRoutes, ...wires } = buildMcpWires({
    config,
    core: services.mcp.core,
    chat: services.agent.chat,
    playground: services.playground,
    runs: services.builder.runs,
    lifecycle,
    logger,
    resolveCaller,
    originAllowed: (origin) => hosts?.originAllowed(origin) ?? true,
    wwwAuthenticate,
    resourceMetadataUrl,
    shared: redis ? { store: infrastructure.stores.ephemeral, broadcast: infrastructure.broadcast } : undefined,
  });
  const http = buildListeners({
    config,
    base,
    resolveCaller,
    hosts,
    wwwAuthenticate,
    modules: [health, ...modules],
    wires: wireRoutes,
  });
  http.listeners.get('main')!.server.on('upgrade', (req, socket, head) => {
    if (!wires.websocket.handleUpgrade(req, socket, head)) socket.destroy();
  });
  http.listeners.get('playground')!.server.on('upgrade', (req, socket, head) => {
    if (!wires.playgroundSocket.handleUpgrade(req, socket, head)) socket.destroy();
  });

  const { health: probes, startup } = health.service;
  let starting: Promise<void> | undefined;
  let closing: Promise<void> | undefined;

  async function initialise(): Promise<void> {
    startup.set(STARTUP_STEPS.database!, 'in_progress');
    const { applied, current } = await migrateToLatest(db);
    logger.info({ applied, current }, applied.length > 0 ? 'database migrated' : 'database schema up to date');
    await system.start?.();
    startup.set(STARTUP_STEPS.database!, 'completed');

    // Holders of the admin role administer the installation (and may provision through SCIM).
    await authz.write([{ user: 'role:admin#assignee', relation: 'admin', object: SYSTEM }]);
    // Every user may use each tool until an operator decides otherwise: granted once, so a revocation sticks.
    for (const tool of TOOLS) {
      await services.system.once(`granted_tool:${tool.name}`, () =>
        authz.write([{ user: 'user:*', relation: 'executor', object: toolObject(tool.name) }]),
      );
    }
    for (const module of modules) await module.start?.();

    if (redis) {
      startup.set(STARTUP_STEPS.session_store!, 'in_progress');
      await connectWithin(redis, 2_000).catch((err: unknown) =>
        logger.warn({ err }, 'redis not reachable at start-up'),
      );
    }
    // Contact every other dependency once, so start-up reports what it found; none of them stops start-up.
    await Promise.all(
      probes.checks().map(async (check) => {
        const step = STARTUP_STEPS[check.name];
        if (!step || check.name === 'database') return;
        if (check.embedded) {
          startup.set(step, 'loaded');
          return;
        }
        startup.set(step, 'in_progress');
        const report = await probes.check(check.name);
        const ok = report?.status === 'healthy' || report?.status === 'degraded';
        if (!ok) logger.warn({ component: check.name, error: report?.error }, 'dependency unavailable at start-up');
        startup.set(step, ok ? 'completed' : 'failed');
      }),
    );
  }

  return {
    ...base,
    config,
    infrastructure,
    services,
    wires,
    async start(options = {}) {
      await health.start?.(); // the watchdog: liveness is answered from the first moment
      const ports: Record<ListenerName, number> = config.ports;
      for (const name of options.listen === false ? [] : LISTENERS) {
        const listener = http.listeners.get(name)!;
        await listener.listen(config.host, ports[name]);
        logger.info({ listener: name, url: listener.url }, 'listening');
      }
      http.refreshDocument();
      starting = initialise();
      await starting;
      startup.finish();
      lifecycle.markRunning();
      logger.info({ instance: services.system.installation()?.instanceId }, 'service started');
    },
    close(options = {}) {
      closing ??= (async () => {
        // Turns in flight may finish within the listeners' drain; the lifecycle stops what is left just before it.
        lifecycle.beginStop({ drainMs: config.shutdownTimeoutMs });
        logger.info('shutting down');
        await Promise.all(
          [...http.listeners.values()].map((l) => l.close(config.shutdownTimeoutMs, options.idleLingerMs)),
        );
        // Start-up still running (stopped during start): let it finish with the database before closing it.
        await starting?.catch(() => undefined);
        await health.stop?.();
        for (const module of [...modules].reverse()) await module.stop?.();
        await infrastructure.telemetry.shutdown().catch((err: unknown) => logger.warn({ err }, 'span export failed'));
        for (const stop of stopSharing) stop();
        await infrastructure.broadcast.close();
        if (redis) await redis.quit().catch(() => redis.disconnect());
        await db.destroy();
        lifecycle.markStopped();
        logger.info('stopped');
      })();
      return closing;
    },
    routeGroups: http.routeGroups,
    url(name) {
      const listener = http.listeners.get(name);
      if (!listener) throw new Error(`unknown listener ${name}`);
      return listener.url;
    },
  };
}
