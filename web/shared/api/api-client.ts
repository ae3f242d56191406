import { ApiError, NetworkError, apiErrorFrom } from './api-error';

/** How this browser proves who it is: a JWT pair, or the service's HttpOnly `session_id` cookie. */
export type Credentials =
  | { kind: 'bearer'; accessToken: string; refreshToken: string; expiresAt?: number }
  | {
      kind: 'cookie';
      /** Known after a password sign-in in session mode; otherwise looked up when a socket needs it. */
      sessionId?: string;
    };

/** GET /auth/me. The spec names the identifier `id`; some deployments also send `user_id`. */
export interface CurrentUser {
  id?: string;
  user_id?: string;
  username: string;
  email?: string;
  email_verified?: boolean;
  roles?: string[];
  groups?: string[];
  created_at?: string;
  last_login?: string;
}

interface TokenResponse {
  access_token: string;
  refresh_token: string;
  token_type?: string;
  expires_in?: number;
}

export type QueryValue = string | number | boolean | undefined;

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  query?: Record<string, QueryValue>;
  /** Sent as JSON. */
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export interface ApiClientOptions {
  /** sessionStorage key under which a JWT pair survives a reload of the tab. */
  storageKey: string;
  /** Origin-relative base of every path; '' for the page's own origin. */
  baseUrl?: string;
}

/** Refresh a little before the server would refuse the token. */
const EXPIRY_MARGIN_MS = 30_000;

function isTokenResponse(value: unknown): value is TokenResponse {
  const v = value as Partial<TokenResponse> | null;
  return typeof v?.access_token === 'string' && typeof v.refresh_token === 'string';
}

/**
 * The browser's way into the service: adds credentials to every request, renews an expired access token once
 * (refresh tokens are single-use, so concurrent 401s share one renewal), and reports when the sign-in is lost.
 */
export class ApiClient {
  #credentials: Credentials | null = null;
  #refreshing: Promise<boolean> | null = null;
  readonly #listeners = new Set<(credentials: Credentials | null) => void>();
  readonly #storageKey: string;
  readonly #baseUrl: string;

  constructor(options: ApiClientOptions) {
    this.#storageKey = options.storageKey;
    this.#baseUrl = options.baseUrl ?? '';
    this.#credentials = this.#load();
  }

  get credentials(): Credentials | null {
    return this.#credentials;
  }

