import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Registry } from 'prom-client';
import type { Broadcast } from '../adapters/broadcast/port.js';
import type { Database } from '../db/database.js';
import type { Logger } from '../logger.js';
import type { Module } from '../ports/module.js';
import { type Caller, principalSubject } from '../ports/caller.js';
import type { ConnectedTools } from '../ports/connected-tools.js';
import type { HealthCheck } from '../ports/health.js';
import { userObject } from '../ports/subjects.js';
import type { PublishedWorkflows } from '../ports/published-workflows.js';
import type { AppViews } from './apps.js';
import { conversationUri } from './catalog.js';
import { McpCore } from './core.js';
import { createMcpMetrics } from './metrics.js';
import type { McpPolicy } from './policy.js';
import { McpTasks } from './tasks.js';
import { type ToolDefinition, ToolExecutor, type ToolServices } from './tools.js';

export interface McpModuleDeps {
  /** Who may call what, and how often (shared with the agent module, which admits chat turns through it). */
  policy: McpPolicy;
  /** The tools the server lists and the agent may call. */
  tools: ToolDefinition[];
  /** What the tools work with. */
  services: ToolServices;
  /** The tools of connected MCP servers, offered beside the service's own. */
  connected?: ConnectedTools;
  /** Facts for the server-information resource (provider names). */
  describe: () => Record<string, unknown>;
  registry: Registry;
  logger: Logger;
  /** Workflows published as tools of their own. */
  published?: PublishedWorkflows;
  /** The MCP App views the server ships. */
  views?: AppViews;
  /** Where tasks are kept, and how a cancel reaches the instance running a task. */
  db: Kysely<Database>;
  broadcast: Broadcast;
  now: () => Date;
  /** How long a task is kept after it starts. */
  taskTtlMs: number;
  /** The key that seals the state of a question asked over several round trips (the same on every instance). */
  requestStateKey: () => Uint8Array;
}

export interface McpParts {
  /** The MCP server every wire serves. */
  core: McpCore;
  /** Tool calls that outlive their request (2026-07-28 Tasks extension). */
  tasks: McpTasks;
  /** Runs tools under the policy: for MCP clients and for the agent. */
  tools: ToolExecutor;
}

/** Who the health check's ping comes from: nobody's data is read by a ping. */
const PROBE: Caller = {
  kind: 'service',
  subject: principalSubject('health-probe'),
  username: 'health-probe',
  roles: [],
  sessionId: undefined,
  via: 'bearer',
};

/** The MCP core answers: one `ping` round trip through the shared server, as the REST-style endpoints use it. */
function mcpServerHealthCheck(core: McpCore): HealthCheck {
  return {
    name: 'mcp_server',
    critical: true,
    timeoutMs: 1_000,
    embedded: true,
    async run() {
      await core.request(PROBE, 'ping');
      return { status: 'healthy' };
    },
  };
}

/** The MCP core: tools, resources and prompts behind the policy, for every wire and for the agent. */
export function createMcpModule(deps: McpModuleDeps): Module<McpParts> {
  const { policy, services, logger } = deps;
  const metrics = createMcpMetrics(deps.registry);
  const tools = new ToolExecutor(
    {
      services,
      policy,
      metrics,
      ...(deps.connected && { connected: deps.connected }),
      ...(deps.published && { published: deps.published }),
    },
    deps.tools,
  );
  const tasks = new McpTasks({
    db: deps.db,
    broadcast: deps.broadcast,
    ...(deps.published && { workflows: deps.published }),
    instanceId: randomUUID(),
    logger,
    now: deps.now,
    ttlMs: deps.taskTtlMs,
  });
  const core = new McpCore({
    server: {
      executor: tools,
      policy,
      conversations: services.conversations,
      describe: deps.describe,
      ...(deps.published && { published: deps.published }),
      ...(deps.views && { views: deps.views }),
    },
    policy,
    metrics,
    logger,
    tasks,
    requestStateKey: deps.requestStateKey,
    broadcast: deps.broadcast,
  });
  const stopRelaying = services.conversations.onUpdated((id) => core.resourceUpdated(conversationUri(id)));
  return {
    name: 'mcp',
    service: { core, tools, tasks },
    healthChecks: [mcpServerHealthCheck(core)],
    erasure: [
      { step: 'rate_limit_counters', run: ({ user }) => policy.forget(userObject(user.id)) },
      { step: 'mcp_tasks', run: ({ user, db }) => tasks.eraseOf(db, userObject(user.id)) },
    ],
    exports: [{ section: 'mcp_tasks', collect: (userId) => tasks.exportOf(userObject(userId)) }],
    stop: async () => {
      stopRelaying();
      await tasks.stop();
      await core.close();
    },
  };
}
