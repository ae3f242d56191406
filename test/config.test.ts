import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('configuration (DESIGN.md §3)', () => {
  it('runs on embedded defaults with an empty environment', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      host: '127.0.0.1',
      ports: { main: 8000, playground: 8001, builder: 8002 },
      database: { dialect: 'sqlite', filename: './data/agent.db' },
      redis: undefined,
      publicUrl: 'http://127.0.0.1:8000',
      trustProxy: false,
      production: false,
      auth: {
        mode: 'token',
        provider: 'local',
        adminUsername: 'admin',
        adminPassword: undefined,
        adminEmail: 'admin@localhost.invalid',
        keyEncryptionKey: undefined,
      },
      authz: { provider: 'embedded' },
      llm: { provider: 'offline' },
      logLevel: 'info',
    });
  });

  it('reads every documented variable', () => {
    const config = loadConfig({
      HOST: '0.0.0.0',
      PORT: '9000',
      PLAYGROUND_PORT: '9001',
      BUILDER_PORT: '9002',
      DATABASE_URL: 'postgres://u:p@db:5432/agent',
      REDIS_URL: 'redis://cache:6379/1',
      AUTH_MODE: 'session',
      AUTH_PROVIDER: 'oidc',
      OIDC_ISSUER_URL: 'https://idp.example.com/realms/acme',
      OIDC_CLIENT_ID: 'agent',
      OIDC_CLIENT_SECRET: 's3cret',
      OIDC_REDIRECT_URI: 'https://agent.example.com/auth/sso/callback',
      AUTHZ_PROVIDER: 'openfga',
      OPENFGA_API_URL: 'http://fga:8080',
      OPENFGA_STORE_ID: '01HZX5Q3J8Y9N4W7T2V6R0M1KA',
      LLM_PROVIDER: 'openai',
      LLM_BASE_URL: 'http://vllm:8000/v1',
      LLM_MODEL: 'llama-3',
      ADMIN_USERNAME: 'root',
      ADMIN_PASSWORD: 'correct horse',
      ADMIN_EMAIL: 'root@example.com',
      KEY_ENCRYPTION_KEY: '00'.repeat(32),
      NODE_ENV: 'production',
      LOG_LEVEL: 'debug',
    });
    expect(config.production).toBe(true);
    expect(config.auth).toMatchObject({ adminEmail: 'root@example.com', keyEncryptionKey: Buffer.alloc(32) });
    expect(config.ports).toEqual({ main: 9000, playground: 9001, builder: 9002 });
    expect(config.database).toEqual({ dialect: 'postgres', connectionString: 'postgres://u:p@db:5432/agent' });
    expect(config.auth.oidc).toEqual({
      issuerUrl: 'https://idp.example.com/realms/acme',
      clientId: 'agent',
      clientSecret: 's3cret',
      redirectUri: 'https://agent.example.com/auth/sso/callback',
    });
    expect(config.authz).toEqual({
      provider: 'openfga',
      apiUrl: 'http://fga:8080',
      storeId: '01HZX5Q3J8Y9N4W7T2V6R0M1KA',
    });
    expect(config.llm).toEqual({ provider: 'openai', baseUrl: 'http://vllm:8000/v1', model: 'llama-3' });
  });

  it('accepts sqlite::memory: and port 0 for every listener', () => {
    const config = loadConfig({ DATABASE_URL: 'sqlite::memory:', PORT: '0', PLAYGROUND_PORT: '0', BUILDER_PORT: '0' });
    expect(config.database).toEqual({ dialect: 'sqlite', filename: ':memory:' });
    expect(config.ports).toEqual({ main: 0, playground: 0, builder: 0 });
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ PORT: '', LOG_LEVEL: '' }).ports.main).toBe(8000);
  });

  it('lists every bad key in one error', () => {
    const problems = problemsOf({
      PORT: 'eighty',
      PLAYGROUND_PORT: '70000',
      DATABASE_URL: 'mysql://x',
      AUTH_MODE: 'cookie',
      LOG_LEVEL: 'loud',
      REDIS_URL: 'http://not-redis',
    });
    expect(problems).toHaveLength(6);
    for (const key of ['PORT', 'PLAYGROUND_PORT', 'DATABASE_URL', 'AUTH_MODE', 'LOG_LEVEL', 'REDIS_URL']) {
      expect(problems.some((p) => p.startsWith(`${key}:`))).toBe(true);
    }
  });

  it('requires the settings each selected provider needs', () => {
    const problems = problemsOf({ AUTH_PROVIDER: 'oidc', AUTHZ_PROVIDER: 'openfga', LLM_PROVIDER: 'openai' });
    expect(problems.sort()).toEqual(
      [
        'LLM_MODEL: is required when LLM_PROVIDER=openai',
        'OIDC_CLIENT_ID: is required when AUTH_PROVIDER=oidc',
        'OIDC_CLIENT_SECRET: is required when AUTH_PROVIDER=oidc',
        'OIDC_ISSUER_URL: is required when AUTH_PROVIDER=oidc',
        'OIDC_REDIRECT_URI: is required when AUTH_PROVIDER=oidc',
        'OPENFGA_API_URL: is required when AUTHZ_PROVIDER=openfga',
        'OPENFGA_STORE_ID: is required when AUTHZ_PROVIDER=openfga',
      ].sort(),
    );
  });

  it('refuses two listeners on the same fixed port', () => {
    expect(problemsOf({ PORT: '9000', BUILDER_PORT: '9000' })).toEqual(['BUILDER_PORT: must differ from PORT (9000)']);
  });

  it('refuses an OpenFGA store id that is not a ULID and a short admin password', () => {
    const problems = problemsOf({ OPENFGA_STORE_ID: 'store-1', ADMIN_PASSWORD: 'short' });
    expect(problems).toEqual(['OPENFGA_STORE_ID: must be a ULID', 'ADMIN_PASSWORD: must be at least 8 characters']);
  });

  it('requires KEY_ENCRYPTION_KEY in production and checks ADMIN_EMAIL and the key, never echoing the key', () => {
    expect(problemsOf({ NODE_ENV: 'production' })).toEqual([
      'KEY_ENCRYPTION_KEY: is required when NODE_ENV=production',
    ]);
    expect(loadConfig({ NODE_ENV: 'development' }).production).toBe(false);
    const problems = problemsOf({ ADMIN_EMAIL: 'admin', KEY_ENCRYPTION_KEY: 'c2VjcmV0' });
    expect(problems).toEqual([
      'ADMIN_EMAIL: must be an email address',
      'KEY_ENCRYPTION_KEY: must be 32 bytes written as base64, base64url or hex (openssl rand -base64 32)',
    ]);
    expect(problemsOf({ ADMIN_USERNAME: 'a..b' })).toEqual([
      'ADMIN_EMAIL: is required: a..b@localhost.invalid, derived from ADMIN_USERNAME, is not an email address',
    ]);
  });

  it('reads CONFIG_FILE and lets the environment override it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-config-'));
    const file = join(dir, 'config.json');
    writeFileSync(file, JSON.stringify({ PORT: 9100, LOG_LEVEL: 'warn', AUTH_MODE: 'session' }));
    const config = loadConfig({ CONFIG_FILE: file, LOG_LEVEL: 'error' });
    expect(config.ports.main).toBe(9100);
    expect(config.auth.mode).toBe('session');
    expect(config.logLevel).toBe('error');
  });

  it('reports unknown keys and unreadable files named by CONFIG_FILE', () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-config-'));
    const file = join(dir, 'config.json');
    writeFileSync(file, JSON.stringify({ PROT: 9100 }));
    expect(problemsOf({ CONFIG_FILE: file })).toEqual([`PROT: unknown key in CONFIG_FILE ${file}`]);
    writeFileSync(file, '[1, 2');
    expect(problemsOf({ CONFIG_FILE: file })).toEqual([`CONFIG_FILE: ${file} is not a JSON object of settings`]);
    expect(problemsOf({ CONFIG_FILE: join(dir, 'missing.json') })[0]).toMatch(
      /^CONFIG_FILE: cannot read .* \(ENOENT\)$/,
    );
  });
});
