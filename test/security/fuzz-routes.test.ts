import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { linear } from '../builder/helpers.js';
import { ADMIN_PASSWORD } from '../helpers/auth.js';
import { type Json, type SignedIn, signIn, startTestClient } from '../helpers/client.js';
import {
  EDGE_NUMBERS,
  JsonObject,
  type JsonValue,
  MALFORMED_JSON,
  REPLAY_HINT,
  deepNesting,
  fieldPaths,
  type JsonSchema as Schema,
  fuzzOptions,
  hostileJson,
  hostileKey,
  hostileString,
  jsonText,
  mutateOne,
  percentEncode,
  replaceAt,
  sampleOf,
  valueAt,
} from '../helpers/fuzz.js';

/**
 * Every operation of the OpenAPI description that takes a body, query or path parameters, sent hostile inputs:
 * random JSON of wrong types, schema-guided bodies with one field broken, deep nesting, bodies up to (and past) the
 * size limit, malformed JSON, wrong media types, empty bodies, hostile query strings and path segments. The OAuth
 * endpoints the MCP SDK serves (outside the description) are fuzzed the same way. Invariants: never a 5xx, never
 * a request left unanswered, every refusal a 4xx in its area's body shape (spec "Errors", derived here from the
 * path), and a refused write changes none of the caller's resources (read back through the API).
 *
 * FUZZ_RUNS=200 FUZZ_SEED=<n> npx vitest run test/security/fuzz-routes.test.ts runs longer or other cases.
 */

const RUNS = 20;
const BODY_LIMIT = 32 * 1024;
/** A request unanswered this long has hung: the answer is not timed, its absence is the failure. */
const HANG_MS = 15_000;

type Parameter = { name: string; in: 'path' | 'query' | 'header' | 'cookie'; schema?: Schema };
type Operation = {
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema?: Schema }> };
  servers?: { url: string }[];
  security?: unknown[];
};
type Document = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema> } };

interface FuzzedOperation {
  method: string;
  path: string;
  label: string;
  listener: 'main' | 'playground' | 'builder';
  pathParams: string[];
  query: Parameter[];
  body?: { types: string[]; schema: Schema | undefined };
  adminOnly: boolean;
}

interface Case {
  asAdmin: boolean;
  params: Record<string, string>;
  query: string;
  body?: { contentType?: string; text: string };
  accept?: string;
}

interface Answer {
  status: number;
  contentType: string;
  text: string;
  url: string;
}

let app: App;
let doc: Document;
let alice: SignedIn;
let admin: SignedIn;
/** Ids of real resources, by the path or body parameter that names them: alice's, and the SCIM ones. */
const known: Record<string, string> = {};

