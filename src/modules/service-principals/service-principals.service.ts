import { timingSafeEqual } from 'node:crypto';
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { AuthzService, Tuple } from '../../adapters/authz/port.js';
import type { Database } from '../../db/database.js';
import { isUniqueViolation } from '../../db/errors.js';
import {
  BadRequestError,
  CommonErrorCode,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  UnauthorizedError,
} from '../../errors.js';
import { type AuditEventType, type AuditRecorder, actorOf } from '../../ports/audit.js';
import type { ClientInfo } from '../../ports/caller.js';
import { CallerErrorCode, type UserCaller } from '../../ports/caller.js';
import { AuthErrorCode, base62 } from '../auth/index.js';
import type { FailureThrottle } from '../auth/index.js';
import { type TokenService, hashSecret } from '../auth/index.js';
import { SYSTEM, principalObject, userObject } from '../../ports/subjects.js';
import type { User, UsersService } from '../users/index.js';
import type { AuthenticationMode, ServicePrincipalsTable } from './service-principals.tables.js';

type Row = Selectable<ServicePrincipalsTable>;

const SECRET_PREFIX = 'sp_secret_';
/** Token families of service principals: `sp:<service_id>:<secret generation>`. */
export const PRINCIPAL_TOKEN_FAMILY = 'sp';
export const MODES: readonly AuthenticationMode[] = ['client_credentials', 'service_account_user'];
/** User ids are UUIDs; a service_id of that shape is refused, so the two id spaces never meet. */
const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const principalNotFound = (id: string) =>
  new NotFoundError(`Service principal ${id} not found`, { code: CommonErrorCode.NotFound });

/** The form the spec gives user references in: `user:<username>`. */
export interface ServicePrincipal {
  service_id: string;
  name: string;
  description: string;
  authentication_mode: AuthenticationMode;
  associated_user_id?: string;
  owner_user_id: string;
  inherit_permissions: boolean;
  enabled: boolean;
  created_at: string;
}

/** `My Billing Bot!` → `my-billing-bot`. */
export function slugify(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64)
    .replace(/-+$/, '');
}

/** Accepts the spec's alias `service_account`; anything else that is not a mode is a 400. */
export function parseMode(mode: string): AuthenticationMode {
  const normalised = mode === 'service_account' ? 'service_account_user' : mode;
  if (!(MODES as string[]).includes(normalised)) {
    throw new BadRequestError(`authentication_mode must be one of ${MODES.join(', ')} (or service_account)`, {
      code: CommonErrorCode.Validation,
    });
  }
  return normalised as AuthenticationMode;
}

