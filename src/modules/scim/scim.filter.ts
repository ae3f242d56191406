import { type RawBuilder, type SqlBool, sql } from 'kysely';
import type { ScimType } from '../../errors.js';
import { scimBadRequest } from './scim.errors.js';
import { type AttributeDef, type ResourceDef, type SchemaDef, findAttribute, findSchema } from './scim.schemas.js';

/**
 * SCIM filters (RFC 7644 §3.4.2.2) and PATCH paths (§3.5.2): one tokenizer and parser for both, an AST, a
 * resolver that checks every attribute against the resource's schemas, a matcher for the values of one
 * multi-valued attribute (PATCH value filters), and a compiler from the AST to one SQL predicate, so that
 * filtering happens in the database, through its indexes, never by loading resources into memory.
 */

/** Longer filters, deeper nesting or more comparisons are refused (400 tooMany) before any SQL is built. */
export const MAX_FILTER_LENGTH = 4096;
export const MAX_FILTER_TERMS = 64;
export const MAX_FILTER_DEPTH = 16;

export type CompareOp = 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'gt' | 'ge' | 'lt' | 'le';
export type Literal = string | number | boolean | null;

/** `[urn:…:]attr[.sub]` as written (names are matched case-insensitively when resolved). */
export interface AttrPath {
  urn?: string;
  attr: string;
  sub?: string;
  text: string;
}

export type FilterNode =
  | { op: CompareOp; path: AttrPath; value: Literal }
  | { op: 'pr'; path: AttrPath }
  | { op: 'and' | 'or'; filters: FilterNode[] }
  | { op: 'not'; filter: FilterNode }
  | { op: '[]'; path: AttrPath; filter: FilterNode };

/** A PATCH path: `attrPath`, `attrPath[valFilter]` or `attrPath[valFilter].subAttr` (RFC 7644 §3.5.2). */
export interface PatchPath {
  path: AttrPath;
  filter?: FilterNode;
  sub?: string;
}

const COMPARE_OPS = new Set<string>(['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le']);
const NAME = /^[A-Za-z$][A-Za-z0-9_$-]*$/;

type Token =
  | { kind: 'word'; text: string; at: number }
  | { kind: 'string'; value: string; at: number }
  | { kind: 'number'; value: number; at: number }
  | { kind: '(' | ')' | '[' | ']' | 'end'; at: number };

function failure(scimType: ScimType) {
  return (message: string): never => {
    throw scimBadRequest(message, scimType);
  };
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const WORD = /[A-Za-z$_.][A-Za-z0-9$_.:-]*/y;

function tokenize(input: string, fail: (message: string) => never): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < input.length) {
    const c = input[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '(' || c === ')' || c === '[' || c === ']') {
      tokens.push({ kind: c, at: i });
      i++;
    } else if (c === '"') {
      let j = i + 1;
      while (j < input.length && input[j] !== '"') j += input[j] === '\\' ? 2 : 1;
      if (j >= input.length) fail(`Unterminated string starting at position ${i + 1}`);
      let value = '';
      try {
        value = JSON.parse(input.slice(i, j + 1)) as string;
      } catch {
        fail(`Invalid string at position ${i + 1}`);
      }
      // PostgreSQL text cannot hold NUL: refuse it here rather than fail in the database.
      if (value.includes('\u0000')) fail(`Invalid string at position ${i + 1}`);
      tokens.push({ kind: 'string', value, at: i });
      i = j + 1;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      NUMBER.lastIndex = i;
      const match = NUMBER.exec(input);
      if (!match) fail(`Invalid number at position ${i + 1}`);
      tokens.push({ kind: 'number', value: Number(match[0]), at: i });
      i += match[0].length;
    } else {
      WORD.lastIndex = i;
      const match = WORD.exec(input);
      if (!match) fail(`Unexpected character '${c}' at position ${i + 1}`);
      tokens.push({ kind: 'word', text: match[0], at: i });
      i += match[0].length;
    }
  }
  tokens.push({ kind: 'end', at: input.length });
  return tokens;
}

