#!/usr/bin/env node
// Password hashing and token verification share libuv's thread pool; with its default of four threads a few
// concurrent logins stall every request's JWT check. The pool starts on first use, so this still takes effect.
process.env.UV_THREADPOOL_SIZE ??= '8';
// Each command loads what it runs: the service itself (about a second of module evaluation) only for `serve` and
// `stdio`, the database for `migrate`, the users and keys for their commands; `help`, `config` and a mistyped
// command answer at once.
import type { App } from './app.js';
import { type Config, ConfigError, loadConfig } from './config.js';
import { UnauthorizedError } from './errors.js';
import { createLogger } from './logger.js';
import { currentRequest } from './http/request-context.js';
import { installProcessGuards } from './process-guards.js';
import { type Caller, CallerErrorCode, userCaller } from './ports/caller.js';
import { SERVICE_NAME, SERVICE_VERSION } from './version.js';

/** How long idle keep-alive connections may still bring a request once a signal starts shutdown. */
const SIGNAL_IDLE_LINGER_MS = 1_000;

/** sysexits(3): a usage error, a configuration error and an internal error are told apart from a failed start. */
const EXIT = { ok: 0, failure: 1, usage: 64, software: 70, config: 78 } as const;

const USAGE = `Usage: agent-service [command]

Commands:
  serve              Run the service: main API, playground and builder listeners (default)
  stdio              Serve MCP on stdin/stdout for a desktop client (as STDIO_USER, STDIO_API_KEY or the admin)
  migrate [--down]   Apply pending database migrations (or revert the most recent one) and exit
  users …            Manage local users: create, list, set-password (agent-service users help)
  keys rotate        Sign new tokens with a new key; tokens of the old one stay valid until they expire
  config             Validate the configuration and print it, secrets hidden
  version            Print the version
  help               Print this help

Configuration comes from environment variables (see README.md); CONFIG_FILE may name a JSON file of them.`;

function fail(message: string, code: number): never {
  process.stderr.write(`${message}\n`);
  process.exit(code);
}

