import type { App } from '../../src/app.js';
import { startTestApp } from './app.js';

/** A clock the test moves by hand; the app, its stores and its tokens all read it. */
export class TestClock {
  constructor(public ms = Date.parse('2026-06-01T12:00:00Z')) {}
  readonly now = (): Date => new Date(this.ms);
  advance(ms: number): void {
    this.ms += ms;
  }
}

export interface CallResult {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

export interface CallOptions {
  token?: string;
  cookie?: string;
  apiKey?: string;
  body?: unknown;
  form?: Record<string, string>;
  headers?: Record<string, string>;
  /** The listener to call: main unless told otherwise. */
  listener?: 'main' | 'playground' | 'builder';
}

/** One request to a listener of the app, with the credential of choice. */
export async function call(app: App, method: string, path: string, options: CallOptions = {}): Promise<CallResult> {
  const res = await fetchApp(app, method, path, options);
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** The request `call` sends, answered with the response unread. */
export function fetchApp(app: App, method: string, path: string, options: CallOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  if (options.cookie) headers.Cookie = options.cookie;
  if (options.apiKey) headers['X-API-Key'] = options.apiKey;
  let body: string | undefined;
  if (options.form) {
    headers['Content-Type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(options.form).toString();
  } else if (options.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  return fetch(`${app.url(options.listener ?? 'main')}${path}`, { method, headers, body });
}

export const PASSWORD = 'correct horse battery';
/** The bootstrap administrator's password (user `admin`) of the apps the helpers start. */
export const ADMIN_PASSWORD = 'bootstrap-secret-1';

/** Creates a local user through the users service (there is no public sign-up). */
export async function createUser(app: App, username: string, extra: { email?: string; roles?: string[] } = {}) {
  return app.services.users.create({
    username,
    password: PASSWORD,
    email: extra.email ?? `${username}@example.com`,
    ...(extra.roles && { roles: extra.roles }),
  });
}

/** The `name=value` pair of a Set-Cookie header, for sending back. */
export function cookiePair(setCookie: string | null): string {
  if (!setCookie) throw new Error('no Set-Cookie header');
  return setCookie.split(';')[0]!;
}

/** Logs a local user in (token mode) and returns the access token. */
export async function accessToken(app: App, username: string, password = PASSWORD): Promise<string> {
  return (await call(app, 'POST', '/auth/login', { body: { username, password } })).body.access_token as string;
}

/**
 * Creates a client-credentials service principal owned by whoever `ownerToken` signs in, and answers the access
 * token the principal is granted (POST /auth/token).
 */
export async function servicePrincipalToken(app: App, ownerToken: string, name: string): Promise<string> {
  const created = await call(app, 'POST', '/api/v1/service-principals', {
    token: ownerToken,
    body: { name, description: `${name}, for a test` },
  });
  const grant = await call(app, 'POST', '/auth/token', {
    form: {
      grant_type: 'client_credentials',
      client_id: created.body.service_id as string,
      client_secret: created.body.client_secret as string,
    },
  });
  return grant.body.access_token as string;
}

/**
 * A started app on a test clock with two logged-in users, alice and bob, for isolation tests. `track` receives
 * the app so the suite can close it.
 */
export async function startWithTwoUsers(track: (app: App) => void, env: Record<string, string> = {}) {
  const clock = new TestClock();
  const app = await startTestApp({ ADMIN_PASSWORD, ...env }, { now: clock.now });
  track(app);
  await createUser(app, 'alice');
  await createUser(app, 'bob');
  return { app, clock, alice: await accessToken(app, 'alice'), bob: await accessToken(app, 'bob') };
}
