import { pino } from 'pino';
import { type App, buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';

/**
 * Starts the real app for a benchmark: in-memory SQLite, ephemeral ports, and request logs written (to /dev/null)
 * at info level so that their cost is counted. Close it when done.
 */
export async function startBenchApp(env: Record<string, string> = {}): Promise<App> {
  const app = buildApp(
    loadConfig({ DATABASE_URL: 'sqlite::memory:', PORT: '0', PLAYGROUND_PORT: '0', BUILDER_PORT: '0', ...env }),
    { logger: pino({ level: 'info' }, pino.destination({ dest: '/dev/null', sync: true })) },
  );
  await app.start();
  return app;
}

/** Signs in through POST /auth/login and answers the access token. */
export async function accessTokenOf(app: App, username: string, password: string): Promise<string> {
  const res = await fetch(`${app.url('main')}/auth/login`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ username, password }),
  });
  if (!res.ok) throw new Error(`login of ${username} failed: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { access_token: string }).access_token;
}
