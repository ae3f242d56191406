import fc from 'fast-check';
import { type Filter as ReferenceFilter, filter as referenceFilter, parse as referenceParse } from 'scim2-parse-filter';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BadRequestError } from '../../src/errors.js';
import type { Caller } from '../../src/ports/caller.js';
import { type FilterNode, parseFilter, parsePatchPath, prefixSuccessor } from '../../src/modules/scim/scim.filter.js';
import { DIALECTS, type TestDatabase } from '../helpers/databases.js';
import { describeWithService } from '../helpers/services.js';
import {
  idOf,
  ENTERPRISE,
  GROUP,
  resourcesOf,
  type ScimClient,
  scimError,
  startScim,
  USER,
  userListingPlan,
} from './helpers.js';

function failure(run: () => unknown): { status: number; scimType: string | undefined; message: string } {
  try {
    run();
  } catch (error) {
    const e = error as BadRequestError;
    return { status: e.status, scimType: e.scimType, message: e.message };
  }
  throw new Error('expected a failure');
}

/** Our AST in scim2-parse-filter's shape (the two parsers are compared on generated filters below). */
function referenceShape(node: FilterNode): ReferenceFilter {
  switch (node.op) {
    case 'and':
    case 'or':
      return { op: node.op, filters: node.filters.map(referenceShape) };
    case 'not':
      return { op: 'not', filter: referenceShape(node.filter) };
    case '[]':
      return { op: '[]', attrPath: node.path.text, valFilter: referenceShape(node.filter) };
    case 'pr':
      return { op: 'pr', attrPath: node.path.text };
    default:
      return { op: node.op, attrPath: node.path.text, compValue: node.value };
  }
}

