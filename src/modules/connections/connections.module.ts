import type { HealthCheck } from '../../ports/health.js';
import type { Module } from '../../ports/module.js';
import {
  type ConnectionOperations,
  type ConnectionsModuleDeps,
  createConnectionOperations,
} from './connections.operations.js';
import { connectionRoutes } from './connections.routes.js';
import { SHARED, accountsOf, eraseConnectionsOf, listReachable } from './connections.store.js';

/** Per-connection health: informational, it never fails readiness. */
function connectionsHealthCheck(deps: ConnectionsModuleDeps, service: ConnectionOperations): HealthCheck {
  return {
    name: 'mcp_connections',
    critical: false,
    informational: true,
    timeoutMs: 1_000,
    async run() {
      const shared = await listReachable(deps.db, undefined);
      const connections = Object.fromEntries(
        shared.map((row) => [row.slug, deps.breakerFor(row.id).isOpen ? 'unavailable' : 'available']),
      );
      // Informational: an upstream that is down is its users' concern, never this service's readiness.
      return { status: 'healthy', details: { connections, open_clients: service.pool.size } };
    },
  };
}

/**
 * Connected MCP servers: registering them, each user's account at them, and their tools offered beside the
 * service's own (through the MCP core's policy point).
 */
export type { ConnectionOperations, ConnectionsModuleDeps };

export function createConnectionsModule(deps: ConnectionsModuleDeps): Module<ConnectionOperations> {
  const service = createConnectionOperations(deps);
  const routes = [connectionRoutes(service)];
  return {
    name: 'connections',
    service,
    shares: [service.service],
    routes: { main: routes, playground: routes, builder: routes },
    healthChecks: [connectionsHealthCheck(deps, service)],
    erasure: [
      {
        // Before anything else goes: each token is revoked at its upstream where it offers revocation.
        step: 'upstream_tokens',
        run: async ({ user }) => {
          let revoked = 0;
          for (const row of await listReachable(deps.db, user.id)) {
            if (await service.oauth.disconnect(row, user.id).catch(() => false)) revoked += 1;
            await service.pool.close(row.id, user.id);
          }
          return revoked;
        },
      },
      {
        step: 'authorization_tuples',
        run: async ({ user }) => {
          let removed = 0;
          for (const row of await listReachable(deps.db, user.id)) {
            if (row.owner_id === user.id) removed += await service.service.removeTuples(row.id);
          }
          return removed;
        },
      },
      {
        step: 'mcp_connections',
        run: async ({ user, db }) => {
          const erased = await eraseConnectionsOf(db, user.id);
          await service.service.changed();
          return erased;
        },
      },
    ],
    exports: [
      {
        section: 'mcp_connections',
        collect: async (userId) => {
          const rows = await listReachable(deps.db, userId);
          const accounts = new Map((await accountsOf(deps.db, userId)).map((a) => [a.connection_id, a.connected_at]));
          return rows
            .filter((row) => row.owner_id === userId || accounts.has(row.id))
            .map((row) => ({
              connection_id: row.id,
              name: row.name,
              scope: row.owner_id === SHARED ? ('shared' as const) : ('personal' as const),
              transport: row.transport,
              url: row.url,
              auth_kind: row.auth_kind,
              created_at: row.owner_id === userId ? row.created_at : null,
              account_connected_at: accounts.get(row.id) ?? null,
            }));
        },
      },
    ],
    stop: () => service.pool.stop(),
  };
}
