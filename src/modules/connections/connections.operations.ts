import type { Kysely } from 'kysely';
import type { Registry } from 'prom-client';
import type { AuthzService } from '../../adapters/authz/port.js';
import type { EphemeralStore } from '../../adapters/ephemeral/port.js';
import type { Config } from '../../config.js';
import type { Database } from '../../db/database.js';
import { BadRequestError, CommonErrorCode, ForbiddenError, NotFoundError, toAppError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { type AuditRecorder, actorOf } from '../../ports/audit.js';
import { type Caller, CallerErrorCode, userIdOf } from '../../ports/caller.js';
import { AccountRequiredError } from '../../ports/connected-tools.js';
import { ConnectedToolCatalog } from './connected-tools.js';
import { ConnectionsService } from './connections.service.js';
import { type Sealer, UpstreamOAuth } from './oauth-client.js';
import { createOutboundFetch } from './outbound.js';
import { type UpstreamBreaker, UpstreamPool } from './upstream.js';

/** Where the upstreams' authorization servers send the browser back, under the service's public URL. */
export const CONNECTIONS_PREFIX = '/api/v1/connections';
export const CALLBACK_PATH = '/oauth/callback';

export interface ConnectionsModuleDeps {
  db: Kysely<Database>;
  authz: AuthzService;
  audit: AuditRecorder;
  sealer: Sealer;
  logger: Logger;
  now: () => Date;
  registry: Registry;
  config: Config['connections'];
  /** The service's public URL: the OAuth callback is under it. */
  publicUrl: string;
  /** Requests for approval of calls, and approvals, shared by every instance. */
  approvals: EphemeralStore;
  /** Where a person connects an account: the playground's connections page. */
  connectPage: () => string;
  /** A breaker per connection (the infrastructure's circuit breaker). */
  breakerFor: (connectionId: string) => UpstreamBreaker;
  /** How long the connections a user can reach, once read, are held (ConnectionsService); absent: not at all. */
  heldMs?: number;
}

/** What the routes and the MCP core use of the connections module. */
export type ConnectionOperations = ReturnType<typeof createConnectionOperations>;

/** The connections module's operations: the service, the tool catalog, and what the routes do with them. */
export function createConnectionOperations(deps: ConnectionsModuleDeps) {
  const { config } = deps;
  const outbound = {
    privateHosts: config.privateHosts,
    timeoutMs: config.timeoutMs,
    maxResponseBytes: config.maxResponseBytes,
  };
  const fetch = createOutboundFetch(outbound);
  const late: { catalog?: ConnectedToolCatalog; service?: ConnectionsService } = {};
  const pool = new UpstreamPool({
    fetch,
    timeoutMs: config.timeoutMs,
    maxResponseBytes: config.maxResponseBytes,
    breakerFor: deps.breakerFor,
    logger: deps.logger,
    onToolsChanged: (target, tools) => late.catalog?.toolsChanged(target, tools),
  });
  const oauth = new UpstreamOAuth({
    db: deps.db,
    fetch,
    sealer: deps.sealer,
    logger: deps.logger,
    now: deps.now,
    redirectUri: `${deps.publicUrl}${CONNECTIONS_PREFIX}${CALLBACK_PATH}`,
    onRecorded: async () => late.service?.changed(),
  });
  const service = new ConnectionsService({
    db: deps.db,
    authz: deps.authz,
    sealer: deps.sealer,
    audit: deps.audit,
    now: deps.now,
    outbound,
    stdioCommands: config.stdioCommands,
    onChanged: async (id) => {
      oauth.forget(id);
      await pool.close(id);
    },
    unsent: (err) => deps.logger.warn({ err }, 'changed connection not broadcast'),
    ...(deps.heldMs !== undefined && { heldMs: deps.heldMs }),
  });
  late.service = service;
  const tools = new ConnectedToolCatalog({
    db: deps.db,
    authz: deps.authz,
    connections: service,
    pool,
    oauth,
    stdioCommands: config.stdioCommands,
    audit: deps.audit,
    logger: deps.logger,
    now: deps.now,
    registry: deps.registry,
    maxResultBytes: config.maxResponseBytes,
    approvals: deps.approvals,
    connectUrl: (id) => `${deps.connectPage()}#connections?connect=${id}`,
  });
  late.catalog = tools;

  return {
    service,
    catalog: tools,
    pool,
    oauth,

    /** Connects as the caller and lists the tools; a failure is an outcome, not an error. */
    async test(caller: Caller, id: string) {
      const row = await service.usableOne(caller, id);
      try {
        const probe = await tools.probe(caller, row);
        return {
          ok: true,
          ...(probe.info.protocolVersion && { protocol_version: probe.info.protocolVersion }),
          ...(probe.info.server && { server: probe.info.server }),
          tools: probe.tools,
          latency_ms: probe.latencyMs,
        };
      } catch (error) {
        if (error instanceof AccountRequiredError)
          return {
            ok: false,
            error: { code: error.code, message: error.message },
            connect_url: error.connectUrl,
          };
        const appError = toAppError(error);
        const message = appError.expose
          ? appError.message
          : `${row.name} could not be reached or did not answer as an MCP server`;
        deps.logger.info({ err: error, connection: id }, 'connection test failed');
        return { ok: false, error: { code: 'CONNECTION_FAILED', message } };
      }
    },

    /** The call an approval asks about, for the person who asked. */
    async approvalRequest(caller: Caller, approvalId: string) {
      const request = await tools.approvalRequest(caller, approvalId);
      if (!request) throw approvalNotFound();
      return { approval_id: approvalId, tool: request.tool, server: request.server, arguments: request.args };
    },

    /** Approves or declines a requested call; approved, the same call by the same person runs once. */
    async decide(caller: Caller, approvalId: string, approve: boolean) {
      const request = await tools.decide(caller, approvalId, approve);
      if (!request) throw approvalNotFound();
      return {
        approval_id: approvalId,
        tool: request.tool,
        server: request.server,
        arguments: request.args,
        approved: approve,
      };
    },

    async tools(caller: Caller, id: string) {
      const row = await service.usableOne(caller, id);
      return tools.states(caller, row);
    },

    async approve(caller: Caller, id: string, upstreamName: string) {
      const row = await service.editable(caller, id);
      await tools.approve(caller, row, upstreamName);
      const state = (await tools.states(caller, row)).find((t) => t.upstream_name === upstreamName);
      return state!;
    },

    async connect(caller: Caller, id: string, options: { returnTo: string | undefined; binding: string }) {
      const row = await service.usableOne(caller, id);
      const userId = userIdOf(caller);
      if (userId === undefined)
        throw new ForbiddenError('Accounts at connected servers belong to users', {
          code: CallerErrorCode.AccessDenied,
        });
      if (row.auth_kind !== 'oauth')
        throw new BadRequestError('This connection does not sign in with OAuth', { code: CommonErrorCode.BadRequest });
      return oauth.start(row, userId, options.returnTo, options.binding);
    },

    async disconnect(caller: Caller, id: string) {
      const row = await service.usableOne(caller, id);
      const userId = userIdOf(caller);
      if (userId === undefined) return;
      if (await oauth.disconnect(row, userId)) {
        await pool.close(id, userId);
        await deps.audit.record({
          type: 'connection.account_disconnected',
          actorId: actorOf(caller),
          details: { connection_id: id },
        });
      }
    },

    async finish(input: {
      state: string;
      code?: string;
      iss?: string;
      error?: string;
      matches: (binding: string) => boolean;
    }) {
      if (input.error || !input.code) {
        const abandoned = await oauth.abandon(input.state);
        const error = /^[a-z_]{1,64}$/.test(input.error ?? '') ? input.error! : 'access_denied';
        return {
          ok: false,
          error,
          connectionId: abandoned?.connectionId,
          returnTo:
            abandoned?.returnTo && withParams(abandoned.returnTo, { connection: abandoned.connectionId, error }),
        };
      }
      const done = await oauth.finish(input.state, input.code, input.iss, input.matches);
      await pool.close(done.connectionId, done.userId);
      await deps.audit.record({
        type: 'connection.account_connected',
        actorId: done.userId,
        details: { connection_id: done.connectionId },
      });
      const returnTo = done.returnTo
        ? withParams(done.returnTo, { connection: done.connectionId, connected: '1' })
        : undefined;
      return { ok: true, error: undefined, connectionId: done.connectionId, returnTo };
    },
  };
}

const approvalNotFound = () =>
  new NotFoundError('No such approval request of yours (it may have expired)', { code: CommonErrorCode.NotFound });

function withParams(url: string, params: Record<string, string>): string {
  const target = new URL(url);
  for (const [key, value] of Object.entries(params)) target.searchParams.set(key, value);
  return target.toString();
}