describe('filter parser (RFC 7644 §3.4.2.2)', () => {
  it('parses every operator, literal, grouping and value path into one AST', () => {
    expect(referenceShape(parseFilter('userName Eq "bjensen"'))).toEqual({
      op: 'eq',
      attrPath: 'userName',
      compValue: 'bjensen',
    });
    expect(
      referenceShape(
        parseFilter(
          'a eq "x" or b ne 1.5e2 and not (c co "y\\"z" OR d pr) AND e[type sw "w" and value ew "@x"] and f gt -1 and g ge true and h lt false and i le null',
        ),
      ),
    ).toEqual({
      op: 'or',
      filters: [
        { op: 'eq', attrPath: 'a', compValue: 'x' },
        {
          op: 'and',
          filters: [
            { op: 'ne', attrPath: 'b', compValue: 150 },
            {
              op: 'not',
              filter: {
                op: 'or',
                filters: [
                  { op: 'co', attrPath: 'c', compValue: 'y"z' },
                  { op: 'pr', attrPath: 'd' },
                ],
              },
            },
            {
              op: '[]',
              attrPath: 'e',
              valFilter: {
                op: 'and',
                filters: [
                  { op: 'sw', attrPath: 'type', compValue: 'w' },
                  { op: 'ew', attrPath: 'value', compValue: '@x' },
                ],
              },
            },
            { op: 'gt', attrPath: 'f', compValue: -1 },
            { op: 'ge', attrPath: 'g', compValue: true },
            { op: 'lt', attrPath: 'h', compValue: false },
            { op: 'le', attrPath: 'i', compValue: null },
          ],
        },
      ],
    });
    expect(parseFilter(`${ENTERPRISE}:manager.value eq "x"`)).toEqual({
      op: 'eq',
      path: {
        urn: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User',
        attr: 'manager',
        sub: 'value',
        text: `${ENTERPRISE}:manager.value`,
      },
      value: 'x',
    });
    expect(referenceShape(parseFilter('not(a pr)'))).toEqual({ op: 'not', filter: { op: 'pr', attrPath: 'a' } });
    expect(referenceShape(parseFilter('((a pr))'))).toEqual({ op: 'pr', attrPath: 'a' });
  });

  it('answers 400 invalidFilter for bad syntax, naming where', () => {
    const cases: [string, string][] = [
      ['', 'Filter is empty'],
      ['userName', "Expected an operator after 'userName' at position 9"],
      ['userName eq', 'Expected a value (string, number, true, false or null) at position 12'],
      ['userName xx "a"', "Expected an operator after 'userName' at position 10"],
      ['userName eq "a', 'Unterminated string starting at position 13'],
      ['userName eq "\\q"', 'Invalid string at position 13'],
      ['userName eq "a\\u0000"', 'Invalid string at position 13'],
      ['userName eq bare', 'Expected a value (string, number, true, false or null) at position 13'],
      ['userName eq "a" and', "Expected an attribute, 'not' or '(' at position 20"],
      ['(userName eq "a"', "Expected ')' at position 17"],
      ['userName eq "a")', 'Unexpected input at position 16'],
      ['emails[type eq "w"', "Expected ']' at position 19"],
      ['emails[type[x eq "y"] pr]', 'Value filters cannot be nested (position 12)'],
      ['user#name eq "a"', "Unexpected character '#' at position 5"],
      ['a.b.c eq "x"', "Invalid attribute path 'a.b.c'"],
      ['foo:bar eq "x"', "Invalid attribute path 'foo:bar'"],
      ['not userName eq "a"', "Expected an operator after 'not' at position 5"],
    ];
    for (const [input, message] of cases) {
      expect(
        failure(() => parseFilter(input)),
        input,
      ).toEqual({ status: 400, scimType: 'invalidFilter', message });
    }
  });

  it('answers 400 tooMany for filters longer, deeper or with more comparisons than it will run', () => {
    expect(failure(() => parseFilter(`userName eq "${'a'.repeat(4096)}"`))).toEqual({
      status: 400,
      scimType: 'tooMany',
      message: 'Filter is longer than 4096 characters',
    });
    const many = Array.from({ length: 65 }, (_, i) => `userName eq "${i}"`).join(' or ');
    expect(failure(() => parseFilter(many)).message).toBe('Filter has more than 64 comparisons');
    expect(parseFilter(Array.from({ length: 64 }, (_, i) => `a eq "${i}"`).join(' or ')).op).toBe('or');
    const deep = `${'not ('.repeat(17)}a pr${')'.repeat(17)}`;
    expect(failure(() => parseFilter(deep))).toEqual({
      status: 400,
      scimType: 'tooMany',
      message: 'Filter is nested more than 16 levels deep',
    });
  });

  it('parses PATCH paths, with value filters and sub-attributes; 400 invalidPath otherwise', () => {
    expect(parsePatchPath('emails[type eq "work"].value')).toEqual({
      path: { attr: 'emails', text: 'emails' },
      filter: { op: 'eq', path: { attr: 'type', text: 'type' }, value: 'work' },
      sub: 'value',
    });
    expect(parsePatchPath('name.givenName')).toEqual({
      path: { attr: 'name', sub: 'givenName', text: 'name.givenName' },
    });
    expect(parsePatchPath(ENTERPRISE).path).toEqual({
      urn: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0',
      attr: 'User',
      text: ENTERPRISE,
    });
    for (const [input, message] of [
      ['', 'Expected an attribute path'],
      ['emails[type eq "work"].', "Invalid sub-attribute ''"],
      ['name.givenName[type eq "x"]', "A value filter follows a multi-valued attribute, not 'name.givenName'"],
      ['emails[type eq "work"] extra', 'Unexpected input at position 24'],
    ]) {
      expect(
        failure(() => parsePatchPath(input!)),
        input,
      ).toEqual({ status: 400, scimType: 'invalidPath', message });
    }
  });

  it('ends a prefix range at the next string in code point order', () => {
    expect(prefixSuccessor('abc')).toBe('abd');
    expect(prefixSuccessor('a\u{10ffff}')).toBe('b');
    expect(prefixSuccessor('\u{d7ff}')).toBe('\u{e000}');
    expect(prefixSuccessor('\u{10ffff}')).toBeUndefined();
  });
});

// ---------------------------------------------------------------------------------------------------------------

