/**
 * The users module's public API: local users, their groups and linked identities, the embedded identity provider.
 * The module owns the `users`, `groups`, `group_members` and `user_identities` tables: other modules change them
 * only through what is exported here. The executor functions run on the database or on a transaction the caller
 * opened (`db.transaction().execute((trx) => …)`), so a caller can change these tables and its own in one go.
 */
export { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, hashPassword } from './passwords.js';
export { createUsersModule } from './users.module.js';
export {
  ADMIN_ROLE,
  DEFAULT_ROLE,
  type NewUser,
  UsersService,
  groupNameSchema,
  memberTuple,
  newUserSchema,
  passwordSchema,
  roleSchema,
  roleTuple,
  usernameSchema,
} from './users.service.js';
export {
  type Executor,
  type NewAccount,
  type User,
  addMembers,
  allGroupIdsOf,
  deleteGroup,
  existingUserIds,
  findGroupByName,
  findGroupsByIds,
  findUser,
  findUserIdByUsername,
  findUsersByIds,
  insertAccount,
  insertGroup,
  lockRow,
  removeMembers,
  setUserActive,
  updateAccount,
  updateGroup,
  userKey,
} from './users.store.js';
export type { GroupMembersTable, GroupRow, GroupsTable, UserIdentitiesTable, UsersTable } from './users.tables.js';
