import type { Redis } from 'ioredis';
import type { CounterStore } from './adapters/counters/port.js';
import type { EphemeralStore } from './adapters/ephemeral/port.js';
import type { SessionStore } from './adapters/session-store/port.js';
import type { AuthzService } from './adapters/authz/port.js';
import type { LlmProvider } from './adapters/llm/port.js';
import { connectWithin } from './adapters/redis/redis.js';
import type { Config } from './config.js';
import type { Db } from './db/create-db.js';
import { buildInfrastructure } from './compose/infrastructure.js';
import { migrateToLatest } from './db/migrate.js';
import { createAuthenticate, createCallerResolver } from './http/authenticate.js';
import { docsRoutes } from './http/docs.js';
import { HttpListener, type ListenerName, createListenerApp } from './http/listener.js';
import { type Metrics, createMetrics } from './http/metrics.js';
import { metricsRoutes } from './http/metrics.routes.js';
import { buildOpenApiDocument } from './http/openapi.js';
import type { RouteGroup } from './http/route.js';
import { Lifecycle } from './lifecycle.js';
import { type Logger, createLogger } from './logger.js';
import { McpCore } from './mcp/core.js';
import { createMcpMetrics } from './mcp/metrics.js';
import { McpPolicy, toolObject } from './mcp/policy.js';
import { ToolExecutor } from './mcp/tools.js';
import { type Agent, createAgentModule } from './modules/agent/index.js';
import { type ConversationsService, createConversationsModule } from './modules/conversations/index.js';
import { type Installation, createSystemModule } from './modules/system/index.js';
import { type AuditService, createAuditModule } from './modules/audit/index.js';
import {
  type DataSubjectService,
  type ErasureService,
  type ErasureStep,
  createDataSubjectModule,
} from './modules/data-subject/index.js';
import { TOOLS } from '../tools/index.js';
import { restRoutes } from '../transports/rest.js';
import { LegacySseConnections } from '../transports/sse.js';
import { StreamableHttpSessions } from '../transports/streamable-http.js';
import { WebSocketEndpoint } from '../transports/websocket.js';
import { hostPolicy, hostValidation } from './http/host-validation.js';
import { createAgent } from '../workflows/agent.js';
import { createCheckpointer } from '../workflows/checkpointer.js';
import { type ApiKeysService, createApiKeysModule } from './modules/api-keys/index.js';
import { type AuthService, KeyEncryption, type KeyRing, createAuthModule } from './modules/auth/index.js';
import { type HealthService, createHealthModule } from './modules/health/index.js';
import { SYSTEM } from './ports/subjects.js';
import { type ServicePrincipalsService, createServicePrincipalsModule } from './modules/service-principals/index.js';
import { type UsersService, createUsersModule } from './modules/users/index.js';
import { scimRoutes } from './modules/scim/scim.routes.js';
import { ScimService } from './modules/scim/scim.service.js';
import { createVersionModule } from './modules/version/index.js';
import type { Module } from './ports/module.js';

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

export interface App {
  readonly config: Config;
  readonly logger: Logger;
  readonly db: Db;
  readonly redis: Redis | undefined;
  readonly health: HealthService;
  readonly lifecycle: Lifecycle;
  readonly metrics: Metrics;
  readonly users: UsersService;
  readonly authz: AuthzService;
  readonly auth: AuthService;
  readonly apiKeys: ApiKeysService;
  readonly principals: ServicePrincipalsService;
  readonly llm: LlmProvider;
  readonly conversations: ConversationsService;
  readonly mcp: McpCore;
  /** The connection-based MCP transports (their open sessions and connections). */
  readonly transports: { streamable: StreamableHttpSessions; sse: LegacySseConnections; websocket: WebSocketEndpoint };
  readonly audit: AuditService;
  readonly scim: ScimService;
  readonly dataSubject: DataSubjectService;
  readonly erasure: ErasureService;
  /** Available once started. */
  readonly agent: Agent;
  readonly keys: KeyRing;
  readonly stores: { sessions: SessionStore; counters: CounterStore; ephemeral: EphemeralStore };
  /** Known after start(): the installation this database belongs to. */
  readonly installation: Installation | undefined;
  /**
   * Binds every listener, then migrates and initialises; resolves once the service takes traffic. With
   * `listen: false` (the stdio command) nothing is bound.
   */
  start(options?: { listen?: boolean }): Promise<void>;
  /** Stops accepting, drains in-flight requests and streams, closes connections. Idempotent. */
  close(): Promise<void>;
  /** Base URL of a bound listener (`http://127.0.0.1:8000`). */
  url(listener: ListenerName): string;
  /** Every route each listener serves through the registry (the OpenAPI document is built from these). */
  routeGroups(listener: ListenerName): RouteGroup[];
}

