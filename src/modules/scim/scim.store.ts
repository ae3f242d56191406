import { type Kysely, type RawBuilder, type SqlBool, type Transaction, type Updateable, sql } from 'kysely';
import type { Db } from '../../db/create-db.js';
import type { Database } from '../../db/database.js';
import type { GroupsTable, UserRow, UsersTable } from '../users/users.tables.js';
import type { Column, Dialect, FilterMapping, ValueSource } from './scim.filter.js';
import { ENTERPRISE_USER_SCHEMA, GROUP_RESOURCE, USER_RESOURCE } from './scim.schemas.js';
import type { ScimGroupRow, ScimUserAddressRow, ScimUserRow, ScimUserValueRow, ScimUsersTable } from './scim.tables.js';

type Executor = Kysely<Database> | Transaction<Database>;

/** `IN (…)` lists are cut into chunks this long (SQLite and PostgreSQL cap bound parameters). */
const CHUNK = 500;

export function chunks<T>(items: readonly T[], size = CHUNK): T[][] {
  const result: T[][] = [];
  for (let i = 0; i < items.length; i += size) result.push(items.slice(i, i + size));
  return result;
}

/**
 * SQLite's lower() folds ASCII only; filters fold case with `scim_fold`, which is String.prototype.toLowerCase:
 * exactly what the application does when it writes a `*_key` column. PostgreSQL uses lower().
 */
export function registerSqlFunctions(db: Db): void {
  if (db.raw.dialect !== 'sqlite') return;
  db.raw.database.function('scim_fold', { deterministic: true }, (value: unknown) =>
    typeof value === 'string' ? value.toLowerCase() : value,
  );
}

const column = (ref: string, nullable = true, folded = false): Column => ({ ref: sql.ref(ref), nullable, folded });
const expression = (ref: RawBuilder<unknown>, nullable: boolean, folded = false): Column => ({ ref, nullable, folded });

// ---------------------------------------------------------------------------------------------------------------
// Users: `users u LEFT JOIN scim_users su`

/** The values of a value/display/type/primary attribute stored in scim_user_values. */
function userValues(attribute: string, caseExact = false): ValueSource {
  return {
    columns: {
      value: caseExact ? column('v.value', false) : column('v.value_key', false, true),
      display: column('v.display'),
      type: column('v.type'),
      primary: column('v.primary_flag'),
    },
    some: (where) =>
      sql<SqlBool>`u.id IN (SELECT v.user_id FROM scim_user_values v WHERE v.attribute = ${attribute}${
        where ? sql` AND ${where}` : sql``
      })`,
  };
}

/** The primary email is users.email (the sign-in email); its SCIM sub-attributes are in scim_users. */
const PRIMARY_EMAIL: ValueSource = {
  columns: {
    value: column('u.email_key', false, true),
    display: column('su.email_display'),
    type: column('su.email_type'),
    primary: column('su.email_primary'),
  },
  some: (where) => (where ? sql<SqlBool>`(u.email IS NOT NULL AND ${where})` : sql<SqlBool>`u.email IS NOT NULL`),
};

const ADDRESSES: ValueSource = {
  columns: {
    formatted: column('a.formatted'),
    streetAddress: column('a.street_address'),
    locality: column('a.locality'),
    region: column('a.region'),
    postalCode: column('a.postal_code'),
    country: column('a.country'),
    type: column('a.type'),
    primary: column('a.primary_flag'),
  },
  some: (where) =>
    sql<SqlBool>`u.id IN (SELECT a.user_id FROM scim_user_addresses a${where ? sql` WHERE ${where}` : sql``})`,
};

