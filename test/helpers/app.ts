import { Writable } from 'node:stream';
import { pino } from 'pino';
import { type App, type AppOverrides, buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
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

/** Builds the real app from the given settings without starting it. */
export function buildTestApp(env: Record<string, string> = {}, overrides: AppOverrides = {}): App {
  return buildApp(loadConfig(testEnv(env)), overrides);
}

/** Builds and starts the real app; close it in afterEach/afterAll. */
export async function startTestApp(env: Record<string, string> = {}, overrides: AppOverrides = {}): Promise<App> {
  const app = buildTestApp(env, overrides);
  await app.start();
  return app;
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
