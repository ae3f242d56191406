import { randomBytes, randomUUID } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import { z } from 'zod';
import type { AuthzService, Tuple } from '../../adapters/authz/port.js';
import type { Database } from '../../db/database.js';
import { isUniqueViolation } from '../../db/errors.js';
import { CommonErrorCode, ConflictError, ValidationError } from '../../errors.js';
import { groupObject, roleObject, userObject } from '../../ports/subjects.js';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, checkPassword, hashPassword } from './passwords.js';
import * as store from './users.store.js';
import { type User, rowToUser as toUser } from './users.store.js';

export type { User };

export const ADMIN_ROLE = 'admin';
export const DEFAULT_ROLE = 'user';

export const usernameSchema = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/,
    'must be 1–64 letters, digits, ".", "_", "@" or "-", starting with a letter or digit',
  );
export const passwordSchema = z
  .string()
  .min(MIN_PASSWORD_LENGTH, `must be at least ${MIN_PASSWORD_LENGTH} characters`)
  .max(MAX_PASSWORD_LENGTH, `must be at most ${MAX_PASSWORD_LENGTH} characters`);
export const roleSchema = z.string().regex(/^[a-z][a-z0-9_:-]{0,63}$/, 'must be a lower-case role name');
/** Path-like group names: `/engineering/backend`. */
export const groupNameSchema = z
  .string()
  .regex(/^(\/[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}){1,8}$/, 'must be a path such as /engineering/backend');

export const newUserSchema = z.object({
  username: usernameSchema,
  email: z.email().max(254).optional(),
  name: z.string().trim().min(1).max(100).optional(),
  password: passwordSchema.optional(),
  roles: z.array(roleSchema).max(32).default([DEFAULT_ROLE]),
  emailVerified: z.boolean().default(false),
});
export type NewUser = z.input<typeof newUserSchema>;

function parseOrThrow<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw new ValidationError(
    `Invalid ${what}`,
    result.error.issues.map((i) => ({ loc: ['body', ...i.path.map(String)], msg: i.message, type: i.code })),
  );
}

/** The tuple that gives a user a role: `role:<name>#assignee`. */
export const roleTuple = (userId: string, role: string): Tuple => ({
  user: userObject(userId),
  relation: 'assignee',
  object: roleObject(role),
});
/** The tuple that makes a user a member of a group: `group:<id>#member`. */
export const memberTuple = (userId: string, groupId: string): Tuple => ({
  user: userObject(userId),
  relation: 'member',
  object: groupObject(groupId),
});

/** Local users and groups: the embedded identity provider. */
export class UsersService {
  /**
   * @param authz where role and group membership are written as relationship tuples (`role:admin#assignee`,
   *   `group:<id>#member`), so that authorization decisions follow them; absent in tools that only manage passwords.
   */
  constructor(
    private readonly db: Kysely<Database>,
    private readonly now: () => Date = () => new Date(),
    private readonly authz?: AuthzService,
  ) {}

  async create(input: NewUser): Promise<User> {
    const user = parseOrThrow(newUserSchema, input, 'user');
    const at = this.now().toISOString();
    const account: store.NewAccount = {
      id: randomUUID(),
      username: user.username,
      email: user.email ?? null,
      emailVerified: user.emailVerified,
      name: user.name ?? null,
      roles: [...new Set(user.roles)],
      active: true,
      passwordHash: user.password ? await hashPassword(user.password) : null,
      at,
    };
    let created: User;
    try {
      created = await store.insertAccount(this.db, account);
    } catch (error) {
      if (isUniqueViolation(error)) {
        const taken = await store.findUserByUsername(this.db, user.username);
        throw new ConflictError(taken ? `Username ${user.username} is taken` : 'Email address is already in use', {
          code: CommonErrorCode.Conflict,
        });
      }
      throw error;
    }
    await this.authz?.write(created.roles.map((role) => roleTuple(created.id, role)));
    return created;
  }

  async get(id: string): Promise<User | undefined> {
    const row = await store.findUserById(this.db, id);
    return row && toUser(row);
  }

  async getByUsername(username: string): Promise<User | undefined> {
    const row = await store.findUserByUsername(this.db, username);
    return row && toUser(row);
  }

  /** The id of the user a login name (username or email) names, if any: failed logins are recorded against it. */
  async idByLogin(login: string): Promise<string | null> {
    const row = login.length <= 254 ? await store.findUserByLogin(this.db, login) : undefined;
    return row?.id ?? null;
  }

  async list(window: { offset: number; limit: number }): Promise<User[]> {
    return (await store.listUsers(this.db, window)).map(toUser);
  }

  count(): Promise<number> {
    return store.countUsers(this.db);
  }

  /**
   * The active user whose username or email and password match, or undefined. Unknown users, wrong passwords
   * and deactivated accounts take the same time and give the same answer.
   */
  async authenticate(login: string, password: string): Promise<User | undefined> {
    const row = login.length <= 254 ? await store.findUserByLogin(this.db, login) : undefined;
    const ok = await checkPassword(row?.password_hash, password);
    return ok && row && row.active === 1 ? toUser(row) : undefined;
  }