const USER_GROUPS: ValueSource = {
  columns: {
    // Ids are lower-case UUIDs: comparing them with a lower-cased operand is the case-insensitive comparison.
    value: column('gm.group_id', false, true),
    display: expression(sql`coalesce(gsg.display_name, gg.name)`, false),
    type: expression(sql.lit('direct'), false),
  },
  some: (where) =>
    sql<SqlBool>`u.id IN (SELECT gm.user_id FROM group_members gm JOIN groups gg ON gg.id = gm.group_id LEFT JOIN scim_groups gsg ON gsg.group_id = gg.id${
      where ? sql` WHERE ${where}` : sql``
    })`,
};

const USER_TARGETS: Record<string, ReturnType<FilterMapping['target']>> = {
  id: { kind: 'column', column: column('u.id', false) },
  externalId: { kind: 'column', column: column('su.external_id') },
  userName: { kind: 'column', column: column('u.username_key', false, true) },
  name: {
    kind: 'complex',
    columns: {
      formatted: column('u.name'),
      familyName: column('su.family_name'),
      givenName: column('su.given_name'),
      middleName: column('su.middle_name'),
      honorificPrefix: column('su.honorific_prefix'),
      honorificSuffix: column('su.honorific_suffix'),
    },
  },
  displayName: { kind: 'column', column: column('su.display_name') },
  nickName: { kind: 'column', column: column('su.nick_name') },
  profileUrl: { kind: 'column', column: column('su.profile_url') },
  title: { kind: 'column', column: column('su.title') },
  userType: { kind: 'column', column: column('su.user_type') },
  preferredLanguage: { kind: 'column', column: column('su.preferred_language') },
  locale: { kind: 'column', column: column('su.locale') },
  timezone: { kind: 'column', column: column('su.timezone') },
  active: { kind: 'column', column: column('u.active', false) },
  emails: { kind: 'multi', sources: [PRIMARY_EMAIL, userValues('emails')] },
  phoneNumbers: { kind: 'multi', sources: [userValues('phoneNumbers')] },
  ims: { kind: 'multi', sources: [userValues('ims')] },
  photos: { kind: 'multi', sources: [userValues('photos')] },
  entitlements: { kind: 'multi', sources: [userValues('entitlements')] },
  roles: { kind: 'multi', sources: [userValues('roles')] },
  x509Certificates: { kind: 'multi', sources: [userValues('x509Certificates', true)] },
  addresses: { kind: 'multi', sources: [ADDRESSES] },
  groups: { kind: 'multi', sources: [USER_GROUPS] },
  [`${ENTERPRISE_USER_SCHEMA}:employeeNumber`]: { kind: 'column', column: column('su.employee_number') },
  [`${ENTERPRISE_USER_SCHEMA}:costCenter`]: { kind: 'column', column: column('su.cost_center') },
  [`${ENTERPRISE_USER_SCHEMA}:organization`]: { kind: 'column', column: column('su.organization') },
  [`${ENTERPRISE_USER_SCHEMA}:division`]: { kind: 'column', column: column('su.division') },
  [`${ENTERPRISE_USER_SCHEMA}:department`]: { kind: 'column', column: column('su.department') },
  [`${ENTERPRISE_USER_SCHEMA}:manager`]: { kind: 'complex', columns: { value: column('su.manager_id') } },
  meta: {
    kind: 'complex',
    columns: {
      resourceType: expression(sql.lit('User'), false),
      created: column('u.created_at', false),
      lastModified: column('u.updated_at', false),
    },
  },
};

export const USER_FILTERS: FilterMapping = {
  resource: USER_RESOURCE,
  target: (key) => USER_TARGETS[key],
};

/** Sortable User attributes (`sortBy`), by canonical path. */
export const USER_SORT: Record<string, Column> = {
  id: column('u.id', false),
  userName: column('u.username_key', false, true),
  externalId: column('su.external_id'),
  displayName: column('su.display_name'),
  nickName: column('su.nick_name'),
  title: column('su.title'),
  userType: column('su.user_type'),
  active: column('u.active', false),
  'name.formatted': column('u.name'),
  'name.givenName': column('su.given_name'),
  'name.familyName': column('su.family_name'),
  emails: column('u.email_key', true, true),
  'emails.value': column('u.email_key', true, true),
  'meta.created': column('u.created_at', false),
  'meta.lastModified': column('u.updated_at', false),
};

