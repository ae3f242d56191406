import type { ScimType } from '../../errors.js';
import { scimBadRequest } from './scim.errors.js';
import { passwordSchema } from '../users/index.js';
import type { LoadedGroup, LoadedUser } from './scim.store.js';
import type { ScimUserValueRow } from './scim.tables.js';
import { parseAttrPath, resolvePath } from './scim.filter.js';
import { type JsonObject, coerceAttribute, isObject, member } from './scim.patch.js';
import {
  type AttributeDef,
  ENTERPRISE_USER_SCHEMA,
  ENTERPRISE_USER_SCHEMA_DEF,
  GROUP_SCHEMA,
  type ResourceDef,
  USER_SCHEMA,
  USER_SCHEMA_DEF,
  findAttribute,
} from './scim.schemas.js';

/**
 * The two directions of a SCIM resource: a request body (or a patched representation) parsed and validated into
 * the state the store writes, and stored rows rendered as the JSON a client reads, narrowed by `attributes` and
 * `excludedAttributes` (RFC 7644 §3.9).
 */

export const MAX_USERNAME_LENGTH = 256;
export const MAX_STRING_LENGTH = 1024;
/** Values per multi-valued attribute (emails, phoneNumbers, …) of one user. */
export const MAX_VALUES = 100;

/** One value of a value/display/type/primary attribute (RFC 7643 §2.4). */
export interface MultiValue {
  value: string;
  display: string | null;
  type: string | null;
  /** null when the client did not say. */
  primary: boolean | null;
}

export interface Address {
  formatted: string | null;
  streetAddress: string | null;
  locality: string | null;
  region: string | null;
  postalCode: string | null;
  country: string | null;
  type: string | null;
  primary: boolean | null;
}

export const VALUE_ATTRIBUTES = [
  'emails',
  'phoneNumbers',
  'ims',
  'photos',
  'entitlements',
  'roles',
  'x509Certificates',
] as const;
export type ValueAttribute = (typeof VALUE_ATTRIBUTES)[number];

export interface UserName {
  formatted: string | null;
  familyName: string | null;
  givenName: string | null;
  middleName: string | null;
  honorificPrefix: string | null;
  honorificSuffix: string | null;
}

export const SIMPLE_USER_ATTRIBUTES = [
  'displayName',
  'nickName',
  'profileUrl',
  'title',
  'userType',
  'preferredLanguage',
  'locale',
  'timezone',
] as const;
export type SimpleUserAttribute = (typeof SIMPLE_USER_ATTRIBUTES)[number];

export const ENTERPRISE_ATTRIBUTES = [
  'employeeNumber',
  'costCenter',
  'organization',
  'division',
  'department',
] as const;
export type EnterpriseAttribute = (typeof ENTERPRISE_ATTRIBUTES)[number];

/** A User as the store writes it. */
export interface UserState {
  userName: string;
  externalId: string | null;
  name: UserName;
  simple: Record<SimpleUserAttribute, string | null>;
  /** undefined when the body left it out (POST defaults it to true, PUT keeps what is stored). */
  active: boolean | undefined;
  values: Record<ValueAttribute, MultiValue[]>;
  addresses: Address[];
  enterprise: Record<EnterpriseAttribute, string | null>;
  managerId: string | null;
  /** undefined: not given; a string: the new password (validated, not yet hashed). */
  password: string | undefined;
}

export interface GroupState {
  displayName: string;
  externalId: string | null;
  /** User ids, without duplicates, as sent. */
  members: string[];
}

function invalid(message: string, scimType: ScimType = 'invalidValue'): never {
  throw scimBadRequest(message, scimType);
}

// Control characters are refused (NUL cannot even be stored in PostgreSQL text), but for the line breaks and
// tabs a formatted address holds (RFC 7643 §4.1.2 shows one); userName admits none at all.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;
// eslint-disable-next-line no-control-regex
const ANY_CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

function text(value: unknown, where: string, max = MAX_STRING_LENGTH, controls = CONTROL): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'string') invalid(`${where} must be a string`);
  if (value.length > max) invalid(`${where} must be at most ${max} characters`);
  if (controls.test(value)) invalid(`${where} must not contain control characters`);
  return value;
}

function flag(value: unknown): boolean | null {
  return typeof value === 'boolean' ? value : null;
}

