import { type Kysely, type Transaction, type Updateable, sql } from 'kysely';
import { chunks } from '../../db/chunks.js';
import { prepared } from '../../db/prepared.js';
import type { Database } from '../../db/database.js';
import type { GroupRow, UserRow, UsersTable } from './users.tables.js';

/** The database, or the transaction a caller opened: every function here runs on either. */
export type Executor = Kysely<Database> | Transaction<Database>;

export const userKey = (value: string): string => value.trim().toLowerCase();

/** A local user as the rest of the service sees it (never the password hash). */
export interface User {
  id: string;
  username: string;
  email: string | null;
  emailVerified: boolean;
  name: string | null;
  roles: string[];
  active: boolean;
  hasPassword: boolean;
  createdAt: string;
  updatedAt: string;
  lastLogin: string | null;
}

export function rowToUser(row: UserRow): User {
  return {
    id: row.id,
    username: row.username,
    email: row.email,
    emailVerified: row.email_verified === 1,
    name: row.name,
    roles: JSON.parse(row.roles) as string[],
    active: row.active === 1,
    hasPassword: row.password_hash !== null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    lastLogin: row.last_login,
  };
}

/** What a new account is made of; the case-folded keys are derived here. */
export type NewAccount = Pick<User, 'id' | 'username' | 'email' | 'emailVerified' | 'name' | 'roles' | 'active'> & {
  passwordHash: string | null;
  at: string;
};

export function accountRow(account: NewAccount): UserRow {
  return {
    id: account.id,
    username: account.username,
    username_key: userKey(account.username),
    email: account.email,
    email_key: account.email ? userKey(account.email) : null,
    email_verified: account.emailVerified ? 1 : 0,
    name: account.name,
    roles: JSON.stringify(account.roles),
    active: account.active ? 1 : 0,
    password_hash: account.passwordHash,
    created_at: account.at,
    updated_at: account.at,
    last_login: null,
  };
}

/** Inserts the account; a taken username or email fails with the database's unique violation. */
export async function insertAccount(db: Executor, account: NewAccount): Promise<User> {
  const row = accountRow(account);
  await insertUser(db, row);
  return rowToUser(row);
}

/**
 * Replaces what an identity provider manages of an account: username, sign-in email (unverified once it names
 * another address), name and active; the password hash too unless undefined. Roles and sign-ins are kept.
 */
export async function updateAccount(
  db: Executor,
  current: User,
  changes: {
    username: string;
    email: string | null;
    name: string | null;
    active: boolean;
    passwordHash?: string | null | undefined;
    at: string;
  },
): Promise<void> {
  const emailKey = changes.email ? userKey(changes.email) : null;
  const previousKey = current.email ? userKey(current.email) : null;
  await updateUser(db, current.id, {
    username: changes.username,
    username_key: userKey(changes.username),
    email: changes.email,
    email_key: emailKey,
    ...(emailKey !== previousKey && { email_verified: 0 }),
    name: changes.name,
    active: changes.active ? 1 : 0,
    ...(changes.passwordHash !== undefined && { password_hash: changes.passwordHash }),
    updated_at: changes.at,
  });
}

/**
 * Locks a user's or group's row until the transaction ends, so read-modify-write cycles on it take turns. PostgreSQL
 * needs it; SQLite runs one transaction at a time on the service's single connection already.
 */
export async function lockRow(
  trx: Transaction<Database>,
  dialect: 'sqlite' | 'postgres',
  table: 'users' | 'groups',
  id: string,
): Promise<void> {
  if (dialect !== 'postgres') return;
  await sql`SELECT id FROM ${sql.table(table)} WHERE id = ${id} FOR UPDATE`.execute(trx);
}

export async function setUserActive(db: Executor, id: string, active: boolean, at: string): Promise<void> {
  await updateUser(db, id, { active: active ? 1 : 0, updated_at: at });
}

export async function findUser(db: Executor, id: string): Promise<User | undefined> {
  const row = await findUserById(db, id);
  return row && rowToUser(row);
}

/** Users by id, in no particular order (missing ids are skipped). */
export async function findUsersByIds(db: Executor, ids: string[]): Promise<User[]> {
  if (ids.length === 0) return [];
  return (await db.selectFrom('users').selectAll().where('id', 'in', ids).execute()).map(rowToUser);
}

export async function findUserIdByUsername(db: Executor, username: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('users')
    .select('id')
    .where('username_key', '=', userKey(username))
    .executeTakeFirst();
  return row?.id;
}

/** The ids among `ids` that are users; with `activeOnly`, active users. */
export async function existingUserIds(db: Executor, ids: string[], activeOnly = false): Promise<Set<string>> {
  const found = new Set<string>();
  for (const part of chunks(ids)) {
    let query = db.selectFrom('users').select('id').where('id', 'in', part);
    if (activeOnly) query = query.where('active', '=', 1);
    for (const row of await query.execute()) found.add(row.id);
  }
  return found;
}

const userById = prepared((db: Kysely<Database>, id: string) =>
  db.selectFrom('users').selectAll().where('id', '=', id),
);

export async function findUserById(db: Executor, id: string): Promise<UserRow | undefined> {
  return (await userById(db, id))[0];
}

/** A user by username or by email, case-insensitively. */
export function findUserByLogin(db: Executor, login: string): Promise<UserRow | undefined> {
  const key = userKey(login);
  return db
    .selectFrom('users')
    .selectAll()
    .where((eb) => eb.or([eb('username_key', '=', key), eb('email_key', '=', key)]))
    .orderBy('username_key')
    .executeTakeFirst();
}

