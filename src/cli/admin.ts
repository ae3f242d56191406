import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import type { Config } from '../config.js';
import { type Db, createDb } from '../db/create-db.js';
import { migrateToLatest } from '../db/migrate.js';
import { AppError } from '../errors.js';
import { KeyEncryption, KeyRing } from '../modules/auth/index.js';
import { UsersService } from '../modules/users/index.js';

/** Where a command reads a secret from and writes its results; swapped in tests. */
export interface Io {
  out: (line: string) => void;
  readStdin: () => Promise<string>;
}

export class UsageError extends Error {}

async function withDatabase<T>(config: Config, work: (db: Db) => Promise<T>): Promise<T> {
  const db = createDb(config.database);
  try {
    await migrateToLatest(db);
    return await work(db);
  } finally {
    await db.destroy();
  }
}

/** A password from stdin (first line) with --password-stdin, else a generated one that is printed once. */
async function choosePassword(
  useStdin: boolean | undefined,
  io: Io,
): Promise<{ password: string; generated: boolean }> {
  if (!useStdin) return { password: randomBytes(18).toString('base64url'), generated: true };
  const password = (await io.readStdin()).split(/\r?\n/)[0] ?? '';
  if (!password) throw new UsageError('--password-stdin given, but stdin held no password');
  return { password, generated: false };
}

function describeError(error: unknown): never {
  if (error instanceof AppError && error.expose) {
    const details = error.issues?.map((i) => `${i.loc.slice(1).join('.')}: ${i.msg}`).join('; ');
    throw new UsageError(details ? `${error.message}: ${details}` : error.message);
  }
  throw error;
}

const USERS_USAGE = `Usage:
  agent-service users create <username> [--email E] [--name N] [--role R]... [--password-stdin]
  agent-service users list [--json]
  agent-service users set-password <username> [--password-stdin]
Without --password-stdin a password is generated and printed once.`;

/** `agent-service users …`: manage local users on the configured database. */
export async function usersCommand(config: Config, argv: string[], io: Io): Promise<void> {
  const [action, ...rest] = argv;
  const { values, positionals } = (() => {
    try {
      return parseArgs({
        args: rest,
        allowPositionals: true,
        options: {
          email: { type: 'string' },
          name: { type: 'string' },
          role: { type: 'string', multiple: true },
          'password-stdin': { type: 'boolean' },
          json: { type: 'boolean' },
        },
      });
    } catch (error) {
      throw new UsageError(`${(error as Error).message}\n\n${USERS_USAGE}`);
    }
  })();

  await withDatabase(config, async (db) => {
    const users = new UsersService(db.kysely);
    switch (action) {
      case 'create': {
        const [username] = positionals;
        if (!username || positionals.length > 1) throw new UsageError(USERS_USAGE);
        const { password, generated } = await choosePassword(values['password-stdin'], io);
        const user = await users
          .create({
            username,
            password,
            ...(values.email && { email: values.email }),
            ...(values.name && { name: values.name }),
            ...(values.role && { roles: values.role }),
          })
          .catch(describeError);
        io.out(`created ${user.username} (${user.id}) with roles ${user.roles.join(', ')}`);
        if (generated) io.out(`password: ${password}`);
        return;
      }
      case 'list': {
        const list = await users.list({ offset: 0, limit: 10_000 });
        if (values.json) {
          io.out(
            JSON.stringify(
              list.map(({ hasPassword: _, ...user }) => user),
              null,
              2,
            ),
          );
          return;
        }
        for (const user of list) {
          io.out(
            [
              user.username,
              user.email ?? '-',
              user.roles.join(','),
              user.active ? 'active' : 'inactive',
              user.createdAt,
            ].join('\t'),
          );
        }
        return;
      }
      case 'set-password': {
        const [username] = positionals;
        if (!username || positionals.length > 1) throw new UsageError(USERS_USAGE);
        const user = await users.getByUsername(username);
        if (!user) throw new UsageError(`No user named ${username}`);
        const { password, generated } = await choosePassword(values['password-stdin'], io);
        await users.setPassword(user.id, password).catch(describeError);
        io.out(`password of ${user.username} changed`);
        if (generated) io.out(`password: ${password}`);
        return;
      }
      default:
        throw new UsageError(USERS_USAGE);
    }
  });
}

/** `agent-service keys rotate`: a new signing key takes over; the old one verifies until its tokens expire. */
export async function keysCommand(config: Config, argv: string[], io: Io): Promise<void> {
  if (argv.length !== 1 || argv[0] !== 'rotate') throw new UsageError('Usage: agent-service keys rotate');
  await withDatabase(config, async (db) => {
    const keys = new KeyRing(db.kysely, (config.auth.accessTokenTtlSeconds + 60) * 1000, {
      encryption: KeyEncryption.fromConfig(config),
    });
    await keys.start();
    try {
      const kid = await keys.rotate();
      io.out(`new signing key ${kid}; ${keys.jwks().keys.length} key(s) now verify tokens`);
    } finally {
      keys.stop();
    }
  });
}
