import { join } from 'node:path';
import { hkdfSync } from 'node:crypto';
import type { Config } from '../config.js';
import type { Lifecycle } from '../lifecycle.js';
import type { Logger } from '../logger.js';
import { RUN_VIEW_URI, builtViews } from '../mcp/apps.js';
import { createMcpModule } from '../mcp/mcp.module.js';
import { McpPolicy } from '../mcp/policy.js';
import { createAgentModule } from '../modules/agent/index.js';
import { createApiKeysModule } from '../modules/api-keys/index.js';
import { createAuditModule } from '../modules/audit/index.js';
import { createBuilderModule, type WorkflowTools } from '../modules/builder/index.js';
import { KeyEncryption, createAuthModule } from '../modules/auth/index.js';
import { type ConnectionOperations, createConnectionsModule } from '../modules/connections/index.js';
import { needsOf } from '../ports/connected-tools.js';
import { createConversationsModule } from '../modules/conversations/index.js';
import { type ErasureStep, createDataSubjectModule } from '../modules/data-subject/index.js';
import { createHealthModule } from '../modules/health/index.js';
import { createOAuthModule } from '../modules/oauth/index.js';
import { createPlaygroundModule } from '../modules/playground/index.js';
import { createScimModule } from '../modules/scim/index.js';
import { createServicePrincipalsModule } from '../modules/service-principals/index.js';
import { createSystemModule } from '../modules/system/index.js';
import { createUsersModule } from '../modules/users/index.js';
import { createVersionModule } from '../modules/version/index.js';
import { type Caller, userIdOf } from '../ports/caller.js';
import { sessionCookieOf } from '../http/authenticate.js';
import { clientInfo } from '../http/request-context.js';
import type { Module } from '../ports/module.js';
import { userObject } from '../ports/subjects.js';
import type { Metrics } from '../http/metrics.js';
import { builtWebRoot } from '../http/static-site.js';
import type { WebUiSettings } from '../http/web-ui-settings.js';
import type { ListenerName } from '../http/listener.js';
import { SERVICE_VERSION } from '../version.js';
import { TOOLS } from '../../tools/index.js';
import { type Checkpointer, createCheckpointer } from '../../workflows/checkpointer.js';
import type { ToolExecutor } from '../mcp/tools.js';
import type { McpCore } from '../mcp/core.js';
import type { Infrastructure } from './infrastructure.js';

/** Start-up steps in the order they run; the names are what `/health/startup` reports. */
export const STARTUP_STEPS: Record<string, string> = {
  database: 'database_migrations',
  session_store: 'session_store_connection',
  authz_service: 'authz_model',
  identity_provider: 'identity_provider_config',
  llm_provider: 'llm_connection',
};

/** What every part of the service shares: the clock, the logs, the metrics and the run state. */
export interface Base {
  logger: Logger;
  now: () => Date;
  lifecycle: Lifecycle;
  metrics: Metrics;
  /** Shows a one-time secret to the operator, outside the structured logs. */
  announce: (message: string) => void;
  /** Where a listener is reached (its bound address), once the listeners exist. */
  listenerUrl: (name: ListenerName) => string;
}

/**
 * How long the rows a chat turn reads before its model is asked (its playground session's, its conversation's, the
 * caller's connections) are held for the next turns, where every instance hears of their changes: through Redis,
 * or on SQLite, which one instance serves. Should a broadcast be lost, this is how long a change made elsewhere
 * may go unseen here. On PostgreSQL without Redis, instances sharing the database cannot tell each other, and every
 * turn reads the rows.
 */
const HELD_ROWS_MS = 30_000;

export interface ModuleOptions {
  /** Adjusts the account erasure's ordered steps (tests make one fail). */
  erasureSteps?: (steps: ErasureStep[]) => ErasureStep[];
}

/**
 * Builds every module on the adapters the configuration picked, each with the ports it declares. The order here is
 * the order of dependence; `started` lists the modules in the order they start (reversed, stop).
 */