export interface Page {
  where: RawBuilder<SqlBool> | undefined;
  /** SQL to order by; nullable columns sort missing values last ascending, first descending (RFC 7644). */
  order: { expr: RawBuilder<unknown>; nullable: boolean; descending: boolean } | undefined;
  offset: number;
  limit: number;
}

function users(db: Executor) {
  return db.selectFrom('users as u').leftJoin('scim_users as su', 'su.user_id', 'u.id');
}

export async function countUsers(db: Executor, where: RawBuilder<SqlBool> | undefined): Promise<number> {
  // Without a filter the join only costs: SQLite would probe scim_users once per user to count them.
  const query = where
    ? users(db)
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where(where)
    : db.selectFrom('users').select((eb) => eb.fn.countAll<number>().as('n'));
  const { n } = await query.executeTakeFirstOrThrow();
  return Number(n);
}

/** The query listing the ids of one page of users (exported so its plan can be checked). */
export function userPageQuery(db: Executor, page: Page) {
  let query = users(db).select('u.id');
  if (page.where) query = query.where(page.where);
  if (page.order) {
    const { expr, nullable, descending } = page.order;
    const direction = sql.raw(descending ? 'DESC' : 'ASC');
    if (nullable) query = query.orderBy(sql`(${expr} IS NULL) ${direction}`);
    // Equal sort keys fall back to userName (then id), so pages are stable and predictable.
    query = query
      .orderBy(sql`${expr} ${direction}`)
      .orderBy('u.username_key')
      .orderBy('u.id');
  } else {
    query = query.orderBy('u.username_key');
  }
  return query.offset(page.offset).limit(page.limit);
}

export async function pageUserIds(db: Executor, page: Page): Promise<string[]> {
  return (await userPageQuery(db, page).execute()).map((r) => r.id);
}

/** A user with everything SCIM renders. */
export interface LoadedUser {
  user: UserRow;
  scim: ScimUserRow | undefined;
  values: ScimUserValueRow[];
  addresses: ScimUserAddressRow[];
  groups: { id: string; display: string }[];
  manager: { id: string; displayName: string } | undefined;
}

/** Loads users by id, in the order given (missing ids are skipped). */
export async function loadUsers(db: Executor, ids: string[], withGroups = true): Promise<LoadedUser[]> {
  if (ids.length === 0) return [];
  const [userRows, scimRows, values, addressRows, groupRows] = await Promise.all([
    db.selectFrom('users').selectAll().where('id', 'in', ids).execute(),
    db.selectFrom('scim_users').selectAll().where('user_id', 'in', ids).execute(),
    db
      .selectFrom('scim_user_values')
      .selectAll()
      .where('user_id', 'in', ids)
      .orderBy('attribute')
      .orderBy('position')
      .execute(),
    db.selectFrom('scim_user_addresses').selectAll().where('user_id', 'in', ids).orderBy('position').execute(),
    withGroups
      ? db
          .selectFrom('group_members as gm')
          .innerJoin('groups as g', 'g.id', 'gm.group_id')
          .leftJoin('scim_groups as sg', 'sg.group_id', 'g.id')
          .select(['gm.user_id', 'g.id', 'g.name', 'sg.display_name'])
          .where('gm.user_id', 'in', ids)
          .orderBy('g.name_key')
          .execute()
      : Promise.resolve([]),
  ]);
  const managerIds = [...new Set(scimRows.map((r) => r.manager_id).filter((m): m is string => m !== null))];
  const managers = managerIds.length
    ? await db
        .selectFrom('users as u')
        .leftJoin('scim_users as su', 'su.user_id', 'u.id')
        .select(['u.id', 'u.username', 'su.display_name'])
        .where('u.id', 'in', managerIds)
        .execute()
    : [];
  const byId = new Map(userRows.map((u) => [u.id, u]));
  return ids.flatMap((id) => {
    const user = byId.get(id);
    if (!user) return [];
    const scim = scimRows.find((r) => r.user_id === id);
    const manager = scim?.manager_id ? managers.find((m) => m.id === scim.manager_id) : undefined;
    return [
      {
        user,
        scim,
        values: values.filter((v) => v.user_id === id),
        addresses: addressRows.filter((a) => a.user_id === id),
        groups: groupRows.filter((g) => g.user_id === id).map((g) => ({ id: g.id, display: g.display_name ?? g.name })),
        manager: manager && { id: manager.id, displayName: manager.display_name ?? manager.username },
      },
    ];
  });
}

