/**
 * The SCIM module's public API: SCIM 2.0 provisioning of the local users and groups (RFC 7643/7644). The module
 * owns the `scim_*` tables; users, groups and memberships it changes through the users module.
 */
export { type ScimModuleDeps, createScimModule } from './scim.module.js';
export {
  type BulkResult,
  type ListQuery,
  type ListResponse,
  type Projection,
  type ResourceEndpoint,
  type ScimContext,
  ScimService,
  type ScimServiceDeps,
} from './scim.service.js';
export type {
  ScimGroupsTable,
  ScimSuspendedTuplesTable,
  ScimUserAddressesTable,
  ScimUserValuesTable,
  ScimUsersTable,
} from './scim.tables.js';
