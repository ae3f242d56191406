import type { Migration } from 'kysely';
import * as m0001 from './0001_system_settings.js';
import * as m0002 from './0002_identity.js';
import * as m0003 from './0003_authz_and_credentials.js';
import * as m0004 from './0004_conversations.js';
import * as m0005 from './0005_audit_log.js';
import * as m0006 from './0006_scim.js';
import * as m0007 from './0007_data_subject.js';
import * as m0009 from './0009_conversation_search.js';
import * as m0010 from './0010_playground.js';
import * as m0011 from './0011_builder.js';
import * as m0012 from './0012_scim_search.js';
import * as m0013 from './0013_oauth.js';
import * as m0014 from './0014_mcp_tasks.js';
import * as m0015 from './0015_mcp_connections.js';
import * as m0016 from './0016_workflow_run_events.js';

/**
 * Every migration, in order. Listed explicitly (not read from the folder) so that the compiled service and the
 * tests see the same set. Migrations must run unchanged on SQLite and PostgreSQL: text ids, ISO 8601 text
 * timestamps written by the application, integer 0/1 flags.
 */
export const MIGRATIONS: Record<string, Migration> = {
  '0001_system_settings': m0001,
  '0002_identity': m0002,
  '0003_authz_and_credentials': m0003,
  '0004_conversations': m0004,
  '0005_audit_log': m0005,
  '0006_scim': m0006,
  '0007_data_subject': m0007,
  '0009_conversation_search': m0009,
  '0010_playground': m0010,
  '0011_builder': m0011,
  '0012_scim_search': m0012,
  '0013_oauth': m0013,
  '0014_mcp_tasks': m0014,
  '0015_mcp_connections': m0015,
  '0016_workflow_run_events': m0016,
};
