import type { Kysely, Transaction, Updateable } from 'kysely';
import type { Database } from '../../db/database.js';
import type { UserRow, UsersTable } from './users.tables.js';

type Executor = Kysely<Database> | Transaction<Database>;

export const userKey = (value: string): string => value.trim().toLowerCase();

export function findUserById(db: Executor, id: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
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

export async function groupNamesOf(db: Executor, userId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('group_members')
    .innerJoin('groups', 'groups.id', 'group_members.group_id')
    .select('groups.name')
    .where('group_members.user_id', '=', userId)
    .orderBy('groups.name_key')
    .execute();
  return rows.map((r) => r.name);
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

export function findGroupByName(db: Executor, name: string) {
  return db.selectFrom('groups').selectAll().where('name_key', '=', name.toLowerCase()).executeTakeFirst();
}

export async function insertGroup(db: Executor, group: { id: string; name: string; at: string }): Promise<void> {
  await db
    .insertInto('groups')
    .values({
      id: group.id,
      name: group.name,
      name_key: group.name.toLowerCase(),
      created_at: group.at,
      updated_at: group.at,
    })
    .onConflict((oc) => oc.column('name_key').doNothing())
    .execute();
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