/** Start-up steps in the order they run; the names are what `/health/startup` reports. */
const STARTUP_STEPS: Record<string, string> = {
  database: 'database_migrations',
  session_store: 'session_store_connection',
  authz_service: 'authz_model',
  identity_provider: 'identity_provider_config',
  llm_provider: 'llm_connection',
};

/** A module's routes on a listener (they answer once start-up has finished). */
const routesOf = (module: Module<unknown>, listener: ListenerName = 'main'): RouteGroup[] =>
  module.routes?.[listener] ?? [];
/** A module's routes that answer from the start, on a listener. */
const openRoutesOf = (module: Module<unknown>, listener: ListenerName = 'main'): RouteGroup[] =>
  module.openRoutes?.[listener] ?? [];

/** The composition root: builds every adapter from the config and wires the modules to them. */
export function buildApp(config: Config, overrides: AppOverrides = {}): App {
  const logger = overrides.logger ?? createLogger({ level: config.logLevel });
  const now = overrides.now ?? (() => new Date());
  const lifecycle = new Lifecycle();
  const metrics = createMetrics();
  const announce = overrides.announce ?? ((message: string) => process.stderr.write(`${message}\n`));
  const { db, redis, stores, authz, llm, ...infrastructure } = buildInfrastructure(config, { logger, now });
  const systemModule = createSystemModule({ db: db.kysely, now });
  const system = systemModule.service;
  const usersModule = createUsersModule({ db: db.kysely, authz, now });
  const users = usersModule.service;
  const auditModule = createAuditModule({ db: db.kysely, logger, authz, now });
  const audit = auditModule.service;
  const authModule = createAuthModule({
    config,
    db: db.kysely,
    users,
    stores,
    keyEncryption: KeyEncryption.fromConfig(config, logger),
    audit,
    logger,
    now,
    announce,
    // Principals are built on the tokens this module issues; `/auth/me` asks them about one at request time.
    describePrincipal: (id: string) => principals.describe(id),
  });
  const { auth, tokens, keys } = authModule.service;
  const registerTokenFamily = auth.registerTokenFamily.bind(auth);
  const apiKeysModule = createApiKeysModule({ db, users, tokens, audit, now, registerTokenFamily });
  const apiKeys = apiKeysModule.service;
  const principalsModule = createServicePrincipalsModule({
    db: db.kysely,
    authz,
    users,
    tokens,
    throttle: auth.throttle,
    audit,
    now,
    registerTokenFamily,
  });
  const principals = principalsModule.service;
  const hosts = hostPolicy(config.host, config.publicUrl);
  const resolveCaller = createCallerResolver({
    bearer: (token) => auth.authenticateBearer(token),
    sessionCookie: (credential) => auth.authenticateSession(credential),
    apiKey: (key) => apiKeys.authenticate(key),
  });
  const authenticate = createAuthenticate(resolveCaller);

  const healthModule = createHealthModule({
    cacheMs: config.healthCacheMs,
    startupSteps: Object.values(STARTUP_STEPS),
    lifecycle,
    now,
  });
  const { health, startup } = healthModule.service;
  healthModule.service.register(infrastructure.healthChecks);

  const conversationsModule = createConversationsModule({ db: db.kysely, authz, now });
  const conversations = conversationsModule.service;
  const search = infrastructure.search(conversations);
  const mcpMetrics = createMcpMetrics(metrics.registry);
  const policy = new McpPolicy({ authz, counters: stores.counters, limits: config.mcp, now });
  const agentModule = createAgentModule({
    admission: policy,
    build: async () => {
      const checkpointer = await createCheckpointer(db);
      const agent = createAgent({ llm, conversations, tools: executor, checkpointer, logger });
      return { agent, deleteThread: (threadId) => checkpointer.deleteThread(threadId) };
    },
  });
  const { chat } = agentModule.service;
  const executor = new ToolExecutor(
    { services: { logger, authz, conversations, search, chat }, policy, metrics: mcpMetrics },
    TOOLS,
  );
  const mcp = new McpCore({
    server: {
      executor,
      policy,
      conversations,
      describe: () => ({ llm_provider: llm.provider, model: llm.model, search_provider: search.provider }),
    },
    policy,
    metrics: mcpMetrics,
    logger,
  });

  const scim = new ScimService({
    db,
    authz,
    revokeUser: (id) => auth.revokeUser(id),
    restoreDelegations: (id) => principals.restoreDelegationsTo(id),
    audit,
    logger,
    publicUrl: config.publicUrl,
    bodyLimitBytes: config.bodyLimitBytes,
    now,
  });
  const dataSubjectModule = createDataSubjectModule({
    db: db.kysely,
    users,
    auth,
    conversations,
    audit,
    logger,
    now,
    erasure: {
      apiKeys,
      principals,
      authz,
      policy,
      // Start-up builds the agent and its checkpointer; erasure is served only after start-up.
      deleteThread: (threadId) => agentModule.service.deleteThread(threadId),
    },
    ...(overrides.erasureSteps && { adjustErasureSteps: overrides.erasureSteps }),
  });
  const { dataSubject, erasure } = dataSubjectModule.service;

  const streamable = new StreamableHttpSessions({
    core: mcp,
    lifecycle,
    logger,
    idleMs: config.mcp.sessionIdleSeconds * 1000,
    maxSessions: config.mcp.maxSessions,
  });
  const sse = new LegacySseConnections({ core: mcp, lifecycle });
  // Every 401, over HTTP or on a refused WebSocket upgrade, points at the protected-resource metadata.
  const challenge = `Bearer realm="agent-service", resource_metadata="${config.publicUrl}/.well-known/oauth-protected-resource/mcp"`;
  const websocket = new WebSocketEndpoint({
    core: mcp,
    lifecycle,
    logger,
    resolveCaller,
    originAllowed: (origin) => hosts?.originAllowed(origin) ?? true,
    maxPayloadBytes: config.bodyLimitBytes,
    wwwAuthenticate: challenge,
  });

  /**
   * Every module, in the order they start (and, reversed, stop). The system and health modules are not listed:
   * health answers from the first moment, and the installation is recorded as soon as the schema is migrated.
   */
  const modules: Module<unknown>[] = [
    usersModule,
    auditModule,
    authModule,
    apiKeysModule,
    principalsModule,
    conversationsModule,
    agentModule,
    dataSubjectModule,
    createVersionModule(),
  ];

  const listeners = new Map<ListenerName, HttpListener>();
  const groups: Record<ListenerName, { alwaysOn: RouteGroup[]; gated: RouteGroup[] }> = {
    main: {
      alwaysOn: [...openRoutesOf(healthModule), metricsRoutes(metrics)],
      gated: [
        ...modules.flatMap((module) => routesOf(module)),
        // The MCP wires.
        ...restRoutes({ core: mcp, chat, lifecycle }),
        streamable.routes(),
        ...sse.routes(),
        scimRoutes(scim),
      ],
    },
    playground: {
      alwaysOn: openRoutesOf(healthModule, 'playground'),
      gated: modules.flatMap((module) => routesOf(module, 'playground')),
    },
    builder: {
      alwaysOn: openRoutesOf(healthModule, 'builder'),
      gated: modules.flatMap((module) => routesOf(module, 'builder')),
    },
  };

  let openApi: unknown;
  const openApiDocument = () =>
    (openApi ??= buildOpenApiDocument(
      (['main', 'playground', 'builder'] as const).map((name) => ({
        ...(name !== 'main' && listeners.get(name)?.listening && { serverUrl: listeners.get(name)!.url }),
        alwaysOn: groups[name].alwaysOn,
        groups: groups[name].gated,
      })),
    ));

  for (const name of ['main', 'playground', 'builder'] as const) {
    const app = createListenerApp({
      name,
      logger,
      metrics,
      lifecycle,
      bodyLimitBytes: config.bodyLimitBytes,
      trustProxy: config.trustProxy,
      authenticate,
      ...(hosts && { guard: hostValidation(hosts) }),
      wwwAuthenticate: challenge,
      alwaysOn: groups[name].alwaysOn,
      groups: groups[name].gated,
      extra: name === 'main' ? [docsRoutes(openApiDocument)] : [],
    });
    listeners.set(name, new HttpListener(name, app));
  }
  listeners.get('main')!.server.on('upgrade', (req, socket, head) => {
    if (!websocket.handleUpgrade(req, socket, head)) socket.destroy();
  });

  let starting: Promise<void> | undefined;
  let closing: Promise<void> | undefined;

  async function initialise(): Promise<void> {
    startup.set(STARTUP_STEPS.database!, 'in_progress');
    const { applied, current } = await migrateToLatest(db);
    logger.info({ applied, current }, applied.length > 0 ? 'database migrated' : 'database schema up to date');
    await systemModule.start?.();
    startup.set(STARTUP_STEPS.database!, 'completed');

    // Holders of the admin role administer the installation (and may provision through SCIM).
    await authz.write([{ user: 'role:admin#assignee', relation: 'admin', object: SYSTEM }]);
    // Every user may use each tool until an operator decides otherwise: granted once, so a revocation sticks.
    for (const tool of TOOLS) {
      await system.once(`granted_tool:${tool.name}`, () =>
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
      health.checks().map(async (check) => {
        const step = STARTUP_STEPS[check.name];
        if (!step || check.name === 'database') return;
        if (check.embedded) {
          startup.set(step, 'loaded');
          return;
        }
        startup.set(step, 'in_progress');
        const report = await health.check(check.name);
        const ok = report?.status === 'healthy' || report?.status === 'degraded';
        if (!ok) logger.warn({ component: check.name, error: report?.error }, 'dependency unavailable at start-up');
        startup.set(step, ok ? 'completed' : 'failed');
      }),
    );
  }

  return {
    config,
    logger,
    db,
    redis,
    health,
    lifecycle,
    metrics,
    users,
    authz,
    auth,
    apiKeys,
    principals,
    llm,
    conversations,
    mcp,
    transports: { streamable, sse, websocket },
    audit,
    scim,
    dataSubject,
    erasure,
    get agent() {
      return agentModule.service.agent();
    },
    keys,
    stores,
    get installation() {
      return system.installation();
    },
    async start(options = {}) {
      await healthModule.start?.(); // the watchdog: liveness is answered from the first moment
      const ports: Record<ListenerName, number> = config.ports;
      for (const [name, listener] of options.listen === false ? [] : listeners) {
        await listener.listen(config.host, ports[name]);
        logger.info({ listener: name, url: listener.url }, 'listening');
      }
      openApi = undefined; // the document names the bound listener URLs
      starting = initialise();
      await starting;
      startup.finish();
      lifecycle.markRunning();
      logger.info({ instance: system.installation()?.instanceId }, 'service started');
    },
    close() {
      closing ??= (async () => {
        lifecycle.beginStop();
        logger.info('shutting down');
        await Promise.all([...listeners.values()].map((l) => l.close(config.shutdownTimeoutMs)));
        // Start-up still running (stopped during start): let it finish with the database before closing it.
        await starting?.catch(() => undefined);
        await healthModule.stop?.();
        for (const module of [...modules].reverse()) await module.stop?.();
        await mcp.close();
        if (redis) await redis.quit().catch(() => redis.disconnect());
        await db.destroy();
        lifecycle.markStopped();
        logger.info('stopped');
      })();
      return closing;
    },
    routeGroups(name) {
      return [...groups[name].alwaysOn, ...groups[name].gated];
    },
    url(name) {
      const listener = listeners.get(name);
      if (!listener) throw new Error(`unknown listener ${name}`);
      return listener.url;
    },
  };
}