function adminCaller(id: string): Caller {
  return {
    kind: 'user',
    subject: `user:${id}`,
    username: 'admin',
    roles: ['admin', 'user'],
    sessionId: undefined,
    via: 'bearer',
  };
}

for (const dialect of DIALECTS) {
  describeWithService(`filters compiled to SQL on ${dialect.name}`, dialect.availability, () => {
    let database: TestDatabase;
    let c: ScimClient;
    const ids: Record<string, string> = {};

    beforeAll(async () => {
      database = await dialect.createMigrated();
      c = await startScim({ DATABASE_URL: database.url });
      const admin = (await c.app.services.users.getByUsername('admin'))!.id;
      ids.admin = admin;
      const make = async (body: Record<string, unknown>) => {
        c.clock.advance(1_000);
        const res = await c.request('POST', '/Users', { schemas: [USER, ENTERPRISE], ...body });
        expect(res.status, JSON.stringify(res.body)).toBe(201);
        return res.body.id as string;
      };
      ids.bjensen = await make({
        userName: 'BJensen',
        externalId: 'EXT-B',
        displayName: 'Babs',
        title: 'Tour Guide',
        name: { givenName: 'Barbara', familyName: 'Jensen' },
        emails: [
          { value: 'bjensen@example.com', type: 'work', primary: true },
          { value: 'babs@jensen.org', type: 'home' },
        ],
        phoneNumbers: [{ value: '555-555-8377', type: 'work' }],
        addresses: [{ type: 'work', locality: 'Hollywood', country: 'US' }],
        [ENTERPRISE]: { department: 'Tour Operations', manager: { value: admin } },
      });
      ids.jsmith = await make({
        userName: 'jsmith',
        externalId: 'ext-b',
        displayName: 'Éric Smith',
        active: false,
        emails: [{ value: 'JSmith@Example.org', type: 'Work' }],
      });
      ids.mpan = await make({ userName: 'mpan', name: { familyName: 'Pan' } });
      ids.pirates = idOf(
        await c.request('POST', '/Groups', {
          schemas: [GROUP],
          displayName: 'Pirates',
          members: [{ value: ids.mpan }],
        }),
      );
    });
    afterAll(async () => {
      await c?.app.close();
      await database?.cleanup();
    });

    const matching = async (filter: string) => {
      const res = await c.request('GET', `/Users?filter=${encodeURIComponent(filter)}&attributes=userName`);
      expect(res.status, `${filter}: ${JSON.stringify(res.body)}`).toBe(200);
      expect(res.body.totalResults).toBe(resourcesOf(res).length);
      return (res.body.Resources as { userName: string }[]).map((r) => r.userName);
    };

    it('compares with every operator, case-insensitively unless the attribute is caseExact', async () => {
      const cases: [string, string[]][] = [
        ['userName eq "bjensen"', ['BJensen']],
        ['USERNAME Eq "BJENSEN"', ['BJensen']],
        ['userName ne "admin"', ['BJensen', 'jsmith', 'mpan']],
        ['userName sw "J"', ['jsmith']],
        ['userName ew "AN"', ['mpan']],
        ['userName co "e"', ['BJensen']],
        ['userName gt "j"', ['jsmith', 'mpan']],
        ['userName ge "JSMITH"', ['jsmith', 'mpan']],
        ['userName lt "b"', ['admin']],
        ['userName le "bjensen"', ['admin', 'BJensen']],
        ['userName sw ""', ['admin', 'BJensen', 'jsmith', 'mpan']],
        ['externalId eq "EXT-B"', ['BJensen']],
        ['externalId eq "ext-b"', ['jsmith']],
        ['externalId sw "EXT"', ['BJensen']],
        ['externalId pr', ['BJensen', 'jsmith']],
        ['not (externalId pr)', ['admin', 'mpan']],
        ['displayName eq "éric smith"', ['jsmith']],
        ['displayName sw "ÉR"', ['jsmith']],
        ['title pr', ['BJensen']],
        ['title eq null', ['admin', 'jsmith', 'mpan']],
        ['title ne null', ['BJensen']],
        ['title ne "tour guide"', []],
        ['active eq false', ['jsmith']],
        ['active eq TRUE', ['admin', 'BJensen', 'mpan']],
        ['active ne true', ['jsmith']],
        [`id eq "${ids.bjensen}"`, ['BJensen']],
        ['meta.resourceType eq "User"', ['admin', 'BJensen', 'jsmith', 'mpan']],
        ['meta.resourceType eq "user"', []],
        ['meta.created gt "2026-06-01T12:00:01Z"', ['jsmith', 'mpan']],
        ['meta.created ge "2026-06-01T12:00:01.000Z"', ['BJensen', 'jsmith', 'mpan']],
        ['meta.created le "2026-06-01T13:00:00+01:00"', ['admin']],
        [`urn:ietf:params:scim:schemas:core:2.0:User:userName eq "mpan"`, ['mpan']],
      ];
      for (const [filter, expected] of cases) expect(await matching(filter), filter).toEqual(expected);
    });

    it('reaches into multi-valued and complex attributes, one value at a time in value paths', async () => {
      const cases: [string, string[]][] = [
        ['emails[type eq "work" and value co "@example.com"]', ['BJensen']],
        ['emails[type eq "work"]', ['BJensen', 'jsmith']],
        // The bootstrap administrator has an email (ADMIN_EMAIL) of no type.
        ['emails[not (type eq "work")]', ['admin', 'BJensen']],
        ['emails.value ew ".ORG"', ['BJensen', 'jsmith']],
        ['emails co "jensen.org"', ['BJensen']],
        ['emails eq "jsmith@example.org"', ['jsmith']],
        ['emails pr', ['admin', 'BJensen', 'jsmith']],
        ['not (emails pr)', ['mpan']],
        ['emails[primary eq true]', ['BJensen']],
        ['emails.primary eq false', []],
        ['emails.type eq "home" and emails.value co "example.com"', ['BJensen']],
        ['emails[type eq "home" and value co "example.com"]', []],
        ['phoneNumbers[type eq "work"]', ['BJensen']],
        ['phoneNumbers.value sw "555"', ['BJensen']],
        ['addresses[locality eq "hollywood"]', ['BJensen']],
        ['addresses.country eq "us"', ['BJensen']],
        ['name.familyName eq "pan"', ['mpan']],
        ['name.formatted eq "barbara jensen"', ['BJensen']],
        ['name pr', ['BJensen', 'mpan']],
        ['name[givenName sw "barb"]', ['BJensen']],
        [`${ENTERPRISE}:department co "TOUR"`, ['BJensen']],
        [`${ENTERPRISE}:manager.value eq "${ids.admin!}"`, ['BJensen']],
        [`${ENTERPRISE}:manager pr`, ['BJensen']],
        ['groups.display eq "pirates"', ['mpan']],
        [`groups[value eq "${ids.pirates!.toUpperCase()}"]`, ['mpan']],
        ['groups pr', ['mpan']],
      ];
      for (const [filter, expected] of cases) expect(await matching(filter), filter).toEqual(expected);
    });

    it('applies and before or, and not to what it encloses', async () => {
      const cases: [string, string[]][] = [
        ['userName eq "admin" or userName eq "mpan" and active eq false', ['admin']],
        ['(userName eq "admin" or userName eq "mpan") and active eq true', ['admin', 'mpan']],
        ['not (userName sw "a" or userName sw "b")', ['jsmith', 'mpan']],
        ['not (not (title pr))', ['BJensen']],
      ];
      for (const [filter, expected] of cases) expect(await matching(filter), filter).toEqual(expected);
    });

    it('refuses comparisons the schema does not allow: 400 invalidFilter', async () => {
      const cases: [string, string][] = [
        ['active gt true', 'active is a boolean: only eq, ne and pr apply'],
        ['active eq "true"', 'active is a boolean: compare it with true or false'],
        ['userName eq true', 'userName is a string: compare it with a quoted string'],
        ['userName eq 42', 'userName is a string: compare it with a quoted string'],
        ['userName gt null', "'gt null' is not a valid comparison for userName"],
        ['meta.created sw "2026"', 'created is a dateTime: sw does not apply'],
        ['meta.created gt "yesterday"', 'created is a dateTime: compare it with an ISO 8601 date-time string'],
        ['meta.location eq "x"', "'meta.location' cannot be used in a filter"],
        ['password eq "secret"', "'password' cannot be used in a filter"],
        ['name eq "x"', "Name a sub-attribute of 'name'"],
        ['nosuch eq "x"', "Unknown attribute 'nosuch' in filter"],
        ['urn:example:schema:User:foo eq "x"', "Unknown attribute 'urn:example:schema:User:foo' in filter"],
        ['department eq "x"', "Unknown attribute 'department' in filter"],
        ['emails[nosuch eq "x"]', "Unknown sub-attribute 'nosuch' in value filter"],
        ['userName[value eq "x"]', "'userName' has no sub-attributes to filter"],
        ['x509Certificates.value co "x"', 'value is binary: only eq, ne and pr apply'],
      ];
      for (const [filter, detail] of cases) {
        const res = await c.request('GET', `/Users?filter=${encodeURIComponent(filter)}`);
        expect(res.body, filter).toEqual(scimError(400, detail, 'invalidFilter'));
      }
    });

    if (dialect.name === 'sqlite') {
      it('answers eq and sw on userName, emails and externalId from indexes, never a scan of users', () => {
        const plan = (filter: string) => userListingPlan(c.app, filter);
        for (const filter of [
          'userName eq "bjensen"',
          'userName sw "bj"',
          'emails.value eq "babs@jensen.org"',
          'emails[value sw "babs"]',
          'externalId eq "EXT-B"',
        ]) {
          const text = plan(filter);
          expect(text, `${filter}\n${text}`).not.toMatch(/SCAN (u|users)\b(?! USING)/);
          expect(text, `${filter}\n${text}`).toMatch(/USING (COVERING )?INDEX|USING INTEGER PRIMARY KEY|PRIMARY KEY/);
        }
        // The contrast: a contains on an unindexed attribute scans.
        expect(plan('title co "guide"')).toMatch(/SCAN/);
      });
    }
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Property: on generated users and generated filters, the service selects exactly the users scim2-parse-filter
// selects. scim2-parse-filter compares strings case-sensitively and does not know caseExact, so the reference
// sees case-insensitive attributes (and the values compared with them) lower-cased: RFC 7643 §2.2 semantics.

interface Attr {
  path: string;
  kind: 'ci' | 'ce' | 'bool' | 'date';
}

const ATTRS: Attr[] = [
  { path: 'userName', kind: 'ci' },
  { path: 'displayName', kind: 'ci' },
  { path: 'title', kind: 'ci' },
  { path: 'name.givenName', kind: 'ci' },
  { path: 'name.familyName', kind: 'ci' },
  { path: 'emails.value', kind: 'ci' },
  { path: 'emails.type', kind: 'ci' },
  { path: 'phoneNumbers.value', kind: 'ci' },
  { path: `${ENTERPRISE}:department`, kind: 'ci' },
  { path: 'externalId', kind: 'ce' },
  { path: 'active', kind: 'bool' },
  { path: 'emails.primary', kind: 'bool' },
  { path: 'meta.created', kind: 'date' },
];
const SUB_ATTRS: Record<string, Attr[]> = {
  emails: [
    { path: 'value', kind: 'ci' },
    { path: 'type', kind: 'ci' },
    { path: 'primary', kind: 'bool' },
  ],
  phoneNumbers: [
    { path: 'value', kind: 'ci' },
    { path: 'type', kind: 'ci' },
  ],
};
const STRING_OPS = ['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le', 'pr'];
const CI_PATHS = new Set([
  'username',
  'displayname',
  'title',
  'givenname',
  'familyname',
  'value',
  'type',
  'department',
]);

/** A pair of renderings of one generated filter: for the service (cases shuffled) and for the reference. */
interface Pair {
  server: string;
  reference: string;
}

const shuffleCase = (s: string, mask: number[]) =>
  [...s].map((ch, i) => ((mask[i % mask.length] ?? 0) % 2 ? ch.toUpperCase() : ch.toLowerCase())).join('');

function pools(resources: Record<string, unknown>[]) {
  const values = new Map<string, string[]>();
  const collect = (key: string, value: unknown) => {
    if (typeof value !== 'string') return;
    values.set(key, [...(values.get(key) ?? []), value]);
  };
  for (const r of resources) {
    collect('userName', r.userName);
    collect('displayName', r.displayName);
    collect('title', r.title);
    collect('externalId', r.externalId);
    collect('name.givenName', (r.name as Record<string, unknown> | undefined)?.givenName);
    collect('name.familyName', (r.name as Record<string, unknown> | undefined)?.familyName);
    collect(`${ENTERPRISE}:department`, (r[ENTERPRISE] as Record<string, unknown> | undefined)?.department);
    collect('meta.created', (r.meta as Record<string, unknown>).created);
    for (const e of (r.emails as Record<string, unknown>[] | undefined) ?? []) {
      collect('emails.value', e.value);
      collect('emails.type', e.type);
    }
    for (const p of (r.phoneNumbers as Record<string, unknown>[] | undefined) ?? []) {
      collect('phoneNumbers.value', p.value);
      collect('phoneNumbers.type', p.type);
    }
  }
  return (path: string) => [...new Set(values.get(path) ?? ['x'])];
}

function leafArbitrary(attrs: Attr[], pool: (path: string) => string[], prefix: string): fc.Arbitrary<Pair> {
  return fc.constantFrom(...attrs).chain((attr) => {
    const ops =
      attr.kind === 'bool'
        ? ['eq', 'ne', 'pr']
        : attr.kind === 'date'
          ? ['eq', 'ne', 'gt', 'ge', 'lt', 'le', 'pr']
          : STRING_OPS;
    const values = pool(prefix + attr.path);
    const stringValue = fc.oneof(
      fc.constantFrom(...values),
      fc
        .constantFrom(...values)
        .chain((s) =>
          fc.tuple(fc.nat(s.length), fc.nat(s.length)).map(([a, b]) => s.slice(Math.min(a, b), Math.max(a, b))),
        ),
      fc.constantFrom('', 'a', 'zz', 'é'),
    );
    const value: fc.Arbitrary<unknown> =
      attr.kind === 'bool'
        ? fc.boolean()
        : attr.kind === 'date'
          ? fc.constantFrom(...values, '2026-06-01T12:00:00.500Z')
          : stringValue;
    return fc
      .record({ op: fc.constantFrom(...ops), value, mask: fc.array(fc.nat(1), { minLength: 1, maxLength: 8 }) })
      .map(({ op, value: v, mask }) => {
        const name = shuffleCase(attr.path, mask);
        const opText = shuffleCase(op, mask.slice(1));
        if (op === 'pr') return { server: `${name} ${opText}`, reference: `${name} ${op}` };
        if (typeof v === 'boolean')
          return {
            server: `${name} ${opText} ${shuffleCase(String(v), mask)}`,
            reference: `${name} ${op} ${String(v)}`,
          };
        const s = v as string;
        const ci = attr.kind === 'ci';
        return {
          server: `${name} ${opText} ${JSON.stringify(ci ? shuffleCase(s, mask.slice(2)) : s)}`,
          reference: `${name} ${op} ${JSON.stringify(ci ? s.toLowerCase() : s)}`,
        };
      });
  });
}

function filterArbitrary(pool: (path: string) => string[]): fc.Arbitrary<Pair> {
  const leaf = leafArbitrary(ATTRS, pool, '');
  const valuePath = fc.constantFrom('emails', 'phoneNumbers').chain((attr) => {
    const inner = leafArbitrary(SUB_ATTRS[attr]!, pool, `${attr}.`);
    return fc
      .oneof(
        inner,
        fc.tuple(inner, inner, fc.constantFrom('and', 'or')).map(([a, b, op]) => ({
          server: `${a.server} ${op.toUpperCase()} ${b.server}`,
          reference: `${a.reference} ${op} ${b.reference}`,
        })),
        inner.map((a) => ({ server: `not (${a.server})`, reference: `not (${a.reference})` })),
      )
      .map((f) => ({ server: `${attr}[${f.server}]`, reference: `${attr}[${f.reference}]` }));
  });
  const { node } = fc.letrec<{ node: Pair }>((tie) => ({
    node: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      leaf,
      valuePath,
      fc.tuple(tie('node'), tie('node'), fc.constantFrom('and', 'or'), fc.boolean()).map(([a, b, op, group]) => {
        const wrap = (s: string) => (group ? `(${s})` : s);
        return {
          server: `${wrap(a.server)} ${op} ${wrap(b.server)}`,
          reference: `${wrap(a.reference)} ${op} ${wrap(b.reference)}`,
        };
      }),
      tie('node').map((a) => ({ server: `NOT (${a.server})`, reference: `not (${a.reference})` })),
    ),
  }));
  return node;
}

/**
 * scim2-parse-filter's tester applies a value filter to the array as a whole (`emails[type eq "a" and value co
 * "b"]` matches when one value has the type and another the value; `emails[not (…)]` negates "some value"), where
 * RFC 7644 §3.4.2.2 applies it to each value. The reference therefore evaluates value paths value by value, and
 * leaves everything else (every comparison, and, or, not) to the library.
 */
function referenceMatches(node: ReferenceFilter, resource: Record<string, unknown>): boolean {
  switch (node.op) {
    case 'and':
      return (node as { filters: ReferenceFilter[] }).filters.every((f) => referenceMatches(f, resource));
    case 'or':
      return (node as { filters: ReferenceFilter[] }).filters.some((f) => referenceMatches(f, resource));
    case 'not':
      return !referenceMatches((node as { filter: ReferenceFilter }).filter, resource);
    case '[]': {
      const { attrPath, valFilter } = node as { attrPath: string; valFilter: ReferenceFilter };
      const key = Object.keys(resource).find((k) => k.toLowerCase() === attrPath.toLowerCase());
      const values = key === undefined ? undefined : resource[key];
      return Array.isArray(values) && values.some((value) => referenceFilter(valFilter)(value));
    }
    default:
      return referenceFilter(node)(resource);
  }
}

/** The resource as scim2-parse-filter should see it: values of case-insensitive attributes lower-cased. */
function lowerCaseInsensitive(value: unknown, key = ''): unknown {
  if (Array.isArray(value)) return value.map((v) => lowerCaseInsensitive(v, key));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, lowerCaseInsensitive(v, k)]));
  }
  return typeof value === 'string' && CI_PATHS.has(key.toLowerCase()) ? value.toLowerCase() : value;
}