function hasSchema(body: JsonObject, urn: string): boolean {
  const schemas = member(body, 'schemas');
  return Array.isArray(schemas) && schemas.some((s) => typeof s === 'string' && s.toLowerCase() === urn.toLowerCase());
}

function attributeOf(defs: readonly AttributeDef[], name: string): AttributeDef {
  const def = findAttribute(defs, name);
  if (!def) throw new Error(`schema has no attribute ${name}`);
  return def;
}

/** The coerced value of an attribute read case-insensitively from an object. */
function read(object: JsonObject, defs: readonly AttributeDef[], name: string): unknown {
  const def = attributeOf(defs, name);
  return coerceAttribute(def, member(object, def.name), def.name);
}

// A deliberately plain check: identity providers send addresses their own directory accepted.
const EMAIL = /^[^\s@]+@[^\s@]+$/;

function multiValues(list: unknown, attribute: ValueAttribute): MultiValue[] {
  if (list === null) return [];
  const items = list as JsonObject[];
  if (items.length > MAX_VALUES) invalid(`${attribute} may have at most ${MAX_VALUES} values`);
  let primaries = 0;
  const result = items.map((item, i) => {
    const where = `${attribute}[${i}]`;
    const value = text(item.value, `${where}.value`, attribute === 'x509Certificates' ? 16_384 : MAX_STRING_LENGTH);
    if (value === null) invalid(`${where}.value is required`);
    if (attribute === 'emails' && (value.length > 254 || !EMAIL.test(value))) {
      invalid(`${where}.value is not an email address`);
    }
    const primary = flag(item.primary);
    if (primary) primaries++;
    return {
      value,
      display: text(item.display, `${where}.display`),
      type: text(item.type, `${where}.type`, 256),
      primary,
    };
  });
  if (primaries > 1) invalid(`At most one of ${attribute} may be primary`);
  return result;
}

function addresses(list: unknown): Address[] {
  if (list === null) return [];
  const items = list as JsonObject[];
  if (items.length > MAX_VALUES) invalid(`addresses may have at most ${MAX_VALUES} values`);
  let primaries = 0;
  const result = items.map((item, i) => {
    const where = `addresses[${i}]`;
    const primary = flag(item.primary);
    if (primary) primaries++;
    return {
      formatted: text(item.formatted, `${where}.formatted`),
      streetAddress: text(item.streetAddress, `${where}.streetAddress`),
      locality: text(item.locality, `${where}.locality`),
      region: text(item.region, `${where}.region`),
      postalCode: text(item.postalCode, `${where}.postalCode`),
      country: text(item.country, `${where}.country`),
      type: text(item.type, `${where}.type`, 256),
      primary,
    };
  });
  if (primaries > 1) invalid('At most one of addresses may be primary');
  return result;
}

/**
 * Parses a User body (POST, PUT, a patched representation). Attribute names are case-insensitive; read-only
 * attributes (id, meta, groups) and attributes this service does not implement are ignored (RFC 7644 §3.3).
 * 400 invalidValue for a missing core schema, a missing userName or a value of the wrong type.
 */
