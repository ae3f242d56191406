import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { call } from '../helpers/auth.js';
import { DIALECTS, type TestDatabase } from '../helpers/databases.js';
import { describeWithService } from '../helpers/services.js';
import { BASE, type ScimClient, startScim } from './helpers.js';

/**
 * Request sequences of real identity providers, recorded from their public SCIM documentation in
 * test/scim/fixtures/*.json, replayed against the service with the exact responses expected.
 *
 * In expected values, "{{capture:name}}" takes the actual value as `name`, "{{name}}" (also inside a string)
 * stands for it, "{{base}}" for the SCIM base URL, "{{timestamp}}" for any ISO 8601 time; a body of the form
 * {"$includes": {…}} checks only the attributes it lists (each exactly). Requests may use "{{name}}" too.
 */

interface Step {
  name: string;
  request?: { method: string; path: string; body?: unknown };
  response?: { status: number; headers?: Record<string, string>; body?: unknown };
  login?: { username: string; password: string; status: number };
  tuples?: { object: string; users: string[] };
}

interface Fixture {
  description: string;
  sources: string[];
  steps: Step[];
}

const FIXTURES = join(import.meta.dirname, 'fixtures');
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function substitute(text: string, vars: Map<string, string>): string {
  return text.replace(/\{\{(\w+)\}\}/g, (_match, name: string) => {
    if (name === 'base') return BASE;
    const value = vars.get(name);
    if (value === undefined) throw new Error(`fixture uses {{${name}}} before capturing it`);
    return value;
  });
}

function fill(value: unknown, vars: Map<string, string>): unknown {
  if (typeof value === 'string') return substitute(value, vars);
  if (Array.isArray(value)) return value.map((v) => fill(v, vars));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v, vars)]));
  return value;
}

/** Compares exactly, capturing and substituting placeholders along the way (in the expected value's key order). */
function check(expected: unknown, actual: unknown, vars: Map<string, string>, where: string): void {
  if (typeof expected === 'string') {
    const capture = /^\{\{capture:(\w+)\}\}$/.exec(expected);
    if (capture) {
      expect(typeof actual, where).toBe('string');
      vars.set(capture[1]!, actual as string);
    } else if (expected === '{{timestamp}}') {
      expect(actual, where).toMatch(ISO);
    } else {
      expect(actual, where).toBe(substitute(expected, vars));
    }
    return;
  }
  if (Array.isArray(expected)) {
    expect(Array.isArray(actual), `${where} is an array`).toBe(true);
    expect((actual as unknown[]).length, `${where}.length`).toBe(expected.length);
    expected.forEach((e, i) => check(e, (actual as unknown[])[i], vars, `${where}[${i}]`));
    return;
  }
  if (expected && typeof expected === 'object') {
    expect(actual && typeof actual === 'object', `${where} is an object`).toBeTruthy();
    const object = actual as Record<string, unknown>;
    const entries = Object.entries(expected);
    const includes = entries.length === 1 && entries[0]![0] === '$includes';
    const wanted = includes ? Object.entries(entries[0]![1] as object) : entries;
    if (!includes) expect(Object.keys(object).sort(), `${where} keys`).toEqual(wanted.map(([k]) => k).sort());
    for (const [key, value] of wanted) check(value, object[key], vars, `${where}.${key}`);
    return;
  }
  expect(actual, where).toEqual(expected);
}

function encodePath(path: string): string {
  const [pathname, query] = path.split('?') as [string, string | undefined];
  return query === undefined ? pathname : `${pathname}?${new URLSearchParams(query).toString()}`;
}

const fixtures = readdirSync(FIXTURES).filter((f) => f.endsWith('.json'));

it('has fixtures for Entra ID and Okta', () => {
  expect(fixtures.sort()).toEqual(['entra-id.json', 'okta.json']);
});

for (const dialect of DIALECTS) {
  describeWithService(`identity provider fixtures on ${dialect.name}`, dialect.availability, () => {
    let database: TestDatabase | undefined;
    let c: ScimClient | undefined;
    afterEach(async () => {
      await c?.app.close();
      await database?.cleanup();
    });

    for (const file of fixtures) {
      const fixture = JSON.parse(readFileSync(join(FIXTURES, file), 'utf8')) as Fixture;
      it(`replays ${file}: ${fixture.steps.length} steps`, async () => {
        database = await dialect.createMigrated();
        c = await startScim({ DATABASE_URL: database.url });
        const vars = new Map<string, string>();
        for (const step of fixture.steps) {
          c.clock.advance(1_000);
          if (step.login) {
            const res = await call(c.app, 'POST', '/auth/login', {
              body: { username: step.login.username, password: step.login.password },
            });
            expect(res.status, step.name).toBe(step.login.status);
            continue;
          }
          const { method, path, body } = step.request!;
          const res = await c.request(
            method,
            encodePath(substitute(path, vars)),
            body === undefined ? undefined : fill(body, vars),
          );
          const expected = step.response!;
          expect(res.status, `${step.name}: ${JSON.stringify(res.body)}`).toBe(expected.status);
          if (expected.status !== 204)
            expect(res.headers.get('content-type'), step.name).toMatch(/^application\/scim\+json/);
          if (expected.body !== undefined) check(expected.body, res.body, vars, step.name);
          else expect(res.body, step.name).toBeUndefined();
          for (const [header, value] of Object.entries(expected.headers ?? {})) {
            expect(res.headers.get(header), `${step.name}: ${header}`).toBe(substitute(value, vars));
          }
          if (step.tuples) {
            const object = substitute(step.tuples.object, vars);
            const users = (await c.app.infrastructure.authz.read({ object, relation: 'member' }))
              .map((t) => t.user)
              .sort();
            expect(users, `${step.name}: members of ${object}`).toEqual(
              step.tuples.users.map((u) => substitute(u, vars)).sort(),
            );
          }
        }
      });
    }
  });
}
