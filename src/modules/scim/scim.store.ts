import { type RawBuilder, type SqlBool, sql } from 'kysely';
import { chunks } from '../../db/chunks.js';
import type { Db } from '../../db/create-db.js';
import { type Executor, type GroupRow, type User, findGroupsByIds, findUsersByIds } from '../users/index.js';
import type { Column, FilterMapping, ValueSource } from './scim.filter.js';
import { userSearch } from './scim.search.js';
import { ENTERPRISE_USER_SCHEMA, GROUP_RESOURCE, type ResourceDef, USER_RESOURCE } from './scim.schemas.js';
import type { ScimGroupRow, ScimUserAddressRow, ScimUserRow, ScimUserValueRow, ScimUsersTable } from './scim.tables.js';

// The `users`, `groups` and `group_members` tables belong to the users module, which writes them. Filters, sorting
// and paging have to join them with SCIM's own tables in SQL, so the queries that list resources read them here.

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

/**
 * A column of `u` (users) or `su` (scim_users) whose substrings the trigram indexes of migrations/0012_scim_search.ts
 * find. `folded`: compared as stored (a `*_key` column, or a case-exact attribute); `sorted`: a B-tree on it answers
 * `sw` already.
 */
const searchable = (
  ref: `${'u' | 'su'}.${string}`,
  { nullable = true, folded = false, sorted = false }: { nullable?: boolean; folded?: boolean; sorted?: boolean } = {},
): Column => {
  const [alias, name] = ref.split('.') as ['u' | 'su', string];
  const table = alias === 'u' ? 'users_search' : 'users_search_scim';
  return { ...column(ref, nullable, folded), search: userSearch(table, name, { folded, sorted }) };
};

type Target = ReturnType<FilterMapping['target']>;

/**
 * How a resource type's filters (and sorting, below) reach its columns. Every resource has an `id` and `meta`
 * times in its table, aliased `alias`; `targets` adds the rest, by attribute name.
 */
function filterMapping(resource: ResourceDef, alias: string, targets: Record<string, Target>): FilterMapping {
  const all: Record<string, Target> = {
    id: { kind: 'column', column: column(`${alias}.id`, false) },
    ...targets,
    meta: {
      kind: 'complex',
      columns: {
        resourceType: expression(sql.lit(resource.name), false),
        created: column(`${alias}.created_at`, false),
        lastModified: column(`${alias}.updated_at`, false),
      },
    },
  };
  return { resource, target: (key) => all[key] };
}

/** Sortable attributes (`sortBy`), by canonical path: `id`, the `meta` times, and `columns`. */
function sortable(alias: string, columns: Record<string, Column>): Record<string, Column> {
  return {
    id: column(`${alias}.id`, false),
    ...columns,
    'meta.created': column(`${alias}.created_at`, false),
    'meta.lastModified': column(`${alias}.updated_at`, false),
  };
}

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
    value: searchable('u.email_key', { nullable: false, folded: true, sorted: true }),
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

/**
 * The other side of group_members (`gm`): a user's groups, a group's members. `owner` is the id it belongs to,
 * `joins` bring in what names the other side.
 */
