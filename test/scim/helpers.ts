import type { App, AppOverrides } from '../../src/app.js';
import { FilterCompiler, parseFilter } from '../../src/modules/scim/scim.filter.js';
import { USER_FILTERS, userPageQuery } from '../../src/modules/scim/scim.store.js';
import { startTestApp } from '../helpers/app.js';
import { ADMIN_PASSWORD, PASSWORD, TestClock, call, createUser } from '../helpers/auth.js';

export const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const LIST = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
export const BULK_REQUEST = 'urn:ietf:params:scim:api:messages:2.0:BulkRequest';
export const BULK_RESPONSE = 'urn:ietf:params:scim:api:messages:2.0:BulkResponse';
export const SEARCH_REQUEST = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';
export const PUBLIC_URL = 'https://agent.example.com';
export const BASE = `${PUBLIC_URL}/scim/v2`;

export type Json = Record<string, unknown>;

/** The work address of the example user Babs Jensen (RFC 7643 §8.2). */
export const BJENSEN_WORK_ADDRESS = {
  streetAddress: '100 Universal City Plaza',
  locality: 'Hollywood',
  region: 'CA',
  postalCode: '91608',
  country: 'US',
  type: 'work',
  primary: true,
};

export interface ScimResponse {
  status: number;
  headers: Headers;
  body: Json;
}

export interface ScimClient {
  app: App;
  clock: TestClock;
  /** The administrator's access token. */
  token: string;
  base: string;
  request(method: string, path: string, body?: unknown, options?: RequestOptions): Promise<ScimResponse>;
  close(): Promise<void>;
}

export interface RequestOptions {
  token?: string | null;
  contentType?: string;
  headers?: Record<string, string>;
  raw?: string;
}

/** Sends one SCIM request (application/scim+json, the admin's token unless told otherwise). */
export async function scimRequest(
  app: App,
  token: string | null,
  method: string,
  path: string,
  body?: unknown,
  options: Omit<RequestOptions, 'token'> = {},
): Promise<ScimResponse> {
  const headers: Record<string, string> = { Accept: 'application/scim+json', ...options.headers };
  if (token) headers.Authorization = `Bearer ${token}`;
  let payload: string | undefined;
  if (options.raw !== undefined || body !== undefined) {
    headers['Content-Type'] = options.contentType ?? 'application/scim+json';
    payload = options.raw ?? JSON.stringify(body);
  }
  const res = await fetch(`${app.url('main')}/scim/v2${path}`, { method, headers, body: payload });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    body: text ? (JSON.parse(text) as Json) : (undefined as unknown as Json),
  };
}

export async function login(app: App, username: string, password = PASSWORD): Promise<string> {
  const res = await call(app, 'POST', '/auth/login', { body: { username, password } });
  if (res.status !== 200) throw new Error(`login of ${username} failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.access_token as string;
}

/**
 * A started app (SQLite in memory unless `env` says otherwise) on a hand-moved clock, with a fixed public URL
 * (so `meta.location` is predictable), and an administrator's SCIM client.
 */
export async function startScim(env: Record<string, string> = {}, overrides: AppOverrides = {}): Promise<ScimClient> {
  const clock = new TestClock();
  const app = await startTestApp({ ADMIN_PASSWORD, PUBLIC_URL, ...env }, { now: clock.now, ...overrides });
  const token = await login(app, 'admin', ADMIN_PASSWORD);
  return {
    app,
    clock,
    token,
    base: `${app.config.publicUrl}/scim/v2`,
    request: (method, path, body, options = {}) =>
      scimRequest(app, options.token === undefined ? token : options.token, method, path, body, options),
    close: () => app.close(),
  };
}

/** The SCIM error body (RFC 7644 §3.12) every failure carries. */
export function scimError(status: number, detail: string, scimType?: string) {
  return { schemas: [ERROR], status, detail, ...(scimType && { scimType }) };
}

/** The `id` of a created resource. */
export const idOf = (res: ScimResponse): string => res.body.id as string;

/** The `Resources` of a ListResponse. */
export const resourcesOf = (res: ScimResponse): Json[] => res.body.Resources as Json[];

export { ADMIN_PASSWORD, PASSWORD, TestClock, createUser };

/** SQLite's plan for the user listing a SCIM filter compiles to: which indexes and tables it reads. */
export function userListingPlan(app: App, filter: string): string {
  const raw = app.infrastructure.db.raw;
  if (raw.dialect !== 'sqlite') throw new Error('query plans are read on SQLite');
  const where = new FilterCompiler(USER_FILTERS, 'sqlite').compile(parseFilter(filter));
  const query = userPageQuery(app.infrastructure.db.kysely, {
    where,
    order: undefined,
    offset: 0,
    limit: 100,
  }).compile();
  const rows = raw.database.prepare(`EXPLAIN QUERY PLAN ${query.sql}`).all(...(query.parameters as unknown[])) as {
    detail: string;
  }[];
  return rows.map((r) => r.detail).join('\n');
}
