import type { ApiKeysTable } from '../modules/api-keys/api-keys.tables.js';
import type { AuditLogTable } from '../modules/audit/audit.tables.js';
import type { RefreshTokensTable, SigningKeysTable } from '../modules/auth/auth.tables.js';
import type { RelationTuplesTable } from '../adapters/authz/tables.js';
import type { ConversationsTable, MessagesTable } from '../modules/conversations/conversations.tables.js';
import type { ConsentsTable, UserPreferencesTable } from '../modules/data-subject/data-subject.tables.js';
import type {
  ScimGroupsTable,
  ScimSuspendedTuplesTable,
  ScimUserAddressesTable,
  ScimUserValuesTable,
  ScimUsersTable,
} from '../modules/scim/scim.tables.js';
import type {
  PlaygroundLogsTable,
  PlaygroundMessagesTable,
  PlaygroundSessionsTable,
  PlaygroundSpansTable,
} from '../modules/playground/playground.tables.js';
import type {
  WorkflowRunsTable,
  WorkflowRunEventsTable,
  WorkflowTagsTable,
  WorkflowVersionsTable,
  WorkflowsTable,
} from '../modules/builder/builder.tables.js';
import type {
  OAuthClientsTable,
  OAuthCodesTable,
  OAuthGrantsTable,
  OAuthRefreshTokensTable,
} from '../modules/oauth/oauth.tables.js';
import type { McpTasksTable } from '../mcp/tasks.tables.js';
import type {
  McpConnectionAccountsTable,
  McpConnectionSignInsTable,
  McpConnectionToolsTable,
  McpConnectionsTable,
} from '../modules/connections/connections.tables.js';
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
  consents: ConsentsTable;
  user_preferences: UserPreferencesTable;
  scim_users: ScimUsersTable;
  scim_user_values: ScimUserValuesTable;
  scim_user_addresses: ScimUserAddressesTable;
  scim_groups: ScimGroupsTable;
  scim_suspended_tuples: ScimSuspendedTuplesTable;
  playground_sessions: PlaygroundSessionsTable;
  playground_messages: PlaygroundMessagesTable;
  playground_spans: PlaygroundSpansTable;
  playground_logs: PlaygroundLogsTable;
  workflows: WorkflowsTable;
  workflow_tags: WorkflowTagsTable;
  workflow_versions: WorkflowVersionsTable;
  workflow_runs: WorkflowRunsTable;
  workflow_run_events: WorkflowRunEventsTable;
  oauth_clients: OAuthClientsTable;
  oauth_grants: OAuthGrantsTable;
  oauth_codes: OAuthCodesTable;
  oauth_refresh_tokens: OAuthRefreshTokensTable;
  mcp_tasks: McpTasksTable;
  mcp_connections: McpConnectionsTable;
  mcp_connection_accounts: McpConnectionAccountsTable;
  mcp_connection_tools: McpConnectionToolsTable;
  mcp_connection_sign_ins: McpConnectionSignInsTable;
}
