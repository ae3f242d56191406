import type { Config } from '../config.js';
import type { CallerResolver } from '../http/authenticate.js';
import type { RouteGroup } from '../http/route.js';
import type { Lifecycle } from '../lifecycle.js';
import type { Logger } from '../logger.js';
import type { McpCore } from '../mcp/core.js';
import type { ChatTurnService } from '../modules/agent/index.js';
import type { WorkflowRuns } from '../modules/builder/index.js';
import type { PlaygroundService } from '../modules/playground/index.js';
import type { ListenerName } from '../http/listener.js';
import { builderRunRoutes } from '../../transports/builder.js';
import { PlaygroundSocketEndpoint, playgroundChatRoutes } from '../../transports/playground.js';
import { restRoutes } from '../../transports/rest.js';
import { LegacySseConnections } from '../../transports/sse.js';
import { StreamableHttpSessions } from '../../transports/streamable-http.js';
import { WebSocketEndpoint } from '../../transports/websocket.js';
import type { Broadcast } from '../adapters/broadcast/port.js';
import type { EphemeralStore } from '../adapters/ephemeral/port.js';
import { McpSessionDirectory } from '../mcp/session-directory.js';

export interface WireDeps {
  config: Config;
  core: McpCore;
  chat: ChatTurnService;
  playground: PlaygroundService;
  runs: WorkflowRuns;
  lifecycle: Lifecycle;
  logger: Logger;
  resolveCaller: CallerResolver;
  originAllowed: (origin: string | undefined) => boolean;
  /** The `WWW-Authenticate` challenge of every 401 (also on a refused WebSocket upgrade). */
  wwwAuthenticate: string;
  /** The MCP endpoint's protected-resource metadata (RFC 9728), named in every challenge. */
  resourceMetadataUrl: string;
  /** Where the instances share streamable-HTTP sessions; without it (no Redis) sessions stay with one instance. */
  shared?: { store: EphemeralStore; broadcast: Broadcast };
}

/**
 * The network wires: the MCP core over REST, streamable HTTP, legacy SSE and WebSocket (main listener), and the
 * playground's chat over JSON, server-sent events and WebSocket (playground listener), and the builder's run
 * streams (builder listener).
 */
export function buildMcpWires(deps: WireDeps) {
  const { config, core, lifecycle, logger } = deps;
  const streamable = new StreamableHttpSessions({
    core,
    lifecycle,
    logger,
    idleMs: config.mcp.sessionIdleSeconds * 1000,
    maxSessions: config.mcp.maxSessions,
    stateless: config.mcp.sessionMode === 'stateless',
    transport: config.mcp.httpTransport,
    resourceMetadataUrl: deps.resourceMetadataUrl,
    directory: deps.shared && new McpSessionDirectory({ ...deps.shared, ttlMs: config.mcp.sessionIdleSeconds * 1000 }),
  });
  const sse = new LegacySseConnections({ core, lifecycle });
  const websocket = new WebSocketEndpoint({
    core,
    lifecycle,
    logger,
    // An MCP wire: tokens bound to the MCP endpoint are accepted here too.
    resolveCaller: (headers) => deps.resolveCaller(headers, 'mcp'),
    originAllowed: deps.originAllowed,
    maxPayloadBytes: config.bodyLimitBytes,
    wwwAuthenticate: deps.wwwAuthenticate,
  });
  const playgroundWire = {
    playground: deps.playground,
    policy: core.policy,
    metrics: core.metrics,
    lifecycle,
    logger,
    resolveCaller: deps.resolveCaller,
    originAllowed: deps.originAllowed,
    maxMessageChars: config.playground.maxMessageChars,
    authTimeoutMs: config.playground.wsAuthTimeoutMs,
    heartbeatMs: config.playground.wsHeartbeatMs,
  };
  const playgroundSocket = new PlaygroundSocketEndpoint(playgroundWire);
  const routes: Partial<Record<ListenerName, RouteGroup[]>> = {
    main: [...restRoutes({ core, chat: deps.chat, lifecycle }), streamable.routes(), ...sse.routes()],
    playground: [playgroundChatRoutes(playgroundWire)],
    builder: [builderRunRoutes({ runs: deps.runs, policy: core.policy, metrics: core.metrics, lifecycle })],
  };
  return { streamable, sse, websocket, playgroundSocket, routes };
}

export type McpWires = ReturnType<typeof buildMcpWires>;