const ADMIN_ONLY = [/^\/scim\/v2\//, /^\/api\/v1\/audit-log$/];
/** Operations whose success may end the caller's sign-in (erasure, session revocation). */
const ENDS_SIGN_IN = ['DELETE /api/v1/users/me', 'DELETE /auth/sessions/{session_id}'];

/** The endpoints of the MCP SDK's authorization-server handlers: not in the description, fuzzed all the same. */
const OAUTH_ENDPOINTS: FuzzedOperation[] = (
  [
    {
      method: 'post',
      path: '/oauth/token',
      body: {
        types: ['application/x-www-form-urlencoded', 'application/json'],
        schema: {
          type: 'object',
          properties: {
            grant_type: { enum: ['authorization_code', 'refresh_token'] },
            code: { type: 'string' },
            code_verifier: { type: 'string' },
            redirect_uri: { type: 'string', format: 'uri' },
            client_id: { type: 'string' },
            refresh_token: { type: 'string' },
            resource: { type: 'string', format: 'uri' },
          },
        },
      },
    },
    {
      method: 'post',
      path: '/oauth/register',
      body: {
        types: ['application/json'],
        schema: {
          type: 'object',
          properties: {
            redirect_uris: { type: 'array', items: { type: 'string', format: 'uri' } },
            client_name: { type: 'string' },
            token_endpoint_auth_method: { const: 'none' },
            grant_types: { type: 'array', items: { const: 'authorization_code' } },
            response_types: { type: 'array', items: { const: 'code' } },
            application_type: { enum: ['web', 'native'] },
            scope: { type: 'string' },
          },
        },
      },
    },
    {
      method: 'post',
      path: '/oauth/revoke',
      body: {
        types: ['application/x-www-form-urlencoded'],
        schema: {
          type: 'object',
          properties: { token: { type: 'string' }, client_id: { type: 'string' }, token_type_hint: { type: 'string' } },
        },
      },
    },
    {
      method: 'get',
      path: '/oauth/authorize',
      query: [
        'client_id',
        'redirect_uri',
        'response_type',
        'code_challenge',
        'code_challenge_method',
        'scope',
        'state',
      ],
    },
  ] as { method: string; path: string; body?: FuzzedOperation['body']; query?: string[] }[]
).map((op) => ({
  method: op.method,
  path: op.path,
  label: `${op.method.toUpperCase()} ${op.path}`,
  listener: 'main' as const,
  pathParams: [],
  query: (op.query ?? []).map((name) => ({ name, in: 'query' as const })),
  ...(op.body && { body: op.body }),
  adminOnly: false,
}));

function resolve(schema: Schema | undefined): Schema | undefined {
  const name = schema?.$ref?.replace('#/components/schemas/', '');
  return name ? resolve(doc.components.schemas[name]) : schema;
}

/** The operations to fuzz: every one with a body, query or path parameters. */
function fuzzedOperations(): FuzzedOperation[] {
  const ops: FuzzedOperation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const params = op.parameters ?? [];
      if (params.length === 0 && !op.requestBody) continue;
      const server = op.servers?.[0]?.url ?? '/';
      const listener =
        server === '/'
          ? 'main'
          : server === app.url('playground')
            ? 'playground'
            : server === app.url('builder')
              ? 'builder'
              : undefined;
      if (!listener) throw new Error(`${path}: unknown server ${server}`);
      const content = op.requestBody?.content ?? {};
      const types = Object.keys(content);
      ops.push({
        method,
        path,
        label: `${method.toUpperCase()} ${path}`,
        listener,
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        query: params.filter((p) => p.in === 'query'),
        ...(op.requestBody && { body: { types, schema: resolve(content[types[0]!]?.schema) } }),
        adminOnly: ADMIN_ONLY.some((pattern) => pattern.test(path)),
      });
    }
  }
  return [...ops, ...OAUTH_ENDPOINTS];
}

// ---------------------------------------------------------------------------------------------------------------
// Valid-ish values from a JSON Schema, to be broken one field at a time.

/** A value the schema (mostly) accepts, naming alice's real resources where a field is called as their ids are. */
const sample = (schema: Schema | undefined, name = '') =>
  sampleOf(schema, { name, known, resolve: (ref) => doc.components.schemas[ref.replace('#/components/schemas/', '')] });

/** Top-level fields as form fields (objects and arrays as their JSON text). */
function formText(value: JsonValue): string {
  if (!(value instanceof JsonObject)) return new URLSearchParams({ value: jsonText(value) }).toString();
  return value.entries
    .map(([k, v]) => `${percentEncode(k)}=${percentEncode(typeof v === 'string' ? v : jsonText(v))}`)
    .join('&');
}

// ---------------------------------------------------------------------------------------------------------------
// The cases of one operation.

/**
 * A request line and headers over 16 KiB are refused by Node's parser, with a 431 before any route runs
 * (test/http/client-error.test.ts): URLs are kept well below it (a value at most ~1.5 KiB encoded, a query at most 8 KiB).
 */
const MAX_ENCODED_VALUE = 1500;
const MAX_QUERY = 8000;
const inUrl = (text: string) => (percentEncode(text).length > MAX_ENCODED_VALUE ? text.slice(0, 120) : text);

const BAD_SEGMENTS = ['%E0%A4%A', '%', '%00', '%2e%2e', '%2F', '..', '.', 'x'.repeat(3000), '%C0%AF', '%uD800'];

function pathParam(name: string): fc.Arbitrary<string> {
  return fc.oneof(
    ...(known[name] ? [{ weight: 3, arbitrary: fc.constant(known[name]) }] : []),
    { weight: 3, arbitrary: hostileString.filter((s) => s !== '').map((s) => percentEncode(inUrl(s))) },
    { weight: 2, arbitrary: fc.constantFrom(...BAD_SEGMENTS) },
  );
}

