import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach } from 'vitest';
import { type App, type AppOverrides, buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { postgresDatabaseName } from './services.js';
import type { Logger } from '../../src/logger.js';

/** Settings for a test app: in-memory SQLite, ephemeral ports, quiet logs, no health caching. */
export function testEnv(env: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: 'sqlite::memory:',
    PORT: '0',
    PLAYGROUND_PORT: '0',
    BUILDER_PORT: '0',
    LOG_LEVEL: 'silent',
    HEALTH_CACHE_MS: '0',
    SHUTDOWN_TIMEOUT_MS: '2000',
    ...env,
  };
}

/**
 * `TEST_DATABASE=postgres` runs every test app that would use the in-memory SQLite database on a PostgreSQL
 * database of its own instead (created when the app starts, dropped when it closes), so that the whole suite
 * runs on both databases.
 */
const ON_POSTGRES = process.env.TEST_DATABASE === 'postgres';

/**
 * The logger of a test app that logs nothing. The service's own logger (src/logger.ts) writes through a buffered
 * destination with a periodic flush that lives as long as the process: one per app would pile up in the worker,
 * which runs many apps, each firing a write every tick. A silent app has nothing to write, so it gets none.
 */
const silentLogger = (): Logger => pino({ level: 'silent' }, new Writable({ write: (_chunk, _enc, done) => done() }));

/** Builds the real app from the given settings without starting it. */
export function buildTestApp(env: Record<string, string> = {}, overrides: AppOverrides = {}): App {
  const settings = testEnv(env);
  if (settings.LOG_LEVEL === 'silent' && !overrides.logger) overrides = { ...overrides, logger: silentLogger() };
  if (!ON_POSTGRES || settings.DATABASE_URL !== 'sqlite::memory:') return buildApp(loadConfig(settings), overrides);
  const database = postgresDatabaseName({ migrated: true });
  const app = buildApp(loadConfig({ ...settings, DATABASE_URL: database.url }), overrides);
  const start = app.start.bind(app);
  const close = app.close.bind(app);
  let created: Promise<void> | undefined;
  return Object.assign(app, {
    start: async (options?: Parameters<App['start']>[0]) => {
      await (created ??= database.create());
      await start(options);
    },
    close: async () => {
      await close();
      if (created) await database.drop();
    },
  });
}

/** Builds and starts the real app; close it in afterEach/afterAll. */
export async function startTestApp(env: Record<string, string> = {}, overrides: AppOverrides = {}): Promise<App> {
  const app = buildTestApp(env, overrides);
  await app.start();
  return app;
}

/** Anything a test opens and must close: an app, a fake third-party API, a test client. */
export interface Closable {
  close(): unknown;
}

/**
 * Registers an afterEach that closes, last opened first, everything the suite's tests handed to the returned
 * function, which gives back what it was handed: `const { app } = closing(await startTestClient())`.
 */
export function closeAfterEach(): <T extends Closable>(resource: T) => T {
  const open: Closable[] = [];
  afterEach(async () => {
    while (open.length > 0) await open.pop()!.close();
  });
  return (resource) => {
    open.push(resource);
    return resource;
  };
}

/** A logger whose JSON lines the test can read back. */
export function captureLogger(level = 'debug'): { logger: Logger; lines: () => Record<string, unknown>[] } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  const logger = pino({ level }, stream);
  return {
    logger,
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}
