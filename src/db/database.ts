import type { ApiKeysTable } from '../modules/api-keys/api-keys.tables.js';
import type { AuditLogTable } from '../modules/audit/audit.tables.js';
import type { RefreshTokensTable, SigningKeysTable } from '../modules/auth/auth.tables.js';
import type { RelationTuplesTable } from '../modules/authz/authz.tables.js';
import type { ConversationsTable, MessagesTable } from '../modules/conversations/conversations.tables.js';
import type { ServicePrincipalsTable } from '../modules/service-principals/service-principals.tables.js';
import type { SystemSettingsTable } from '../modules/system/system.tables.js';
import type { GroupMembersTable, GroupsTable, UserIdentitiesTable, UsersTable } from '../modules/users/users.tables.js';

/** The whole schema as Kysely sees it: one entry per table, each typed by the module that owns it. */
export interface Database {
  system_settings: SystemSettingsTable;
  users: UsersTable;
  groups: GroupsTable;
  group_members: GroupMembersTable;
  user_identities: UserIdentitiesTable;
  signing_keys: SigningKeysTable;
  refresh_tokens: RefreshTokensTable;
  relation_tuples: RelationTuplesTable;
  api_keys: ApiKeysTable;
  service_principals: ServicePrincipalsTable;
  conversations: ConversationsTable;
  messages: MessagesTable;
  audit_log: AuditLogTable;
}