function queryValue(param: Parameter): fc.Arbitrary<string> {
  const good = sample(param.schema, param.name);
  return fc.oneof(
    { weight: 2, arbitrary: fc.constant(typeof good === 'string' ? good : jsonText(good)) },
    { weight: 3, arbitrary: hostileString.map(inUrl) },
    { weight: 2, arbitrary: fc.constantFrom(...EDGE_NUMBERS, '1000000', '-5', '', ' 1', '1,2') },
  );
}

function queryString(params: Parameter[]): fc.Arbitrary<string> {
  if (params.length === 0) return fc.constant('');
  const entry = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...params).chain((p) => queryValue(p).map((v) => [p.name, v] as const)) },
    { weight: 1, arbitrary: fc.tuple(hostileKey, hostileString.map(inUrl)) },
  );
  return fc
    .tuple(
      fc.array(entry, { maxLength: params.length + 2 }),
      fc.constantFrom('', '', '', '&%zz=1', '&a=%E0%A4%A', '&__proto__[admin]=1', '&&&', '&=x'),
    )
    .map(([entries, raw]) => {
      const pairs = entries.map(([k, v]) => `${percentEncode(k)}=${percentEncode(v)}`);
      while (pairs.join('&').length > MAX_QUERY) pairs.pop();
      return pairs.join('&') + raw;
    });
}

const WRONG_TYPES = [
  'text/plain',
  'application/xml',
  'multipart/form-data; boundary=zz',
  'application/octet-stream',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/x-www-form-urlencoded',
  'application/scim+json; charset=koi8-r',
];

function bodyCase(op: FuzzedOperation): fc.Arbitrary<Case['body']> {
  const { types, schema } = op.body!;
  const base = sample(schema);
  const type = fc.constantFrom(...types);
  const asType = (value: JsonValue) =>
    type.map((t) => ({ contentType: t, text: t.includes('urlencoded') ? formText(value) : jsonText(value) }));
  const json = types.find((t) => t.includes('json')) ?? 'application/json';
  return fc.oneof(
    { weight: 6, arbitrary: mutateOne(base).chain(asType) },
    { weight: 3, arbitrary: hostileJson(fieldPaths(base).map((p) => String(p.at(-1)))).chain(asType) },
    // An array where an object is expected, and the sample itself wrapped or bare.
    { weight: 1, arbitrary: fc.constantFrom<JsonValue>([base], [[base]], [], 'fuzz', 0, null, true).chain(asType) },
    { weight: 1, arbitrary: deepNesting.map((text) => ({ contentType: json, text })) },
    {
      weight: 1,
      // Right at the size limit (a string field the size of the body), or just past it.
      arbitrary: fc.integer({ min: BODY_LIMIT - 200, max: BODY_LIMIT + 200 }).map((size) => {
        const paths = fieldPaths(base).filter((p) => typeof valueAt(base, p) === 'string');
        const padded = paths.length > 0 ? replaceAt(base, paths[0]!, '') : new JsonObject([['padding', '']]);
        const room = Math.max(0, size - jsonText(padded).length);
        const filled =
          paths.length > 0
            ? replaceAt(base, paths[0]!, 'x'.repeat(room))
            : new JsonObject([['padding', 'x'.repeat(room)]]);
        return { contentType: json, text: jsonText(filled) };
      }),
    },
    {
      weight: 2,
      arbitrary: fc
        .oneof(
          fc.constantFrom(...MALFORMED_JSON),
          fc.nat({ max: 60 }).map((n) => jsonText(base).slice(0, n)),
        )
        .map((text) => ({ contentType: json, text })),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.constantFrom(...WRONG_TYPES), fc.constantFrom(jsonText(base), 'a=1', '<x/>', ''))
        .map(([contentType, text]) => ({ contentType, text })),
    },
    { weight: 1, arbitrary: fc.constantFrom({ contentType: json, text: '' }, { text: '' }, { text: jsonText(base) }) },
  );
}

