import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { AuthzService, Tuple } from '../../adapters/authz/port.js';
import { chunks } from '../../db/chunks.js';
import type { Db } from '../../db/create-db.js';
import type { Database } from '../../db/database.js';
import { isUniqueViolation } from '../../db/errors.js';
import {
  AppError,
  type BadRequestError,
  CommonErrorCode,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  PayloadTooLargeError,
} from '../../errors.js';
import type { Logger } from '../../logger.js';
import { type AuditEventType, type AuditRecorder, actorOf } from '../../ports/audit.js';
import { type Caller, CallerErrorCode } from '../../ports/caller.js';
import { SYSTEM, groupObject, subjectOf, userObject } from '../../ports/subjects.js';
import * as users from '../users/index.js';
import {
  type Column,
  FilterCompiler,
  type FilterMapping,
  foldSql,
  parseAttrPath,
  parseFilter,
  resolvePath,
} from './scim.filter.js';
import { scimBadRequest } from './scim.errors.js';
import { type JsonObject, applyPatch, isObject, member, parsePatchRequest } from './scim.patch.js';
import {
  type GroupState,
  type UserState,
  VALUE_ATTRIBUTES,
  parseGroup,
  parseUser,
  project,
  renderGroup,
  renderUser,
  wants,
} from './scim.representation.js';
import {
  BULK_MAX_OPERATIONS,
  BULK_REQUEST_SCHEMA,
  GROUP_RESOURCE,
  LIST_RESPONSE_SCHEMA,
  type ResourceDef,
  SCHEMA_DEFS,
  USER_RESOURCE,
  resourceTypeDocument,
  schemaDocument,
  serviceProviderConfig,
} from './scim.schemas.js';
import * as store from './scim.store.js';
import type { LoadedGroup, LoadedUser } from './scim.store.js';
import type { ScimUserAddressRow, ScimUserRow, ScimUserValueRow } from './scim.tables.js';

/** Who is provisioning, for authorization and the audit log. */
export interface ScimContext {
  caller: Caller;
  ip: string | null;
  userAgent: string | null;
}

export interface ListQuery {
  filter?: string | undefined;
  startIndex: number;
  count: number;
  sortBy?: string | undefined;
  sortOrder?: string | undefined;
  attributes?: string[] | undefined;
  excludedAttributes?: string[] | undefined;
}

export interface Projection {
  attributes?: string[] | undefined;
  excludedAttributes?: string[] | undefined;
}

export interface ListResponse {
  schemas: [typeof LIST_RESPONSE_SCHEMA];
  totalResults: number;
  startIndex: number;
  itemsPerPage: number;
  Resources: JsonObject[];
}

/** What a client can do at a resource type's endpoint (RFC 7644 §3): the same for Users and Groups. */
export interface ResourceEndpoint {
  list: (query: ListQuery) => Promise<ListResponse>;
  get: (id: string, projection?: Projection) => Promise<JsonObject>;
  create: (ctx: ScimContext, body: unknown) => Promise<JsonObject>;
  replace: (ctx: ScimContext, id: string, body: unknown) => Promise<JsonObject>;
  patch: (ctx: ScimContext, id: string, body: unknown) => Promise<JsonObject>;
  /** Users are deactivated, groups deleted. */
  delete: (ctx: ScimContext, id: string) => Promise<void>;
}

/** The outcome of one Bulk operation; the routes render `error` as a SCIM error body. */
export interface BulkResult {
  method: string;
  bulkId?: string;
  location?: string;
  status: number;
  error?: unknown;
}

export interface ScimServiceDeps {
  db: Db;
  authz: AuthzService;
  /** Ends a user's sessions and tokens (AuthService.revokeUser). */
  revokeUser: (userId: string) => Promise<number>;
  /**
   * Writes back the links that other identities derive from the user being active: the service principals that
   * inherit the user's permissions (ServicePrincipalsService.restoreDelegationsTo). Called when the user is active.
   */
  restoreDelegations?: (userId: string) => Promise<void>;
  audit: AuditRecorder;
  logger: Logger;
  /** Absolute base URL of the service (`meta.location`, `Location`). */
  publicUrl: string;
  /** The largest request body the listener accepts: Bulk's maxPayloadSize. */
  bodyLimitBytes: number;
  now?: () => Date;
}

const notFound = (kind: 'User' | 'Group', id: string) =>
  new NotFoundError(`${kind} ${id} not found`, { code: CommonErrorCode.NotFound, scimType: 'notFound' });

/** Ids are UUIDs (lower-case): anything else names nothing, and is not worth a query. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Tuples removed on deactivation that reactivation restores from the snapshot. Role and group tuples are rebuilt
 * from the database instead (they may have changed meanwhile); service principal ids are slugs that someone else
 * may have taken while the user was inactive, so ownership of one is never restored.
 */
function restorable(tuple: Tuple): boolean {
  const type = tuple.object.slice(0, tuple.object.indexOf(':'));
  return type !== 'role' && type !== 'group' && type !== 'service_principal';
}

/** How the service reads, lists and renders one resource type. */
interface ResourceKind {
  resource: ResourceDef;
  /** The attribute that costs a join, loaded only when the response returns it. */
  expandable: string;
  filters: FilterMapping;
  sortable: Record<string, Column>;
  count: (db: Kysely<Database>, where: store.Page['where']) => Promise<number>;
  pageIds: (db: Kysely<Database>, page: store.Page) => Promise<string[]>;
  /** The resources with these ids, rendered in full, in the order given (missing ids are skipped). */
  read: (db: Kysely<Database>, ids: string[], expand: boolean, baseUrl: string) => Promise<JsonObject[]>;
}