/** Splits `urn:…:attr.sub` at the last colon (ATTRNAME cannot hold one) and checks the names. */
export function parseAttrPath(text: string, fail: (message: string) => never): AttrPath {
  const colon = text.lastIndexOf(':');
  const urn = colon >= 0 ? text.slice(0, colon) : undefined;
  const parts = text.slice(colon + 1).split('.');
  if (urn !== undefined && !/^urn:[A-Za-z0-9][A-Za-z0-9-]*:\S+$/i.test(urn)) fail(`Invalid attribute path '${text}'`);
  if (parts.length > 2 || !parts.every((p) => NAME.test(p))) fail(`Invalid attribute path '${text}'`);
  return { ...(urn !== undefined && { urn }), attr: parts[0]!, ...(parts[1] !== undefined && { sub: parts[1] }), text };
}

class Parser {
  #pos = 0;
  #terms = 0;
  #depth = 0;
  #inValuePath = false;

  constructor(
    private readonly tokens: Token[],
    private readonly fail: (message: string) => never,
    private readonly tooMany: (message: string) => never,
  ) {}

  // A method, not a getter: TypeScript would keep a narrowing of the current token across advances.
  #peek(): Token {
    return this.tokens[this.#pos]!;
  }

  #isWord(...words: string[]): boolean {
    const t = this.#peek();
    return t.kind === 'word' && words.includes(t.text.toLowerCase());
  }

  #expect(kind: Token['kind'], what: string): void {
    if (this.#peek().kind !== kind) this.fail(`Expected ${what} at position ${this.#peek().at + 1}`);
    this.#pos++;
  }

  expectEnd(): void {
    if (this.#peek().kind !== 'end') this.fail(`Unexpected input at position ${this.#peek().at + 1}`);
  }

  /** or binds loosest, then and, then not and parentheses (RFC 7644 §3.4.2.2 precedence). */
  or(): FilterNode {
    const filters = [this.and()];
    while (this.#isWord('or')) {
      this.#pos++;
      filters.push(this.and());
    }
    return filters.length === 1 ? filters[0]! : { op: 'or', filters };
  }

  and(): FilterNode {
    const filters = [this.unary()];
    while (this.#isWord('and')) {
      this.#pos++;
      filters.push(this.unary());
    }
    return filters.length === 1 ? filters[0]! : { op: 'and', filters };
  }

  unary(): FilterNode {
    if (++this.#depth > MAX_FILTER_DEPTH) this.tooMany(`Filter is nested more than ${MAX_FILTER_DEPTH} levels deep`);
    try {
      return this.#unary();
    } finally {
      this.#depth--;
    }
  }

  #unary(): FilterNode {
    const token = this.#peek();
    if (this.#isWord('not') && this.tokens[this.#pos + 1]?.kind === '(') {
      this.#pos += 2;
      const filter = this.or();
      this.#expect(')', "')'");
      return { op: 'not', filter };
    }
    if (token.kind === '(') {
      this.#pos++;
      const filter = this.or();
      this.#expect(')', "')'");
      return filter;
    }
    if (token.kind !== 'word' || token.text.startsWith('.')) {
      return this.fail(`Expected an attribute, 'not' or '(' at position ${token.at + 1}`);
    }
    const path = parseAttrPath(token.text, this.fail);
    this.#pos++;
    if (this.#peek().kind === '[') {
      if (this.#inValuePath) this.fail(`Value filters cannot be nested (position ${this.#peek().at + 1})`);
      this.#pos++;
      this.#inValuePath = true;
      const filter = this.or();
      this.#inValuePath = false;
      this.#expect(']', "']'");
      return { op: '[]', path, filter };
    }
    const opToken = this.#peek();
    const op = opToken.kind === 'word' ? opToken.text.toLowerCase() : '';
    if (++this.#terms > MAX_FILTER_TERMS) this.tooMany(`Filter has more than ${MAX_FILTER_TERMS} comparisons`);
    if (op === 'pr') {
      this.#pos++;
      return { op: 'pr', path };
    }
    if (!COMPARE_OPS.has(op))
      return this.fail(`Expected an operator after '${path.text}' at position ${opToken.at + 1}`);
    this.#pos++;
    return { op: op as CompareOp, path, value: this.#literal() };
  }

  #literal(): Literal {
    const token = this.#peek();
    this.#pos++;
    if (token.kind === 'string' || token.kind === 'number') return token.value;
    if (token.kind === 'word') {
      const word = token.text.toLowerCase();
      if (word === 'true') return true;
      if (word === 'false') return false;
      if (word === 'null') return null;
    }
    return this.fail(`Expected a value (string, number, true, false or null) at position ${token.at + 1}`);
  }

  patchPath(): PatchPath {
    const token = this.#peek();
    if (token.kind !== 'word' || token.text.startsWith('.')) return this.fail('Expected an attribute path');
    const path = parseAttrPath(token.text, this.fail);
    this.#pos++;
    if (this.#peek().kind !== '[') return { path };
    if (path.sub !== undefined) this.fail(`A value filter follows a multi-valued attribute, not '${path.text}'`);
    this.#pos++;
    this.#inValuePath = true;
    const filter = this.or();
    this.#expect(']', "']'");
    const next = this.#peek();
    if (next.kind === 'word' && next.text.startsWith('.')) {
      const sub = next.text.slice(1);
      if (!NAME.test(sub)) this.fail(`Invalid sub-attribute '${sub}'`);
      this.#pos++;
      return { path, filter, sub };
    }
    return { path, filter };
  }
}

/** Parses a filter; 400 invalidFilter on bad syntax, 400 tooMany when it is too long or too complex. */
export function parseFilter(input: string): FilterNode {
  const fail = failure('invalidFilter');
  const tooMany = failure('tooMany');
  if (input.length > MAX_FILTER_LENGTH) tooMany(`Filter is longer than ${MAX_FILTER_LENGTH} characters`);
  if (input.trim() === '') fail('Filter is empty');
  const parser = new Parser(tokenize(input, fail), fail, tooMany);
  const filter = parser.or();
  parser.expectEnd();
  return filter;
}

/** Parses a PATCH path; 400 invalidPath on bad syntax. */
export function parsePatchPath(input: string): PatchPath {
  const fail = failure('invalidPath');
  if (input.length > MAX_FILTER_LENGTH) fail(`Path is longer than ${MAX_FILTER_LENGTH} characters`);
  const parser = new Parser(tokenize(input, fail), fail, failure('tooMany'));
  const path = parser.patchPath();
  parser.expectEnd();
  return path;
}

// ---------------------------------------------------------------------------------------------------------------
// Resolution against the schemas

export interface ResolvedAttribute {
  kind: 'attribute';
  /** The extension schema holding the attribute; undefined for core and common attributes. */
  extension: SchemaDef | undefined;
  attribute: AttributeDef;
  sub: AttributeDef | undefined;
  /** Canonical top-level key: `name`, `emails`, `urn:…:enterprise:2.0:User:manager`. */
  key: string;
}

/** A path naming an extension schema as a whole (`urn:…:enterprise:2.0:User`), as PATCH may. */
export interface ResolvedExtension {
  kind: 'extension';
  extension: SchemaDef;
}

/** What an attribute path names in a resource, or undefined when it names nothing there. */
export function resolvePath(resource: ResourceDef, path: AttrPath): ResolvedAttribute | ResolvedExtension | undefined {
  let schema: SchemaDef | undefined = resource.core;
  let pool: AttributeDef[] = [...resource.core.attributes, ...resource.common];
  if (path.urn !== undefined) {
    schema = findSchema(resource, path.urn);
    if (!schema) {
      const whole = findSchema(resource, `${path.urn}:${path.attr}`);
      return whole && path.sub === undefined && whole !== resource.core
        ? { kind: 'extension', extension: whole }
        : undefined;
    }
    pool = schema === resource.core ? pool : schema.attributes;
  }
  const attribute = findAttribute(pool, path.attr);
  if (!attribute) return undefined;
  let sub: AttributeDef | undefined;
  if (path.sub !== undefined) {
    sub = findAttribute(attribute.subAttributes ?? [], path.sub);
    if (!sub) return undefined;
  }
  const extension = schema === resource.core ? undefined : schema;
  return {
    kind: 'attribute',
    extension,
    attribute,
    sub,
    key: extension ? `${extension.id}:${attribute.name}` : attribute.name,
  };
}

function resolveForFilter(resource: ResourceDef, path: AttrPath): ResolvedAttribute {
  const resolved = resolvePath(resource, path);
  if (resolved?.kind !== 'attribute') {
    throw scimBadRequest(`Unknown attribute '${path.text}' in filter`, 'invalidFilter');
  }
  return resolved;
}

/** A sub-attribute named inside a value filter (`emails[type eq "work"]`): relative, one level, no URN. */
function resolveRelative(subAttributes: readonly AttributeDef[], path: AttrPath, scimType: ScimType): AttributeDef {
  const found = path.urn === undefined && path.sub === undefined ? findAttribute(subAttributes, path.attr) : undefined;
  if (!found) throw scimBadRequest(`Unknown sub-attribute '${path.text}' in value filter`, scimType);
  return found;
}

// ---------------------------------------------------------------------------------------------------------------
// Operand checks shared by the matcher and the compiler

const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})$/i;

type Operand =
  | { kind: 'null' }
  | { kind: 'string'; value: string }
  | { kind: 'boolean'; value: boolean }
  | { kind: 'dateTime'; value: string };

/** Checks that `op value` makes sense for the attribute (RFC 7644 §3.4.2.2) and normalizes the value. */
function checkOperand(def: AttributeDef, op: CompareOp, value: Literal, scimType: ScimType): Operand {
  const bad = (message: string): never => {
    throw scimBadRequest(message, scimType);
  };
  if (value === null) {
    if (op !== 'eq' && op !== 'ne') bad(`'${op} null' is not a valid comparison for ${def.name}`);
    return { kind: 'null' };
  }
  switch (def.type) {
    case 'boolean':
      if (op !== 'eq' && op !== 'ne') bad(`${def.name} is a boolean: only eq, ne and pr apply`);
      if (typeof value !== 'boolean') bad(`${def.name} is a boolean: compare it with true or false`);
      return { kind: 'boolean', value: value as boolean };
    case 'dateTime': {
      if (op === 'co' || op === 'sw' || op === 'ew') bad(`${def.name} is a dateTime: ${op} does not apply`);
      const ms = typeof value === 'string' && ISO_DATE_TIME.test(value) ? Date.parse(value) : NaN;
      if (Number.isNaN(ms)) bad(`${def.name} is a dateTime: compare it with an ISO 8601 date-time string`);
      return { kind: 'dateTime', value: new Date(ms).toISOString() };
    }
    case 'string':
    case 'reference':
    case 'binary':
      if (typeof value !== 'string') bad(`${def.name} is a string: compare it with a quoted string`);
      if (def.type === 'binary' && op !== 'eq' && op !== 'ne') bad(`${def.name} is binary: only eq, ne and pr apply`);
      return { kind: 'string', value: def.caseExact ? (value as string) : (value as string).toLowerCase() };
    default:
      return bad(`${def.name} cannot be compared`);
  }
}

/** Compares by Unicode code point, as SQLite (BINARY) and PostgreSQL (C collation) order UTF-8 text. */
export function compareCodePoints(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

// ---------------------------------------------------------------------------------------------------------------
// In-memory matching of the values of one multi-valued attribute (PATCH `emails[type eq "work"]`)

/** Checks every attribute and operand of a value filter against the sub-attributes, without matching anything. */
export function checkValueFilter(filter: FilterNode, subAttributes: readonly AttributeDef[], scimType: ScimType): void {
  switch (filter.op) {
    case 'and':
    case 'or':
      filter.filters.forEach((f) => checkValueFilter(f, subAttributes, scimType));
      return;
    case 'not':
      checkValueFilter(filter.filter, subAttributes, scimType);
      return;
    case '[]':
      throw scimBadRequest('Value filters cannot be nested', scimType);
    case 'pr':
      resolveRelative(subAttributes, filter.path, scimType);
      return;
    default:
      checkOperand(resolveRelative(subAttributes, filter.path, scimType), filter.op, filter.value, scimType);
  }
}

/** Whether one value (`{value, type, primary}`) of a multi-valued attribute matches a checked value filter. */
export function matchesValue(
  element: Readonly<Record<string, unknown>>,
  filter: FilterNode,
  subAttributes: readonly AttributeDef[],
): boolean {
  switch (filter.op) {
    case 'and':
      return filter.filters.every((f) => matchesValue(element, f, subAttributes));
    case 'or':
      return filter.filters.some((f) => matchesValue(element, f, subAttributes));
    case 'not':
      return !matchesValue(element, filter.filter, subAttributes);
    case '[]':
      return false;
    case 'pr': {
      const def = resolveRelative(subAttributes, filter.path, 'invalidPath');
      const v = element[def.name];
      return v !== undefined && v !== null && v !== '';
    }
    default: {
      const def = resolveRelative(subAttributes, filter.path, 'invalidPath');
      const operand = checkOperand(def, filter.op, filter.value, 'invalidPath');
      const raw = element[def.name];
      const present = raw !== undefined && raw !== null && raw !== '';
      if (operand.kind === 'null') return filter.op === 'eq' ? !present : present;
      if (!present) return false;
      if (operand.kind === 'boolean')
        return typeof raw === 'boolean' && (raw === operand.value) === (filter.op === 'eq');
      if (typeof raw !== 'string') return false;
      const actual =
        operand.kind === 'dateTime' ? new Date(Date.parse(raw)).toISOString() : def.caseExact ? raw : raw.toLowerCase();
      return compareStrings(actual, filter.op, operand.value);
    }
  }
}

function compareStrings(actual: string, op: CompareOp, wanted: string): boolean {
  switch (op) {
    case 'eq':
      return actual === wanted;
    case 'ne':
      return actual !== wanted;
    case 'co':
      return actual.includes(wanted);
    case 'sw':
      return actual.startsWith(wanted);
    case 'ew':
      return actual.endsWith(wanted);
    case 'gt':
      return compareCodePoints(actual, wanted) > 0;
    case 'ge':
      return compareCodePoints(actual, wanted) >= 0;
    case 'lt':
      return compareCodePoints(actual, wanted) < 0;
    case 'le':
      return compareCodePoints(actual, wanted) <= 0;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Compilation to SQL

export type Dialect = 'sqlite' | 'postgres';

/** Where an attribute's value lives in the query that a store filters. */
export interface Column {
  ref: RawBuilder<unknown>;
  /** The column holds lower-cased text already (a `*_key` column, lower-case ids): no folding, indexes apply. */
  folded?: boolean;
  nullable: boolean;
  /** An index-friendly form of `ref = value` (for an expression such as a coalesce of two key columns). */
  eq?: (value: string) => RawBuilder<SqlBool>;
  /**
   * A predicate an index answers that holds for every row where `expr` (the column as compared, folded or not)
   * `op`s `needle` (the operand as compared): a superset the exact comparison then narrows, or undefined when the
   * index cannot narrow this needle (too short, say). It must never be SQL NULL.
   */
  search?: (
    op: 'co' | 'sw' | 'ew',
    needle: string,
    dialect: Dialect,
    expr: RawBuilder<unknown>,
  ) => RawBuilder<SqlBool> | undefined;
}

/** Rows holding the values of a multi-valued attribute (a table, or columns of the resource's own row). */
export interface ValueSource {
  /** Columns by canonical sub-attribute name; an absent one cannot be filtered on. */
  columns: Readonly<Partial<Record<string, Column>>>;
  /** A predicate on the resource: one of its values satisfies `where` (any value, when undefined). */
  some(where: RawBuilder<SqlBool> | undefined): RawBuilder<SqlBool>;
}

export type Target =
  | { kind: 'column'; column: Column }
  | { kind: 'complex'; columns: Readonly<Partial<Record<string, Column>>> }
  | { kind: 'multi'; sources: ValueSource[] };

/** How a store's query exposes a resource type's attributes. */
export interface FilterMapping {
  resource: ResourceDef;
  /** The target of a top-level attribute key (`userName`, `name`, `emails`, `urn:…:User:manager`). */
  target(key: string): Target | undefined;
}

const TRUE = sql<SqlBool>`1 = 1`;
const FALSE = sql<SqlBool>`1 = 0`;

function any(parts: RawBuilder<SqlBool>[]): RawBuilder<SqlBool> {
  if (parts.length === 0) return FALSE;
  return parts.length === 1 ? parts[0]! : sql<SqlBool>`(${sql.join(parts, sql` OR `)})`;
}

function all(parts: RawBuilder<SqlBool>[]): RawBuilder<SqlBool> {
  return parts.length === 1 ? parts[0]! : sql<SqlBool>`(${sql.join(parts, sql` AND `)})`;
}

/** The next string after every string starting with `prefix`, in code point order (the end of an index range). */
export function prefixSuccessor(prefix: string): string | undefined {
  const points = [...prefix];
  while (points.length > 0) {
    let next = points.pop()!.codePointAt(0)! + 1;
    if (next >= 0xd800 && next <= 0xdfff) next = 0xe000;
    if (next <= 0x10ffff) return points.join('') + String.fromCodePoint(next);
  }
  return undefined;
}

/** Case folding in SQL, the same as the application's toLowerCase (scim.store.ts registers scim_fold on SQLite). */
export function foldSql(dialect: Dialect, ref: RawBuilder<unknown>): RawBuilder<unknown> {
  // SQLite's lower() folds ASCII only.
  return dialect === 'sqlite' ? sql`scim_fold(${ref})` : sql`lower(${ref})`;
}

export class FilterCompiler {
  constructor(
    private readonly mapping: FilterMapping,
    private readonly dialect: Dialect,
  ) {}

  /** A two-valued predicate (never SQL NULL, so `not` means what it says) for a parsed filter. */
  compile(filter: FilterNode): RawBuilder<SqlBool> {
    switch (filter.op) {
      case 'and':
        return all(filter.filters.map((f) => this.compile(f)));
      case 'or':
        return any(filter.filters.map((f) => this.compile(f)));
      case 'not':
        return sql<SqlBool>`NOT ${this.compile(filter.filter)}`;
      case '[]':
        return this.#valuePath(filter.path, filter.filter);
      default:
        return this.#attribute(filter);
    }
  }

  #target(resolved: ResolvedAttribute, text: string): Target {
    const target = this.mapping.target(resolved.key);
    if (!target) throw scimBadRequest(`'${text}' cannot be used in a filter`, 'invalidFilter');
    return target;
  }

  #valuePath(path: AttrPath, filter: FilterNode): RawBuilder<SqlBool> {
    const resolved = resolveForFilter(this.mapping.resource, path);
    const { attribute } = resolved;
    if (attribute.type !== 'complex' || resolved.sub) {
      throw scimBadRequest(`'${path.text}' has no sub-attributes to filter`, 'invalidFilter');
    }
    const subs = attribute.subAttributes ?? [];
    checkValueFilter(filter, subs, 'invalidFilter');
    const target = this.#target(resolved, path.text);
    if (target.kind === 'multi') {
      return any(target.sources.map((source) => source.some(this.#element(filter, source.columns, subs, path.text))));
    }
    if (target.kind === 'complex') return this.#element(filter, target.columns, subs, path.text);
    throw scimBadRequest(`'${path.text}' cannot be used in a filter`, 'invalidFilter');
  }

  /** A filter over the sub-attributes of one value, against that value's columns. */
  #element(
    filter: FilterNode,
    columns: Readonly<Partial<Record<string, Column>>>,
    subs: readonly AttributeDef[],
    parent: string,
  ): RawBuilder<SqlBool> {
    switch (filter.op) {
      case 'and':
        return all(filter.filters.map((f) => this.#element(f, columns, subs, parent)));
      case 'or':
        return any(filter.filters.map((f) => this.#element(f, columns, subs, parent)));
      case 'not':
        return sql<SqlBool>`NOT ${this.#element(filter.filter, columns, subs, parent)}`;
      case '[]':
        throw scimBadRequest('Value filters cannot be nested', 'invalidFilter');
      default: {
        const def = resolveRelative(subs, filter.path, 'invalidFilter');
        const column = columns[def.name];
        if (!column) {
          throw scimBadRequest(`'${parent}.${def.name}' cannot be used in a filter`, 'invalidFilter');
        }
        return filter.op === 'pr' ? this.#present(column) : this.#compare(column, def, filter.op, filter.value);
      }
    }
  }

  #attribute(filter: Extract<FilterNode, { op: CompareOp | 'pr' }>): RawBuilder<SqlBool> {
    const resolved = resolveForFilter(this.mapping.resource, filter.path);
    const { attribute } = resolved;
    if (attribute.returned === 'never') {
      throw scimBadRequest(`'${filter.path.text}' cannot be used in a filter`, 'invalidFilter');
    }
    const target = this.#target(resolved, filter.path.text);
    let sub = resolved.sub;
    if (target.kind === 'multi') {
      if (!sub && filter.op === 'pr') return any(target.sources.map((source) => source.some(undefined)));
      // A multi-valued complex attribute compared as a whole compares its `value` (`emails co "@example.com"`).
      sub ??= findAttribute(attribute.subAttributes ?? [], 'value');
      if (!sub) {
        throw scimBadRequest(`Name a sub-attribute of '${filter.path.text}'`, 'invalidFilter');
      }
      const relative: AttrPath = { attr: sub.name, text: sub.name };
      const single: FilterNode =
        filter.op === 'pr' ? { op: 'pr', path: relative } : { op: filter.op, path: relative, value: filter.value };
      const subs = attribute.subAttributes ?? [];
      return any(
        target.sources.map((source) => source.some(this.#element(single, source.columns, subs, filter.path.text))),
      );
    }
    if (target.kind === 'complex') {
      if (!sub) {
        if (filter.op !== 'pr') {
          throw scimBadRequest(`Name a sub-attribute of '${filter.path.text}'`, 'invalidFilter');
        }
        return any(Object.values(target.columns).map((column) => this.#present(column!)));
      }
      const column = target.columns[sub.name];
      if (!column) {
        throw scimBadRequest(`'${filter.path.text}' cannot be used in a filter`, 'invalidFilter');
      }
      return filter.op === 'pr' ? this.#present(column) : this.#compare(column, sub, filter.op, filter.value);
    }
    return filter.op === 'pr'
      ? this.#present(target.column)
      : this.#compare(target.column, sub ?? attribute, filter.op, filter.value);
  }

  #present(column: Column): RawBuilder<SqlBool> {
    return column.nullable ? sql<SqlBool>`${column.ref} IS NOT NULL` : TRUE;
  }

  #fold(ref: RawBuilder<unknown>): RawBuilder<unknown> {
    return foldSql(this.dialect, ref);
  }

  #compare(column: Column, def: AttributeDef, op: CompareOp, value: Literal): RawBuilder<SqlBool> {
    const operand = checkOperand(def, op, value, 'invalidFilter');
    const { ref } = column;
    if (operand.kind === 'null') {
      if (!column.nullable) return op === 'eq' ? FALSE : TRUE;
      return op === 'eq' ? sql<SqlBool>`${ref} IS NULL` : sql<SqlBool>`${ref} IS NOT NULL`;
    }
    let predicate: RawBuilder<SqlBool>;
    if (operand.kind === 'boolean') {
      predicate = sql<SqlBool>`${ref} ${sql.raw(op === 'eq' ? '=' : '<>')} ${operand.value ? 1 : 0}`;
    } else if (operand.kind === 'string' && op === 'eq' && column.eq && (def.caseExact || column.folded)) {
      predicate = column.eq(operand.value);
    } else {
      const expr = operand.kind === 'string' && !def.caseExact && !column.folded ? this.#fold(ref) : ref;
      predicate = this.#text(expr, op, operand.value);
      const candidates =
        (op === 'co' || op === 'sw' || op === 'ew') && operand.value !== ''
          ? column.search?.(op, operand.value, this.dialect, expr)
          : undefined;
      // The index narrows the rows; the exact comparison decides (so `not (…)` means what it says too).
      if (candidates) predicate = sql<SqlBool>`(${candidates} AND ${predicate})`;
    }
    // `col IS NOT NULL AND …` is FALSE, not NULL, for a missing value: `not (…)` then matches it.
    return column.nullable ? sql<SqlBool>`(${ref} IS NOT NULL AND ${predicate})` : predicate;
  }

  #text(expr: RawBuilder<unknown>, op: CompareOp, value: string): RawBuilder<SqlBool> {
    const length = [...value].length;
    switch (op) {
      case 'eq':
        return sql<SqlBool>`${expr} = ${value}`;
      case 'ne':
        return sql<SqlBool>`${expr} <> ${value}`;
      case 'gt':
        return sql<SqlBool>`${expr} > ${value}`;
      case 'ge':
        return sql<SqlBool>`${expr} >= ${value}`;
      case 'lt':
        return sql<SqlBool>`${expr} < ${value}`;
      case 'le':
        return sql<SqlBool>`${expr} <= ${value}`;
      case 'co':
        if (length === 0) return sql<SqlBool>`${expr} IS NOT NULL`;
        return this.dialect === 'sqlite'
          ? sql<SqlBool>`instr(${expr}, ${value}) > 0`
          : sql<SqlBool>`strpos(${expr}, ${value}) > 0`;
      case 'sw': {
        if (length === 0) return sql<SqlBool>`${expr} IS NOT NULL`;
        // An index range does the work (LIKE 'abc%' would scan); substr keeps the answer exact under any collation.
        const upper = prefixSuccessor(value);
        const range = upper === undefined ? sql`${expr} >= ${value}` : sql`${expr} >= ${value} AND ${expr} < ${upper}`;
        return sql<SqlBool>`(${range} AND substr(${expr}, 1, ${length}) = ${value})`;
      }
      case 'ew':
        if (length === 0) return sql<SqlBool>`${expr} IS NOT NULL`;
        return sql<SqlBool>`(length(${expr}) >= ${length} AND substr(${expr}, length(${expr}) - ${length - 1}) = ${value})`;
    }
  }
}