/**
 * Locks a user's or group's row until the transaction ends, so read-modify-write cycles on it take turns. PostgreSQL
 * needs it; SQLite runs one transaction at a time on the service's single connection already.
 */
export async function lockRow(db: Executor, dialect: Dialect, table: 'users' | 'groups', id: string): Promise<void> {
  if (dialect !== 'postgres') return;
  await sql`SELECT id FROM ${sql.table(table)} WHERE id = ${id} FOR UPDATE`.execute(db);
}

export function findUserRow(db: Executor, id: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
}

export function findUserIdByUserName(db: Executor, usernameKey: string): Promise<{ id: string } | undefined> {
  return db.selectFrom('users').select('id').where('username_key', '=', usernameKey).executeTakeFirst();
}

export interface UserWrite {
  scim: ScimUserRow;
  values: ScimUserValueRow[];
  addresses: ScimUserAddressRow[];
}

export async function insertUser(db: Executor, user: UserRow, write: UserWrite): Promise<void> {
  await db.insertInto('users').values(user).execute();
  await writeScimParts(db, write, false);
}

export async function updateUser(
  db: Executor,
  id: string,
  changes: Updateable<UsersTable>,
  write: UserWrite,
): Promise<void> {
  await db.updateTable('users').set(changes).where('id', '=', id).execute();
  await writeScimParts(db, write, true);
}

async function writeScimParts(db: Executor, write: UserWrite, replace: boolean): Promise<void> {
  const { user_id, ...columns } = write.scim;
  await db
    .insertInto('scim_users')
    .values(write.scim)
    .onConflict((oc) => oc.column('user_id').doUpdateSet(columns satisfies Omit<ScimUsersTable, 'user_id'>))
    .execute();
  if (replace) {
    await db.deleteFrom('scim_user_values').where('user_id', '=', user_id).execute();
    await db.deleteFrom('scim_user_addresses').where('user_id', '=', user_id).execute();
  }
  for (const part of chunks(write.values, 100)) await db.insertInto('scim_user_values').values(part).execute();
  for (const part of chunks(write.addresses, 100)) await db.insertInto('scim_user_addresses').values(part).execute();
}

export async function setUserActive(db: Executor, id: string, active: boolean, at: string): Promise<void> {
  await db
    .updateTable('users')
    .set({ active: active ? 1 : 0, updated_at: at })
    .where('id', '=', id)
    .execute();
}

export async function groupIdsOfUser(db: Executor, userId: string): Promise<string[]> {
  const rows = await db.selectFrom('group_members').select('group_id').where('user_id', '=', userId).execute();
  return rows.map((r) => r.group_id);
}

/** The ids among `ids` that are users. */
export async function existingUserIds(db: Executor, ids: string[]): Promise<Set<string>> {
  const found = new Set<string>();
  for (const part of chunks(ids)) {
    const rows = await db.selectFrom('users').select('id').where('id', 'in', part).execute();
    for (const row of rows) found.add(row.id);
  }
  return found;
}