  async setPassword(userId: string, password: string): Promise<void> {
    const checked = parseOrThrow(passwordSchema, password, 'password');
    await store.updateUser(this.db, userId, {
      password_hash: await hashPassword(checked),
      updated_at: this.now().toISOString(),
    });
  }

  async recordLogin(userId: string): Promise<void> {
    await store.updateUser(this.db, userId, { last_login: this.now().toISOString() });
  }

  /**
   * Rectification by the user (PATCH /api/v1/users/me): name and email. A new email is unverified. `db` lets the
   * caller change more in the same transaction. 409 when the email belongs to another account.
   */
  async updateProfile(
    userId: string,
    changes: { name?: string; email?: string },
    db: Kysely<Database> | Transaction<Database> = this.db,
  ): Promise<User | undefined> {
    const row = await store.findUserById(db, userId);
    if (!row) return undefined;
    const update: Parameters<typeof store.updateUser>[2] = {};
    if (changes.name !== undefined && changes.name !== row.name) update.name = changes.name;
    if (changes.email !== undefined && changes.email !== row.email) {
      update.email = changes.email;
      update.email_key = store.userKey(changes.email);
      if (update.email_key !== row.email_key) update.email_verified = 0;
    }
    if (Object.keys(update).length === 0) return toUser(row);
    update.updated_at = this.now().toISOString();
    try {
      await store.updateUser(db, userId, update);
    } catch (error) {
      if (isUniqueViolation(error))
        throw new ConflictError('Email address is already in use', { code: CommonErrorCode.Conflict });
      throw error;
    }
    return toUser({ ...row, ...update });
  }

  /**
   * Erasure: deletes the user, their group memberships and linked identity-provider accounts through `db` (the
   * erasure's transaction). Groups stay: they are shared. Returns how many users were deleted (0 or 1).
   */
  async erase(userId: string, db: Kysely<Database> | Transaction<Database>): Promise<number> {
    await db.deleteFrom('group_members').where('user_id', '=', userId).execute();
    await db.deleteFrom('user_identities').where('user_id', '=', userId).execute();
    const result = await db.deleteFrom('users').where('id', '=', userId).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  groupsOf(userId: string): Promise<string[]> {
    return store.groupNamesOf(this.db, userId);
  }

  /** Makes the user a member of exactly these groups, creating groups that do not exist yet. */
  async setGroups(userId: string, names: string[]): Promise<void> {
    const valid = [...new Set(names.filter((n) => groupNameSchema.safeParse(n).success))];
    const at = this.now().toISOString();
    const { before, after } = await this.db.transaction().execute(async (trx) => {
      const previous = await store.groupIdsOf(trx, userId);
      const ids: string[] = [];
      for (const name of valid) {
        await store.insertGroup(trx, { id: randomUUID(), name, at });
        const group = await store.findGroupByName(trx, name);
        // A group SCIM manages has the members the identity provider's SCIM client gave it, whatever the claims.
        if (group && !(await store.isScimManaged(trx, group.id))) ids.push(group.id);
      }
      await store.replaceMemberships(trx, userId, [...new Set(ids)], at);
      return { before: previous, after: [...new Set(ids)] };
    });
    await this.authz?.delete(before.filter((id) => !after.includes(id)).map((id) => memberTuple(userId, id)));
    // A deactivated user holds no tuples; reactivation writes them from the memberships.
    if (!(await this.get(userId))?.active) return;
    await this.authz?.write(after.filter((id) => !before.includes(id)).map((id) => memberTuple(userId, id)));
  }

  async setRoles(userId: string, roles: string[]): Promise<void> {
    const valid = [...new Set(roles.filter((r) => roleSchema.safeParse(r).success))];
    const user = await this.get(userId);
    const before = user?.roles ?? [];
    await store.updateUser(this.db, userId, { roles: JSON.stringify(valid), updated_at: this.now().toISOString() });
    await this.authz?.delete(before.filter((r) => !valid.includes(r)).map((r) => roleTuple(userId, r)));
    // A deactivated user holds no tuples; reactivation writes them from the roles.
    if (!user?.active) return;
    await this.authz?.write(valid.filter((r) => !before.includes(r)).map((r) => roleTuple(userId, r)));
  }

  async findByIdentity(issuer: string, subject: string): Promise<User | undefined> {
    const id = await store.findUserIdByIdentity(this.db, issuer, subject);
    return id === undefined ? undefined : this.get(id);
  }

  async linkIdentity(userId: string, issuer: string, subject: string): Promise<void> {
    await store.insertIdentity(this.db, { issuer, subject, userId, at: this.now().toISOString() });
  }

  /**
   * Creates the bootstrap administrator when the service has no users yet. Returns the password when it was
   * generated, so the caller can show it once.
   */
  async ensureBootstrapAdmin(
    username: string,
    password: string | undefined,
  ): Promise<{ created: boolean; generatedPassword?: string }> {
    if ((await this.count()) > 0) return { created: false };
    const chosen = password ?? randomBytes(18).toString('base64url');
    try {
      await this.create({ username, password: chosen, roles: [ADMIN_ROLE, DEFAULT_ROLE] });
    } catch (error) {
      // Another instance started at the same moment and created it first.
      if (error instanceof ConflictError) return { created: false };
      throw error;
    }
    return password ? { created: true } : { created: true, generatedPassword: chosen };
  }
}
