import { randomBytes, randomUUID } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { Broadcast } from '../../adapters/broadcast/port.js';
import type { CounterStore } from '../../adapters/counters/port.js';
import type { SessionRecord, SessionStore } from '../../adapters/session-store/port.js';
import type { Config } from '../../config.js';
import type { Database } from '../../db/database.js';
import { ForbiddenError, NotFoundError, UnauthorizedError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { type AuditRecorder, actorOf } from '../../ports/audit.js';
import { RecentReads, SharedForgetting } from '../../ports/recent-reads.js';
import type { User, UsersService } from '../users/index.js';
import { userKey } from '../users/index.js';
import { AuthErrorCode, sessionEvicted } from './auth.errors.js';
import * as store from './auth.store.js';
import { FailureThrottle } from './throttle.js';
import {
  type Caller,
  CallerErrorCode,
  type ClientInfo,
  NO_CLIENT,
  principalSubject,
  userCaller,
  userIdOf,
  userSubject,
} from '../../ports/caller.js';
import {
  type AccessClaims,
  TOKEN_AUDIENCE,
  type TokenService,
  hashSecret,
  matchesHash,
  opaqueToken,
} from './tokens.js';

export interface StartedSession {
  id: string;
  /** `<id>.<secret>`: what the `session_id` cookie carries. Shown once; only its hash is stored. */
  credential: string;
  expiresAt: string;
}

export interface TokenPair {
  accessToken: string;
  refreshToken: string;
  expiresIn: number;
}

export interface LoginResult {
  user: User;
  session: StartedSession;
  /** Token mode only. */
  tokens?: TokenPair;
}

const INVALID_CREDENTIALS = 'Invalid username or password';
/** For calls made without an HTTP client behind them. */
/** Session use is recorded at most this often, so that every request does not write to the store. */
const TOUCH_EVERY_MS = 60_000;
/**
 * How long a session read from the store vouches for the access tokens that name it, so that a client's burst of
 * requests costs one store read (a Redis round trip when sessions live there), not one each. Ending a session
 * forgets it at once on this instance and, through the broadcast, on the others; should a broadcast be lost, this
 * is how long another instance may still accept the session's tokens.
 */
const SESSION_CACHE_MS = 1_000;
const SESSION_CACHE_LIMIT = 10_000;
/** Where instances tell each other of ended sessions: `session:<id>` or `user:<id>` (all of the user's). */
const SESSIONS_ENDED_CHANNEL = 'auth-sessions-ended';

function parseCredential(credential: string): { id: string; secret: string } | undefined {
  const dot = credential.indexOf('.');
  if (dot <= 0 || credential.length > 256) return undefined;
  return { id: credential.slice(0, dot), secret: credential.slice(dot + 1) };
}

export interface AuthServiceDeps {
  config: Config['auth'];
  db: Kysely<Database>;
  users: UsersService;
  sessions: SessionStore;
  counters: CounterStore;
  tokens: TokenService;
  logger: Logger;
  audit: AuditRecorder;
  now?: () => Date;
}

/**
 * Logins, sessions and tokens. Every login starts a server-side session: in session mode its credential is the
 * `session_id` cookie; in token mode it is the family of the refresh tokens and every access token names it, so
 * ending the session ends them all at once.
 */
export class AuthService {
  private readonly now: () => Date;
  readonly throttle: FailureThrottle;
  /** Token families that are not login sessions (`apikey:…`, `sp:…`), each with its own liveness check. */
  readonly #families = new Map<string, (sid: string, subject: string) => Promise<boolean>>();
  /** Sessions recently read for access tokens, by id, each with the store's `epoch` it was read in. */
  readonly #sessions = new RecentReads<{ session: SessionRecord; epoch: number }>(
    SESSION_CACHE_MS,
    SESSION_CACHE_LIMIT,
  );
  /** Told of each user whose sessions all ended, here or on another instance (`onUserRevoked`). */
  readonly #userRevokedListeners: ((userId: string) => void)[] = [];
  /**
   * Sessions ended here are forgotten at once, and on every other instance once the broadcast reaches it: `tell`
   * resolves once the broadcast is sent (a request that follows the revocation's answer finds it delivered).
   */
  readonly #ends = new SharedForgetting<`session:${string}` | `user:${string}`>(
    SESSIONS_ENDED_CHANNEL,
    (ended) => this.#forgetSessions(ended),
    (err) => this.deps.logger.warn({ err }, 'ended session not broadcast; other instances forget it within a second'),
  );

  constructor(private readonly deps: AuthServiceDeps) {
    this.now = deps.now ?? (() => new Date());
    this.throttle = new FailureThrottle(deps.counters, deps.config.login.failureWindowSeconds * 1000, this.now);
  }

  /**
   * Lets another credential kind issue access tokens whose `sid` starts with `prefix:`. Such tokens live as long
   * as `isLive` says the credential behind them does (an API key not rotated or deleted, say).
   */
  registerTokenFamily(prefix: string, isLive: (sid: string, subject: string) => Promise<boolean>): void {
    this.#families.set(prefix, isLive);
  }

  /**
   * Calls `listener` with each user whose sessions all end (deactivation, erasure, a password change): on this
   * instance at once, and here too when another instance ends them and the broadcast arrives. What another credential
   * vouched for from a cache (an API key's owner, say) is forgotten with it.
   */
  onUserRevoked(listener: (userId: string) => void): void {
    this.#userRevokedListeners.push(listener);
  }

  /**
   * Tells the other instances of each session this one ends, and forgets the sessions they end, through
   * `broadcast`. Without it, another instance's logout takes effect here within SESSION_CACHE_MS. Returns the stop.
   */
  shareForgetting(broadcast: Broadcast): () => void {
    return this.#ends.share(broadcast);
  }

  get mode(): 'token' | 'session' {
    return this.deps.config.mode;
  }

  get maxConcurrentSessions(): number {
    return this.deps.config.session.maxConcurrent;
  }

  /**
   * Keys that throttle failed attempts on an account from a client: the account's own, and the address's, so
   * that guessing one password and spraying many accounts are both slowed down.
   */
  throttleKeys(account: string, client: ClientInfo) {
    const limits = this.deps.config.login;
    return [
      { key: `login:user:${account}`, max: limits.maxFailures },
      ...(client.ip ? [{ key: `login:addr:${client.ip}`, max: limits.maxFailuresPerAddress }] : []),
    ];
  }

  /**
   * Checks a password as a login does (throttled per account and per address, a failure audited) without starting
   * a session: for sign-ins that end in something else, such as an MCP client's authorization.
   */
  async checkPassword(login: string, password: string, client: ClientInfo): Promise<User> {
    const keys = this.throttleKeys(userKey(login), client);
    await this.throttle.guard(keys);
    const user = await this.deps.users.authenticate(login, password);
    if (!user) {
      await this.throttle.fail(keys);
      this.deps.logger.info({ event: 'login_failed', ip: client.ip }, 'login failed');
      // The event names the account when there is one, never the text typed: that may be a mistyped password.
      await this.deps.audit.record({
        type: 'login.failed',
        actorId: null,
        subjectId: await this.deps.users.idByLogin(login),
        ipAddress: client.ip,
        userAgent: client.userAgent,
        details: { method: 'password', reason: 'invalid_credentials' },
      });
      throw new UnauthorizedError(INVALID_CREDENTIALS, { code: AuthErrorCode.InvalidCredentials });
    }
    await this.throttle.succeed(keys[0]!);
    return user;
  }

  /** Password login by username or email, throttled per account and per client address. */
  async login(login: string, password: string, client: ClientInfo): Promise<LoginResult> {
    const user = await this.checkPassword(login, password, client);
    const result = await this.startSession(user, client);
    this.deps.logger.info({ event: 'login', user_id: user.id }, 'login succeeded');
    await this.deps.audit.record({
      type: 'login.succeeded',
      actorId: user.id,
      ipAddress: client.ip,
      userAgent: client.userAgent,
      details: { method: 'password', session_id: result.session.id },
    });
    return result;
  }

  /** Starts a session for an authenticated user (password login or SSO) and, in token mode, a token pair. */
  async startSession(user: User, client: ClientInfo, data: Record<string, string> = {}): Promise<LoginResult> {
    const now = this.now().getTime();
    const { session: limits, refreshTokenTtlSeconds } = this.deps.config;
    const lifetimeMs = (this.mode === 'token' ? refreshTokenTtlSeconds : limits.absoluteTimeoutSeconds) * 1000;
    const idleMs = (this.mode === 'token' ? refreshTokenTtlSeconds : limits.idleTimeoutSeconds) * 1000;
    const secret = randomBytes(32).toString('base64url');
    const record: SessionRecord = {
      id: randomUUID(),
      secretHash: hashSecret(secret),
      userId: user.id,
      createdAt: now,
      lastAccessedAt: now,
      expiresAt: now + lifetimeMs,
      idleTimeoutMs: idleMs,
      ipAddress: client.ip,
      userAgent: client.userAgent?.slice(0, 512) ?? null,
      data,
    };
    // An evicted session's refresh tokens stay in the database, dead with their session, so that presenting one
    // can still be answered "evicted" (see `refresh`); ending the session is what ends every token of it.
    const { evicted } = await this.deps.sessions.create(record, limits.maxConcurrent);
    for (const id of evicted) {
      await this.#ends.tell(`session:${id}`);
      this.deps.logger.info({ event: 'session_evicted', user_id: user.id }, 'session evicted');
      await this.deps.audit.record({
        type: 'session.evicted',
        actorId: user.id,
        ipAddress: client.ip,
        userAgent: client.userAgent,
        details: { session_id: id, reason: 'concurrent_session_limit', max_concurrent: limits.maxConcurrent },
      });
    }
    await this.deps.users.recordLogin(user.id);
    const session: StartedSession = {
      id: record.id,
      credential: `${record.id}.${secret}`,
      expiresAt: new Date(record.expiresAt).toISOString(),
    };
    if (this.mode === 'session') return { user, session };
    return { user, session, tokens: await this.#tokenPair(user, record.id, now) };
  }

  /** Exchanges a refresh token for a new pair. A token presented twice revokes its whole session. */
  async refresh(refreshToken: string, client: ClientInfo = NO_CLIENT): Promise<TokenPair> {
    const row = await store.findRefreshToken(this.deps.db, hashSecret(refreshToken));
    if (!row) throw new UnauthorizedError('Invalid refresh token', { code: CallerErrorCode.InvalidToken });
    if (row.used_at !== null) return this.#reuseDetected(row.session_id, row.user_id, client);
    const now = this.now();
    if (Date.parse(row.expires_at) <= now.getTime()) {
      throw new UnauthorizedError('Refresh token has expired', { code: CallerErrorCode.InvalidToken });
    }
    const session = await this.deps.sessions.get(row.session_id);
    if (!session && (await this.#evictedFrom(row.session_id, row.user_id))) throw sessionEvicted();
    const user = session && (await this.deps.users.get(row.user_id));
    if (!session || !user?.active) {
      await this.revokeSession(row.user_id, row.session_id);
      throw new UnauthorizedError('The session has ended; log in again', { code: CallerErrorCode.InvalidToken });
    }
    // Only one of two concurrent exchanges of the same token may win; the loser is treated as reuse.
    if (!(await store.markRefreshTokenUsed(this.deps.db, row.user_id, row.id, now.toISOString()))) {
      return this.#reuseDetected(row.session_id, row.user_id, client);
    }
    await this.deps.sessions.touch(session.id, now.getTime());
    return this.#tokenPair(user, session.id, now.getTime());
  }

  /** Ends a session of the user's and every token issued in it. */
  async revokeSession(userId: string, sessionId: string): Promise<boolean> {
    const existed = await this.deps.sessions.delete(sessionId, userId);
    await this.#ends.tell(`session:${sessionId}`);
    await store.deleteSessionTokens(this.deps.db, userId, sessionId);
    return existed;
  }

  /** Ends the caller's current session (POST /auth/logout, SSO logout). */
  async logout(caller: Caller, client: ClientInfo, method: 'password' | 'sso' = 'password'): Promise<void> {
    const userId = userIdOf(caller);
    if (!caller.sessionId || userId === undefined) return;
    await this.revokeSession(userId, caller.sessionId);
    await this.deps.audit.record({
      type: 'logout',
      actorId: actorOf(caller),
      ipAddress: client.ip,
      userAgent: client.userAgent,
      details: { session_id: caller.sessionId, method },
    });
  }

  /** Ends every session of a user (deactivation, erasure, password change). */
  async revokeUser(userId: string): Promise<number> {
    const count = await this.deps.sessions.deleteByUser(userId);
    await this.#ends.tell(`user:${userId}`);
    await store.deleteUserTokens(this.deps.db, userId);
    return count;
  }

  /**
   * Erasure: deletes the user's sessions from the session store (only there: their refresh tokens are the
   * database's, see `deleteRefreshTokensOf`) and returns how many were live.
   */
  async deleteSessionsOf(userId: string): Promise<number> {
    const count = await this.deps.sessions.deleteByUser(userId);
    await this.#ends.tell(`user:${userId}`);
    return count;
  }

  /** Erasure: deletes the user's refresh tokens through `db` (the erasure's transaction) and returns how many. */
  deleteRefreshTokensOf(userId: string, db: Kysely<Database> | Transaction<Database>): Promise<number> {
    return store.deleteUserTokens(db, userId);
  }

  /**
   * Erasure: forgets the failed-login counters kept under the user's login names (their keys name the account).
   * Returns how many were counting.
   */
  async forgetLoginFailures(logins: string[]): Promise<number> {
    let forgotten = 0;
    for (const login of new Set(logins.map(userKey))) {
      const [key] = this.throttleKeys(login, NO_CLIENT);
      if ((await this.deps.counters.peek(key!.key)).count > 0) forgotten += 1;
      await this.throttle.succeed(key!);
    }
    return forgotten;
  }

  /** A live session by id. */
  session(id: string): Promise<SessionRecord | undefined> {
    return this.deps.sessions.get(id);
  }

  async listSessions(userId: string): Promise<SessionRecord[]> {
    return this.deps.sessions.listByUser(userId);
  }

  /** Revokes one of the caller's own sessions: 404 when there is no such session, 403 when it is someone else's. */
  async revokeOwnSession(caller: Caller, sessionId: string, client: ClientInfo = NO_CLIENT): Promise<void> {
    const id = parseCredential(sessionId)?.id ?? sessionId;
    const userId = userIdOf(caller);
    // The store deletes the session only if it is the caller's, in one step; what was there decides the refusal.
    if (userId === undefined || !(await this.revokeSession(userId, id))) {
      const session = await this.deps.sessions.get(id);
      if (session && session.userId !== userId) {
        throw new ForbiddenError('You can revoke only your own sessions', { code: CallerErrorCode.AccessDenied });
      }
      throw new NotFoundError('Session not found', { code: AuthErrorCode.SessionNotFound });
    }
    await this.deps.audit.record({
      type: 'session.revoked',
      actorId: actorOf(caller),
      ipAddress: client.ip,
      userAgent: client.userAgent,
      details: { session_id: id, reason: 'revoked_by_user' },
    });
  }

  /** A valid access token's claims: signature, issuer, audience, expiry, and a session that is still live. */
  async verifyAccessToken(token: string): Promise<AccessClaims> {
    const claims = await this.deps.tokens.verify(token);
    const family = this.#families.get(claims.sid.slice(0, claims.sid.indexOf(':')));
    if (family) {
      if (!(await family(claims.sid, claims.sub))) {
        throw new UnauthorizedError('Token has been revoked', { code: CallerErrorCode.InvalidToken });
      }
      return claims;
    }
    const session = await this.#tokenSession(claims.sid);
    if (!session || session.userId !== claims.sub) {
      if (!session && (await this.#evictedFrom(claims.sid, claims.sub))) throw sessionEvicted();
      throw new UnauthorizedError('Token has been revoked', { code: CallerErrorCode.InvalidToken });
    }
    await this.#touch(session);
    return claims;
  }

  /** The caller a Bearer access token stands for; 401 when invalid, expired or its session has ended. */
  async authenticateBearer(token: string): Promise<Caller> {
    const claims = await this.verifyAccessToken(token);
    return {
      kind: claims.kind,
      subject: claims.kind === 'service' ? principalSubject(claims.sub) : userSubject(claims.sub),
      username: claims.username,
      roles: claims.roles,
      sessionId: this.#families.has(claims.sid.slice(0, claims.sid.indexOf(':'))) ? undefined : claims.sid,
      via: 'bearer',
      expiresAt: claims.exp,
      ...(claims.aud !== TOKEN_AUDIENCE && { resource: claims.aud }),
      ...(claims.scope !== undefined && { scopes: claims.scope.split(' ').filter(Boolean) }),
    };
  }

  /** The caller a `session_id` cookie stands for; 401 when unknown, expired or forged. */
  async authenticateSession(credential: string): Promise<Caller> {
    const parsed = parseCredential(credential);
    const session = parsed && (await this.deps.sessions.get(parsed.id));
    if (parsed && !session) {
      // Only the cookie's holder learns that its session was evicted: the secret must match the one it had.
      const evicted = await this.deps.sessions.evicted(parsed.id);
      if (evicted && matchesHash(parsed.secret, evicted.secretHash)) throw sessionEvicted();
    }
    if (!parsed || !session || !matchesHash(parsed.secret, session.secretHash)) {
      throw new UnauthorizedError('Session is invalid or has expired', { code: CallerErrorCode.InvalidToken });
    }
    const user = await this.deps.users.get(session.userId);
    if (!user?.active) {
      await this.revokeSession(session.userId, session.id);
      throw new UnauthorizedError('Session is invalid or has expired', { code: CallerErrorCode.InvalidToken });
    }
    await this.#touch(session);
    return userCaller(user, {
      via: 'cookie',
      sessionId: session.id,
      expiresAt: Math.floor(Math.min(session.expiresAt, session.lastAccessedAt + session.idleTimeoutMs) / 1000),
    });
  }

  /** Whether `sessionId` is a session of `userId` that the concurrent-session limit evicted (and not yet lapsed). */
  async #evictedFrom(sessionId: string, userId: string): Promise<boolean> {
    return (await this.deps.sessions.evicted(sessionId))?.userId === userId;
  }

  async #touch(session: SessionRecord): Promise<void> {
    const now = this.now().getTime();
    if (now - session.lastAccessedAt >= Math.min(TOUCH_EVERY_MS, session.idleTimeoutMs / 10)) {
      await this.deps.sessions.touch(session.id, now);
      // The cached copy, when this is one, is not touched again for every request until it expires.
      session.lastAccessedAt = now;
    }
  }

  /** The live session an access token names: read from the store, or as read within the last SESSION_CACHE_MS. */
  async #tokenSession(id: string): Promise<SessionRecord | undefined> {
    const now = this.now().getTime();
    const epoch = this.deps.sessions.epoch?.() ?? 0;
    const cached = this.#sessions.get(id, now);
    if (cached) {
      const { session } = cached;
      const live = Math.min(session.lastAccessedAt + session.idleTimeoutMs, session.expiresAt) > now;
      if (live && cached.epoch === epoch) return session;
      this.#sessions.drop(id);
    }
    // A verified token may be vouched for by the session as this instance last saw it, while the store is down.
    const read = await this.#sessions.read(id, now, async () => {
      const session = await this.deps.sessions.get(id, { staleOk: true });
      return session && { session, epoch };
    });
    return read?.session;
  }

  #forgetSessions(ended: string): void {
    if (ended.startsWith('session:')) {
      this.#sessions.forget(ended.slice('session:'.length));
    } else if (ended.startsWith('user:')) {
      const userId = ended.slice('user:'.length);
      this.#sessions.forget(({ session }) => session.userId === userId);
      for (const listener of this.#userRevokedListeners) listener(userId);
    }
  }

  async #tokenPair(user: User, sessionId: string, now: number): Promise<TokenPair> {
    const access = await this.deps.tokens.issue({
      sub: user.id,
      username: user.username,
      roles: user.roles,
      kind: 'user',
      sid: sessionId,
    });
    const refreshToken = opaqueToken('rt_');
    await store.insertRefreshToken(this.deps.db, {
      id: randomUUID(),
      token_hash: hashSecret(refreshToken),
      session_id: sessionId,
      user_id: user.id,
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + this.deps.config.refreshTokenTtlSeconds * 1000).toISOString(),
      used_at: null,
    });
    return { accessToken: access.token, refreshToken, expiresIn: access.expiresIn };
  }

  async #reuseDetected(sessionId: string, userId: string, client: ClientInfo): Promise<never> {
    await this.revokeSession(userId, sessionId);
    this.deps.logger.warn({ event: 'refresh_token_reuse', user_id: userId }, 'refresh token reuse: session revoked');
    await this.deps.audit.record({
      type: 'refresh_token.reused',
      actorId: null,
      subjectId: userId,
      ipAddress: client.ip,
      userAgent: client.userAgent,
      details: { session_id: sessionId },
    });
    throw new UnauthorizedError('Refresh token was already used; the session has been revoked', {
      code: CallerErrorCode.InvalidToken,
    });
  }
}