/** Active users among `ids` (only they get authorization tuples). */
export async function activeUserIds(db: Executor, ids: string[]): Promise<Set<string>> {
  const found = new Set<string>();
  for (const part of chunks(ids)) {
    const rows = await db.selectFrom('users').select('id').where('id', 'in', part).where('active', '=', 1).execute();
    for (const row of rows) found.add(row.id);
  }
  return found;
}

// Tuples a deactivation removed (see migrations/0006_scim.ts)

export async function suspendTuples(
  db: Executor,
  userId: string,
  tuples: { relation: string; object: string }[],
  at: string,
): Promise<void> {
  for (const part of chunks(tuples, 100)) {
    await db
      .insertInto('scim_suspended_tuples')
      .values(part.map((t) => ({ user_id: userId, relation: t.relation, object: t.object, created_at: at })))
      .onConflict((oc) => oc.doNothing())
      .execute();
  }
}

export function suspendedTuples(db: Executor, userId: string): Promise<{ relation: string; object: string }[]> {
  return db
    .selectFrom('scim_suspended_tuples')
    .select(['relation', 'object'])
    .where('user_id', '=', userId)
    .orderBy('object')
    .orderBy('relation')
    .execute();
}

export async function forgetSuspendedTuples(db: Executor, userId: string): Promise<void> {
  await db.deleteFrom('scim_suspended_tuples').where('user_id', '=', userId).execute();
}

// ---------------------------------------------------------------------------------------------------------------
// Groups: `groups g LEFT JOIN scim_groups sg`

const GROUP_MEMBERS: ValueSource = {
  columns: {
    value: column('gm.user_id', false, true),
    display: expression(sql`coalesce(msu.display_name, mu.username)`, false),
    type: expression(sql.lit('User'), false),
  },
  some: (where) =>
    sql<SqlBool>`g.id IN (SELECT gm.group_id FROM group_members gm JOIN users mu ON mu.id = gm.user_id LEFT JOIN scim_users msu ON msu.user_id = mu.id${
      where ? sql` WHERE ${where}` : sql``
    })`,
};

const GROUP_TARGETS: Record<string, ReturnType<FilterMapping['target']>> = {
  id: { kind: 'column', column: column('g.id', false) },
  externalId: { kind: 'column', column: column('sg.external_id') },
  // A group SCIM does not manage (made by single sign-on claims) shows its path-like name as displayName.
  displayName: {
    kind: 'column',
    column: {
      ...expression(sql`coalesce(sg.display_name_key, g.name_key)`, false, true),
      // Either key is indexed; the coalesce is not.
      eq: (value) => sql<SqlBool>`(sg.display_name_key = ${value} OR (sg.group_id IS NULL AND g.name_key = ${value}))`,
    },
  },
  members: { kind: 'multi', sources: [GROUP_MEMBERS] },
  meta: {
    kind: 'complex',
    columns: {
      resourceType: expression(sql.lit('Group'), false),
      created: column('g.created_at', false),
      lastModified: column('g.updated_at', false),
    },
  },
};

export const GROUP_FILTERS: FilterMapping = {
  resource: GROUP_RESOURCE,
  target: (key) => GROUP_TARGETS[key],
};

export const GROUP_SORT: Record<string, Column> = {
  id: column('g.id', false),
  displayName: expression(sql`coalesce(sg.display_name_key, g.name_key)`, false, true),
  externalId: column('sg.external_id'),
  'meta.created': column('g.created_at', false),
  'meta.lastModified': column('g.updated_at', false),
};

function groups(db: Executor) {
  return db.selectFrom('groups as g').leftJoin('scim_groups as sg', 'sg.group_id', 'g.id');
}

export async function countGroups(db: Executor, where: RawBuilder<SqlBool> | undefined): Promise<number> {
  const query = where
    ? groups(db)
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where(where)
    : db.selectFrom('groups').select((eb) => eb.fn.countAll<number>().as('n'));
  const { n } = await query.executeTakeFirstOrThrow();
  return Number(n);
}

