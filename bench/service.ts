import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Child, freePort, run, spawnNode } from './processes.js';

/**
 * The service under test: the built `dist/src/main.js serve`, a child process on its embedded defaults (SQLite in
 * a file, in-process sessions, embedded authorization, offline model), logging at info level to a file so that
 * logging is paid for, with the MCP rate limits and stream caps raised out of the benchmark's way. With
 * `profileServices`, every instance runs under `node --cpu-prof` and writes its profile when stopped (SIGTERM: the
 * service drains and exits, and Node writes the profile on exit).
 */

export const ROOT = fileURLToPath(new URL('../', import.meta.url));
const MAIN = join(ROOT, 'dist/src/main.js');
export const ADMIN = { username: 'admin', password: 'bench-admin-password-1' };
/** Who the login cases sign in as (seeded into the main database). */
export const LOGIN_USER = { username: 'login-bench', password: 'bench-login-password-1' };
// One key-encryption key for every instance, so that none generates one and warns.
const KEY_ENCRYPTION_KEY = randomBytes(32).toString('base64');

/** The environment of every service child: nothing inherited but PATH and HOME. */
function serviceEnv(database: string, extra: Record<string, string>): Record<string, string | undefined> {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DATABASE_URL: `sqlite:${database}`,
    LOG_LEVEL: 'info',
    ADMIN_USERNAME: ADMIN.username,
    ADMIN_PASSWORD: ADMIN.password,
    KEY_ENCRYPTION_KEY,
    MCP_REQUESTS_PER_MINUTE: '1000000000',
    MCP_TOOL_CALLS_PER_MINUTE: '1000000000',
    MCP_MAX_CONCURRENT_STREAMS: '20000',
    MCP_MAX_SESSIONS: '20000',
    SESSION_MAX_CONCURRENT: '100',
    SHUTDOWN_TIMEOUT_MS: '2000',
    ...extra,
  };
}

/** Creates and migrates a SQLite database file (`agent-service migrate`). */
async function migratedDatabase(file: string): Promise<void> {
  await run(process.execPath, [MAIN, 'migrate'], { PATH: process.env.PATH, DATABASE_URL: `sqlite:${file}` });
}

let template: string | undefined;
let profileDir: string | undefined;
let profiled = 0;

/** From now on, every service instance (but the template's) writes a CPU profile into `dir`. */
export function profileServices(dir: string): void {
  mkdirSync(dir, { recursive: true });
  profileDir = dir;
}

/** `node --cpu-prof` flags for one instance: `<dir>/<nn>-<name>.cpuprofile`, in the order they started. */
function profileFlags(name: string): string[] {
  if (!profileDir) return [];
  profiled += 1;
  return [
    '--cpu-prof',
    `--cpu-prof-dir=${profileDir}`,
    `--cpu-prof-name=${String(profiled).padStart(2, '0')}-${name}.cpuprofile`,
  ];
}

/**
 * A database of its own for one service instance: a copy of a template that was migrated and started once, so
 * that it holds the bootstrap administrator (created only while there are no users, so before any seeding) and
 * its authorization tuples and signing key. Seed into the copy before starting a service on it.
 */
export async function freshDatabase(dir: string, name: string): Promise<string> {
  if (!template) {
    const file = join(dir, 'template.db');
    await migratedDatabase(file);
    const first = await startService({ name: 'template', database: file, logDir: dir, profile: false });
    await first.stop();
    template = file;
  }
  const file = join(dir, `${name}.db`);
  for (const suffix of ['', '-wal', '-shm'])
    if (existsSync(`${template}${suffix}`)) copyFileSync(`${template}${suffix}`, `${file}${suffix}`);
  return file;
}

export interface Service {
  child: Child;
  main: string;
  playground: string;
  builder: string;
  /** Milliseconds from spawning the process to the first 200 from /health/ready. */
  startupMs: number;
  stop(): Promise<void>;
}

export interface StartOptions {
  name: string;
  database: string;
  logDir: string;
  env?: Record<string, string>;
  /** Under `node --cpu-prof` when profiling (`profileServices`); true unless said otherwise. */
  profile?: boolean;
}

/**
 * Starts the service on free loopback ports (chosen here and passed as PORT, PLAYGROUND_PORT and BUILDER_PORT, so
 * that nothing has to be read back from its logs) and waits until /health/ready answers 200.
 */
export async function startService({
  name,
  database,
  logDir,
  env = {},
  profile = true,
}: StartOptions): Promise<Service> {
  const [main, playground, builder] = [await freePort(), await freePort(), await freePort()];
  const began = performance.now();
  const child = spawnNode(name, {
    args: [MAIN, 'serve'],
    nodeFlags: profile ? profileFlags(name) : [],
    cwd: ROOT,
    logFile: join(logDir, `${name}.log`),
    env: serviceEnv(database, {
      HOST: '127.0.0.1',
      PORT: String(main),
      PLAYGROUND_PORT: String(playground),
      BUILDER_PORT: String(builder),
      ...env,
    }),
  });
  const url = (port: number) => `http://127.0.0.1:${port}`;
  let exited: number | string | undefined;
  void child.exited.then((code) => (exited = code));
  const deadline = began + 60_000;
  for (;;) {
    if (exited !== undefined) throw new Error(`${name} exited (${exited}) before it was ready\n${child.logTail()}`);
    if (performance.now() > deadline) {
      await child.stop();
      throw new Error(`${name} not ready within 60 s\n${child.logTail()}`);
    }
    const status = await fetch(`${url(main)}/health/ready`).then(
      async (res) => {
        await res.arrayBuffer();
        return res.status;
      },
      () => 0,
    );
    if (status === 200) break;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return {
    child,
    main: url(main),
    playground: url(playground),
    builder: url(builder),
    startupMs: performance.now() - began,
    stop: () => child.stop(),
  };
}
