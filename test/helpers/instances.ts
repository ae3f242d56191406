import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import type { App } from '../../src/app.js';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { startTestApp } from './app.js';
import { type CallResult, accessToken, call, createUser } from './auth.js';
import { REDIS_URL, createPostgresDatabase, sharedInstanceEnv } from './services.js';

/** Two instances of one installation, and the settings they share. Set once the suite's `beforeAll` has run. */
export interface TwoInstances {
  a: App;
  b: App;
  /** What both share: a fresh PostgreSQL database, the shared Redis, and `shared`. */
  env: Record<string, string>;
}

/**
 * Registers, in the calling suite, two instances of the service sharing a fresh PostgreSQL database and a Redis
 * key prefix named after `name`, started with `shared` and `each` (settings of these two only, not part of `env`),
 * with `alice` created through A; both are closed and the database dropped after the suite. Call it inside a
 * `describeWithService` body, which skips it where those services are missing.
 */
export function twoInstances(
  name: string,
  shared: Record<string, string> = {},
  each: Record<string, string> = {},
): TwoInstances {
  const instances = {} as TwoInstances;
  let drop: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const database = await createPostgresDatabase();
    drop = database.drop;
    instances.env = { ...sharedInstanceEnv(database.url, name), ...shared };
    instances.a = await startTestApp({ ...instances.env, ...each });
    instances.b = await startTestApp({ ...instances.env, ...each });
    await createUser(instances.a, 'alice');
  }, 60_000);
  afterAll(async () => {
    await instances.a?.close();
    await instances.b?.close();
    await drop?.();
  });
  return instances;
}

/** Two instances chatting with one FAKE OpenAI-compatible model, as `twoChatInstances` sets them up. */
export interface TwoChatInstances {
  a: App;
  b: App;
  /** The model both ask (a fake: no hosted model runs here); it records each request. */
  fake: FakeOpenAi;
  /** Alice's access token, good on both. */
  token: string;
  /** A request to an instance's playground listener as alice. */
  playground: (app: App, method: string, path: string, body?: unknown) => Promise<CallResult>;
}

/**
 * Registers, in the calling suite, two instances sharing a SQLite file and a Redis key prefix named after `name`,
 * both asking one fake model, with `alice` created through A; all are closed after the suite. Call it inside a
 * `describeWithService` body that needs Redis.
 */
export function twoChatInstances(name: string): TwoChatInstances {
  const instances = {
    playground: (app: App, method: string, path: string, body?: unknown) =>
      call(app, method, path, {
        token: instances.token,
        listener: 'playground',
        ...(body !== undefined && { body }),
      }),
  } as TwoChatInstances;
  beforeAll(async () => {
    instances.fake = await startFakeOpenAi(['gpt-test']);
    const env = {
      DATABASE_URL: `sqlite:${join(mkdtempSync(join(tmpdir(), `${name}-`)), 'agent.db')}`,
      REDIS_URL,
      REDIS_PREFIX: `${name}-${randomBytes(4).toString('hex')}:`,
      LLM_PROVIDER: 'openai',
      LLM_BASE_URL: instances.fake.url,
      LLM_MODEL: 'gpt-test',
      LLM_API_KEY: 'sk-fake',
    };
    instances.a = await startTestApp(env);
    instances.b = await startTestApp(env);
    await createUser(instances.a, 'alice');
    instances.token = await accessToken(instances.a, 'alice');
  }, 60_000);
  afterAll(async () => {
    await instances.a?.close();
    await instances.b?.close();
    await instances.fake?.close();
  });
  return instances;
}
