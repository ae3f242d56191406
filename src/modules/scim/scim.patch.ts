import type { ScimType } from '../../errors.js';
import { scimBadRequest } from './scim.errors.js';
import {
  type FilterNode,
  type ResolvedAttribute,
  checkValueFilter,
  matchesValue,
  parsePatchPath,
  resolvePath,
} from './scim.filter.js';
import {
  type AttributeDef,
  PATCH_OP_SCHEMA,
  type ResourceDef,
  type SchemaDef,
  findAttribute,
  findSchema,
} from './scim.schemas.js';

/**
 * PATCH (RFC 7644 §3.5.2) applied to a resource's JSON representation: the service loads the resource, applies
 * every operation here (all or nothing), then validates and stores the result exactly as it would a PUT.
 *
 * Besides the RFC, it accepts what real clients send:
 * - Microsoft Entra ID: ops `Add`/`Replace`/`Remove` in any case; booleans as "True"/"False"; a path-less
 *   replace whose keys are paths (`name.givenName`, `emails[type eq "work"].value`, `urn:…:User:department`);
 *   `add`/`replace` through a value filter that matches nothing creates the value the filter describes;
 *   `remove` of `members` with a `value` list removes just those members; `manager` given as a bare id.
 * - Okta: a path-less replace of `{active: false}` or `{password}`, and `{id, displayName}` on groups (an id
 *   equal to the resource's own is ignored).
 */

export type JsonObject = Record<string, unknown>;

export interface PatchOperation {
  op: 'add' | 'remove' | 'replace';
  path?: string;
  value?: unknown;
}

export interface PatchResult {
  resource: JsonObject;
  /** A new password (string), removal of the password (null), or no change (undefined). */
  password?: string | null;
}

/** More operations in one PATCH are refused (400 tooMany): every one is applied in memory before writing. */
export const MAX_PATCH_OPERATIONS = 1000;