export function parseUser(body: unknown): UserState {
  if (!isObject(body)) invalid('The request body must be a User object', 'invalidSyntax');
  if (!hasSchema(body, USER_SCHEMA)) invalid(`schemas must include ${USER_SCHEMA}`);
  const core = USER_SCHEMA_DEF.attributes;
  const userName = text(read(body, core, 'userName'), 'userName', MAX_USERNAME_LENGTH, ANY_CONTROL);
  if (userName === null) invalid('userName is required');
  if (userName.trim() !== userName) invalid('userName must not start or end with whitespace');

  const name = (read(body, core, 'name') as JsonObject | null) ?? {};
  const enterprise = member(body, ENTERPRISE_USER_SCHEMA);
  const ext: JsonObject = isObject(enterprise) ? enterprise : {};
  const extDefs = ENTERPRISE_USER_SCHEMA_DEF.attributes;
  const manager = read(ext, extDefs, 'manager') as JsonObject | null;

  const passwordValue = member(body, 'password');
  let password: string | undefined;
  if (passwordValue !== undefined && passwordValue !== null) {
    if (typeof passwordValue !== 'string') invalid('password must be a string');
    const checked = passwordSchema.safeParse(passwordValue);
    if (!checked.success) invalid(`password ${checked.error.issues[0]?.message ?? 'is not acceptable'}`);
    password = passwordValue;
  }
  const active = read(body, core, 'active');
  const externalId = member(body, 'externalId');

  return {
    userName,
    externalId: text(typeof externalId === 'number' ? String(externalId) : externalId, 'externalId'),
    name: {
      formatted: text(name.formatted, 'name.formatted'),
      familyName: text(name.familyName, 'name.familyName'),
      givenName: text(name.givenName, 'name.givenName'),
      middleName: text(name.middleName, 'name.middleName'),
      honorificPrefix: text(name.honorificPrefix, 'name.honorificPrefix'),
      honorificSuffix: text(name.honorificSuffix, 'name.honorificSuffix'),
    },
    simple: Object.fromEntries(
      SIMPLE_USER_ATTRIBUTES.map((a) => [
        a,
        text(read(body, core, a), a, a === 'profileUrl' ? 2048 : MAX_STRING_LENGTH),
      ]),
    ) as Record<SimpleUserAttribute, string | null>,
    active: typeof active === 'boolean' ? active : undefined,
    values: Object.fromEntries(VALUE_ATTRIBUTES.map((a) => [a, multiValues(read(body, core, a), a)])) as Record<
      ValueAttribute,
      MultiValue[]
    >,
    addresses: addresses(read(body, core, 'addresses')),
    enterprise: Object.fromEntries(
      ENTERPRISE_ATTRIBUTES.map((a) => [a, text(read(ext, extDefs, a), `${ENTERPRISE_USER_SCHEMA}:${a}`)]),
    ) as Record<EnterpriseAttribute, string | null>,
    managerId: text(manager?.value, `${ENTERPRISE_USER_SCHEMA}:manager.value`, 256),
    password,
  };
}

/** Parses a Group body. Members must be Users (nested groups are not supported): 400 invalidValue otherwise. */
export function parseGroup(body: unknown): GroupState {
  if (!isObject(body)) invalid('The request body must be a Group object', 'invalidSyntax');
  if (!hasSchema(body, GROUP_SCHEMA)) invalid(`schemas must include ${GROUP_SCHEMA}`);
  const displayName = text(member(body, 'displayName'), 'displayName', 256);
  if (displayName === null || displayName.trim() === '') invalid('displayName is required');
  const rawExternalId = member(body, 'externalId');
  const externalId = text(typeof rawExternalId === 'number' ? String(rawExternalId) : rawExternalId, 'externalId');
  const rawMembers = member(body, 'members');
  if (rawMembers !== undefined && rawMembers !== null && !Array.isArray(rawMembers))
    invalid('members must be an array');
  const members: string[] = [];
  for (const [i, item] of ((rawMembers as unknown[] | null | undefined) ?? []).entries()) {
    if (!isObject(item)) invalid(`members[${i}] must be an object`);
    const value = member(item, 'value');
    if (typeof value !== 'string' || value === '') invalid(`members[${i}].value must be a User id`);
    const type = member(item, 'type');
    if (type !== undefined && type !== null && (typeof type !== 'string' || type.toLowerCase() !== 'user')) {
      invalid(`members[${i}]: only Users can be members (nested groups are not supported)`);
    }
    const id = value.toLowerCase();
    if (!members.includes(id)) members.push(id);
  }
  return { displayName, externalId, members };
}

// ---------------------------------------------------------------------------------------------------------------
// Projection (RFC 7644 §3.9): which attributes a response carries

interface Selection {
  /** Top-level keys (`userName`, `emails`, an extension URN) → sub-attribute names, or `true` for all of it. */
  keys: Map<string, Set<string> | true>;
}

function select(resource: ResourceDef, paths: string[]): Selection {
  const keys = new Map<string, Set<string> | true>();
  const add = (key: string, sub?: string) => {
    const existing = keys.get(key);
    if (sub === undefined) keys.set(key, true);
    else if (existing !== true) keys.set(key, (existing ?? new Set()).add(sub));
  };
  for (const raw of paths) {
    let path;
    try {
      path = parseAttrPath(raw.trim(), (message) => invalid(message));
    } catch {
      continue; // not an attribute path of ours: nothing to select (RFC 7644 gives no error for it)
    }
    const resolved = resolvePath(resource, path);
    if (!resolved) continue;
    if (resolved.kind === 'extension') {
      add(resolved.extension.id);
    } else if (resolved.extension) {
      add(
        resolved.extension.id,
        resolved.sub ? `${resolved.attribute.name}.${resolved.sub.name}` : resolved.attribute.name,
      );
    } else {
      add(resolved.attribute.name, resolved.sub?.name);
    }
  }
  return { keys };
}