function sameSecret(storedHash: string | null, secret: string): boolean {
  if (!storedHash) return false;
  const a = Buffer.from(storedHash, 'hex');
  const b = Buffer.from(hashSecret(secret), 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

export interface PrincipalsDeps {
  db: Kysely<Database>;
  authz: AuthzService;
  users: UsersService;
  tokens: TokenService;
  throttle: FailureThrottle;
  audit: AuditRecorder;
  now?: () => Date;
}

/**
 * Non-human identities. The creator owns a principal (an `owner` tuple), and only owners read, rotate, associate
 * or delete it.
 *
 * What association means, by mode (the stored row always says what the principal does):
 * - `client_credentials`: the principal acts as itself, with only the permissions granted to it. It has no
 *   associated user and never inherits.
 * - `service_account_user`: the principal acts on behalf of its associated user (always present). With
 *   inherit_permissions it `acts_as` that user: it holds every permission the user holds, at the moment of each
 *   check, so when the user loses a role, is deactivated or erased the principal loses it too. Associating a user
 *   with a `client_credentials` principal turns it into a `service_account_user` one.
 *
 * Who may be associated: a caller may associate themselves; an administrator may associate any active user. Nobody
 * else: a principal is never a way to borrow someone else's rights.
 */
export class ServicePrincipalsService {
  private readonly now: () => Date;

  constructor(private readonly deps: PrincipalsDeps) {
    this.now = deps.now ?? (() => new Date());
  }

  async create(
    owner: UserCaller,
    input: { name: string; description: string; mode: string; associatedUser?: string; inheritPermissions: boolean },
    client: ClientInfo,
  ): Promise<{ principal: ServicePrincipal; secret: string }> {
    const mode = parseMode(input.mode);
    const id = slugify(input.name);
    if (!id) throw new BadRequestError('name must contain letters or digits', { code: CommonErrorCode.Validation });
    if (UUID_SHAPE.test(id)) {
      throw new BadRequestError('name must not be a UUID: service ids and user ids never share a form', {
        code: CommonErrorCode.Validation,
      });
    }
    if (mode === 'client_credentials' && (input.associatedUser || input.inheritPermissions)) {
      throw new BadRequestError(
        'associated_user_id and inherit_permissions apply only to service_account_user mode: a client_credentials principal acts as itself',
        { code: CommonErrorCode.Validation },
      );
    }
    if (mode === 'service_account_user' && !input.associatedUser) {
      throw new BadRequestError('associated_user_id is required for service_account_user mode', {
        code: CommonErrorCode.Validation,
      });
    }
    const associated = input.associatedUser ? await this.#associable(owner, input.associatedUser) : undefined;
    const secret = `${SECRET_PREFIX}${base62(48)}`;
    const at = this.now().toISOString();
    const row: Row = {
      id,
      name: input.name,
      description: input.description,
      authentication_mode: mode,
      owner_user_id: owner.userId,
      associated_user_id: associated?.id ?? null,
      inherit_permissions: input.inheritPermissions ? 1 : 0,
      enabled: 1,
      secret_hash: hashSecret(secret),
      secret_generation: 1,
      previous_secret_hash: null,
      previous_secret_expires_at: null,
      created_at: at,
      updated_at: at,
    };
    try {
      await this.deps.db.insertInto('service_principals').values(row).execute();
    } catch (error) {
      if (isUniqueViolation(error))
        throw new ConflictError(`A service principal ${id} already exists`, { code: CommonErrorCode.Conflict });
      throw error;
    }
    await this.deps.authz.write([
      { user: userObject(owner.userId), relation: 'owner', object: principalObject(id) },
      ...this.#actsAs(row),
    ]);
    await this.#audit('service_principal.created', owner, row, client, { authentication_mode: mode });
    return { principal: await this.#present(row), secret };
  }

  async list(
    owner: UserCaller,
    filter: { mode?: string; offset: number; limit: number },
  ): Promise<{ items: ServicePrincipal[]; total: number }> {
    const owned = (await this.deps.authz.listObjects(userObject(owner.userId), 'owner', 'service_principal')).map((o) =>
      o.slice(o.indexOf(':') + 1),
    );
    if (owned.length === 0) return { items: [], total: 0 };
    let query = this.deps.db.selectFrom('service_principals').selectAll().where('id', 'in', owned);
    if (filter.mode) query = query.where('authentication_mode', '=', parseMode(filter.mode));
    const rows = await query.orderBy('created_at').orderBy('id').execute();
    const page = rows.slice(filter.offset, filter.offset + filter.limit);
    return { items: await Promise.all(page.map((row) => this.#present(row))), total: rows.length };
  }

  async get(owner: UserCaller, id: string): Promise<ServicePrincipal> {
    return this.#present(await this.#owned(owner, id));
  }

  /**
   * A new secret. The old one stops working at once, or, with a grace period, when the period ends; tokens issued
   * with it follow it.
   */
  async rotateSecret(owner: UserCaller, id: string, graceHours: number, client: ClientInfo): Promise<string> {
    const secret = `${SECRET_PREFIX}${base62(48)}`;
    // Two rotations that read the same generation must not both write the next: the later would overwrite the
    // earlier's secret without a new generation, leaving tokens issued for the lost secret live. The write applies
    // only while the generation is the one read; otherwise the principal is read again (each retry means another
    // rotation got through, so this ends).
    for (;;) {
      const row = await this.#owned(owner, id);
      const now = this.now();
      const result = await this.deps.db
        .updateTable('service_principals')
        .set({
          secret_hash: hashSecret(secret),
          secret_generation: row.secret_generation + 1,
          previous_secret_hash: graceHours > 0 ? row.secret_hash : null,
          previous_secret_expires_at:
            graceHours > 0 ? new Date(now.getTime() + graceHours * 3_600_000).toISOString() : null,
          updated_at: now.toISOString(),
        })
        .where('id', '=', row.id)
        .where('owner_user_id', '=', owner.userId)
        .where('secret_generation', '=', row.secret_generation)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) continue;
      await this.#audit('service_principal.secret_rotated', owner, row, client, { grace_period_hours: graceHours });
      return secret;
    }
  }

  async associateUser(
    owner: UserCaller,
    id: string,
    userRef: string,
    inheritPermissions: boolean,
    client: ClientInfo,
  ): Promise<ServicePrincipal> {
    const row = await this.#owned(owner, id);
    if (!userRef) throw new BadRequestError('user_id is required', { code: CommonErrorCode.Validation });
    const user = await this.#associable(owner, userRef);
    const updated: Row = {
      ...row,
      authentication_mode: 'service_account_user',
      associated_user_id: user.id,
      inherit_permissions: inheritPermissions ? 1 : 0,
      updated_at: this.now().toISOString(),
    };
    const changed = await this.deps.db
      .updateTable('service_principals')
      .set({
        authentication_mode: updated.authentication_mode,
        associated_user_id: updated.associated_user_id,
        inherit_permissions: updated.inherit_permissions,
        updated_at: updated.updated_at,
      })
      .where('id', '=', row.id)
      .where('owner_user_id', '=', owner.userId)
      .executeTakeFirst();
    if (Number(changed.numUpdatedRows) !== 1) throw principalNotFound(id);
    const stale = await this.deps.authz.read({ object: principalObject(row.id), relation: 'acts_as' });
    await this.deps.authz.delete(stale);
    await this.deps.authz.write(this.#actsAs(updated));
    await this.#audit('service_principal.associated', owner, row, client, {
      associated_user_id: user.id,
      inherit_permissions: inheritPermissions,
    });
    return this.#present(updated);
  }

  /** Irreversible: the principal, its tuples and every token it holds are gone. */
  async delete(owner: UserCaller, id: string, client: ClientInfo): Promise<void> {
    const row = await this.#owned(owner, id);
    const deleted = await this.deps.db
      .deleteFrom('service_principals')
      .where('id', '=', row.id)
      .where('owner_user_id', '=', owner.userId)
      .executeTakeFirst();
    if (Number(deleted.numDeletedRows) !== 1) throw principalNotFound(id);
    await this.deps.authz.removeAllFor(principalObject(row.id));
    await this.#audit('service_principal.deleted', owner, row, client);
  }

  /** Erasure (by user id): the ids of the principals the user owns (whose tuples go before their rows). */
  async idsOwnedBy(userId: string): Promise<string[]> {
    const rows = await this.deps.db
      .selectFrom('service_principals')
      .select('id')
      .where('owner_user_id', '=', userId)
      .execute();
    return rows.map((r) => r.id);
  }

  /**
   * Erasure (by user id): through `db` (the erasure's transaction), deletes the principals the user owns and detaches the user
   * from principals others own that act for them. Returns how many principals were deleted.
   */
  async deleteAllOwnedBy(userId: string, db: Kysely<Database> | Transaction<Database>): Promise<number> {
    // With no one to act for, such a principal acts as itself.
    await db
      .updateTable('service_principals')
      .set({
        authentication_mode: 'client_credentials',
        associated_user_id: null,
        inherit_permissions: 0,
        updated_at: this.now().toISOString(),
      })
      .where('associated_user_id', '=', userId)
      .where('owner_user_id', '!=', userId)
      .execute();
    const result = await db.deleteFrom('service_principals').where('owner_user_id', '=', userId).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** The client-credentials grant: an access token for a principal that presents its secret. */
  async issueToken(
    clientId: string,
    clientSecret: string,
    client: ClientInfo,
  ): Promise<{ access_token: string; token_type: 'Bearer'; expires_in: number }> {
    const keys = [
      { key: `client:${clientId.slice(0, 128)}`, max: 10 },
      ...(client.ip ? [{ key: `client-addr:${client.ip}`, max: 50 }] : []),
    ];
    await this.deps.throttle.guard(keys);
    const row = clientId.length <= 128 ? await this.#find(clientId) : undefined;
    const generation = row && this.#generationOf(row, clientSecret);
    if (!row || generation === undefined || row.enabled !== 1) {
      await this.deps.throttle.fail(keys);
      // Only a client id that names a principal is recorded: anything else may be a secret pasted in the wrong field.
      await this.deps.audit.record({
        type: 'client_credentials.failed',
        actorId: null,
        ipAddress: client.ip,
        userAgent: client.userAgent,
        details: row ? { service_id: row.id } : {},
      });
      throw new UnauthorizedError('Invalid client credentials', { code: AuthErrorCode.InvalidCredentials });
    }
    await this.deps.throttle.succeed(keys[0]!);
    await this.deps.audit.record({
      type: 'login.succeeded',
      actorId: principalObject(row.id),
      ipAddress: client.ip,
      userAgent: client.userAgent,
      details: { method: 'client_credentials' },
    });
    const issued = await this.deps.tokens.issue({
      sub: row.id,
      username: row.id,
      roles: ['service'],
      kind: 'service',
      sid: `${PRINCIPAL_TOKEN_FAMILY}:${row.id}:${generation}`,
    });
    return { access_token: issued.token, token_type: 'Bearer', expires_in: issued.expiresIn };
  }

  /** Whether a principal's token is still good: the principal exists, is enabled, and its secret still works. */
  async isLive(sid: string, subject: string): Promise<boolean> {
    const [, id, generation] = sid.split(':');
    if (!id || id !== subject) return false;
    const row = await this.#find(id);
    if (!row || row.enabled !== 1) return false;
    const gen = Number(generation);
    if (gen === row.secret_generation) return true;
    return gen === row.secret_generation - 1 && this.#graceOpen(row);
  }

  /**
   * Writes back the `acts_as` links of the principals that inherit from a user, from what their rows say. A
   * deactivation removes every tuple of the user, these included; reactivation calls this. Idempotent. Unscoped
   * by owner by design: a system step of reactivation, reading the principals that act for the user.
   */
  async restoreDelegationsTo(userId: string): Promise<void> {
    const rows = await this.deps.db
      .selectFrom('service_principals')
      .selectAll()
      .where('associated_user_id', '=', userId)
      .execute();
    const tuples = rows.flatMap((row) => this.#actsAs(row));
    if (tuples.length > 0) await this.deps.authz.write(tuples);
  }

  /** Facts about a principal for its own callers (GET /auth/me). */
  async describe(id: string): Promise<{ name: string; created_at: string } | undefined> {
    const row = await this.#find(id);
    return row && { name: row.name, created_at: row.created_at };
  }

  #audit(
    type: Extract<AuditEventType, `service_principal.${string}`>,
    owner: UserCaller,
    row: Row,
    client: ClientInfo,
    details: Record<string, string | number | boolean> = {},
  ): Promise<void> {
    return this.deps.audit.record({
      type,
      actorId: actorOf(owner),
      ipAddress: client.ip,
      userAgent: client.userAgent,
      details: { service_id: row.id, ...details },
    });
  }

  /** Which secret generation a presented secret belongs to, if it works now. */
  #generationOf(row: Row, secret: string): number | undefined {
    if (sameSecret(row.secret_hash, secret)) return row.secret_generation;
    if (this.#graceOpen(row) && sameSecret(row.previous_secret_hash, secret)) return row.secret_generation - 1;
    return undefined;
  }

  #graceOpen(row: Row): boolean {
    return row.previous_secret_expires_at !== null && Date.parse(row.previous_secret_expires_at) > this.now().getTime();
  }

  #actsAs(row: Row): Tuple[] {
    const acts =
      row.authentication_mode === 'service_account_user' && row.inherit_permissions === 1 && row.associated_user_id;
    return acts
      ? [{ user: userObject(row.associated_user_id!), relation: 'acts_as', object: principalObject(row.id) }]
      : [];
  }

  /**
   * A principal by id, whoever owns it: for the client-credentials grant and token liveness (where its own secret
   * is the proof), and for `#owned`, which tells a missing principal (404) from another user's (403, as the spec
   * says). Statements that change a principal name its owner themselves.
   */
  #find(id: string): Promise<Row | undefined> {
    return this.deps.db.selectFrom('service_principals').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** 404 when there is no such principal; 403 when the caller does not own it. */
  async #owned(owner: UserCaller, id: string): Promise<Row> {
    const row = await this.#find(id);
    if (!row) throw principalNotFound(id);
    if (!(await this.deps.authz.check(userObject(owner.userId), 'owner', principalObject(id)))) {
      throw new ForbiddenError('Only the owner may manage this service principal', {
        code: CallerErrorCode.AccessDenied,
      });
    }
    return row;
  }

  /**
   * The user named by `user:<username>` (the spec's form) or a bare username, if the caller may associate them: the
   * caller themselves, or, for an administrator, any active user. Everyone else is refused with 403 whether or not
   * the user exists, so the refusal tells a non-administrator nothing about other accounts.
   */
  async #associable(caller: UserCaller, ref: string): Promise<User> {
    const username = ref.startsWith('user:') ? ref.slice('user:'.length) : ref;
    const user = await this.deps.users.getByUsername(username);
    if (user?.id === caller.userId) return user;
    if (!(await this.deps.authz.check(userObject(caller.userId), 'admin', SYSTEM))) {
      throw new ForbiddenError('A service principal may be associated only with yourself', {
        code: CallerErrorCode.AccessDenied,
      });
    }
    if (!user) throw new BadRequestError(`No user ${ref}`, { code: CommonErrorCode.Validation });
    if (!user.active) throw new ForbiddenError(`User ${ref} is not active`, { code: CallerErrorCode.AccessDenied });
    return user;
  }

  async #present(row: Row): Promise<ServicePrincipal> {
    const [owner, associated] = await Promise.all([
      this.deps.users.get(row.owner_user_id),
      row.associated_user_id ? this.deps.users.get(row.associated_user_id) : Promise.resolve(undefined),
    ]);
    return {
      service_id: row.id,
      name: row.name,
      description: row.description,
      authentication_mode: row.authentication_mode,
      ...(associated && { associated_user_id: `user:${associated.username}` }),
      owner_user_id: `user:${owner?.username ?? row.owner_user_id}`,
      inherit_permissions: row.inherit_permissions === 1,
      enabled: row.enabled === 1,
      created_at: row.created_at,
    };
  }
}
