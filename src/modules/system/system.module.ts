import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.js';
import type { Module } from '../../ports/module.js';
import { type Installation, ensureInstallation } from './system.service.js';
import { getSetting, putSetting } from './system.store.js';

export interface SystemModuleDeps {
  db: Kysely<Database>;
  now: () => Date;
}

export interface System {
  /** This database's installation (shared by every instance on it); known once started. */
  installation(): Installation | undefined;
  /**
   * Runs `apply` the first time this installation sees `key`, and never again: a default an operator may undo
   * (a tool granted to everyone, say) stays undone.
   */
  once(key: string, apply: () => Promise<void>): Promise<void>;
}

/** The installation record and its settings. */
export function createSystemModule(deps: SystemModuleDeps): Module<System> {
  let installation: Installation | undefined;
  return {
    name: 'system',
    service: {
      installation: () => installation,
      async once(key, apply) {
        if (await getSetting(deps.db, key)) return;
        await apply();
        await putSetting(deps.db, key, 'applied', deps.now());
      },
    },
    async start() {
      installation = await ensureInstallation(deps.db, deps.now());
    },
  };
}