/** A resource type with the loaded form its changes are computed from. */
interface LoadableKind<L> extends ResourceKind {
  load: (db: Kysely<Database>, ids: string[], expand: boolean) => Promise<L[]>;
}

function loadableKind<L>(
  kind: Omit<LoadableKind<L>, 'read'>,
  render: (loaded: L, baseUrl: string) => JsonObject,
): LoadableKind<L> {
  return {
    ...kind,
    read: async (db, ids, expand, baseUrl) => (await kind.load(db, ids, expand)).map((l) => render(l, baseUrl)),
  };
}

const USERS = loadableKind<LoadedUser>(
  {
    resource: USER_RESOURCE,
    expandable: 'groups',
    filters: store.USER_FILTERS,
    sortable: store.USER_SORT,
    count: store.countUsers,
    pageIds: store.pageUserIds,
    load: store.loadUsers,
  },
  renderUser,
);

const GROUPS = loadableKind<LoadedGroup>(
  {
    resource: GROUP_RESOURCE,
    expandable: 'members',
    filters: store.GROUP_FILTERS,
    sortable: store.GROUP_SORT,
    count: store.countGroups,
    pageIds: store.pageGroupIds,
    load: store.loadGroups,
  },
  renderGroup,
);

/** `/Display Name` for groups.name (the path-like group names the rest of the service uses). */
export function groupPathFor(displayName: string, suffix = ''): string {
  if (!suffix && users.groupNameSchema.safeParse(displayName).success) return displayName;
  const ascii = displayName.normalize('NFKD').replace(/[\u0300-\u036f]/g, '');
  const segment = ascii
    .replace(/[^A-Za-z0-9 _.-]+/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 64 - suffix.length)
    .trimEnd();
  return `/${segment || 'group'}${suffix}`;
}

/** `given family`, the formatted name when the client sends only the parts. */
function joinedName(given: string | null | undefined, family: string | null | undefined): string | null {
  return [given, family].filter((p) => p).join(' ') || null;
}

/**
 * SCIM 2.0 provisioning of the local users and groups (RFC 7643/7644). Provisioned users are ordinary local users,
 * the accounts every other module sees (they sign in with the password SCIM sets); SCIM groups are the service's
 * path-named groups, the same ones single sign-on claims name, and membership is written as `group:<id>#member`
 * tuples. Deactivation (DELETE, or active=false) keeps every row but ends the user's sessions and removes their
 * authorization tuples; reactivation restores them.
 */
export class ScimService {
  readonly baseUrl: string;
  private readonly db: Kysely<Database>;
  private readonly now: () => Date;

  constructor(private readonly deps: ScimServiceDeps) {
    this.db = deps.db.kysely;
    this.now = deps.now ?? (() => new Date());
    this.baseUrl = `${deps.publicUrl.replace(/\/$/, '')}/scim/v2`;
    store.registerSqlFunctions(deps.db);
  }

  /** 403 unless the caller may provision: the admin role, or the provisioner relation on the system. */
  async authorize(caller: Caller): Promise<void> {
    if (!(await this.deps.authz.check(subjectOf(caller), 'provisioner', SYSTEM))) {
      throw new ForbiddenError('Provisioning needs the admin role or the provisioner relation on system:global', {
        code: CallerErrorCode.AccessDenied,
      });
    }
  }

  // -------------------------------------------------------------------------------------------------------------
  // Discovery

  serviceProviderConfig() {
    return serviceProviderConfig({
      baseUrl: this.baseUrl,
      documentationUrl: `${this.deps.publicUrl.replace(/\/$/, '')}/docs`,
      maxPayloadSize: this.deps.bodyLimitBytes,
    });
  }

  resourceTypes(): ListResponse {
    return this.#list([USER_RESOURCE, GROUP_RESOURCE].map((r) => resourceTypeDocument(r, this.baseUrl)));
  }

  resourceType(name: string) {
    const resource = [USER_RESOURCE, GROUP_RESOURCE].find((r) => r.name.toLowerCase() === name.toLowerCase());
    if (!resource)
      throw new NotFoundError(`No resource type ${name}`, { code: CommonErrorCode.NotFound, scimType: 'notFound' });
    return resourceTypeDocument(resource, this.baseUrl);
  }

  schemas(): ListResponse {
    return this.#list(SCHEMA_DEFS.map((s) => schemaDocument(s, this.baseUrl)));
  }

  schema(id: string) {
    const schema = SCHEMA_DEFS.find((s) => s.id.toLowerCase() === id.toLowerCase());
    if (!schema) throw new NotFoundError(`No schema ${id}`, { code: CommonErrorCode.NotFound, scimType: 'notFound' });
    return schemaDocument(schema, this.baseUrl);
  }

