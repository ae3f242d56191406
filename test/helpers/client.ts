import type { App, AppOverrides } from '../../src/app.js';
import type { User } from '../../src/modules/users/users.service.js';
import { startTestApp } from './app.js';
import { ADMIN_PASSWORD, type CallOptions, PASSWORD, call, cookiePair, createUser, fetchApp } from './auth.js';

export type Json = Record<string, unknown>;

/** What one request answered: its status, its headers and its body (parsed when JSON, `{}` when empty). */
export interface Reply<T> {
  status: number;
  headers: Headers;
  body: T;
}

export interface RequestOptions {
  headers?: Record<string, string>;
}

/** Requests to the app's main listener, each with the same credential (or none). */
export interface Requester {
  get<T = Json>(path: string, options?: RequestOptions): Promise<Reply<T>>;
  post<T = Json>(path: string, body?: unknown, options?: RequestOptions): Promise<Reply<T>>;
  put<T = Json>(path: string, body?: unknown, options?: RequestOptions): Promise<Reply<T>>;
  patch<T = Json>(path: string, body?: unknown, options?: RequestOptions): Promise<Reply<T>>;
  delete<T = Json>(path: string, options?: RequestOptions): Promise<Reply<T>>;
}

/** A signed-in user: requests carry the credential the login answered with. */
export interface SignedIn extends Requester {
  readonly username: string;
  /** The user's id (`user:<id>` is their subject). */
  readonly id: string;
  /** The user as the users service answered before the sign-in. */
  readonly user: User;
  /** The login response's body (access and refresh token in token mode, the session in session mode). */
  readonly login: Json;
  /** The bearer access token; throws in session mode, where the credential is a cookie. */
  readonly token: string;
  /** The request header that carries the credential, for other clients (the MCP SDK's transports, WebSocket). */
  readonly credentials: Record<string, string>;
  /** The same requests to another listener (playground, builder). */
  at(listener: NonNullable<CallOptions['listener']>): Requester;
}

export interface SignInOptions {
  /** Used when the user is created (it is not when one of that name exists, like the bootstrap `admin`). */
  email?: string;
  roles?: string[];
  /** The password to sign in with: PASSWORD, the one users created here get, unless told otherwise. */
  password?: string;
  /** Extra headers on the login request (a User-Agent the audit log should record). */
  headers?: Record<string, string>;
}

export interface TestClient {
  app: App;
  /** Creates the user through the users service unless one of that name exists, and signs in (POST /auth/login). */
  as: (username: string, options?: SignInOptions) => Promise<SignedIn>;
  /** Requests without a credential. */
  anonymous: Requester;
  close: () => Promise<void>;
}

/** Requests with the given credential, or none: also for those that are not a login, like an API key. */
export function requester(
  app: App,
  credential: Pick<CallOptions, 'token' | 'cookie' | 'apiKey'>,
  listener: CallOptions['listener'] = 'main',
): Requester {
  const send = async <T>(method: string, path: string, body?: unknown, options: RequestOptions = {}) => {
    const res = await fetchApp(app, method, path, { ...credential, body, headers: options.headers, listener });
    const text = await res.text();
    const json = /\bjson\b/.test(res.headers.get('content-type') ?? '');
    return { status: res.status, headers: res.headers, body: (text === '' ? {} : json ? JSON.parse(text) : text) as T };
  };
  return {
    get: <T>(path: string, options?: RequestOptions) => send<T>('GET', path, undefined, options),
    post: <T>(path: string, body?: unknown, options?: RequestOptions) => send<T>('POST', path, body, options),
    put: <T>(path: string, body?: unknown, options?: RequestOptions) => send<T>('PUT', path, body, options),
    patch: <T>(path: string, body?: unknown, options?: RequestOptions) => send<T>('PATCH', path, body, options),
    delete: <T>(path: string, options?: RequestOptions) => send<T>('DELETE', path, undefined, options),
  };
}

/** Signs in to a started app; see TestClient.as. */
export async function signIn(app: App, username: string, options: SignInOptions = {}): Promise<SignedIn> {
  const user =
    (await app.services.users.getByUsername(username)) ??
    (await createUser(app, username, { email: options.email, roles: options.roles }));
  const res = await call(app, 'POST', '/auth/login', {
    body: { username, password: options.password ?? PASSWORD },
    headers: options.headers,
  });
  if (res.status !== 200) throw new Error(`login of ${username} failed: ${res.status} ${JSON.stringify(res.body)}`);
  const token = res.body.access_token as string | undefined;
  const cookie = token === undefined ? cookiePair(res.headers.get('set-cookie')) : undefined;
  const credential = token === undefined ? { cookie } : { token };
  return {
    ...requester(app, credential),
    at: (listener) => requester(app, credential, listener),
    username,
    id: user.id,
    user,
    login: res.body,
    get token(): string {
      if (token === undefined) throw new Error(`${username} signed in with a session cookie, not a token`);
      return token;
    },
    credentials: token === undefined ? { Cookie: cookie! } : { Authorization: `Bearer ${token}` },
  };
}

/**
 * Starts the real app (`startTestApp`, with a bootstrap administrator whose password is ADMIN_PASSWORD unless `env`
 * says otherwise) and a client bound to it: `const alice = await as('alice'); await alice.get<T>('/auth/me')`.
 * Close it (or its app) when done, e.g. with closeAfterEach.
 */
export async function startTestClient(
  env: Record<string, string> = {},
  overrides: AppOverrides = {},
): Promise<TestClient> {
  const app = await startTestApp({ ADMIN_PASSWORD, ...env }, overrides);
  return {
    app,
    as: (username, options) => signIn(app, username, options),
    anonymous: requester(app, {}),
    close: () => app.close(),
  };
}
