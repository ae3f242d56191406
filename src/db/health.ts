import type { HealthCheck } from '../ports/health.js';
import type { Db } from './create-db.js';

/** The relational database: a round trip, plus where it is and how many connections are in use. */
export function databaseHealthCheck(db: Db): HealthCheck {
  return {
    name: 'database',
    critical: true,
    timeoutMs: 1_000,
    details: { dialect: db.dialect, ...db.describe() },
    run: async () => {
      await db.ping();
      return { status: 'healthy', details: { active_connections: db.activeConnections() } };
    },
  };
}