export function buildModules(config: Config, infrastructure: Infrastructure, base: Base, options: ModuleOptions = {}) {
  const { db, authz, llm, stores } = infrastructure;
  const { logger, now, lifecycle } = base;
  const heldRowsMs = config.redis !== undefined || db.dialect === 'sqlite' ? HELD_ROWS_MS : 0;

  const system = createSystemModule({ db: db.kysely, now });
  const health = createHealthModule({
    cacheMs: config.healthCacheMs,
    startupSteps: Object.values(STARTUP_STEPS),
    lifecycle,
    now,
  });
  health.service.register(infrastructure.healthChecks);

  const users = createUsersModule({ db: db.kysely, authz, now });
  const audit = createAuditModule({ db: db.kysely, logger, authz, now });
  const keyEncryption = KeyEncryption.fromConfig(config, logger);
  const auth = createAuthModule({
    config,
    db: db.kysely,
    users: users.service,
    stores,
    keyEncryption,
    audit: audit.service,
    logger,
    now,
    announce: base.announce,
    // Principals are built on the tokens this module issues; `/auth/me` asks them about one at request time.
    describePrincipal: (id: string) => principals.service.describe(id),
  });
  const credentials = {
    users: users.service,
    tokens: auth.service.tokens,
    audit: audit.service,
    now,
    registerTokenFamily: auth.service.auth.registerTokenFamily.bind(auth.service.auth),
  };
  const apiKeys = createApiKeysModule({
    db,
    ...credentials,
    logger,
    onUserRevoked: (listener) => auth.service.auth.onUserRevoked(listener),
  });
  const oauth = createOAuthModule({
    db: db.kysely,
    publicUrl: config.publicUrl,
    stores,
    users: users.service,
    audit: audit.service,
    now,
    logger,
    limits: {
      codeTtlSeconds: 120,
      requestTtlSeconds: 600,
      refreshTokenTtlSeconds: config.auth.refreshTokenTtlSeconds,
      maxClients: 10_000,
    },
    clientMetadataPrivateHosts: config.auth.clientMetadataPrivateHosts,
    issueAccessToken: (user, sid, binding) =>
      auth.service.tokens.issue(
        { sub: user.id, username: user.username, roles: user.roles, kind: 'user', sid },
        binding,
      ),
    registerTokenFamily: credentials.registerTokenFamily,
    sessionOfAccessToken: async (token) => (await auth.service.tokens.verify(token).catch(() => undefined))?.sid,
    signedInUser: async (req) => {
      const credential = sessionCookieOf(req);
      const caller = credential && (await auth.service.auth.authenticateSession(credential).catch(() => undefined));
      const id = caller && userIdOf(caller);
      return id === undefined ? undefined : users.service.get(id);
    },
    checkPassword: (login, password, req) => auth.service.auth.checkPassword(login, password, clientInfo(req)),
    ...(auth.service.sso && {
      ssoLoginUrl: (returnTo: string) => `/auth/sso/login?redirect_uri=${encodeURIComponent(returnTo)}`,
    }),
  });
  const principals = createServicePrincipalsModule({
    db: db.kysely,
    authz,
    throttle: auth.service.auth.throttle,
    ...credentials,
  });
  const scim = createScimModule({
    db,
    authz,
    revokeUser: (id) => auth.service.auth.revokeUser(id),
    restoreDelegations: (id) => principals.service.restoreDelegationsTo(id),
    audit: audit.service,
    logger,
    publicUrl: config.publicUrl,
    bodyLimitBytes: config.bodyLimitBytes,
    now,
  });
  const conversations = createConversationsModule({
    db: db.kysely,
    authz,
    now,
    logger,
    heldMs: heldRowsMs,
  });
  const search = infrastructure.search(conversations.service);

  const connections = createConnectionsModule({
    db: db.kysely,
    authz,
    audit: audit.service,
    // Sealed with the key-encryption key, bound to where each secret is kept.
    sealer: {
      seal: (context, text) => keyEncryption.seal(context, text),
      open: (context, stored) => keyEncryption.open(context, stored),
    },
    logger,
    now,
    registry: base.metrics.registry,
    config: config.connections,
    publicUrl: config.publicUrl,
    breakerFor: (id) => infrastructure.breakerFor(id),
    heldMs: heldRowsMs,
    approvals: stores.ephemeral,
    // The configured address, else the playground listener's own (known once it listens).
    connectPage: () => config.playgroundPublicUrl ?? `${base.listenerUrl('playground')}/`,
  });

  // The MCP policy admits chat turns; the MCP tools are what the agent may call (bound once both exist).
  const policy = new McpPolicy({ authz, counters: stores.counters, limits: config.mcp, now });
  const model = { provider: llm.provider, model: llm.model };
  const { tracer } = infrastructure.telemetry;
  const agent = createAgentModule({
    admission: policy,
    tracer,
    model,
    build: async () => {
      // The graph brings LangGraph with it: loaded when the agent is first used.
      const { createAgent } = await import('../../workflows/agent.js');
      const checkpointer = await createCheckpointer(db);
      const tools = mcp.service.tools;
      const graph = createAgent({ llm, conversations: conversations.service, tools, checkpointer, logger, tracer });
      return {
        agent: graph,
        deleteThread: (threadId) => {
          graph.forget(threadId);
          return checkpointer.deleteThread(threadId);
        },
      };
    },
    threadsOf: (userId) => conversations.service.idsOwnedBy(userObject(userId)),
    shutdown: lifecycle,
    conversations: conversations.service,
    logger,
  });
  const mcp = createMcpModule({
    policy,
    tools: TOOLS,
    connected: connections.service.catalog,
    services: {
      logger,
      authz,
      conversations: conversations.service,
      search,
      chat: agent.service.chat,
      // The builder is built on the MCP tools, so its runs are reached once it exists.
      workflows: {
        start: (...args) => builder.service.runs.start(...args),
        resume: (...args) => builder.service.runs.resume(...args),
        complete: (...args) => builder.service.runs.complete(...args),
        watch: (...args) => builder.service.runs.watch(...args),
        cancelOwn: (...args) => builder.service.runs.cancelOwn(...args),
      },
    },
    describe: () => ({ llm_provider: llm.provider, model: llm.model, search_provider: search.provider }),
    registry: base.metrics.registry,
    logger,
    db: db.kysely,
    broadcast: infrastructure.broadcast,
    now,
    taskTtlMs: config.mcp.taskTtlSeconds * 1000,
    // A key of its own for sealing MCP questions, derived from the key-encryption key every instance shares.
    requestStateKey: () => new Uint8Array(hkdfSync('sha256', keyEncryption.key(), '', 'mcp request state', 32)),
    views: builtViews({ [RUN_VIEW_URI]: join(builtWebRoot('run-view'), 'index.html') }),
    // Reached once the builder exists; servers are only built after start-up.
    published: {
      list: () => builder.service.published.list(),
      runnableBy: (caller) => builder.service.published.runnableBy(caller),
      run: (...args) => builder.service.published.run(...args),
      resume: (...args) => builder.service.published.resume(...args),
      cancel: (...args) => builder.service.published.cancel(...args),
      subscribe: (listener) => builder.service.published.subscribe(listener),
    },
  });

  /** What the web UIs are told before sign-in; single sign-on runs on the main listener and comes back to them. */
  const webUiSettings = (origin: string): WebUiSettings => ({
    version: SERVICE_VERSION,
    auth_mode: config.auth.mode,
    sso: config.auth.oidc
      ? {
          enabled: true,
          login_url: `${config.publicUrl}/auth/sso/login?redirect_uri=${encodeURIComponent(`${origin}/`)}`,
        }
      : { enabled: false },
    llm_provider: llm.provider,
    model: llm.model,
  });

  const playground = createPlaygroundModule({
    db: db.kysely,
    chat: agent.service.chat,
    turns: { locks: stores.counters, broadcast: infrastructure.broadcast },
    telemetry: infrastructure.telemetry,
    logger,
    now,
    maxMessageChars: config.playground.maxMessageChars,
    heldMs: heldRowsMs,
    webRoot: builtWebRoot('playground'),
    // The chat shows the MCP App views of the tools that have one, as any host of them would.
    views: mcp.service.core,
    settings: (origin) => ({ ...webUiSettings(origin), max_message_chars: config.playground.maxMessageChars }),
  });

  // Workflow runs keep their checkpoints beside the agent's, in the service's database.
  let runCheckpointer: Promise<Checkpointer> | undefined;
  const checkpointer = () => (runCheckpointer ??= createCheckpointer(db));
  const builder = createBuilderModule({
    db: db.kysely,
    authz,
    llm,
    tools: workflowTools(mcp.service.tools, connections.service),
    resources: (caller) => mcpResources(mcp.service.core, caller),
    checkpointer,
    deleteThread: async (threadId) => (await checkpointer()).deleteThread(threadId),
    logger,
    now,
    webRoot: builtWebRoot('builder'),
    settings: webUiSettings,
    broadcast: infrastructure.broadcast,
  });

  const contributors: Module<unknown>[] = [
    users,
    audit,
    auth,
    apiKeys,
    oauth,
    principals,
    scim,
    conversations,
    connections,
    agent,
    mcp,
    playground,
    builder,
  ];
  const dataSubject = createDataSubjectModule({
    db: db.kysely,
    users: users.service,
    audit: audit.service,
    logger,
    now,
    parts: {
      erasure: contributors.flatMap((module) => module.erasure ?? []),
      exports: contributors.flatMap((module) => module.exports ?? []),
    },
    ...(options.erasureSteps && { adjustErasureSteps: options.erasureSteps }),
  });

  // The checks the modules brought, beside the infrastructure's.
  health.service.register(contributors.flatMap((module) => module.healthChecks ?? []));

  const services = {
    system: system.service,
    health: health.service,
    users: users.service,
    audit: audit.service,
    auth: auth.service,
    apiKeys: apiKeys.service,
    oauth: oauth.service,
    principals: principals.service,
    scim: scim.service,
    conversations: conversations.service,
    connections: connections.service,
    agent: agent.service,
    mcp: mcp.service,
    playground: playground.service,
    builder: builder.service,
    dataSubject: dataSubject.service,
  };
  /**
   * The modules in the order they start. System and health are not listed: health answers from the first moment,
   * and the installation is recorded as soon as the schema is migrated.
   */
  const started: Module<unknown>[] = [...contributors, dataSubject, createVersionModule()];
  return { system, health, started, services };
}