  #list(resources: JsonObject[]): ListResponse {
    return {
      schemas: [LIST_RESPONSE_SCHEMA],
      totalResults: resources.length,
      startIndex: 1,
      itemsPerPage: resources.length,
      Resources: resources,
    };
  }

  listUsers(query: ListQuery): Promise<ListResponse> {
    return this.#listOf(USERS, query);
  }

  listGroups(query: ListQuery): Promise<ListResponse> {
    return this.#listOf(GROUPS, query);
  }

  /** The operations of the `/Users` or `/Groups` endpoint, for the routes and Bulk. */
  endpoint(type: ResourceDef['name']): ResourceEndpoint {
    const kind = type === 'User' ? USERS : GROUPS;
    return {
      list: (query) => this.#listOf(kind, query),
      get: (id, projection) => this.#get(kind, id, projection),
      create: (ctx, body) => this[`create${type}`](ctx, body),
      replace: (ctx, id, body) => this[`replace${type}`](ctx, id, body),
      patch: (ctx, id, body) => this[`patch${type}`](ctx, id, body),
      delete: (ctx, id) => this[`delete${type}`](ctx, id),
    };
  }

  // -------------------------------------------------------------------------------------------------------------
  // Users

  async createUser(ctx: ScimContext, body: unknown): Promise<JsonObject> {
    const state = parseUser(body);
    if (await users.findUserIdByUsername(this.db, state.userName)) throw this.#userNameTaken(state.userName);
    const at = this.now().toISOString();
    const id = randomUUID();
    const active = state.active ?? true;
    const rows = this.#userRows(id, state);
    const account = {
      id,
      username: state.userName,
      email: rows.email?.value ?? null,
      emailVerified: false,
      name: state.name.formatted ?? joinedName(state.name.givenName, state.name.familyName),
      roles: [users.DEFAULT_ROLE],
      active,
      passwordHash: state.password === undefined ? null : await users.hashPassword(state.password),
      at,
    };
    await this.#uniquely(state, rows.email?.value, () =>
      this.db.transaction().execute(async (trx) => {
        await users.insertAccount(trx, account);
        await store.writeScimUser(trx, rows.write, false);
      }),
    );
    if (active) await this.#grantAccess(id, [users.DEFAULT_ROLE]);
    await this.#audit(ctx, 'scim.user.created', id, { userName: state.userName });
    return this.#get(USERS, id);
  }

  async replaceUser(ctx: ScimContext, id: string, body: unknown): Promise<JsonObject> {
    const first = await this.#load(USERS, id, false);
    await this.#protectAdmins(ctx, first.user);
    const state = parseUser(body);
    const hash = state.password === undefined ? undefined : await users.hashPassword(state.password);
    return this.#updateUser(ctx, first, state, () => state, hash, 'PUT');
  }

  async patchUser(ctx: ScimContext, id: string, body: unknown): Promise<JsonObject> {
    const operations = parsePatchRequest(body);
    const first = await this.#load(USERS, id, true);
    await this.#protectAdmins(ctx, first.user);
    // A trial run checks the operations and yields a new password, which is hashed before the write takes its lock;
    // the write applies them again to the user as it is then.
    const apply = (current: LoadedUser) => applyPatch(USER_RESOURCE, renderUser(current, this.baseUrl), operations);
    const trial = apply(first);
    const predicted = parseUser(trial.resource);
    let hash: string | null | undefined;
    if (typeof trial.password === 'string') {
      const checked = users.passwordSchema.safeParse(trial.password);
      if (!checked.success) {
        throw scimBadRequest(`password ${checked.error.issues[0]?.message ?? 'is not acceptable'}`, 'invalidValue');
      }
      hash = await users.hashPassword(trial.password);
    } else if (trial.password === null) {
      hash = null;
    }
    return this.#updateUser(ctx, first, predicted, (current) => parseUser(apply(current).resource), hash, 'PATCH');
  }

  /** Deactivates (spec: DELETE keeps the data): sessions end, authorization tuples go, reactivation restores. */
  async deleteUser(ctx: ScimContext, id: string): Promise<void> {
    const existing = UUID.test(id) ? await users.findUser(this.db, id) : undefined;
    if (!existing) throw notFound('User', id);
    await this.#protectAdmins(ctx, existing);
    await this.#deactivate(existing);
    await this.#audit(ctx, 'scim.user.deleted', id, { deactivated: true });
  }

  /** A non-administrator provisioner must not take over an administrator's account (by setting its password). */
  async #protectAdmins(ctx: ScimContext, user: users.User): Promise<void> {
    if (!user.roles.includes(users.ADMIN_ROLE)) return;
    if (await this.deps.authz.check(subjectOf(ctx.caller), 'admin', SYSTEM)) return;
    throw new ForbiddenError('Only administrators may change an administrator through SCIM', {
      code: CallerErrorCode.AccessDenied,
    });
  }

  #userNameTaken(userName: string): ConflictError {
    return new ConflictError(`userName ${userName} is already taken`, {
      code: CommonErrorCode.Conflict,
      scimType: 'uniqueness',
    });
  }

  /** Runs a write, turning a unique-constraint failure into 409 uniqueness naming what collided. */
  async #uniquely<T>(
    state: UserState,
    email: string | undefined,
    write: () => Promise<T>,
    selfId?: string,
  ): Promise<T> {
    try {
      return await write();
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      const holder = await users.findUserIdByUsername(this.db, state.userName);
      if (holder && holder !== selfId) throw this.#userNameTaken(state.userName);
      throw new ConflictError(`emails: ${email ?? 'the address'} is already used by another user`, {
        code: CommonErrorCode.Conflict,
        scimType: 'uniqueness',
      });
    }
  }

  /**
   * The rows of a user's SCIM attributes. The primary email (else the first) becomes users.email, the sign-in
   * email; the other emails and the other multi-valued attributes go to scim_user_values.
   */
  #userRows(id: string, state: UserState) {
    const emails = state.values.emails;
    const index = Math.max(
      emails.findIndex((e) => e.primary === true),
      0,
    );
    const email = emails[index];
    const scim: ScimUserRow = {
      user_id: id,
      external_id: state.externalId,
      display_name: state.simple.displayName,
      nick_name: state.simple.nickName,
      profile_url: state.simple.profileUrl,
      title: state.simple.title,
      user_type: state.simple.userType,
      preferred_language: state.simple.preferredLanguage,
      locale: state.simple.locale,
      timezone: state.simple.timezone,
      given_name: state.name.givenName,
      family_name: state.name.familyName,
      middle_name: state.name.middleName,
      honorific_prefix: state.name.honorificPrefix,
      honorific_suffix: state.name.honorificSuffix,
      email_type: email?.type ?? null,
      email_display: email?.display ?? null,
      email_primary: email?.primary === null || email === undefined ? null : email.primary ? 1 : 0,
      employee_number: state.enterprise.employeeNumber,
      cost_center: state.enterprise.costCenter,
      organization: state.enterprise.organization,
      division: state.enterprise.division,
      department: state.enterprise.department,
      manager_id: state.managerId,
    };
    const values: ScimUserValueRow[] = VALUE_ATTRIBUTES.flatMap((attribute) =>
      state.values[attribute]
        .filter((v) => !(attribute === 'emails' && v === email))
        .map((v, position) => ({
          user_id: id,
          attribute,
          position,
          value: v.value,
          value_key: v.value.toLowerCase(),
          display: v.display,
          type: v.type,
          primary_flag: v.primary === null ? null : v.primary ? 1 : 0,
        })),
    );
    const addresses: ScimUserAddressRow[] = state.addresses.map((a, position) => ({
      user_id: id,
      position,
      formatted: a.formatted,
      street_address: a.streetAddress,
      locality: a.locality,
      region: a.region,
      postal_code: a.postalCode,
      country: a.country,
      type: a.type,
      primary_flag: a.primary === null ? null : a.primary ? 1 : 0,
    }));
    return { email, write: { scim, values, addresses } };
  }

  /**
   * users.name is the formatted name: as sent, or given + family name. A formatted name that was only ever
   * derived from the parts follows them when they change (a PATCH of givenName alone renames the user).
   */
  #formattedName(state: UserState, existing: users.User, previous: { given: string | null; family: string | null }) {
    const derived = joinedName(state.name.givenName, state.name.familyName);
    const formatted = state.name.formatted;
    if (formatted === null) return derived;
    const previouslyDerived = joinedName(previous.given, previous.family);
    if (formatted === existing.name && existing.name === previouslyDerived && derived !== previouslyDerived) {
      return derived;
    }
    return formatted;
  }

  /**
   * Writes a user's new state: computed from the user as read under a lock (PostgreSQL `FOR UPDATE`; SQLite runs one
   * transaction at a time), so two concurrent changes cannot undo each other. `predicted` (the state computed from
   * an earlier read) names what collided in a 409 and says whether the tuples to keep must be read first.
   */
  async #updateUser(
    ctx: ScimContext,
    first: LoadedUser,
    predicted: UserState,
    compute: (current: LoadedUser) => UserState,
    passwordHash: string | null | undefined,
    method: 'PUT' | 'PATCH',
  ): Promise<JsonObject> {
    const id = first.user.id;
    const at = this.now().toISOString();
    const holder = await users.findUserIdByUsername(this.db, predicted.userName);
    if (holder && holder !== id) throw this.#userNameTaken(predicted.userName);
    // Read before the write: once committed, the tuples are removed and could no longer be kept for reactivation.
    const deactivating = first.user.active && predicted.active === false;
    const suspended = deactivating ? (await this.deps.authz.read({ user: userObject(id) })).filter(restorable) : [];
    const outcome = await this.#uniquely(
      predicted,
      this.#userRows(id, predicted).email?.value,
      () =>
        this.db.transaction().execute(async (trx) => {
          await users.lockRow(trx, this.deps.db.dialect, 'users', id);
          const [current] = await store.loadUsers(trx, [id], true);
          if (!current) throw notFound('User', id);
          const state = compute(current);
          const taken = await users.findUserIdByUsername(trx, state.userName);
          if (taken && taken !== id) throw this.#userNameTaken(state.userName);
          const rows = this.#userRows(id, state);
          const wasActive = current.user.active;
          const active = state.active ?? wasActive;
          await users.updateAccount(trx, current.user, {
            username: state.userName,
            email: rows.email?.value ?? null,
            name: this.#formattedName(state, current.user, {
              given: current.scim?.given_name ?? null,
              family: current.scim?.family_name ?? null,
            }),
            active,
            passwordHash,
            at,
          });
          await store.writeScimUser(trx, rows.write, true);
          if (wasActive && !active) await store.suspendTuples(trx, id, suspended, at);
          return { wasActive, active, roles: current.user.roles };
        }),
      id,
    );

    let event: AuditEventType = 'scim.user.updated';
    if (outcome.wasActive && !outcome.active) {
      await this.#cutAccess(id);
      event = 'scim.user.deactivated';
    } else if (outcome.active) {
      // Also on an ordinary update: tuples a failed earlier request did not write are written now.
      await this.#grantAccess(id, outcome.roles);
      if (!outcome.wasActive) event = 'scim.user.reactivated';
      if (passwordHash !== undefined) await this.deps.revokeUser(id);
    }
    await this.#audit(ctx, event, id, { method, ...(passwordHash !== undefined && { password_changed: true }) });
    return this.#get(USERS, id);
  }

  async #deactivate(user: users.User): Promise<void> {
    const when = this.now().toISOString();
    if (user.active) {
      const suspended = (await this.deps.authz.read({ user: userObject(user.id) })).filter(restorable);
      await this.db.transaction().execute(async (trx) => {
        await users.setUserActive(trx, user.id, false, when);
        await store.suspendTuples(trx, user.id, suspended, when);
      });
    }
    // Also when already inactive: a repeated DELETE finishes what a failed one started.
    await this.#cutAccess(user.id);
  }

  async #cutAccess(userId: string): Promise<void> {
    await this.deps.authz.removeAllFor(userObject(userId));
    await this.deps.revokeUser(userId);
  }

  /** Writes the user's role and group tuples, and restores what a deactivation suspended. Idempotent. */
  async #grantAccess(userId: string, roles: string[]): Promise<void> {
    const groupIds = await users.allGroupIdsOf(this.db, userId);
    const suspended = await store.suspendedTuples(this.db, userId);
    await this.#writeTuples([
      ...roles.map((role) => users.roleTuple(userId, role)),
      ...groupIds.map((groupId) => users.memberTuple(userId, groupId)),
      ...suspended.map((t) => ({ user: userObject(userId), relation: t.relation, object: t.object })),
    ]);
    if (suspended.length > 0) await store.forgetSuspendedTuples(this.db, userId);
    await this.deps.restoreDelegations?.(userId);
  }

  async #writeTuples(tuples: Tuple[]): Promise<void> {
    for (const part of chunks(tuples, 100)) await this.deps.authz.write(part);
  }

  async #deleteTuples(tuples: Tuple[]): Promise<void> {
    for (const part of chunks(tuples, 100)) await this.deps.authz.delete(part);
  }

  // -------------------------------------------------------------------------------------------------------------
  // Groups

  async createGroup(ctx: ScimContext, body: unknown): Promise<JsonObject> {
    const state = parseGroup(body);
    await this.#checkMembers(this.db, state.members);
    const at = this.now().toISOString();
    const id = await this.#uniqueGroup(state.displayName, () =>
      this.db.transaction().execute(async (trx) => {
        const name = await this.#freeGroupPath(trx, state.displayName, undefined);
        // A group of that path made by single sign-on claims is the same group: SCIM adopts it.
        const groupId = name.adopt ?? randomUUID();
        if (name.adopt) await users.updateGroup(trx, groupId, { at });
        else await users.insertGroup(trx, { id: groupId, name: name.path, at }, { ifAbsent: false });
        await store.upsertScimGroup(trx, this.#scimGroupRow(groupId, state));
        await users.addMembers(trx, groupId, state.members, at);
        return groupId;
      }),
    );
    await this.#writeMemberTuples(id, state.members);
    await this.#audit(ctx, 'scim.group.created', null, { group_id: id, members: state.members.length });
    return this.#get(GROUPS, id);
  }

  async replaceGroup(ctx: ScimContext, id: string, body: unknown): Promise<JsonObject> {
    await this.#load(GROUPS, id, false);
    const state = parseGroup(body);
    return this.#updateGroup(ctx, id, state, () => state, state.members, 'PUT');
  }

  async patchGroup(ctx: ScimContext, id: string, body: unknown): Promise<JsonObject> {
    const operations = parsePatchRequest(body);
    // A trial run checks the operations; the write applies them again to the group as it is then.
    const apply = (current: LoadedGroup) =>
      parseGroup(applyPatch(GROUP_RESOURCE, renderGroup(current, this.baseUrl), operations).resource);
    const predicted = apply(await this.#load(GROUPS, id, true));
    // Members named by an add or replace get their tuple written even when already members: a retry of a
    // request whose tuple write failed then completes it.
    const named = new Set<string>();
    for (const op of operations) {
      if (op.op === 'remove') continue;
      const values = isObject(op.value) && !op.path ? member(op.value, 'members') : op.value;
      for (const item of Array.isArray(values) ? values : [values]) {
        const value = isObject(item) ? member(item, 'value') : undefined;
        if (typeof value === 'string') named.add(value.toLowerCase());
      }
    }
    return this.#updateGroup(ctx, id, predicted, apply, [...named], 'PATCH');
  }

  async deleteGroup(ctx: ScimContext, id: string): Promise<void> {
    if (!UUID.test(id) || (await users.findGroupsByIds(this.db, [id])).length === 0) throw notFound('Group', id);
    await this.db.transaction().execute((trx) => users.deleteGroup(trx, id));
    await this.deps.authz.removeAllFor(groupObject(id));
    await this.#audit(ctx, 'scim.group.deleted', null, { group_id: id });
  }

  #scimGroupRow(id: string, state: GroupState) {
    return {
      group_id: id,
      display_name: state.displayName,
      display_name_key: state.displayName.toLowerCase(),
      external_id: state.externalId,
    };
  }

  /**
   * Writes a group's new state, computed from the group as read under a lock (see #updateUser): two membership
   * changes at once both take effect. Tuples follow the committed membership.
   */
  async #updateGroup(
    ctx: ScimContext,
    id: string,
    predicted: GroupState,
    compute: (current: LoadedGroup) => GroupState,
    touched: string[],
    method: 'PUT' | 'PATCH',
  ): Promise<JsonObject> {
    const at = this.now().toISOString();
    const { added, removed, after } = await this.#uniqueGroup(
      predicted.displayName,
      () =>
        this.db.transaction().execute(async (trx) => {
          await users.lockRow(trx, this.deps.db.dialect, 'groups', id);
          const [current] = await store.loadGroups(trx, [id], true);
          if (!current) throw notFound('Group', id);
          const state = compute(current);
          const before = new Set((current.members ?? []).map((m) => m.id));
          const members = new Set(state.members);
          const added = state.members.filter((m) => !before.has(m));
          const removed = [...before].filter((m) => !members.has(m));
          await this.#checkMembers(trx, added);
          // The path-like name follows a changed displayName; an unchanged one keeps its name.
          const renamed = (current.scim?.display_name ?? current.group.name) !== state.displayName;
          const name = renamed ? await this.#freeGroupPath(trx, state.displayName, id) : undefined;
          await users.updateGroup(trx, id, { ...(name && !name.adopt && { name: name.path }), at });
          await store.upsertScimGroup(trx, this.#scimGroupRow(id, state));
          await users.addMembers(trx, id, added, at);
          await users.removeMembers(trx, id, removed);
          return { added, removed, after: members };
        }),
      id,
    );
    await this.#deleteTuples(removed.map((userId) => users.memberTuple(userId, id)));
    await this.#writeMemberTuples(id, [...new Set([...added, ...touched.filter((m) => after.has(m))])]);
    await this.#audit(ctx, 'scim.group.updated', null, {
      group_id: id,
      method,
      members_added: added.length,
      members_removed: removed.length,
    });
    return this.#get(GROUPS, id);
  }

  /** 400 invalidValue unless every id is a user (Groups are not members: nested groups are not supported). */
  async #checkMembers(db: Kysely<Database>, ids: string[]): Promise<void> {
    const valid = ids.filter((id) => UUID.test(id));
    const found = await users.existingUserIds(db, valid);
    const missing = ids.find((id) => !found.has(id));
    if (missing !== undefined) {
      throw scimBadRequest(`members: no User with id ${missing}`, 'invalidValue');
    }
  }

  /** Member tuples of the active users among `userIds` (an inactive user gets theirs back on reactivation). */
  async #writeMemberTuples(groupId: string, userIds: string[]): Promise<void> {
    const active = await users.existingUserIds(this.db, userIds, true);
    await this.#writeTuples([...active].map((userId) => users.memberTuple(userId, groupId)));
  }

  /** 409 uniqueness when another SCIM group has this displayName (regardless of case), or wins a race to it. */
  async #uniqueGroup<T>(displayName: string, write: () => Promise<T>, selfId?: string): Promise<T> {
    const holder = await store.findGroupIdByDisplayNameKey(this.db, displayName.toLowerCase());
    const taken = () =>
      new ConflictError(`A group named ${displayName} already exists`, {
        code: CommonErrorCode.Conflict,
        scimType: 'uniqueness',
      });
    if (holder && holder.group_id !== selfId) throw taken();
    try {
      return await write();
    } catch (error) {
      if (isUniqueViolation(error)) throw taken();
      throw error;
    }
  }

  /**
   * The path-like name for a displayName: free, or held by a group single sign-on made (which SCIM then adopts),
   * or else suffixed `-2`, `-3`… when another SCIM group's name sanitizes to the same path.
   */
  async #freeGroupPath(
    db: Kysely<Database>,
    displayName: string,
    selfId: string | undefined,
  ): Promise<{ path: string; adopt?: string }> {
    for (let n = 1; n <= 100; n++) {
      const path = groupPathFor(displayName, n === 1 ? '' : `-${n}`);
      const holder = await users.findGroupByName(db, path);
      if (!holder || holder.id === selfId) return { path };
      if (selfId === undefined && !(await store.isScimGroup(db, holder.id))) return { path, adopt: holder.id };
    }
    throw new ConflictError(`No free group name for ${displayName}`, {
      code: CommonErrorCode.Conflict,
      scimType: 'uniqueness',
    });
  }

  // -------------------------------------------------------------------------------------------------------------
  // Reading and listing, the same for every resource type

  /** One resource; with `expand`, its expandable attribute (a user's groups, a group's members) too. 404 if none. */
  async #load<L>(kind: LoadableKind<L>, id: string, expand: boolean): Promise<L> {
    const [loaded] = UUID.test(id) ? await kind.load(this.db, [id], expand) : [];
    if (!loaded) throw notFound(kind.resource.name, id);
    return loaded;
  }

  async #get(kind: ResourceKind, id: string, projection: Projection = {}): Promise<JsonObject> {
    const { attributes, excludedAttributes } = projection;
    const expand = wants(kind.resource, kind.expandable, attributes, excludedAttributes);
    const [resource] = UUID.test(id) ? await kind.read(this.db, [id], expand, this.baseUrl) : [];
    if (!resource) throw notFound(kind.resource.name, id);
    return project(kind.resource, resource, attributes, excludedAttributes);
  }

  async #listOf(kind: ResourceKind, query: ListQuery): Promise<ListResponse> {
    const { attributes, excludedAttributes } = query;
    const page = this.#page(query, kind);
    const [total, ids] = await Promise.all([kind.count(this.db, page.where), kind.pageIds(this.db, page)]);
    const expand = wants(kind.resource, kind.expandable, attributes, excludedAttributes);
    const resources = await kind.read(this.db, ids, expand, this.baseUrl);
    return this.#listResponse(
      query,
      total,
      resources.map((r) => project(kind.resource, r, attributes, excludedAttributes)),
    );
  }

  #page(query: ListQuery, { resource, filters, sortable }: ResourceKind): store.Page {
    const compiler = new FilterCompiler(filters, this.deps.db.dialect);
    const where = query.filter === undefined ? undefined : compiler.compile(parseFilter(query.filter));
    let order: store.Page['order'];
    const sortOrder = query.sortOrder?.toLowerCase();
    if (sortOrder !== undefined && sortOrder !== 'ascending' && sortOrder !== 'descending') {
      throw scimBadRequest('sortOrder must be ascending or descending', 'invalidValue');
    }
    if (query.sortBy !== undefined) {
      const path = parseAttrPath(query.sortBy.trim(), (message) => {
        throw scimBadRequest(`sortBy: ${message}`, 'invalidValue');
      });
      const resolved = resolvePath(resource, path);
      const key =
        resolved?.kind === 'attribute' && !resolved.extension
          ? `${resolved.attribute.name}${resolved.sub ? `.${resolved.sub.name}` : ''}`
          : undefined;
      const column = key === undefined ? undefined : sortable[key];
      if (!column || resolved?.kind !== 'attribute') {
        throw scimBadRequest(`Cannot sort by ${query.sortBy}`, 'invalidValue');
      }
      const def = resolved.sub ?? resolved.attribute;
      // Case-insensitive attributes sort case-insensitively (RFC 7644 §3.4.2.3).
      const expr =
        !def.caseExact && !column.folded && def.type === 'string'
          ? foldSql(this.deps.db.dialect, column.ref)
          : column.ref;
      order = { expr, nullable: column.nullable, descending: sortOrder === 'descending' };
    }
    return { where, order, offset: query.startIndex - 1, limit: query.count };
  }

  #listResponse(query: ListQuery, total: number, resources: JsonObject[]): ListResponse {
    return {
      schemas: [LIST_RESPONSE_SCHEMA],
      totalResults: total,
      startIndex: query.startIndex,
      itemsPerPage: resources.length,
      Resources: resources,
    };
  }

  // -------------------------------------------------------------------------------------------------------------
  // Bulk (RFC 7644 §3.7)

  /**
   * Runs the operations of a BulkRequest, each on its own (a failure does not undo the others), references to
   * `bulkId:<id>` resolved to the ids of resources created earlier in the same request, whatever their order in
   * it. Stops once `failOnErrors` operations have failed. Results come back in request order.
   */
  async bulk(ctx: ScimContext, body: unknown): Promise<BulkResult[]> {
    if (!isObject(body)) throw scimBadRequest('The request body must be a BulkRequest', 'invalidSyntax');
    const schemas = member(body, 'schemas');
    if (
      !Array.isArray(schemas) ||
      !schemas.some((s) => typeof s === 'string' && s.toLowerCase() === BULK_REQUEST_SCHEMA.toLowerCase())
    ) {
      throw scimBadRequest(`schemas must include ${BULK_REQUEST_SCHEMA}`, 'invalidValue');
    }
    const operations = member(body, 'Operations');
    if (!Array.isArray(operations)) throw scimBadRequest('Operations must be an array', 'invalidValue');
    if (operations.length > BULK_MAX_OPERATIONS) {
      throw new PayloadTooLargeError(
        `A Bulk request may carry at most ${BULK_MAX_OPERATIONS} operations (maxOperations); this one has ${operations.length}`,
        { code: CommonErrorCode.PayloadTooLarge, scimType: 'tooMany' },
      );
    }
    const failOnErrors = member(body, 'failOnErrors');
    if (
      failOnErrors !== undefined &&
      (typeof failOnErrors !== 'number' || !Number.isInteger(failOnErrors) || failOnErrors < 1)
    ) {
      throw scimBadRequest('failOnErrors must be a positive integer', 'invalidValue');
    }

    const planned = operations.map((op, index) => planBulkOperation(op, index));
    const declared = new Map<string, number>();
    for (const op of planned) {
      if (op.bulkId === undefined || op.error) continue;
      if (declared.has(op.bulkId)) op.error = invalidBulk(`bulkId ${op.bulkId} is used by more than one operation`);
      else declared.set(op.bulkId, op.index);
    }
    for (const op of planned) {
      const undeclared = [...op.refs].find((ref) => !declared.has(ref));
      if (!op.error && undeclared !== undefined) op.error = invalidBulk(`No POST operation has bulkId ${undeclared}`);
    }
    const order = executionOrder(planned, declared);

    const results = new Map<number, BulkResult>();
    const created = new Map<string, string>();
    const failed = new Set<string>();
    let errors = 0;
    for (const index of order) {
      if (typeof failOnErrors === 'number' && errors >= failOnErrors) break;
      const op = planned[index]!;
      const result: BulkResult = {
        method: op.method,
        ...(op.bulkId !== undefined && { bulkId: op.bulkId }),
        status: 0,
      };
      try {
        if (op.error) throw op.error;
        const failedRef = [...op.refs].find((ref) => failed.has(ref));
        if (failedRef !== undefined) throw invalidBulk(`bulkId ${failedRef} names an operation that failed`);
        const resolve = (value: unknown) => resolveBulkIds(value, created);
        Object.assign(result, await this.#runBulkOperation(ctx, op, resolve(op.path) as string, resolve(op.data)));
        if (op.bulkId !== undefined && result.location)
          created.set(op.bulkId, result.location.slice(result.location.lastIndexOf('/') + 1));
      } catch (error) {
        errors++;
        if (op.bulkId !== undefined) failed.add(op.bulkId);
        result.status = error instanceof AppError ? error.status : 500;
        result.error = error;
        if (!(error instanceof AppError)) this.deps.logger.error({ err: error }, 'bulk operation failed');
      }
      results.set(index, result);
    }
    return [...results.entries()].sort(([a], [b]) => a - b).map(([, r]) => r);
  }

  async #runBulkOperation(
    ctx: ScimContext,
    op: PlannedOperation,
    path: string,
    data: unknown,
  ): Promise<Pick<BulkResult, 'status' | 'location'>> {
    const match = /^\/(Users|Groups)(?:\/([^/]+))?$/.exec(path);
    if (!match) throw invalidBulk(`path must be /Users, /Groups, /Users/{id} or /Groups/{id}, not ${path}`);
    const [, endpoint, id] = match as unknown as [string, 'Users' | 'Groups', string | undefined];
    const operations = this.endpoint(endpoint === 'Users' ? 'User' : 'Group');
    if (op.method === 'POST') {
      if (id !== undefined) throw invalidBulk('POST targets /Users or /Groups, not one resource');
      const resource = await operations.create(ctx, data);
      return { status: 201, location: (resource.meta as JsonObject).location as string };
    }
    if (id === undefined) throw invalidBulk(`${op.method} targets one resource: /${endpoint}/{id}`);
    const location = `${this.baseUrl}/${endpoint}/${id}`;
    switch (op.method) {
      case 'PUT':
        await operations.replace(ctx, id, data);
        return { status: 200, location };
      case 'PATCH':
        await operations.patch(ctx, id, data);
        return { status: 200, location };
      default:
        await operations.delete(ctx, id);
        return { status: 204, location };
    }
  }

  // -------------------------------------------------------------------------------------------------------------

  async #audit(
    ctx: ScimContext,
    type: AuditEventType,
    subjectId: string | null,
    details: Record<string, string | number | boolean | null>,
  ): Promise<void> {
    await this.deps.audit.record({
      type,
      actorId: actorOf(ctx.caller),
      subjectId,
      ipAddress: ctx.ip,
      userAgent: ctx.userAgent,
      details,
    });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Bulk planning

interface PlannedOperation {
  index: number;
  /** Upper-cased; anything but POST, PUT, PATCH or DELETE fails the operation. */
  method: string;
  bulkId: string | undefined;
  path: string;
  data: unknown;
  /** bulkIds this operation refers to (in its path or data). */
  refs: Set<string>;
  error?: AppError;
}

const BULK_REF = /^bulkId:(.+)$/;

function invalidBulk(message: string): BadRequestError {
  return scimBadRequest(message, 'invalidValue');
}

function collectRefs(value: unknown, refs: Set<string>): void {
  if (typeof value === 'string') {
    const match = BULK_REF.exec(value);
    if (match) refs.add(match[1]!);
  } else if (Array.isArray(value)) {
    for (const item of value) collectRefs(item, refs);
  } else if (isObject(value)) {
    for (const item of Object.values(value)) collectRefs(item, refs);
  }
}

function resolveBulkIds(value: unknown, created: Map<string, string>): unknown {
  if (typeof value === 'string') {
    const match = BULK_REF.exec(value);
    return match
      ? (created.get(match[1]!) ?? value)
      : value.replace(/\/bulkId:([^/]+)$/, (all, ref: string) => (created.has(ref) ? `/${created.get(ref)}` : all));
  }
  if (Array.isArray(value)) return value.map((item) => resolveBulkIds(item, created));
  if (isObject(value))
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveBulkIds(v, created)]));
  return value;
}

