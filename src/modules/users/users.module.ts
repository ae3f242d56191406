import type { Kysely } from 'kysely';
import type { AuthzService } from '../../adapters/authz/port.js';
import type { Database } from '../../db/database.js';
import type { Module } from '../../ports/module.js';
import { UsersService } from './users.service.js';

export interface UsersModuleDeps {
  db: Kysely<Database>;
  /** Where role assignments and group memberships are written as tuples. */
  authz: AuthzService;
  now: () => Date;
}

/** Local users and groups: the embedded identity provider, and the owner of the users tables. */
export function createUsersModule(deps: UsersModuleDeps): Module<UsersService> {
  return { name: 'users', service: new UsersService(deps.db, deps.now, deps.authz) };
}
