import type { Kysely } from 'kysely';
import type { AuthzService } from '../../adapters/authz/port.js';
import type { Database } from '../../db/database.js';
import type { Module } from '../../ports/module.js';
import { UsersService } from './users.service.js';
import { userObject } from '../../ports/subjects.js';

export interface UsersModuleDeps {
  db: Kysely<Database>;
  /** Where role assignments and group memberships are written as tuples. */
  authz: AuthzService;
  now: () => Date;
}

/** Local users and groups: the embedded identity provider, and the owner of the users tables. */
export function createUsersModule(deps: UsersModuleDeps): Module<UsersService> {
  const service = new UsersService(deps.db, deps.now, deps.authz);
  return {
    name: 'users',
    service,
    erasure: [
      { step: 'authorization_tuples', run: ({ user }) => deps.authz.removeAllFor(userObject(user.id)) },
      // After every row that refers to the user.
      { step: 'profile', run: ({ user, db }) => service.erase(user.id, db) },
    ],
  };
}