function planBulkOperation(raw: unknown, index: number): PlannedOperation {
  const planned: PlannedOperation = {
    index,
    method: '',
    bulkId: undefined,
    path: '',
    data: undefined,
    refs: new Set(),
  };
  if (!isObject(raw)) {
    planned.error = scimBadRequest(`Operations[${index}] must be an object`, 'invalidSyntax');
    return planned;
  }
  const method = member(raw, 'method');
  const path = member(raw, 'path');
  const bulkId = member(raw, 'bulkId');
  planned.method = typeof method === 'string' ? method.toUpperCase() : String(method);
  planned.path = typeof path === 'string' ? path : '';
  planned.data = member(raw, 'data');
  if (typeof bulkId === 'string' && bulkId !== '' && planned.method === 'POST') planned.bulkId = bulkId;
  if (!['POST', 'PUT', 'PATCH', 'DELETE'].includes(planned.method)) {
    planned.error = invalidBulk(`Operations[${index}].method must be POST, PUT, PATCH or DELETE`);
  } else if (typeof path !== 'string') {
    planned.error = scimBadRequest(`Operations[${index}].path is required`, 'invalidSyntax');
  } else if (planned.method === 'POST' && planned.bulkId === undefined) {
    planned.error = scimBadRequest(`Operations[${index}]: POST needs a bulkId`, 'invalidSyntax');
  } else if (planned.method !== 'DELETE' && !isObject(planned.data)) {
    planned.error = scimBadRequest(`Operations[${index}].data must be an object`, 'invalidSyntax');
  }
  collectRefs(planned.path.replace(/^.*\//, ''), planned.refs);
  collectRefs(planned.data, planned.refs);
  return planned;
}

/**
 * Operations ordered so that each runs after the POSTs whose bulkIds it names (depth-first, otherwise in request
 * order). RFC 7644 §3.7.1 allows giving up on a reference cycle; its operations fail with 400 invalidValue (cycles
 * can only run through `manager`, since group members are users and users name no groups).
 */
function executionOrder(planned: PlannedOperation[], declared: Map<string, number>): number[] {
  const state = new Map<number, 'visiting' | 'done'>();
  const order: number[] = [];
  const visit = (index: number, stack: number[]): void => {
    const op = planned[index]!;
    if (state.get(index) === 'done') return;
    if (state.get(index) === 'visiting') {
      for (const member of stack.slice(stack.indexOf(index))) {
        planned[member]!.error ??= invalidBulk('Circular bulkId references cannot be resolved');
      }
      return;
    }
    state.set(index, 'visiting');
    if (!op.error) for (const ref of op.refs) visit(declared.get(ref)!, [...stack, index]);
    state.set(index, 'done');
    order.push(index);
  };
  for (const op of planned) visit(op.index, []);
  return order;
}
