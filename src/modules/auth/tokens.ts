import { hash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { type JWTPayload, SignJWT, errors as joseErrors, jwtVerify } from 'jose';
import { UnauthorizedError } from '../../errors.js';
import { CallerErrorCode } from '../../ports/caller.js';
import { type KeyRing, SIGNING_ALG } from './keys.js';

/** RFC 9068 access-token type: an ID token or any other JWT signed by the same key is not accepted as one. */
const ACCESS_TOKEN_TYPE = 'at+jwt';
export const TOKEN_AUDIENCE = 'agent-service';
const CLOCK_TOLERANCE_SECONDS = 5;
const CACHE_LIMIT = 10_000;

export type SubjectKind = 'user' | 'service';

export interface AccessClaims {
  /** User id (UUID) or service principal id. */
  sub: string;
  username: string;
  roles: string[];
  kind: SubjectKind;
  /** The login session the token belongs to; revoking the session revokes the token. */
  sid: string;
  jti: string;
  iat: number;
  exp: number;
  /** Who the token is for: the service (`agent-service`), or one resource of it such as the MCP endpoint. */
  aud: string;
  /** Space-separated OAuth scopes that narrow what the token may do; absent on first-party tokens. */
  scope?: string;
}

export interface IssuedToken {
  token: string;
  expiresIn: number;
  claims: AccessClaims;
}

/** A high-entropy opaque secret with a readable prefix (`rt_…`, `ak_live_…`). */
export function opaqueToken(prefix: string, bytes = 32): string {
  return `${prefix}${randomBytes(bytes).toString('base64url')}`;
}

/** What we store instead of an opaque secret. Secrets are random and long, so a fast hash is enough. */
export function hashSecret(secret: string): string {
  // The one-shot hash: a Hash object with its update and digest costs about twice as much.
  return hash('sha256', secret, 'hex');
}

/** Whether `secret` is the one whose hash (`hashSecret`) is `hash`, compared in constant time. */
export function matchesHash(secret: string, hash: string): boolean {
  const left = Buffer.from(hashSecret(secret), 'hex');
  const right = Buffer.from(hash, 'hex');
  return left.length === right.length && right.length > 0 && timingSafeEqual(left, right);
}

function isAccessClaims(payload: JWTPayload): payload is JWTPayload & AccessClaims {
  return (
    typeof payload.sub === 'string' &&
    typeof payload.username === 'string' &&
    Array.isArray(payload.roles) &&
    payload.roles.every((r) => typeof r === 'string') &&
    (payload.kind === 'user' || payload.kind === 'service') &&
    typeof payload.sid === 'string' &&
    typeof payload.jti === 'string' &&
    typeof payload.iat === 'number' &&
    typeof payload.exp === 'number' &&
    typeof payload.aud === 'string' &&
    (payload.scope === undefined || typeof payload.scope === 'string')
  );
}

/**
 * Signs and verifies access tokens. Verification accepts only EdDSA tokens of type at+jwt from our issuer for
 * our audience (the service, or one of the resources it names, RFC 8707), signed by a key in the ring; results are
 * cached per token until expiry (revocation is checked separately, on the session, for every request).
 */
export class TokenService {
  /**
   * Verified claims by the token itself. Not by its hash: hashing cost more than the lookup saves on a request that
   * comes alone (a sha256 through OpenSSL was 20–30 µs of an occasional chat turn's, against under a microsecond in a
   * tight loop), and the token, short-lived and already in the request being served, is no secret from this process.
   */
  readonly #cache = new Map<string, AccessClaims>();

  constructor(
    private readonly keys: KeyRing,
    readonly issuer: string,
    readonly ttlSeconds: number,
    private readonly now: () => Date = () => new Date(),
    /** Resources besides the service itself that tokens may be issued for (the MCP endpoint's URL). */
    private readonly resources: string[] = [],
  ) {}

  async issue(
    subject: {
      sub: string;
      username: string;
      roles: string[];
      kind: SubjectKind;
      sid: string;
    },
    binding: { audience?: string; scope?: string } = {},
  ): Promise<IssuedToken> {
    const { kid, privateKey } = this.keys.signingKey();
    const iat = Math.floor(this.now().getTime() / 1000);
    const aud = binding.audience ?? TOKEN_AUDIENCE;
    if (aud !== TOKEN_AUDIENCE && !this.resources.includes(aud)) throw new Error(`not a resource of ours: ${aud}`);
    const claims: AccessClaims = {
      ...subject,
      jti: randomUUID(),
      iat,
      exp: iat + this.ttlSeconds,
      aud,
      ...(binding.scope !== undefined && { scope: binding.scope }),
    };
    const token = await new SignJWT({
      username: claims.username,
      roles: claims.roles,
      kind: claims.kind,
      sid: claims.sid,
      ...(claims.scope !== undefined && { scope: claims.scope }),
    })
      .setProtectedHeader({ alg: SIGNING_ALG, kid, typ: ACCESS_TOKEN_TYPE })
      .setSubject(claims.sub)
      .setIssuer(this.issuer)
      .setAudience(aud)
      .setIssuedAt(iat)
      .setExpirationTime(claims.exp)
      .setJti(claims.jti)
      .sign(privateKey);
    return { token, expiresIn: this.ttlSeconds, claims };
  }

  /** The token's claims, or UnauthorizedError (with `expiredAt` when it had merely expired). */
  async verify(token: string): Promise<AccessClaims> {
    const cached = this.#cache.get(token);
    const nowSeconds = this.now().getTime() / 1000;
    if (cached && cached.exp > nowSeconds - CLOCK_TOLERANCE_SECONDS) return cached;
    if (cached) this.#cache.delete(token);

    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(
        token,
        async (header) => {
          const key = await this.keys.verificationKey(header.kid);
          if (!key) throw new joseErrors.JWKSNoMatchingKey();
          return key;
        },
        {
          algorithms: [SIGNING_ALG],
          issuer: this.issuer,
          audience: [TOKEN_AUDIENCE, ...this.resources],
          typ: ACCESS_TOKEN_TYPE,
          clockTolerance: CLOCK_TOLERANCE_SECONDS,
          currentDate: this.now(),
          requiredClaims: ['sub', 'exp', 'iat', 'jti'],
        },
      ));
    } catch (error) {
      if (error instanceof joseErrors.JWTExpired) {
        const exp = error.payload.exp;
        throw new UnauthorizedError('Token has expired', {
          code: CallerErrorCode.InvalidToken,
          ...(typeof exp === 'number' && { expiredAt: new Date(exp * 1000).toISOString() }),
        });
      }
      throw new UnauthorizedError('Invalid token', { code: CallerErrorCode.InvalidToken });
    }
    if (!isAccessClaims(payload)) throw new UnauthorizedError('Invalid token', { code: CallerErrorCode.InvalidToken });
    const claims: AccessClaims = {
      sub: payload.sub,
      username: payload.username,
      roles: payload.roles,
      kind: payload.kind,
      sid: payload.sid,
      jti: payload.jti,
      iat: payload.iat,
      exp: payload.exp,
      aud: payload.aud,
      ...(payload.scope !== undefined && { scope: payload.scope }),
    };
    if (this.#cache.size >= CACHE_LIMIT) this.#cache.delete(this.#cache.keys().next().value!);
    this.#cache.set(token, claims);
    return claims;
  }
}