function memberships(
  of: { owner: string; side: 'user_id' | 'group_id'; joins: string },
  display: string,
  type: string,
) {
  const other = of.side === 'user_id' ? 'group_id' : 'user_id';
  return {
    columns: {
      // Ids are lower-case UUIDs: comparing them with a lower-cased operand is the case-insensitive comparison.
      value: column(`gm.${other}`, false, true),
      display: expression(sql.raw(display), false),
      type: expression(sql.lit(type), false),
    },
    some: (where) =>
      sql<SqlBool>`${sql.raw(`${of.owner} IN (SELECT gm.${of.side} FROM group_members gm ${of.joins}`)}${
        where ? sql` WHERE ${where}` : sql``
      })`,
  } satisfies ValueSource;
}

const USER_GROUPS = memberships(
  {
    owner: 'u.id',
    side: 'user_id',
    joins: 'JOIN groups gg ON gg.id = gm.group_id LEFT JOIN scim_groups gsg ON gsg.group_id = gg.id',
  },
  'coalesce(gsg.display_name, gg.name)',
  'direct',
);

export const USER_FILTERS = filterMapping(USER_RESOURCE, 'u', {
  // externalId is case-exact: compared as stored, like a key.
  externalId: { kind: 'column', column: searchable('su.external_id', { folded: true, sorted: true }) },
  userName: {
    kind: 'column',
    column: searchable('u.username_key', { nullable: false, folded: true, sorted: true }),
  },
  name: {
    kind: 'complex',
    columns: {
      formatted: searchable('u.name'),
      familyName: searchable('su.family_name'),
      givenName: searchable('su.given_name'),
      middleName: column('su.middle_name'),
      honorificPrefix: column('su.honorific_prefix'),
      honorificSuffix: column('su.honorific_suffix'),
    },
  },
  displayName: { kind: 'column', column: searchable('su.display_name') },
  nickName: { kind: 'column', column: searchable('su.nick_name') },
  profileUrl: { kind: 'column', column: column('su.profile_url') },
  title: { kind: 'column', column: searchable('su.title') },
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
});

export const USER_SORT = sortable('u', {
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
});

export interface Page {
  where: RawBuilder<SqlBool> | undefined;
  /** SQL to order by; nullable columns sort missing values last ascending, first descending (RFC 7644). */
  order: { expr: RawBuilder<unknown>; nullable: boolean; descending: boolean } | undefined;
  offset: number;
  limit: number;
}

/** The query builder calls that paging needs; Kysely's select queries have them, whatever they select from. */
interface Pageable<Q> {
  where(expression: RawBuilder<SqlBool>): Q;
  orderBy(expression: RawBuilder<unknown>): Q;
  offset(offset: number): Q;
  limit(limit: number): Q;
}

/**
 * Narrows a listing to one filtered, ordered page. Equal sort keys fall back to `naturalKey` (then `id`), so pages
 * are stable and predictable; nullable sort columns sort missing values last ascending, first descending.
 */
function paged<Q extends Pageable<Q>>(query: Q, page: Page, naturalKey: string, id: string): Q {
  if (page.where) query = query.where(page.where);
  if (page.order) {
    const { expr, nullable, descending } = page.order;
    const direction = sql.raw(descending ? 'DESC' : 'ASC');
    if (nullable) query = query.orderBy(sql`(${expr} IS NULL) ${direction}`);
    query = query
      .orderBy(sql`${expr} ${direction}`)
      .orderBy(sql.ref(naturalKey))
      .orderBy(sql.ref(id));
  } else {
    query = query.orderBy(sql.ref(naturalKey));
  }
  return query.offset(page.offset).limit(page.limit);
}

const COUNT = sql<number>`count(*)`.as('n');

async function counted(query: { executeTakeFirstOrThrow(): Promise<{ n: number }> }): Promise<number> {
  const { n } = await query.executeTakeFirstOrThrow();
  return Number(n);
}

function users(db: Executor) {
  return db.selectFrom('users as u').leftJoin('scim_users as su', 'su.user_id', 'u.id');
}

export function countUsers(db: Executor, where: RawBuilder<SqlBool> | undefined): Promise<number> {
  // Without a filter the join only costs: SQLite would probe scim_users once per user to count them.
  return counted(where ? users(db).select(COUNT).where(where) : db.selectFrom('users').select(COUNT));
}

/** The query listing the ids of one page of users (exported so its plan can be checked). */
export function userPageQuery(db: Executor, page: Page) {
  return paged(users(db).select('u.id'), page, 'u.username_key', 'u.id');
}

export async function pageUserIds(db: Executor, page: Page): Promise<string[]> {
  return (await userPageQuery(db, page).execute()).map((r) => r.id);
}

/** A user with everything SCIM renders. */
export interface LoadedUser {
  user: User;
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
    findUsersByIds(db, ids),
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
  const [managers, managerNames] = await Promise.all([
    findUsersByIds(db, managerIds),
    managerIds.length
      ? db.selectFrom('scim_users').select(['user_id', 'display_name']).where('user_id', 'in', managerIds).execute()
      : Promise.resolve([]),
  ]);
  // One pass over each kind of row, whatever the page size (no search of every row for every user).
  const byId = new Map(userRows.map((u) => [u.id, u]));
  const scimById = new Map(scimRows.map((r) => [r.user_id, r]));
  const managerById = new Map(managers.map((m) => [m.id, m]));
  const managerNameById = new Map(managerNames.map((m) => [m.user_id, m.display_name]));
  const valuesById = groupBy(values, (v) => v.user_id);
  const addressesById = groupBy(addressRows, (a) => a.user_id);
  const groupsById = groupBy(groupRows, (g) => g.user_id);
  return ids.flatMap((id) => {
    const user = byId.get(id);
    if (!user) return [];
    const scim = scimById.get(id);
    const manager = scim?.manager_id ? managerById.get(scim.manager_id) : undefined;
    return [
      {
        user,
        scim,
        values: valuesById.get(id) ?? [],
        addresses: addressesById.get(id) ?? [],
        groups: (groupsById.get(id) ?? []).map((g) => ({ id: g.id, display: g.display_name ?? g.name })),
        manager: manager && {
          id: manager.id,
          displayName: managerNameById.get(manager.id) ?? manager.username,
        },
      },
    ];
  });
}

/** Rows by a key, each list in the rows' order. */
function groupBy<T>(rows: T[], key: (row: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const k = key(row);
    const list = groups.get(k);
    if (list) list.push(row);
    else groups.set(k, [row]);
  }
  return groups;
}

export interface UserWrite {
  scim: ScimUserRow;
  values: ScimUserValueRow[];
  addresses: ScimUserAddressRow[];
}

/** Writes what SCIM says of a user beyond the users module's account; `replace` clears what was there first. */
export async function writeScimUser(db: Executor, write: UserWrite, replace: boolean): Promise<void> {
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

const GROUP_MEMBERS = memberships(
  {
    owner: 'g.id',
    side: 'group_id',
    joins: 'JOIN users mu ON mu.id = gm.user_id LEFT JOIN scim_users msu ON msu.user_id = mu.id',
  },
  'coalesce(msu.display_name, mu.username)',
  'User',
);

export const GROUP_FILTERS = filterMapping(GROUP_RESOURCE, 'g', {
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
});

export const GROUP_SORT = sortable('g', {
  displayName: expression(sql`coalesce(sg.display_name_key, g.name_key)`, false, true),
  externalId: column('sg.external_id'),
});

function groups(db: Executor) {
  return db.selectFrom('groups as g').leftJoin('scim_groups as sg', 'sg.group_id', 'g.id');
}

export function countGroups(db: Executor, where: RawBuilder<SqlBool> | undefined): Promise<number> {
  return counted(where ? groups(db).select(COUNT).where(where) : db.selectFrom('groups').select(COUNT));
}

export async function pageGroupIds(db: Executor, page: Page): Promise<string[]> {
  const rows = await paged(groups(db).select('g.id'), page, 'g.name_key', 'g.id').execute();
  return rows.map((r) => r.id);
}

export interface LoadedGroup {
  group: GroupRow;
  scim: ScimGroupRow | undefined;
  /** undefined when members were not asked for. */
  members: { id: string; display: string }[] | undefined;
}

export async function loadGroups(db: Executor, ids: string[], withMembers: boolean): Promise<LoadedGroup[]> {
  if (ids.length === 0) return [];
  const [groupRows, scimRows, memberRows] = await Promise.all([
    findGroupsByIds(db, ids),
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
  const scimById = new Map(scimRows.map((r) => [r.group_id, r]));
  const membersById = groupBy(memberRows, (m) => m.group_id);
  return ids.flatMap((id) => {
    const group = byId.get(id);
    if (!group) return [];
    return [
      {
        group,
        scim: scimById.get(id),
        members: withMembers
          ? (membersById.get(id) ?? []).map((m) => ({ id: m.id, display: m.display_name ?? m.username }))
          : undefined,
      },
    ];
  });
}

/** Whether SCIM manages the group (a group single sign-on made has no scim_groups row). */
export async function isScimGroup(db: Executor, groupId: string): Promise<boolean> {
  const row = await db.selectFrom('scim_groups').select('group_id').where('group_id', '=', groupId).executeTakeFirst();
  return row !== undefined;
}

export function findGroupIdByDisplayNameKey(db: Executor, key: string) {
  return db.selectFrom('scim_groups').select('group_id').where('display_name_key', '=', key).executeTakeFirst();
}

export async function upsertScimGroup(db: Executor, row: ScimGroupRow): Promise<void> {
  const { group_id: _id, ...columns } = row;
  await db
    .insertInto('scim_groups')
    .values(row)
    .onConflict((oc) => oc.column('group_id').doUpdateSet(columns))
    .execute();
}

/**
 * Erasure: other people's records may name the user as their manager (not a foreign key: a provider may name a
 * manager it provisions later), so those references are cleared rather than left pointing at the erased id.
 */
export async function clearManagerReferences(db: Executor, userId: string): Promise<number> {
  const result = await db
    .updateTable('scim_users')
    .set({ manager_id: null })
    .where('manager_id', '=', userId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