export function findUserByUsername(db: Executor, username: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('username_key', '=', userKey(username)).executeTakeFirst();
}

export async function insertUser(db: Executor, row: UserRow): Promise<void> {
  await db.insertInto('users').values(row).execute();
}

export async function updateUser(db: Executor, id: string, changes: Updateable<UsersTable>): Promise<void> {
  await db.updateTable('users').set(changes).where('id', '=', id).execute();
}

export function listUsers(db: Executor, { offset, limit }: { offset: number; limit: number }): Promise<UserRow[]> {
  return db.selectFrom('users').selectAll().orderBy('username_key').offset(offset).limit(limit).execute();
}

export async function countUsers(db: Executor): Promise<number> {
  const { n } = await db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(n);
}

const groupNamesByMember = prepared((db: Kysely<Database>, userId: string) =>
  db
    .selectFrom('group_members')
    .innerJoin('groups', 'groups.id', 'group_members.group_id')
    .select('groups.name')
    .where('group_members.user_id', '=', userId)
    .orderBy('groups.name_key'),
);

export async function groupNamesOf(db: Executor, userId: string): Promise<string[]> {
  return (await groupNamesByMember(db, userId)).map((r) => r.name);
}

/** Every group the user is a member of. */
export async function allGroupIdsOf(db: Executor, userId: string): Promise<string[]> {
  const rows = await db.selectFrom('group_members').select('group_id').where('user_id', '=', userId).execute();
  return rows.map((r) => r.group_id);
}

/** The user's groups, except those SCIM manages (a row in scim_groups): claims at sign-in set only these. */
export async function groupIdsOf(db: Executor, userId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('group_members')
    .select('group_id')
    .where('user_id', '=', userId)
    .where('group_id', 'not in', db.selectFrom('scim_groups').select('group_id'))
    .execute();
  return rows.map((r) => r.group_id);
}

export async function isScimManaged(db: Executor, groupId: string): Promise<boolean> {
  return (
    (await db.selectFrom('scim_groups').select('group_id').where('group_id', '=', groupId).executeTakeFirst()) !==
    undefined
  );
}

export function findGroupByName(db: Executor, name: string): Promise<GroupRow | undefined> {
  return db.selectFrom('groups').selectAll().where('name_key', '=', name.toLowerCase()).executeTakeFirst();
}

/** Groups by id, in no particular order (missing ids are skipped). */
export async function findGroupsByIds(db: Executor, ids: string[]): Promise<GroupRow[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('groups').selectAll().where('id', 'in', ids).execute();
}

/**
 * Creates the group. A group of that name (regardless of case) already there is left as it is, or with
 * `ifAbsent: false` fails the insert with the database's unique violation.
 */
export async function insertGroup(
  db: Executor,
  group: { id: string; name: string; at: string },
  { ifAbsent = true } = {},
): Promise<void> {
  await db
    .insertInto('groups')
    .values({
      id: group.id,
      name: group.name,
      name_key: group.name.toLowerCase(),
      created_at: group.at,
      updated_at: group.at,
    })
    .$if(ifAbsent, (qb) => qb.onConflict((oc) => oc.column('name_key').doNothing()))
    .execute();
}

/** Renames the group (when `name` is given) and marks it changed at `at`. */
export async function updateGroup(db: Executor, id: string, changes: { name?: string; at: string }): Promise<void> {
  await db
    .updateTable('groups')
    .set({
      ...(changes.name !== undefined && { name: changes.name, name_key: changes.name.toLowerCase() }),
      updated_at: changes.at,
    })
    .where('id', '=', id)
    .execute();
}

/** Deletes the group and its memberships; returns how many groups were deleted (0 or 1). */
export async function deleteGroup(db: Executor, id: string): Promise<number> {
  await db.deleteFrom('group_members').where('group_id', '=', id).execute();
  const result = await db.deleteFrom('groups').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Makes the users members of the group; those who already are stay as they are. */
export async function addMembers(db: Executor, groupId: string, userIds: string[], at: string): Promise<void> {
  for (const part of chunks(userIds)) {
    await db
      .insertInto('group_members')
      .values(part.map((user_id) => ({ group_id: groupId, user_id, created_at: at })))
      .onConflict((oc) => oc.doNothing())
      .execute();
  }
}

export async function removeMembers(db: Executor, groupId: string, userIds: string[]): Promise<void> {
  for (const part of chunks(userIds)) {
    await db.deleteFrom('group_members').where('group_id', '=', groupId).where('user_id', 'in', part).execute();
  }
}

/** Makes the user a member of exactly these groups among those SCIM does not manage (SCIM's are left alone). */
export async function replaceMemberships(db: Executor, userId: string, groupIds: string[], at: string): Promise<void> {
  await db
    .deleteFrom('group_members')
    .where('user_id', '=', userId)
    .where('group_id', 'not in', db.selectFrom('scim_groups').select('group_id'))
    .execute();
  if (groupIds.length === 0) return;
  await db
    .insertInto('group_members')
    .values(groupIds.map((groupId) => ({ group_id: groupId, user_id: userId, created_at: at })))
    .execute();
}

export async function findUserIdByIdentity(db: Executor, issuer: string, subject: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('user_identities')
    .select('user_id')
    .where('issuer', '=', issuer)
    .where('subject', '=', subject)
    .executeTakeFirst();
  return row?.user_id;
}

export async function insertIdentity(
  db: Executor,
  identity: { issuer: string; subject: string; userId: string; at: string },
): Promise<void> {
  await db
    .insertInto('user_identities')
    .values({ issuer: identity.issuer, subject: identity.subject, user_id: identity.userId, created_at: identity.at })
    .execute();
}