  /** Called with the new credentials whenever they change; with null when the sign-in is gone. */
  subscribe(listener: (credentials: Credentials | null) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  url(path: string, query?: Record<string, QueryValue>): string {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined) params.set(key, String(value));
    }
    const search = params.toString();
    return `${this.#baseUrl}${path}${search ? `?${search}` : ''}`;
  }

  /** A JSON request; resolves to the parsed body, or undefined for an empty one (204). */
  async request<T>(path: string, options: RequestOptions = {}): Promise<T> {
    const headers: Record<string, string> = { Accept: 'application/json', ...options.headers };
    let body: string | undefined;
    if (options.body !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(options.body);
    }
    const response = await this.fetch(this.url(path, options.query), {
      method: options.method ?? 'GET',
      headers,
      body,
      signal: options.signal,
    });
    if (!response.ok) throw await apiErrorFrom(response);
    const text = await response.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /**
   * fetch() with credentials. A 401 triggers one token renewal and one retry; if that fails too the
   * credentials are dropped and listeners hear about it. The response is returned as is otherwise.
   */
  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const used = this.#credentials;
    const first = await this.#send(url, init);
    if (first.status !== 401 || this.#credentials === null) return first;

    // Another request may have renewed the pair while this one was in flight: then just retry.
    if (this.#credentials.kind === 'bearer' && (this.#credentials !== used || (await this.refresh()))) {
      const second = await this.#send(url, init);
      if (second.status !== 401) return second;
    }
    this.#setCredentials(null);
    return first;
  }

  /** POST /auth/login. Works out the mode from the answer: a token pair, or a server-side session. */
  async login(username: string, password: string): Promise<CurrentUser> {
    const response = await this.#raw(this.url('/auth/login'), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify({ username, password }),
    });
    if (!response.ok) throw await apiErrorFrom(response);
    const body = (await response.json()) as unknown;
    if (isTokenResponse(body)) {
      this.#setCredentials(this.#fromTokens(body));
    } else {
      const sessionId = (body as { session_id?: unknown } | null)?.session_id;
      this.#setCredentials({ kind: 'cookie', sessionId: typeof sessionId === 'string' ? sessionId : undefined });
    }
    try {
      return await this.me();
    } catch (error) {
      this.#setCredentials(null);
      throw error;
    }
  }

  /** Signs out on the server (best effort) and forgets the credentials here in any case. */
  async logout(): Promise<void> {
    try {
      if (this.#credentials !== null) {
        await this.#send(this.url('/auth/logout'), { method: 'POST', headers: { Accept: 'application/json' } });
      }
    } catch {
      // The local sign-out below is what matters to the person at the keyboard.
    } finally {
      this.#setCredentials(null);
    }
  }

  /** Drops the credentials without asking the service (it has already refused them). */
  forget(): void {
    this.#setCredentials(null);
  }

  me(signal?: AbortSignal): Promise<CurrentUser> {
    return this.request<CurrentUser>('/auth/me', { signal });
  }

  /**
   * Finds out whether this tab is already signed in: with the stored token pair, or with the session cookie
   * (password sign-in in session mode, or the return from single sign-on). Resolves to null when not.
   *
   * Without a token pair, it first asks whether the cookie (which this page cannot read: it is HttpOnly) is a live
   * session: a browser that is signed out is the usual case on a first visit, and GET /auth/me would refuse it
   * with a 401 the browser reports as an error.
   */
  async restore(signal?: AbortSignal): Promise<CurrentUser | null> {
    if (this.#credentials === null) {
      if (!(await this.#cookieSignsIn(signal))) return null;
      this.#credentials = { kind: 'cookie' };
    }
    try {
      return await this.me(signal);
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) {
        this.#setCredentials(null);
        return null;
      }
      throw error;
    }
  }

  /**
   * Whether the session cookie is a live session (GET /auth/session). An older service without that route may
   * still have one: GET /auth/me then finds out.
   */
  async #cookieSignsIn(signal?: AbortSignal): Promise<boolean> {
    try {
      const state = await this.request<{ signed_in?: unknown }>('/auth/session', { signal });
      return state?.signed_in === true;
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return true;
      throw error;
    }
  }

  /**
   * The token a WebSocket sends in its first `auth` message: the access token (renewed first when it is about
   * to expire), or the session id. Undefined when the session id cannot be known (an HttpOnly cookie set by
   * single sign-on and not listed by GET /auth/sessions); the caller then streams over HTTP instead.
   */
  async socketToken(): Promise<string | undefined> {
    const credentials = this.#credentials;
    if (credentials === null) return undefined;
    if (credentials.kind === 'bearer') {
      if (credentials.expiresAt !== undefined && credentials.expiresAt - EXPIRY_MARGIN_MS < Date.now()) {
        await this.refresh();
      }
      const now = this.#credentials;
      return now?.kind === 'bearer' ? now.accessToken : undefined;
    }
    if (credentials.sessionId) return credentials.sessionId;
    try {
      const list = await this.request<{ sessions?: { session_id?: string; is_current?: boolean }[] }>('/auth/sessions');
      const current = list.sessions?.find((s) => s.is_current === true)?.session_id;
      if (current && this.#credentials?.kind === 'cookie') {
        this.#credentials = { kind: 'cookie', sessionId: current };
      }
      return current;
    } catch {
      return undefined;
    }
  }

  /**
   * Renews the access token that the service just refused, unless another request renewed it meanwhile.
   * True when there is a newer token to try.
   */
  renew(refusedAccessToken: string): Promise<boolean> {
    const credentials = this.#credentials;
    if (credentials?.kind === 'bearer' && credentials.accessToken !== refusedAccessToken) return Promise.resolve(true);
    return this.refresh();
  }

  /** Renews the access token with the refresh token; true when a new pair was stored. Never runs twice at once. */
  refresh(): Promise<boolean> {
    this.#refreshing ??= this.#doRefresh().finally(() => {
      this.#refreshing = null;
    });
    return this.#refreshing;
  }

  async #doRefresh(): Promise<boolean> {
    const credentials = this.#credentials;
    if (credentials?.kind !== 'bearer') return false;
    try {
      const response = await this.#raw(this.url('/auth/refresh'), {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ refresh_token: credentials.refreshToken }),
      });
      if (!response.ok) return false;
      const body = (await response.json()) as unknown;
      if (!isTokenResponse(body)) return false;
      this.#setCredentials(this.#fromTokens(body));
      return true;
    } catch {
      return false;
    }
  }

  #fromTokens(tokens: TokenResponse): Credentials {
    return {
      kind: 'bearer',
      accessToken: tokens.access_token,
      refreshToken: tokens.refresh_token,
      expiresAt: typeof tokens.expires_in === 'number' ? Date.now() + tokens.expires_in * 1000 : undefined,
    };
  }

  #send(url: string, init: RequestInit): Promise<Response> {
    const headers = new Headers(init.headers);
    const credentials = this.#credentials;
    if (credentials?.kind === 'bearer') headers.set('Authorization', `Bearer ${credentials.accessToken}`);
    return this.#raw(url, { ...init, headers });
  }

  async #raw(url: string, init: RequestInit): Promise<Response> {
    try {
      return await fetch(url, { ...init, credentials: 'same-origin' });
    } catch (error) {
      if (error instanceof DOMException && error.name === 'AbortError') throw error;
      throw new NetworkError('Cannot reach the service. Check your connection and try again.');
    }
  }

  #setCredentials(credentials: Credentials | null): void {
    this.#credentials = credentials;
    this.#save(credentials);
    for (const listener of this.#listeners) listener(credentials);
  }

  #load(): Credentials | null {
    try {
      const raw = sessionStorage.getItem(this.#storageKey);
      if (raw === null) return null;
      const stored = JSON.parse(raw) as Partial<{ accessToken: string; refreshToken: string; expiresAt: number }>;
      if (typeof stored.accessToken !== 'string' || typeof stored.refreshToken !== 'string') return null;
      return {
        kind: 'bearer',
        accessToken: stored.accessToken,
        refreshToken: stored.refreshToken,
        expiresAt: typeof stored.expiresAt === 'number' ? stored.expiresAt : undefined,
      };
    } catch {
      return null;
    }
  }

  /** Only a token pair is kept across reloads; a session id stays in memory (its cookie is HttpOnly). */
  #save(credentials: Credentials | null): void {
    try {
      if (credentials?.kind === 'bearer') {
        const { accessToken, refreshToken, expiresAt } = credentials;
        sessionStorage.setItem(this.#storageKey, JSON.stringify({ accessToken, refreshToken, expiresAt }));
      } else {
        sessionStorage.removeItem(this.#storageKey);
      }
    } catch {
      // Storage can be unavailable (private mode, quota); the credentials still live in memory.
    }
  }
}
