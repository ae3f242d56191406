import fc from 'fast-check';

/**
 * Hostile inputs for the fuzz suites (test/security/fuzz-*.test.ts): JSON values built so that they can carry what
 * `JSON.stringify` cannot write (1e309, -0, 2^53+1 as written) and keys that plain objects would swallow
 * (`__proto__`), serialised by hand; strings with NUL, control characters, lone surrogates and bidi marks; deep
 * nesting; malformed JSON. The seed and the number of runs come from FUZZ_SEED and FUZZ_RUNS.
 */

/** The seed of every property unless FUZZ_SEED names another (fast-check prints it with any failure). */
export const FUZZ_SEED = Number.parseInt(process.env.FUZZ_SEED ?? '20260728', 10);

/** Runs per property: `fallback` unless FUZZ_RUNS asks for more (or fewer). */
export function fuzzRuns(fallback: number): number {
  const runs = Number.parseInt(process.env.FUZZ_RUNS ?? '', 10);
  return Number.isFinite(runs) && runs > 0 ? runs : fallback;
}

/**
 * fast-check's options for one property: the seed (offset per property, so that properties do not all draw the same
 * cases), no shrinking unless FUZZ_SHRINK=1 (a shrink re-sends requests against state the failure may have changed).
 */
export function fuzzOptions(runs: number, offset: number) {
  return { numRuns: fuzzRuns(runs), seed: FUZZ_SEED + offset, endOnFailure: process.env.FUZZ_SHRINK !== '1' };
}

/** How to run the same case again, for failure messages. */
export const REPLAY_HINT = `replay with FUZZ_SEED=${FUZZ_SEED} (and FUZZ_RUNS, FUZZ_SHRINK=1 to shrink)`;

/** A JSON token written as is: numbers JSON.stringify cannot produce. */
export class RawToken {
  constructor(readonly text: string) {}
}

/** A JSON object as its ordered entries, so that `__proto__` and duplicate keys survive to the wire. */
export class JsonObject {
  constructor(readonly entries: [string, JsonValue][]) {}

  get(key: string): JsonValue | undefined {
    return this.entries.find(([k]) => k === key)?.[1];
  }

  with(key: string, value: JsonValue): JsonObject {
    const kept = this.entries.filter(([k]) => k !== key);
    return new JsonObject([...kept, [key, value]]);
  }

  without(key: string): JsonObject {
    return new JsonObject(this.entries.filter(([k]) => k !== key));
  }
}

export type JsonValue = null | boolean | number | string | RawToken | JsonValue[] | JsonObject;

/** The JSON text of a value (RawToken as written, JsonObject entries in order, duplicates kept). */
export function jsonText(value: JsonValue): string {
  if (value instanceof RawToken) return value.text;
  if (value instanceof JsonObject)
    return `{${value.entries.map(([k, v]) => `${JSON.stringify(k)}:${jsonText(v)}`).join(',')}}`;
  if (Array.isArray(value)) return `[${value.map(jsonText).join(',')}]`;
  return JSON.stringify(value) ?? 'null';
}

/** A plain JSON-able value (objects, arrays, scalars) as a JsonValue. */
export function fromPlain(value: unknown): JsonValue {
  if (value === null || typeof value === 'boolean' || typeof value === 'number' || typeof value === 'string')
    return value;
  if (Array.isArray(value)) return value.map(fromPlain);
  if (typeof value === 'object')
    return new JsonObject(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, fromPlain(v)]));
  return null;
}

/** Strings that have broken parsers, validators, databases and templates before. */
export const NASTY_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\u0007\b\f\n\r\t\u001b\u007f',
  '\r\nX-Injected: yes',
  '\uFEFFbom',
  '\uD800',
  '\uDFFF\uD800',
  '\u202Eevil\u202C',
  '𝕏😀👩‍👩‍👧',
  'NaN',
  'Infinity',
  '-Infinity',
  'null',
  'undefined',
  'true',
  'false',
  '0',
  '-0',
  '-1',
  '1e309',
  '9007199254740993',
  '0x10',
  '1.5',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  '../../../etc/passwd',
  '%00',
  '%E0%A4%A',
  '<script>alert(1)</script>',
  "' OR '1'='1' --",
  '"; DROP TABLE users; --',
  '${jndi:ldap://x}',
  '{{7*7}}',
  'user:admin',
  'user:*',
  '*',
  'userName eq "x" or 1 eq 1',
  '"',
  '\\',
  '\\u0000',
  'conversation://../admin',
  'agent-service://server',
  'javascript:alert(1)',
  'http://169.254.169.254/latest/meta-data/',
];

/** Hostile keys for objects: prototype pollution, empty and odd keys. */
export const NASTY_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'valueOf', '', ' ', '\u0000', '$ref'];

/** Numbers at the edges, as JSON text. */
export const EDGE_NUMBERS = [
  '1e309',
  '-1e309',
  '-0',
  '9007199254740993',
  '-9007199254740993',
  '1e-400',
  '123456789012345678901234567890',
  '0.30000000000000004',
  '2147483648',
  '-2147483649',
  '4294967296',
  '1.0',
  '1E2',
];