/** The comma-separated attribute list of a query parameter. */
export function splitAttributes(value: string | string[] | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const list = (Array.isArray(value) ? value.join(',') : value)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return list.length > 0 ? list : undefined;
}

function pick(value: unknown, subs: Set<string>): unknown {
  const narrow = (o: JsonObject) => Object.fromEntries(Object.entries(o).filter(([k]) => subs.has(k)));
  if (Array.isArray(value)) {
    const items = (value as JsonObject[]).map(narrow).filter((o) => Object.keys(o).length > 0);
    return items.length > 0 ? items : undefined;
  }
  if (isObject(value)) {
    const narrowed = narrow(value);
    return Object.keys(narrowed).length > 0 ? narrowed : undefined;
  }
  return undefined;
}

function drop(value: unknown, subs: Set<string>): unknown {
  const narrow = (o: JsonObject) => Object.fromEntries(Object.entries(o).filter(([k]) => !subs.has(k)));
  if (Array.isArray(value)) return (value as JsonObject[]).map(narrow);
  return isObject(value) ? narrow(value) : value;
}

/** Attributes that are returned whatever the request asks (RFC 7643 §7 `returned: always`). */
const ALWAYS = new Set(['schemas', 'id']);

/** Applies `attributes` (only these, plus those always returned) or else `excludedAttributes`. */
export function project(
  resource: ResourceDef,
  json: JsonObject,
  attributes: string[] | undefined,
  excluded: string[] | undefined,
): JsonObject {
  if (attributes) {
    const { keys } = select(resource, attributes);
    const result: JsonObject = {};
    for (const [key, value] of Object.entries(json)) {
      const wanted = keys.get(key);
      if (ALWAYS.has(key) || wanted === true) result[key] = value;
      else if (wanted) {
        if (key.startsWith('urn:')) {
          // Extension: the selection names its attributes, possibly with a sub-attribute (`manager.value`).
          const ext = value as JsonObject;
          const narrowed: JsonObject = {};
          for (const name of wanted) {
            const [attr, sub] = name.split('.') as [string, string | undefined];
            if (!(attr in ext)) continue;
            const picked = sub === undefined ? ext[attr] : pick(ext[attr], new Set([sub]));
            if (picked !== undefined) narrowed[attr] = picked;
          }
          if (Object.keys(narrowed).length > 0) result[key] = narrowed;
        } else {
          const picked = pick(value, wanted);
          if (picked !== undefined) result[key] = picked;
        }
      }
    }
    return result;
  }
  if (excluded) {
    const { keys } = select(resource, excluded);
    const result: JsonObject = {};
    for (const [key, value] of Object.entries(json)) {
      const unwanted = keys.get(key);
      if (ALWAYS.has(key) || unwanted === undefined) result[key] = value;
      else if (unwanted !== true) {
        if (key.startsWith('urn:')) {
          const ext = { ...(value as JsonObject) };
          for (const name of unwanted) {
            const [attr, sub] = name.split('.') as [string, string | undefined];
            if (sub === undefined) delete ext[attr];
            else if (attr in ext) ext[attr] = drop(ext[attr], new Set([sub]));
          }
          if (Object.keys(ext).length > 0) result[key] = ext;
        } else {
          result[key] = drop(value, unwanted);
        }
      }
    }
    return result;
  }
  return json;
}

/** Whether a selection can leave out an expensive attribute (a group's members, a user's groups). */
export function wants(
  resource: ResourceDef,
  name: string,
  attributes: string[] | undefined,
  excluded: string[] | undefined,
): boolean {
  if (attributes) return select(resource, attributes).keys.has(name);
  if (excluded) return select(resource, excluded).keys.get(name) !== true;
  return true;
}

// ---------------------------------------------------------------------------------------------------------------
// Rendering stored rows as SCIM JSON

/** Drops null and undefined members, so unassigned attributes are left out (RFC 7643 §2.5). */
function compact(object: Record<string, unknown>): JsonObject | undefined {
  // A loop rather than entries/filter/fromEntries: this runs a dozen times for each user of a listed page.
  let result: JsonObject | undefined;
  for (const key in object) {
    const value = object[key];
    if (value !== null && value !== undefined) (result ??= {})[key] = value;
  }
  return result;
}