export async function pageGroupIds(db: Executor, page: Page): Promise<string[]> {
  let query = groups(db).select('g.id');
  if (page.where) query = query.where(page.where);
  if (page.order) {
    const { expr, nullable, descending } = page.order;
    const direction = sql.raw(descending ? 'DESC' : 'ASC');
    if (nullable) query = query.orderBy(sql`(${expr} IS NULL) ${direction}`);
    query = query
      .orderBy(sql`${expr} ${direction}`)
      .orderBy('g.name_key')
      .orderBy('g.id');
  } else {
    query = query.orderBy('g.name_key');
  }
  const rows = await query.offset(page.offset).limit(page.limit).execute();
  return rows.map((r) => r.id);
}

export interface LoadedGroup {
  group: { id: string; name: string; created_at: string; updated_at: string };
  scim: ScimGroupRow | undefined;
  /** undefined when members were not asked for. */
  members: { id: string; display: string }[] | undefined;
}

export async function loadGroups(db: Executor, ids: string[], withMembers: boolean): Promise<LoadedGroup[]> {
  if (ids.length === 0) return [];
  const [groupRows, scimRows, memberRows] = await Promise.all([
    db.selectFrom('groups').select(['id', 'name', 'created_at', 'updated_at']).where('id', 'in', ids).execute(),
    db.selectFrom('scim_groups').selectAll().where('group_id', 'in', ids).execute(),
    withMembers
      ? db
          .selectFrom('group_members as gm')
          .innerJoin('users as u', 'u.id', 'gm.user_id')
          .leftJoin('scim_users as su', 'su.user_id', 'u.id')
          .select(['gm.group_id', 'u.id', 'u.username', 'su.display_name'])
          .where('gm.group_id', 'in', ids)
          .orderBy('u.username_key')
          .execute()
      : Promise.resolve([]),
  ]);
  const byId = new Map(groupRows.map((g) => [g.id, g]));
  return ids.flatMap((id) => {
    const group = byId.get(id);
    if (!group) return [];
    return [
      {
        group,
        scim: scimRows.find((r) => r.group_id === id),
        members: withMembers
          ? memberRows
              .filter((m) => m.group_id === id)
              .map((m) => ({ id: m.id, display: m.display_name ?? m.username }))
          : undefined,
      },
    ];
  });
}

export function findGroupByNameKey(db: Executor, nameKey: string) {
  return db
    .selectFrom('groups as g')
    .leftJoin('scim_groups as sg', 'sg.group_id', 'g.id')
    .select(['g.id', 'g.name', 'sg.display_name_key'])
    .where('g.name_key', '=', nameKey)
    .executeTakeFirst();
}

export function findGroupIdByDisplayNameKey(db: Executor, key: string) {
  return db.selectFrom('scim_groups').select('group_id').where('display_name_key', '=', key).executeTakeFirst();
}

export function groupExists(db: Executor, id: string) {
  return db.selectFrom('groups').select('id').where('id', '=', id).executeTakeFirst();
}

export async function insertGroup(
  db: Executor,
  group: { id: string; name: string; name_key: string; created_at: string; updated_at: string },
): Promise<void> {
  await db.insertInto('groups').values(group).execute();
}

export async function updateGroup(db: Executor, id: string, changes: Updateable<GroupsTable>): Promise<void> {
  await db.updateTable('groups').set(changes).where('id', '=', id).execute();
}

export async function upsertScimGroup(db: Executor, row: ScimGroupRow): Promise<void> {
  const { group_id: _id, ...columns } = row;
  await db
    .insertInto('scim_groups')
    .values(row)
    .onConflict((oc) => oc.column('group_id').doUpdateSet(columns))
    .execute();
}

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

export async function deleteGroup(db: Executor, id: string): Promise<number> {
  await db.deleteFrom('group_members').where('group_id', '=', id).execute();
  const result = await db.deleteFrom('groups').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows);
}