/** A hostile string: a known bad one, arbitrary code points (controls, surrogates), or a long one. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...NASTY_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 24 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.integer({ min: 200, max: 5000 }), fc.constantFrom('x', 'é', '\u0000', '𝕏', ' '))
      .map(([n, c]) => c.repeat(n)),
  },
);

/** A hostile number: an edge written as JSON text, or an ordinary extreme. */
export const hostileNumber: fc.Arbitrary<JsonValue> = fc.oneof(
  fc.constantFrom(...EDGE_NUMBERS).map((text) => new RawToken(text)),
  fc.constantFrom(0, -1, 1.5, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 2 ** 31, -(2 ** 53), 1e21),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

export const hostileKey: fc.Arbitrary<string> = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom(...NASTY_KEYS) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 8 }) },
);

/** A hostile scalar: string, number, boolean or null. */
export const hostileScalar: fc.Arbitrary<JsonValue> = fc.oneof(
  { weight: 3, arbitrary: hostileString },
  { weight: 2, arbitrary: hostileNumber },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
);

/** A hostile JSON value of any type, a few levels deep, with hostile keys among `keys` (field names worth hitting). */
export function hostileJson(keys: string[] = []): fc.Arbitrary<JsonValue> {
  const key = keys.length > 0 ? fc.oneof(hostileKey, fc.constantFrom(...keys)) : hostileKey;
  const { value } = fc.letrec<{ value: JsonValue; array: JsonValue[]; object: JsonObject }>((tie) => ({
    value: fc.oneof({ maxDepth: 3, depthSize: 'small' }, hostileScalar, tie('array'), tie('object')),
    array: fc.array(tie('value'), { maxLength: 4 }),
    object: fc.array(fc.tuple(key, tie('value')), { maxLength: 4 }).map((entries) => new JsonObject(entries)),
  }));
  return value;
}