const asFlag = (value: number | null | undefined) => (value === null || value === undefined ? undefined : value === 1);

function renderValue(row: ScimUserValueRow): JsonObject {
  return compact({ value: row.value, display: row.display, type: row.type, primary: asFlag(row.primary_flag) })!;
}

/** The full representation of a user: every attribute but the password, as stored. */
export function renderUser(loaded: LoadedUser, baseUrl: string): JsonObject {
  const { user, scim: s } = loaded;
  const byAttribute = new Map<string, JsonObject[]>();
  for (const v of loaded.values) {
    const list = byAttribute.get(v.attribute);
    if (list) list.push(renderValue(v));
    else byAttribute.set(v.attribute, [renderValue(v)]);
  }
  const values = (attribute: string) => byAttribute.get(attribute) ?? [];
  const primaryEmail = user.email
    ? compact({ value: user.email, display: s?.email_display, type: s?.email_type, primary: asFlag(s?.email_primary) })
    : undefined;
  const emails = [...(primaryEmail ? [primaryEmail] : []), ...values('emails')];
  const list = (items: JsonObject[]) => (items.length > 0 ? items : undefined);
  const enterprise = compact({
    employeeNumber: s?.employee_number,
    costCenter: s?.cost_center,
    organization: s?.organization,
    division: s?.division,
    department: s?.department,
    manager: s?.manager_id
      ? compact({
          value: s.manager_id,
          $ref: loaded.manager ? `${baseUrl}/Users/${loaded.manager.id}` : undefined,
          displayName: loaded.manager?.displayName,
        })
      : undefined,
  });
  return compact({
    schemas: enterprise ? [USER_SCHEMA, ENTERPRISE_USER_SCHEMA] : [USER_SCHEMA],
    id: user.id,
    externalId: s?.external_id,
    userName: user.username,
    name: compact({
      formatted: user.name,
      familyName: s?.family_name,
      givenName: s?.given_name,
      middleName: s?.middle_name,
      honorificPrefix: s?.honorific_prefix,
      honorificSuffix: s?.honorific_suffix,
    }),
    displayName: s?.display_name,
    nickName: s?.nick_name,
    profileUrl: s?.profile_url,
    title: s?.title,
    userType: s?.user_type,
    preferredLanguage: s?.preferred_language,
    locale: s?.locale,
    timezone: s?.timezone,
    active: user.active,
    emails: list(emails),
    phoneNumbers: list(values('phoneNumbers')),
    ims: list(values('ims')),
    photos: list(values('photos')),
    addresses: list(
      loaded.addresses.map(
        (a) =>
          compact({
            formatted: a.formatted,
            streetAddress: a.street_address,
            locality: a.locality,
            region: a.region,
            postalCode: a.postal_code,
            country: a.country,
            type: a.type,
            primary: asFlag(a.primary_flag),
          }) ?? {},
      ),
    ),
    groups: list(
      loaded.groups.map((g) => ({
        value: g.id,
        $ref: `${baseUrl}/Groups/${g.id}`,
        display: g.display,
        type: 'direct',
      })),
    ),
    entitlements: list(values('entitlements')),
    roles: list(values('roles')),
    x509Certificates: list(values('x509Certificates')),
    [ENTERPRISE_USER_SCHEMA]: enterprise,
    meta: {
      resourceType: 'User',
      created: user.createdAt,
      lastModified: user.updatedAt,
      location: `${baseUrl}/Users/${user.id}`,
    },
  })!;
}

export function renderGroup(loaded: LoadedGroup, baseUrl: string): JsonObject {
  const { group, scim } = loaded;
  return compact({
    schemas: [GROUP_SCHEMA],
    id: group.id,
    externalId: scim?.external_id,
    displayName: scim?.display_name ?? group.name,
    members:
      loaded.members && loaded.members.length > 0
        ? loaded.members.map((m) => ({
            value: m.id,
            display: m.display,
            $ref: `${baseUrl}/Users/${m.id}`,
            type: 'User',
          }))
        : undefined,
    meta: {
      resourceType: 'Group',
      created: group.created_at,
      lastModified: group.updated_at,
      location: `${baseUrl}/Groups/${group.id}`,
    },
  })!;
}
