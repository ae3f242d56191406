import type { SystemSettingsTable } from '../modules/system/system.tables.js';

/** The whole schema as Kysely sees it: one entry per table, each typed by the module that owns it. */
export interface Database {
  system_settings: SystemSettingsTable;
}