/** A value nested `depth` levels deep, as arrays or objects, written as JSON text. */
export const deepNesting: fc.Arbitrary<string> = fc
  .tuple(fc.integer({ min: 50, max: 4000 }), fc.constantFrom('array', 'object', 'mixed'))
  .map(([depth, kind]) => {
    if (kind === 'array') return `${'['.repeat(depth)}${']'.repeat(depth)}`;
    if (kind === 'object') return `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
    return `${'{"a":['.repeat(depth)}0${']}'.repeat(depth)}`;
  });

/** Texts that are not JSON, or only nearly. */
export const MALFORMED_JSON = [
  '{',
  '{"a":',
  '{"a":1,}',
  "{'a':1}",
  '{"a":1}}',
  '[1,2',
  'undefined',
  'NaN',
  '\u0000',
  '{"a":"\u0000',
  '\uFEFF{}',
  '{"a":1}{"b":2}',
  '{"a":01}',
  '{"a":.5}',
  '{"a":"\\x41"}',
  '{"a":"\\ud800"}',
  '{"__proto__":',
  '// comment\n{}',
  ' ',
];

/** The nth-level property paths of a JSON value's objects (for mutating one field). */
export function fieldPaths(value: JsonValue, prefix: (string | number)[] = [], depth = 3): (string | number)[][] {
  if (depth === 0) return [];
  if (value instanceof JsonObject)
    return value.entries.flatMap(([k, v]) => [[...prefix, k], ...fieldPaths(v, [...prefix, k], depth - 1)]);
  if (Array.isArray(value))
    return value.flatMap((v, i) => [[...prefix, i], ...fieldPaths(v, [...prefix, i], depth - 1)]);
  return [];
}

/** The value with the field at `path` replaced (or removed, when `replacement` is undefined). */
export function replaceAt(value: JsonValue, path: (string | number)[], replacement: JsonValue | undefined): JsonValue {
  if (path.length === 0) return replacement ?? null;
  const [head, ...rest] = path;
  if (value instanceof JsonObject && typeof head === 'string') {
    const inner = value.get(head);
    if (rest.length === 0 && replacement === undefined) return value.without(head);
    return new JsonObject(
      value.entries.map(([k, v]) => [k, k === head ? replaceAt(inner ?? null, rest, replacement) : v]),
    );
  }
  if (Array.isArray(value) && typeof head === 'number') {
    if (rest.length === 0 && replacement === undefined) return value.filter((_, i) => i !== head);
    return value.map((v, i) => (i === head ? replaceAt(v, rest, replacement) : v));
  }
  return value;
}

/**
 * A string percent-encoded for a URL, lone surrogates included: they cannot be UTF-8, so they go as the three bytes
 * a careless encoder would write for them (which a server must refuse, not trip on).
 */
export function percentEncode(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return [...text]
      .map((char) => {
        const unit = char.charCodeAt(0);
        if (char.length === 1 && unit >= 0xd800 && unit <= 0xdfff)
          return [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)]
            .map((byte) => `%${byte.toString(16).toUpperCase()}`)
            .join('');
        return encodeURIComponent(char);
      })
      .join('');
  }
}

/** The JSON Schema keywords the sampler reads (OpenAPI 3.1 schemas, MCP tools' input schemas). */
export interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  format?: string;
  minLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
}

export interface SampleOptions {
  /** The field's name: a field named as one of `known` gets that value (a real id). */
  name?: string;
  known?: Record<string, string>;
  /** The schema a `$ref` names. */
  resolve?: (ref: string) => JsonSchema | undefined;
}

function sampleString(schema: JsonSchema): string {
  switch (schema.format) {
    case 'email':
      return 'fuzz@example.com';
    case 'date-time':
      return '2026-06-01T12:00:00.000Z';
    case 'uri':
    case 'url':
      return 'https://client.example/cb';
    case 'uuid':
      return '00000000-0000-4000-8000-000000000000';
  }
  return 'fuzz'.padEnd(Math.max(4, schema.minLength ?? 0), 'z');
}

/**
 * A value the schema (mostly) accepts, to break one field at a time: every property, enums' first member, defaults,
 * one item per array, numbers at their minimum.
 */
export function sampleOf(schema: JsonSchema | undefined, options: SampleOptions = {}, depth = 0): JsonValue {
  const { name = '', known = {}, resolve } = options;
  let s = schema;
  for (let hops = 0; s?.$ref && hops < 10; hops++) s = resolve?.(s.$ref);
  const at = (inner: JsonSchema | undefined, field = name) => sampleOf(inner, { ...options, name: field }, depth + 1);
  if (!s || depth > 6) return known[name] ?? 'fuzz';
  if ('const' in s) return fromPlain(s.const);
  if (s.enum) return fromPlain(s.enum[0]);
  if (known[name] !== undefined) return known[name];
  if (s.default !== undefined) return fromPlain(s.default);
  const choice = s.anyOf ?? s.oneOf;
  if (choice) return at(choice.find((c) => c.type !== 'null') ?? choice[0]);
  if (s.allOf)
    return new JsonObject(s.allOf.flatMap((part) => ((v) => (v instanceof JsonObject ? v.entries : []))(at(part))));
  const type = Array.isArray(s.type)
    ? s.type.find((t) => t !== 'null')
    : (s.type ?? (s.properties ? 'object' : undefined));
  switch (type) {
    case 'object':
      return new JsonObject(Object.entries(s.properties ?? {}).map(([key, value]) => [key, at(value, key)]));
    case 'array':
      return Array.from({ length: Math.max(1, s.minItems ?? 1) }, () => at(s.items));
    case 'string':
      return sampleString(s);
    case 'integer':
    case 'number':
      return Math.min(Math.max(1, s.minimum ?? 1), s.maximum ?? Number.MAX_SAFE_INTEGER);
    case 'boolean':
      return true;
    case 'null':
      return null;
  }
  return 'fuzz';
}

/** The value at a path of fields, or null. */
export function valueAt(value: JsonValue, path: (string | number)[]): JsonValue {
  let at: JsonValue | undefined = value;
  for (const step of path) {
    if (at instanceof JsonObject && typeof step === 'string') at = at.get(step);
    else if (Array.isArray(at) && typeof step === 'number') at = at[step];
    else return null;
  }
  return at ?? null;
}

/**
 * The value with one field broken: replaced by a hostile value of any type, removed, wrapped in an array, or given
 * `__proto__` / `constructor` siblings that claim privileges.
 */
export function mutateOne(base: JsonValue): fc.Arbitrary<JsonValue> {
  const paths = fieldPaths(base);
  if (paths.length === 0) return hostileJson();
  const keys = paths.map((p) => String(p.at(-1)));
  const anyPath = fc.constantFrom(...paths);
  return fc.oneof(
    { weight: 4, arbitrary: fc.tuple(anyPath, hostileJson(keys)).map(([p, v]) => replaceAt(base, p, v)) },
    { weight: 2, arbitrary: fc.tuple(anyPath, hostileScalar).map(([p, v]) => replaceAt(base, p, v)) },
    { weight: 1, arbitrary: anyPath.map((p) => replaceAt(base, p, undefined)) },
    { weight: 1, arbitrary: anyPath.map((p) => replaceAt(base, p, [valueAt(base, p)])) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.constantFrom('__proto__', 'constructor', 'prototype'), anyPath, hostileJson(keys))
        .map(([key, p, v]) => {
          const claims = new JsonObject([
            ['admin', true],
            ['roles', ['admin']],
            ['x', v],
          ]);
          const polluted = (target: JsonValue) =>
            target instanceof JsonObject ? new JsonObject([...target.entries, [key, claims]]) : target;
          const parent = p.slice(0, -1);
          return parent.length === 0 ? polluted(base) : replaceAt(base, parent, polluted(valueAt(base, parent)));
        }),
    },
  );
}
