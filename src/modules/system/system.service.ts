import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.js';
import { putSettingIfAbsent } from './system.store.js';

export interface Installation {
  /** Stable id of this installation (shared by every instance on the same database). */
  instanceId: string;
  /** When the database was first initialised. */
  createdAt: string;
}

/** Records, once per database, the installation's identity; later starts read what the first one wrote. */
export async function ensureInstallation(db: Kysely<Database>, now = new Date()): Promise<Installation> {
  return db.transaction().execute(async (trx) => ({
    instanceId: await putSettingIfAbsent(trx, 'instance_id', randomUUID(), now),
    createdAt: await putSettingIfAbsent(trx, 'created_at', now.toISOString(), now),
  }));
}
