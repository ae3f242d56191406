import type { HealthCheck } from '../ports/health.js';
import type { Db } from './create-db.js';
import { pendingMigrations } from './migrate.js';

/**
 * The relational database: a round trip that also reads which migrations are applied, plus where it is and how many
 * connections are in use. A schema behind this build (a migration pending, say after `migrate --down` or a restore)
 * makes the database unhealthy, so the instance leaves the load balancer instead of failing its queries one by one.
 * A schema ahead of it (a newer instance migrated first, during a rolling deployment) is fine: migrations only add.
 */
export function databaseHealthCheck(db: Db): HealthCheck {
  return {
    name: 'database',
    critical: true,
    timeoutMs: 1_000,
    details: { dialect: db.dialect, ...db.describe() },
    run: async () => {
      const pending = await pendingMigrations(db);
      const details = { active_connections: db.activeConnections(), pending_migrations: pending.length };
      if (pending.length === 0) return { status: 'healthy', details };
      return {
        status: 'unhealthy',
        message: `${pending.length} migration(s) pending (${pending.join(', ')}): run agent-service migrate`,
        details,
      };
    },
  };
}