/** The MCP tools as workflows use them: the ones the agent may call, through the policy point, as the caller. */
function workflowTools(executor: ToolExecutor, connections: ConnectionOperations): WorkflowTools {
  return {
    async catalog(caller: Caller) {
      const permitted = new Set((await executor.specsFor(caller)).map((t) => t.name));
      // A connected tool the caller may use is known; one of a server they cannot use is unknown to them.
      const known = new Set([...executor.tools.map((t) => t.name), ...permitted]);
      return { known, permitted };
    },
    list: (caller) => executor.specsFor(caller),
    async approve(caller, approvalId) {
      await connections.decide(caller, approvalId, true);
    },
    async call(caller, name, args, signal) {
      const result = await executor.execute(name, args, caller, { signal });
      const needs = needsOf(result);
      const text = result.content
        .map((part) => (part.type === 'text' ? part.text : ''))
        .filter(Boolean)
        .join('\n');
      return {
        text,
        isError: result.isError === true,
        ...(needs?.kind === 'approval' && { approvalId: needs.approval_id }),
      };
    },
  };
}

/** The MCP resources the caller can read, as `resources/list` answers them through the MCP core. */
async function mcpResources(core: McpCore, caller: Caller) {
  const listed = (await core.request(caller, 'resources/list')) as {
    resources: { uri: string; name: string; description?: string; mimeType?: string }[];
  };
  return listed.resources.map((r) => ({
    uri: r.uri,
    name: r.name,
    ...(r.description !== undefined && { description: r.description }),
    ...(r.mimeType !== undefined && { mime_type: r.mimeType }),
  }));
}

/** Each module's service, by module. */
export type Services = ReturnType<typeof buildModules>['services'];