function caseOf(op: FuzzedOperation): fc.Arbitrary<Case> {
  const params = fc.record(Object.fromEntries(op.pathParams.map((name) => [name, pathParam(name)])));
  const accepts =
    op.path.startsWith('/mcp') || op.path === '/message'
      ? fc.constantFrom(undefined, 'application/json, text/event-stream', 'application/x-ndjson', 'text/event-stream')
      : fc.constantFrom(undefined, 'application/json', '*/*', 'text/html');
  return fc.record({
    // Administrators' routes are sent mostly by an administrator, so that the fuzz gets past the permission check.
    asAdmin: op.adminOnly ? fc.integer({ min: 0, max: 4 }).map((n) => n > 0) : fc.constant(false),
    params,
    query: queryString(op.query),
    body: op.body && op.method !== 'get' ? bodyCase(op) : fc.constant(undefined),
    accept: accepts,
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Sending, and what an answer must look like.

async function send(op: FuzzedOperation, c: Case): Promise<Answer> {
  const path = op.path.replace(/\{(\w+)\}/g, (_, name: string) => c.params[name] ?? 'x');
  const url = `${app.url(op.listener)}${path}${c.query ? `?${c.query}` : ''}`;
  const caller = c.asAdmin ? admin : alice;
  const headers: Record<string, string> = { ...caller.credentials };
  if (c.body?.contentType) headers['Content-Type'] = c.body.contentType;
  if (c.accept) headers.Accept = c.accept;
  let res: Response;
  try {
    res = await fetch(url, {
      method: op.method.toUpperCase(),
      headers,
      ...(c.body && { body: c.body.text }),
      redirect: 'manual',
      signal: AbortSignal.timeout(HANG_MS),
    });
    return { status: res.status, contentType: res.headers.get('content-type') ?? '', text: await res.text(), url };
  } catch (error) {
    const reason =
      error instanceof Error && error.name === 'TimeoutError' ? `no answer in ${HANG_MS} ms` : String(error);
    throw new Error(`${op.label}: ${reason} (${url})`, { cause: error });
  }
}

const SCIM_ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const isString = (v: unknown): v is string => typeof v === 'string';

/** The area whose error shape a path's refusals take, as the spec assigns them ("Errors", "Body shapes by area"). */
function areaOf(path: string): 'scim' | 'data-subject' | 'mcp' | 'verify' | 'oauth' | 'consent' | 'envelope' {
  if (path === '/scim/v2' || path.startsWith('/scim/v2/')) return 'scim';
  if (path === '/api/v1/users' || path.startsWith('/api/v1/users/')) return 'data-subject';
  if (path === '/auth/verify') return 'verify';
  if (path === '/oauth/consent') return 'consent';
  if (path.startsWith('/oauth/')) return 'oauth';
  if (/^\/(mcp|message|messages|tools|resources|sse)(\/|$)/.test(path) || path === '/') return 'mcp';
  return 'envelope';
}

/** What is wrong with an answer (nothing: undefined). */
function problemOf(answer: Answer): string | undefined {
  if (answer.status >= 500) return `${answer.status} ${answer.text.slice(0, 300)}`;
  if (answer.status < 400) return undefined;
  const area = areaOf(new URL(answer.url).pathname);
  if (area === 'consent' && answer.contentType.startsWith('text/html') && [401, 403, 404, 429].includes(answer.status))
    return undefined;
  if (!/[/+]json\b/.test(answer.contentType))
    return `${answer.status} answered ${answer.contentType}: ${answer.text.slice(0, 200)}`;
  let body: Json;
  try {
    body = JSON.parse(answer.text) as Json;
  } catch {
    return `${answer.status} body is not JSON: ${answer.text.slice(0, 200)}`;
  }
  const fine = (() => {
    switch (area) {
      case 'scim':
        return (
          answer.contentType.startsWith('application/scim+json') &&
          Array.isArray(body.schemas) &&
          body.schemas.includes(SCIM_ERROR) &&
          Number(body.status) === answer.status &&
          isString(body.detail)
        );
      case 'data-subject':
        return (
          isString(body.detail) ||
          (answer.status === 422 &&
            Array.isArray(body.detail) &&
            (body.detail as Json[]).every((d) => Array.isArray(d.loc) && isString(d.msg) && isString(d.type)))
        );
      case 'mcp': {
        if (answer.status === 401) return isString(body.detail);
        const error = body.error as Json | undefined;
        return (
          typeof error === 'object' &&
          error !== null &&
          (isString(error.code) || Number.isInteger(error.code)) &&
          isString(error.message)
        );
      }
      case 'oauth':
        return isString(body.error) && /^[a-z_]+$/.test(body.error) && isString(body.error_description);
      case 'verify':
        if (answer.status === 401) return body.valid === false && isString(body.error);
        return isString(body.error) && isString(body.message) && isString(body.code);
      case 'consent':
      case 'envelope':
        return isString(body.error) && isString(body.message) && isString(body.code);
    }
  })();
  return fine ? undefined : `${answer.status} is not in the ${area} error shape: ${answer.text.slice(0, 300)}`;
}

// ---------------------------------------------------------------------------------------------------------------
// The caller's resources, read back through the API.

const strip = (value: unknown, keys: string[]): unknown => {
  if (Array.isArray(value)) return value.map((v) => strip(v, keys));
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value as Json)
        .filter(([k]) => !keys.includes(k))
        .map(([k, v]) => [k, strip(v, keys)]),
    );
  return value;
};

const read = async (user: SignedIn, path: string, listener: 'main' | 'playground' | 'builder' = 'main') => {
  const res = await user.at(listener).get(path);
  return { status: res.status, body: res.body };
};

/** A snapshot of what the operations under a path prefix could change, read through the API. */
const SNAPSHOTS: [RegExp, () => Promise<unknown>][] = [
  [/^\/api\/v1\/api-keys/, () => read(alice, '/api/v1/api-keys?include_expired=true')],
  [/^\/api\/v1\/service-principals/, () => read(alice, '/api/v1/service-principals?page_size=100')],
  [
    /^\/api\/v1\/users/,
    async () => {
      const data = await read(alice, '/api/v1/users/me/data');
      const { profile, consents, conversations } = data.body;
      return { status: data.status, profile, consents, conversations };
    },
  ],
  [/^\/(api\/v1\/)?oauth\//, () => read(alice, '/api/v1/oauth/grants')],
  [/^\/auth\//, async () => strip(await read(alice, '/auth/me'), ['last_login'])],
  [
    /^\/scim\/v2\//,
    async () => ({
      users: await read(admin, '/scim/v2/Users?count=1000'),
      groups: await read(admin, '/scim/v2/Groups?count=1000'),
    }),
  ],
  [
    /^\/api\/playground\//,
    async () => {
      const list = await read(alice, '/api/playground/sessions?limit=100', 'playground');
      const ids = Array.isArray(list.body) ? (list.body as Json[]).map((s) => s.session_id as string) : [];
      return {
        list,
        sessions: await Promise.all(ids.map((id) => read(alice, `/api/playground/sessions/${id}`, 'playground'))),
      };
    },
  ],
  [
    /^\/api\/builder\//,
    async () => {
      const list = await read(alice, '/api/builder/workflows?limit=100', 'builder');
      const items = (list.body.workflows ?? list.body) as Json[];
      const ids = Array.isArray(items) ? items.map((w) => w.workflow_id as string) : [];
      return {
        list,
        workflows: await Promise.all(ids.map((id) => read(alice, `/api/builder/workflows/${id}`, 'builder'))),
        versions: await Promise.all(ids.map((id) => read(alice, `/api/builder/workflows/${id}/versions`, 'builder'))),
      };
    },
  ],
  [/^\/(mcp|message|messages)(\/|$)/, async () => (await read(alice, '/api/v1/users/me/data')).body.conversations],
];

function snapshotOf(op: FuzzedOperation): (() => Promise<unknown>) | undefined {
  if (op.method === 'get') return undefined;
  return SNAPSHOTS.find(([pattern]) => pattern.test(op.path))?.[1];
}

/** alice's resources, created through the API: the real ids path parameters and bodies may name. */
async function seed(): Promise<void> {
  const key = await alice.post('/api/v1/api-keys', { name: 'fuzz key' });
  known.key_id = key.body.key_id as string;
  const principal = await alice.post('/api/v1/service-principals', { name: 'fuzz principal', description: 'fuzzed' });
  known.service_id = principal.body.service_id as string;
  const session = await alice.at('playground').post('/api/playground/sessions', { name: 'fuzz session' });
  known.session_id = session.body.session_id as string;
  const workflow = await alice.at('builder').post('/api/builder/workflows', linear('fuzz workflow'));
  known.workflow_id = workflow.body.workflow_id as string;
  known.version = '1';
  await alice.post('/api/v1/users/me/consent', { consent_type: 'analytics', granted: true });
}

beforeAll(async () => {
  const client = await startTestClient({
    BODY_LIMIT_BYTES: String(BODY_LIMIT),
    // The fuzz is to reach the handlers, not the budgets: those have tests of their own.
    MCP_REQUESTS_PER_MINUTE: '1000000',
    MCP_TOOL_CALLS_PER_MINUTE: '1000000',
    LOGIN_MAX_FAILURES_PER_ADDRESS: '1000000',
  });
  app = client.app;
  alice = await client.as('alice');
  admin = await client.as('admin', { password: ADMIN_PASSWORD });
  doc = (await (await fetch(`${app.url('main')}/openapi.json`)).json()) as Document;
  await seed();
  const scimUser = await admin.post('/scim/v2/Users', {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName: 'fuzz.scim',
    name: { givenName: 'Fuzz', familyName: 'Scim' },
  });
  known.user_id = scimUser.body.id as string;
  const scimGroup = await admin.post('/scim/v2/Groups', {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
    displayName: 'fuzzers',
    members: [{ value: known.user_id }],
  });
  known.group_id = scimGroup.body.id as string;
  known.name = 'User';
  known.schema_id = 'urn:ietf:params:scim:schemas:core:2.0:User';
}, 60_000);

afterAll(() => app?.close());

const short = (text: string | undefined, max = 400) =>
  text === undefined || text.length <= max ? text : `${text.slice(0, max)}… (${text.length} characters)`;

/** A failed property, briefly: what failed, and the seed and path that replay it. */
function failureOf(details: { errorInstance: unknown; seed: number; counterexamplePath: string | null }): string {
  const error = details.errorInstance;
  const message = error instanceof Error ? error.message : String(error);
  return `${short(message, 1500)}\n  seed ${details.seed}, path "${details.counterexamplePath}"; ${REPLAY_HINT}`;
}

describe('hostile requests to every documented operation', () => {
  it('fuzzes every operation that takes input, and the SDK’s OAuth endpoints', () => {
    const labels = fuzzedOperations().map((op) => op.label);
    // The description really was read: the operations of every area are there.
    expect(labels).toEqual(
      expect.arrayContaining([
        'POST /api/v1/api-keys',
        'PATCH /scim/v2/Users/{user_id}',
        'POST /api/v1/users/me/consent',
        'POST /api/playground/chat',
        'PUT /api/builder/workflows/{workflow_id}',
        'POST /mcp/tools/call',
        'POST /messages',
        'POST /oauth/token',
      ]),
    );
    expect(labels.length).toBeGreaterThan(60);
  });

  // The operations are known once the app is up: each is its own property, and every failing one is reported.
  it('answers each with a 2xx, 3xx or a 4xx in its area’s shape, and a refused write changes nothing', async () => {
    const problems: string[] = [];
    const ops = fuzzedOperations();
    const statuses = new Map<string, Set<number>>();
    for (const [index, op] of ops.entries()) {
      const snapshot = snapshotOf(op);
      let before = await snapshot?.();
      const details = await fc.check(
        fc.asyncProperty(caseOf(op), async (c) => {
          const answer = await send(op, c);
          statuses.set(op.label, (statuses.get(op.label) ?? new Set()).add(answer.status));
          const problem = problemOf(answer);
          if (problem)
            throw new Error(`${op.label} → ${problem}\n  ${short(answer.url)}\n  body: ${short(c.body?.text)}`);
          if (ENDS_SIGN_IN.includes(op.label) && answer.status < 400 && (await alice.get('/auth/me')).status === 401) {
            alice = await signIn(app, 'alice');
            await seed();
            before = await snapshot?.();
            return;
          }
          if (!snapshot) return;
          const after = await snapshot();
          if (answer.status >= 400 && JSON.stringify(after) !== JSON.stringify(before))
            throw new Error(
              `${op.label} answered ${answer.status} yet changed data\n  before: ${short(JSON.stringify(before))}\n  after: ${short(JSON.stringify(after))}\n  ${short(answer.url)}\n  body: ${short(c.body?.text)}`,
            );
          before = after;
        }),
        fuzzOptions(RUNS, index),
      );
      if (details.failed) problems.push(failureOf(details));
    }
    expect(problems).toEqual([]);
    // The cases got past the parsers and the credential check to the handlers, and were refused there too.
    const all = new Set([...statuses.values()].flatMap((set) => [...set]));
    expect([...all]).toEqual(expect.arrayContaining([200, 201, 204, 400, 403, 404, 413, 415, 422]));
    const onlyUnauthenticated = [...statuses]
      .filter(([, set]) => set.size === 1 && set.has(401))
      .map(([label]) => label);
    expect(onlyUnauthenticated).toEqual([]);
  }, 600_000);
});