function fail(scimType: ScimType, message: string): never {
  throw scimBadRequest(message, scimType);
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A member of an object by case-insensitive name (SCIM attribute and message names are case-insensitive). */
export function member(object: JsonObject, name: string): unknown {
  if (name in object) return object[name];
  const wanted = name.toLowerCase();
  const key = Object.keys(object).find((k) => k.toLowerCase() === wanted);
  return key === undefined ? undefined : object[key];
}

/** Validates a PatchOp message and returns its operations with the op names lower-cased. */
export function parsePatchRequest(body: unknown): PatchOperation[] {
  if (!isObject(body)) fail('invalidSyntax', 'The request body must be a PatchOp object');
  const schemas = member(body, 'schemas');
  if (
    !Array.isArray(schemas) ||
    !schemas.some((s) => typeof s === 'string' && s.toLowerCase() === PATCH_OP_SCHEMA.toLowerCase())
  ) {
    fail('invalidValue', `schemas must include ${PATCH_OP_SCHEMA}`);
  }
  const operations = member(body, 'Operations');
  if (!Array.isArray(operations) || operations.length === 0)
    fail('invalidValue', 'Operations must be a non-empty array');
  if (operations.length > MAX_PATCH_OPERATIONS) {
    fail('tooMany', `A PATCH may carry at most ${MAX_PATCH_OPERATIONS} operations`);
  }
  return operations.map((operation, i) => {
    if (!isObject(operation)) fail('invalidSyntax', `Operations[${i}] must be an object`);
    const op = member(operation, 'op');
    const name = typeof op === 'string' ? op.toLowerCase() : '';
    if (name !== 'add' && name !== 'remove' && name !== 'replace') {
      fail('invalidSyntax', `Operations[${i}].op must be add, remove or replace`);
    }
    const path = member(operation, 'path');
    if (path !== undefined && path !== null && typeof path !== 'string')
      fail('invalidPath', `Operations[${i}].path must be a string`);
    const value = member(operation, 'value');
    return {
      op: name,
      ...(typeof path === 'string' && path.trim() !== '' && { path: path.trim() }),
      ...(value !== undefined && { value }),
    };
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Coercion of client values to an attribute's type (names canonicalized, unknown sub-attributes dropped)

const BOOLEAN_STRINGS: Record<string, boolean> = { true: true, false: false };

/** A single (not multi-valued) value of `def`, or null for "unassigned". */
export function coerceValue(def: AttributeDef, value: unknown, where: string): unknown {
  if (value === null || value === undefined) return null;
  switch (def.type) {
    case 'boolean': {
      if (typeof value === 'boolean') return value;
      // Entra ID sends "True"/"False" for booleans in PATCH.
      const parsed = typeof value === 'string' ? BOOLEAN_STRINGS[value.trim().toLowerCase()] : undefined;
      if (parsed === undefined) fail('invalidValue', `${where} must be a boolean`);
      return parsed;
    }
    case 'complex': {
      // Entra ID sends the enterprise manager as a bare id string.
      const valueDef = findAttribute(def.subAttributes ?? [], 'value');
      if (typeof value === 'string' && valueDef) return value === '' ? null : { [valueDef.name]: value };
      if (!isObject(value)) fail('invalidValue', `${where} must be an object`);
      const result: JsonObject = {};
      for (const [key, raw] of Object.entries(value)) {
        const sub = findAttribute(def.subAttributes ?? [], key);
        if (!sub) continue;
        const coerced = coerceValue(sub, raw, `${where}.${sub.name}`);
        if (coerced !== null) result[sub.name] = coerced;
      }
      return Object.keys(result).length === 0 ? null : result;
    }
    case 'decimal':
    case 'integer':
      if (typeof value !== 'number' || !Number.isFinite(value)) fail('invalidValue', `${where} must be a number`);
      return value;
    default:
      if (typeof value === 'number' && Number.isFinite(value) && def.type === 'string') return String(value);
      if (typeof value !== 'string') fail('invalidValue', `${where} must be a string`);
      return value === '' ? null : value;
  }
}

/** A whole attribute value: an array of coerced values for multi-valued attributes (a lone object is wrapped). */
export function coerceAttribute(def: AttributeDef, value: unknown, where: string): unknown {
  if (!def.multiValued) return coerceValue(def, value, where);
  if (value === null || value === undefined) return null;
  const items = Array.isArray(value) ? value : [value];
  const result = items.map((item, i) => coerceValue(def, item, `${where}[${i}]`)).filter((v) => v !== null);
  return result.length === 0 ? null : result;
}

// ---------------------------------------------------------------------------------------------------------------
// Application

interface Target {
  resolved: ResolvedAttribute;
  filter: FilterNode | undefined;
  /** The sub-attribute after a value filter (`emails[type eq "work"].value`), or of a path (`name.givenName`). */
  sub: AttributeDef | undefined;
  text: string;
}

function resolveTarget(resource: ResourceDef, text: string): Target | { extension: SchemaDef } {
  const parsed = parsePatchPath(text);
  const resolved = resolvePath(resource, parsed.path);
  if (!resolved) fail('invalidPath', `No attribute '${parsed.path.text}' in a ${resource.name}`);
  if (resolved.kind === 'extension') {
    if (parsed.filter) fail('invalidPath', `'${text}' is a schema, not a multi-valued attribute`);
    return { extension: resolved.extension };
  }
  let sub = resolved.sub;
  if (parsed.filter) {
    if (!resolved.attribute.multiValued || resolved.attribute.type !== 'complex') {
      fail('invalidPath', `'${parsed.path.text}' is not a multi-valued complex attribute`);
    }
    checkValueFilter(parsed.filter, resolved.attribute.subAttributes ?? [], 'invalidPath');
    if (parsed.sub !== undefined) {
      sub = findAttribute(resolved.attribute.subAttributes ?? [], parsed.sub);
      if (!sub) fail('invalidPath', `No sub-attribute '${parsed.sub}' in ${resolved.attribute.name}`);
    }
  }
  return { resolved, filter: parsed.filter, sub, text };
}

/** Equality of two values of a multi-valued attribute, honouring caseExact (members compare by value alone). */
function sameValue(def: AttributeDef, a: JsonObject, b: JsonObject): boolean {
  const subs = def.subAttributes ?? [];
  const keyed = (o: JsonObject) =>
    JSON.stringify(
      subs
        .filter((s) => s.mutability !== 'readOnly' && (def.name !== 'members' || s.name === 'value'))
        .map((s) => {
          const v = o[s.name];
          return typeof v === 'string' && !s.caseExact ? v.toLowerCase() : (v ?? null);
        }),
    );
  return keyed(a) === keyed(b);
}

/** The value a filter of `eq` comparisons describes (`type eq "work"` → `{type: "work"}`), for add-by-filter. */
function describedBy(filter: FilterNode, subs: readonly AttributeDef[]): JsonObject | undefined {
  if (filter.op === 'eq' && filter.value !== null && filter.path.sub === undefined && filter.path.urn === undefined) {
    const def = findAttribute(subs, filter.path.attr);
    return def ? { [def.name]: filter.value } : undefined;
  }
  if (filter.op === 'and') {
    const parts = filter.filters.map((f) => describedBy(f, subs));
    return parts.every(Boolean) ? (Object.assign({}, ...parts) as JsonObject) : undefined;
  }
  return undefined;
}

class Patcher {
  readonly resource: JsonObject;
  password: string | null | undefined;

  constructor(
    private readonly def: ResourceDef,
    current: JsonObject,
  ) {
    this.resource = structuredClone(current);
  }

  apply(operation: PatchOperation): void {
    if (operation.path === undefined) {
      if (operation.op === 'remove') fail('invalidPath', 'remove needs a path (RFC 7644 §3.5.2.2)');
      if (!isObject(operation.value)) fail('invalidValue', `${operation.op} without a path needs an object value`);
      this.#applyObject(operation.op, operation.value);
      return;
    }
    const target = resolveTarget(this.def, operation.path);
    if ('extension' in target) {
      this.#applyExtension(operation.op, target.extension, operation.value);
      return;
    }
    this.#applyTarget(operation.op, target, operation.value);
  }

  /** A path-less add or replace: each member is an attribute, an extension, or (Entra ID) a path. */
  #applyObject(op: 'add' | 'replace', value: JsonObject): void {
    for (const [key, raw] of Object.entries(value)) {
      const lower = key.toLowerCase();
      if (lower === 'schemas' || lower === 'meta') continue;
      if (lower === 'id') {
        if (raw !== this.resource.id) fail('mutability', 'id is read-only');
        continue;
      }
      const extension = findSchema(this.def, key);
      if (extension && extension !== this.def.core) {
        this.#applyExtension(op, extension, raw);
        continue;
      }
      let target: Target | { extension: SchemaDef };
      try {
        target = resolveTarget(this.def, key);
      } catch {
        continue; // an attribute this service does not implement: ignored, as in POST and PUT
      }
      if ('extension' in target) this.#applyExtension(op, target.extension, raw);
      else this.#applyTarget(op, target, raw);
    }
  }

  #applyExtension(op: PatchOperation['op'], extension: SchemaDef, value: unknown): void {
    if (op === 'remove') {
      delete this.resource[extension.id];
      return;
    }
    if (!isObject(value)) fail('invalidValue', `${extension.id} must be an object`);
    for (const [key, raw] of Object.entries(value)) {
      const def = findAttribute(extension.attributes, key);
      if (!def) continue;
      this.#applyTarget(
        op,
        { resolved: this.#resolved(def, extension), filter: undefined, sub: undefined, text: key },
        raw,
      );
    }
  }

  #resolved(attribute: AttributeDef, extension: SchemaDef | undefined): ResolvedAttribute {
    return {
      kind: 'attribute',
      extension,
      attribute,
      sub: undefined,
      key: extension ? `${extension.id}:${attribute.name}` : attribute.name,
    };
  }

  /** The object holding the attribute: the resource, or its extension object (created when `create`). */
  #container(target: Target, create: boolean): JsonObject | undefined {
    const { extension } = target.resolved;
    if (!extension) return this.resource;
    const existing = this.resource[extension.id];
    if (isObject(existing)) return existing;
    if (!create) return undefined;
    const made: JsonObject = {};
    this.resource[extension.id] = made;
    return made;
  }

  #prune(target: Target): void {
    const { extension } = target.resolved;
    if (
      extension &&
      isObject(this.resource[extension.id]) &&
      Object.keys(this.resource[extension.id] as JsonObject).length === 0
    ) {
      delete this.resource[extension.id];
    }
  }

  #checkMutable(op: PatchOperation['op'], target: Target): void {
    const { attribute } = target.resolved;
    const sub = target.sub;
    if (attribute.mutability === 'readOnly' || sub?.mutability === 'readOnly') {
      fail('mutability', `${target.text} is read-only`);
    }
    if (sub?.mutability === 'immutable' && op !== 'add')
      fail('mutability', `${target.text} cannot be changed once set`);
  }

  #applyTarget(op: PatchOperation['op'], target: Target, value: unknown): void {
    this.#checkMutable(op, target);
    const { attribute } = target.resolved;
    if (attribute.mutability === 'writeOnly') {
      // The password never appears in the representation: it is handed to the service on its own.
      if (op === 'remove') this.password = null;
      else {
        const coerced = coerceValue(attribute, value, attribute.name);
        this.password = typeof coerced === 'string' ? coerced : null;
      }
      return;
    }
    if (attribute.multiValued) this.#multi(op, target, value);
    else if (attribute.type === 'complex') this.#complex(op, target, value);
    else this.#single(op, target, value);
    this.#prune(target);
  }

  #single(op: PatchOperation['op'], target: Target, value: unknown): void {
    const { attribute } = target.resolved;
    const container = this.#container(target, op !== 'remove');
    if (!container) return;
    const coerced = op === 'remove' ? null : coerceValue(attribute, value, target.text);
    if (coerced === null) delete container[attribute.name];
    else container[attribute.name] = coerced;
  }

  /** Single-valued complex (name, manager): a value merges sub-attributes; a sub-attribute path sets one. */
  #complex(op: PatchOperation['op'], target: Target, value: unknown): void {
    const { attribute } = target.resolved;
    const container = this.#container(target, op !== 'remove');
    if (!container) return;
    const current = isObject(container[attribute.name]) ? { ...(container[attribute.name] as JsonObject) } : {};
    if (target.sub) {
      const coerced = op === 'remove' ? null : coerceValue(target.sub, value, target.text);
      if (coerced === null) delete current[target.sub.name];
      else current[target.sub.name] = coerced;
    } else if (op === 'remove') {
      delete container[attribute.name];
      return;
    } else {
      const coerced = coerceValue(attribute, value, target.text);
      // replace of a complex attribute leaves sub-attributes it does not name unchanged (§3.5.2.3); null clears.
      if (coerced === null) {
        delete container[attribute.name];
        return;
      }
      Object.assign(current, coerced);
    }
    if (Object.keys(current).length === 0) delete container[attribute.name];
    else container[attribute.name] = current;
  }

  #multi(op: PatchOperation['op'], target: Target, value: unknown): void {
    const { attribute } = target.resolved;
    const subs = attribute.subAttributes ?? [];
    const container = this.#container(target, op !== 'remove');
    if (!container) return;
    const values = (
      Array.isArray(container[attribute.name]) ? [...(container[attribute.name] as JsonObject[])] : []
    ).map((v) => ({ ...v }));
    const touched = new Set<JsonObject>();
    const { filter, sub } = target;

    if (!filter && !sub) {
      if (op === 'remove') {
        if (value === undefined || value === null) {
          values.length = 0;
        } else {
          // Entra ID: remove members with a value list removes those members only.
          const doomed = (coerceAttribute(attribute, value, target.text) as JsonObject[] | null) ?? [];
          for (let i = values.length - 1; i >= 0; i--) {
            if (doomed.some((d) => Object.entries(d).every(([k, v]) => this.#equalSub(subs, k, values[i]![k], v)))) {
              values.splice(i, 1);
            }
          }
        }
      } else {
        const incoming = (coerceAttribute(attribute, value, target.text) as JsonObject[] | null) ?? [];
        if (op === 'replace') values.length = 0;
        for (const item of incoming) {
          const existing = values.find((v) => sameValue(attribute, v, item));
          if (existing) touched.add(existing);
          else {
            values.push(item);
            touched.add(item);
          }
        }
      }
    } else if (!filter && sub) {
      // `emails.type` without a filter: every value (RFC 7644 leaves this open; one value is the usual case).
      const coerced = op === 'remove' ? null : coerceValue(sub, value, target.text);
      if (values.length === 0 && coerced !== null) values.push({});
      for (const v of values) {
        if (coerced === null) delete v[sub.name];
        else v[sub.name] = coerced;
        touched.add(v);
      }
    } else {
      const matches = values.filter((v) => matchesValue(v, filter!, subs));
      if (op === 'remove') {
        for (const m of matches) {
          if (sub) delete m[sub.name];
          else values.splice(values.indexOf(m), 1);
        }
      } else {
        const coerced = sub ? coerceValue(sub, value, target.text) : coerceValue(attribute, value, target.text);
        if (matches.length === 0) {
          // Entra ID (and scim-patch) add, and replace, the value the filter describes when none matches.
          const described = describedBy(filter!, subs);
          if (!described) fail('invalidPath', `No value of ${attribute.name} matches '${target.text}'`);
          const created: JsonObject = {
            ...described,
            ...(sub ? (coerced === null ? {} : { [sub.name]: coerced }) : (coerced as JsonObject | null)),
          };
          values.push(created);
          touched.add(created);
        } else {
          for (const m of matches) {
            if (sub) {
              if (coerced === null) delete m[sub.name];
              else m[sub.name] = coerced;
            } else if (op === 'replace') {
              for (const key of Object.keys(m)) delete m[key];
              Object.assign(m, coerced ?? {});
            } else {
              Object.assign(m, coerced ?? {});
            }
            touched.add(m);
          }
        }
      }
    }

    // A value made primary takes the flag from every other value (RFC 7643 §2.4: at most one primary).
    const primary = findAttribute(subs, 'primary');
    if (primary && [...touched].some((v) => v.primary === true)) {
      for (const v of values) if (!touched.has(v) && v.primary === true) v.primary = false;
    }
    const kept = values.filter((v) => Object.keys(v).length > 0);
    if (kept.length === 0) delete container[attribute.name];
    else container[attribute.name] = kept;
  }

  #equalSub(subs: readonly AttributeDef[], key: string, actual: unknown, wanted: unknown): boolean {
    const def = subs.find((s) => s.name === key);
    if (typeof actual === 'string' && typeof wanted === 'string' && def && !def.caseExact) {
      return actual.toLowerCase() === wanted.toLowerCase();
    }
    return actual === wanted;
  }
}

/** Applies PatchOp operations in order to a copy of `current`; any failure leaves nothing applied. */
export function applyPatch(def: ResourceDef, current: JsonObject, operations: PatchOperation[]): PatchResult {
  const patcher = new Patcher(def, current);
  for (const operation of operations) patcher.apply(operation);
  return {
    resource: patcher.resource,
    ...(patcher.password !== undefined && { password: patcher.password }),
  };
}