const LOCALS = ['Work', 'home', 'x', 'Ann.Lee', 'b_b'];
const DOMAINS = ['Example.com', 'test.org', 'EXAMPLE.org'];

const userArbitrary = fc.record(
  {
    prefix: fc.constantFrom('al', 'Al', 'BO', 'bo', 'car', 'Car', 'd', 'é'),
    displayName: fc.constantFrom('Alice', 'alice', 'ALICE B', 'Bob', 'bob x', 'Ca rol', 'Zed', 'éclair', 'Éclair'),
    title: fc.constantFrom('Boss', 'boss', 'Intern', 'R&D lead'),
    givenName: fc.constantFrom('Ann', 'ann', 'Bert', 'Émile'),
    familyName: fc.constantFrom('Lee', 'LEE', 'Ng', 'Zoë'),
    externalId: fc.constantFrom('X1', 'x1', 'X2', 'abc'),
    department: fc.constantFrom('Sales', 'sales', 'R&D'),
    active: fc.boolean(),
    emails: fc.array(
      fc.record({
        local: fc.constantFrom(...LOCALS),
        domain: fc.constantFrom(...DOMAINS),
        type: fc.option(fc.constantFrom('work', 'home', 'other', 'Work'), { nil: undefined }),
        primary: fc.option(fc.boolean(), { nil: undefined }),
      }),
      { maxLength: 3 },
    ),
    phones: fc.array(
      fc.record({
        value: fc.constantFrom('555-1', '555-2', '+1 555'),
        type: fc.option(fc.constantFrom('work', 'mobile'), { nil: undefined }),
      }),
      {
        maxLength: 2,
      },
    ),
  },
  { requiredKeys: ['prefix', 'active', 'emails', 'phones'] },
);