async function serve(config: Config): Promise<void> {
  const { buildApp } = await import('./app.js');
  const app: App = buildApp(config);
  let stopping = false;
  /** Drains and exits with `code`; a second call (a second signal) exits at once. */
  const shutdown = (reason: Record<string, unknown>, code: number) => {
    if (stopping) {
      app.logger.warn(reason, 'asked again to stop: exiting without finishing shutdown');
      process.exit(EXIT.failure);
    }
    stopping = true;
    // If draining hangs past its budget, exit anyway rather than ignore the orchestrator.
    setTimeout(() => process.exit(EXIT.failure), config.shutdownTimeoutMs + 5_000).unref();
    // Behind a load balancer a client may have sent a request on a kept-alive connection just now: answer it.
    app.close({ idleLingerMs: SIGNAL_IDLE_LINGER_MS }).then(
      () => process.exit(code),
      (err: unknown) => {
        app.logger.error({ err }, 'shutdown failed');
        process.exit(EXIT.failure);
      },
    );
  };
  const stop = (signal: NodeJS.Signals) => {
    if (!stopping) app.logger.info({ signal }, 'signal received');
    shutdown({ signal }, EXIT.ok);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  installProcessGuards({
    logger: app.logger,
    metrics: app.metrics,
    currentRequest,
    stop: () => {
      if (!stopping) shutdown({ reason: 'uncaught exception' }, EXIT.software);
    },
  });

  try {
    await app.start();
  } catch (err) {
    app.logger.fatal({ err }, 'start-up failed');
    await app.close().catch(() => undefined);
    // A key-encryption key that does not open the stored signing keys is a configuration error found late.
    if (err instanceof ConfigError) fail(err.message, EXIT.config);
    process.exit(EXIT.failure);
  }
}

/**
 * Who a stdio session acts as. Whoever can start the process owns its database anyway, so by default it is the
 * bootstrap administrator; `STDIO_USER` names another user and `STDIO_API_KEY` acts as that key's owner.
 */
export async function stdioCaller(app: App): Promise<Caller> {
  const { apiKey, username } = app.config.mcp.stdio;
  if (apiKey) return { ...(await app.services.apiKeys.authenticate(apiKey)), via: 'stdio' };
  const name = username ?? app.config.auth.adminUsername;
  const user = await app.services.users.getByUsername(name);
  if (!user?.active)
    throw new UnauthorizedError(`No active user named ${name} for the stdio session (set STDIO_USER)`, {
      code: CallerErrorCode.InvalidToken,
    });
  return userCaller(user, { via: 'stdio' });
}

/** MCP on stdin/stdout for desktop clients: no listeners, logs on stderr, exit 0 when the client hangs up. */
async function stdio(config: Config): Promise<void> {
  const [{ buildApp }, { serveStdio }] = await Promise.all([import('./app.js'), import('../transports/stdio.js')]);
  const logger = createLogger({ level: config.logLevel, destination: 'stderr' });
  const app = buildApp(config, { logger });
  const stop = () => void app.close().then(() => process.exit(EXIT.ok));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  try {
    await app.start({ listen: false });
    await serveStdio({ core: app.services.mcp.core, lifecycle: app.lifecycle, logger, caller: await stdioCaller(app) });
  } catch (err) {
    logger.fatal({ err }, 'stdio session failed');
    await app.close().catch(() => undefined);
    process.exit(EXIT.failure);
  }
  await app.close();
  process.exit(EXIT.ok);
}

async function migrate(config: Config, down: boolean): Promise<void> {
  const [{ createDb }, { migrateDown, migrateToLatest }] = await Promise.all([
    import('./db/create-db.js'),
    import('./db/migrate.js'),
  ]);
  const db = createDb(config.database);
  try {
    const { applied, current } = down ? await migrateDown(db) : await migrateToLatest(db);
    const verb = down ? 'reverted' : 'applied';
    process.stdout.write(
      `${applied.length > 0 ? `${verb} ${applied.join(', ')}` : `nothing to ${down ? 'revert' : 'apply'}`}; ` +
        `schema at ${current ?? '(empty)'}\n`,
    );
  } finally {
    await db.destroy();
  }
}

function printConfig(config: Config): void {
  const hide = (value: string | undefined) => (value === undefined ? undefined : '***');
  const redacted = {
    ...config,
    database:
      config.database.dialect === 'postgres'
        ? { dialect: 'postgres', connectionString: config.database.connectionString.replace(/:[^:@/]*@/, ':***@') }
        : config.database,
    redis: config.redis && { ...config.redis, url: config.redis.url.replace(/:[^:@/]*@/, ':***@') },
    auth: {
      ...config.auth,
      adminPassword: hide(config.auth.adminPassword),
      keyEncryptionKey: config.auth.keyEncryptionKey && '***',
      ...(config.auth.oidc && { oidc: { ...config.auth.oidc, clientSecret: '***' } }),
    },
    authz:
      config.authz.provider === 'openfga' ? { ...config.authz, apiToken: hide(config.authz.apiToken) } : config.authz,
    llm: config.llm.provider === 'openai' ? { ...config.llm, apiKey: hide(config.llm.apiKey) } : config.llm,
  };
  process.stdout.write(`${JSON.stringify(redacted, null, 2)}\n`);
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** `users …` and `keys …`: local administration on the database, without the service. */
async function administer(command: 'users' | 'keys', config: Config, argv: string[]): Promise<void> {
  const { UsageError, keysCommand, usersCommand } = await import('./cli/admin.js');
  const io = { out: (line: string) => process.stdout.write(`${line}\n`), readStdin };
  try {
    await (command === 'users' ? usersCommand : keysCommand)(config, argv, io);
  } catch (err) {
    if (err instanceof UsageError) fail(err.message, EXIT.usage);
    throw err;
  }
}

async function main(argv: string[]): Promise<void> {
  const [command = 'serve', ...rest] = argv;
  if (command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (command === 'version' || command === '--version') {
    process.stdout.write(`${SERVICE_NAME} ${SERVICE_VERSION}\n`);
    return;
  }
  const known = ['serve', 'stdio', 'migrate', 'config', 'users', 'keys'];
  if (!known.includes(command)) fail(`Unknown command "${command}".\n\n${USAGE}`, EXIT.usage);
  const takesArguments = command === 'users' || command === 'keys';
  const unknownFlags = takesArguments ? [] : rest.filter((arg) => !(command === 'migrate' && arg === '--down'));
  if (unknownFlags.length > 0) fail(`Unknown argument(s) for ${command}: ${unknownFlags.join(' ')}`, EXIT.usage);

  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message, EXIT.config);
    throw err;
  }
  try {
    if (command === 'serve') await serve(config);
    else if (command === 'stdio') await stdio(config);
    else if (command === 'migrate') await migrate(config, rest.includes('--down'));
    else if (command === 'users' || command === 'keys') await administer(command, config, rest);
    else printConfig(config);
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message, EXIT.config);
    throw err;
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(EXIT.failure);
});