for (const dialect of DIALECTS) {
  describeWithService(`filters agree with scim2-parse-filter on ${dialect.name}`, dialect.availability, () => {
    let database: TestDatabase;
    let c: ScimClient;
    let reference: Record<string, unknown>[];
    let pool: (path: string) => string[];

    beforeAll(async () => {
      database = await dialect.createMigrated();
      c = await startScim({ DATABASE_URL: database.url });
      const admin = (await c.app.services.users.getByUsername('admin'))!;
      const ctx = { caller: adminCaller(admin.id), ip: null, userAgent: null };
      const samples = fc.sample(userArbitrary, { seed: 7, numRuns: 40 });
      for (const [i, u] of samples.entries()) {
        c.clock.advance(1_000);
        let primaryTaken = false;
        await c.app.services.scim.createUser(ctx, {
          schemas: [USER, ENTERPRISE],
          userName: `${u.prefix}${i}`,
          active: u.active,
          ...(u.displayName && { displayName: u.displayName }),
          ...(u.title && { title: u.title }),
          ...(u.externalId && { externalId: u.externalId }),
          ...((u.givenName || u.familyName) && {
            name: { ...(u.givenName && { givenName: u.givenName }), ...(u.familyName && { familyName: u.familyName }) },
          }),
          ...(u.department && { [ENTERPRISE]: { department: u.department } }),
          emails: u.emails.map((e, k) => {
            const primary = e.primary === true && !primaryTaken ? true : e.primary === true ? false : e.primary;
            primaryTaken ||= primary === true;
            return {
              value: `${e.local}${i}.${k}@${e.domain}`,
              ...(e.type && { type: e.type }),
              ...(primary !== undefined && { primary }),
            };
          }),
          phoneNumbers: u.phones.map((p) => ({ value: p.value, ...(p.type && { type: p.type }) })),
        });
      }
      const all = await c.app.services.scim.listUsers({ startIndex: 1, count: 1000 });
      expect(all.totalResults).toBe(41);
      reference = all.Resources.map((r) => lowerCaseInsensitive(r) as Record<string, unknown>);
      pool = pools(all.Resources);
    });
    afterAll(async () => {
      await c?.app.close();
      await database?.cleanup();
    });

    it('parses generated filters into the AST scim2-parse-filter builds', () => {
      fc.assert(
        fc.property(
          fc.constant(null).chain(() => filterArbitrary(pool)),
          ({ reference: text }) => {
            expect(referenceShape(parseFilter(text))).toEqual(referenceParse(text));
          },
        ),
        { numRuns: 300, seed: 11 },
      );
    });

    it('selects, in SQL, exactly the users scim2-parse-filter selects in memory', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constant(null).chain(() => filterArbitrary(pool)),
          async ({ server, reference: text }) => {
            const page = await c.app.services.scim.listUsers({
              filter: server,
              startIndex: 1,
              count: 1000,
              attributes: ['id'],
            });
            const actual = page.Resources.map((r) => r.id as string).sort();
            const ast = referenceParse(text);
            const expected = reference
              .filter((r) => referenceMatches(ast, r))
              .map((r) => r.id as string)
              .sort();
            expect(actual, `${server}\n${text}`).toEqual(expected);
            expect(page.totalResults).toBe(expected.length);
          },
        ),
        { numRuns: 250, seed: 23 },
      );
    });
  });
}
