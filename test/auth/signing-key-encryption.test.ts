import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createLocalJWKSet,
  decodeProtectedHeader,
  exportJWK,
  calculateJwkThumbprint,
  generateKeyPair,
  jwtVerify,
} from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { keysCommand } from '../../src/cli/admin.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { createDb } from '../../src/db/create-db.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { buildTestApp, captureLogger, startTestApp, testEnv } from '../helpers/app.js';
import { call } from '../helpers/auth.js';
import { nodeArgsFor } from '../helpers/entry.js';

const ADMIN = { ADMIN_PASSWORD: 'bootstrap-secret-1' };
const apps: App[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

async function start(env: Record<string, string>, logger = captureLogger('info')) {
  const app = await startTestApp({ ...ADMIN, ...env }, { logger: logger.logger });
  apps.push(app);
  return app;
}

async function stop(app: App): Promise<void> {
  apps.splice(apps.indexOf(app), 1);
  await app.close();
}

function newDatabaseUrl(): { url: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'agent-kek-'));
  return { url: `sqlite:${join(dir, 'agent.db')}`, dir };
}

async function storedKeys(app: App) {
  return app.infrastructure.db.kysely.selectFrom('signing_keys').select(['kid', 'private_jwk']).execute();
}

async function adminToken(app: App): Promise<string> {
  const res = await call(app, 'POST', '/auth/login', { body: { username: 'admin', password: ADMIN.ADMIN_PASSWORD } });
  expect(res.status).toBe(200);
  return res.body.access_token as string;
}

/** Verifies an access token against the key set an app publishes, as a gateway would. */
async function verifiesAgainst(app: App, token: string): Promise<boolean> {
  const jwks = (await call(app, 'GET', '/.well-known/jwks.json')).body as unknown as Parameters<
    typeof createLocalJWKSet
  >[0];
  try {
    await jwtVerify(token, createLocalJWKSet(jwks), { audience: 'agent-service' });
    return true;
  } catch {
    return false;
  }
}

/** The real command line in a child process, for exit codes and messages. */
function runCli(args: string[], env: Record<string, string>): { exited: Promise<number | null>; stderr: () => string } {
  const child = spawn(process.execPath, [...nodeArgsFor(join(import.meta.dirname, '../../src/main.ts')), ...args], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stderr = '';
  child.stdout.resume();
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return { exited: new Promise((resolve) => child.once('exit', resolve)), stderr: () => stderr };
}

const kek = () => randomBytes(32);

describe('signing keys are encrypted at rest', () => {
  it('stores no private key in plaintext: neither a JWK nor a PEM, but a versioned AES-GCM value', async () => {
    const app = await start({ KEY_ENCRYPTION_KEY: kek().toString('base64') });
    await app.services.auth.keys.rotate();
    const rows = await storedKeys(app);
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row.private_jwk).toMatch(/^v1:[\w-]{16}\.[\w-]+$/);
      expect(row.private_jwk).not.toMatch(/"d"|"kty"|PRIVATE KEY|\{/);
      expect(() => JSON.parse(row.private_jwk) as unknown).toThrow();
    }
  });

  it('accepts the key as hex, base64 or base64url, and refuses anything that is not 32 bytes', () => {
    const bytes = kek();
    for (const text of [bytes.toString('hex'), bytes.toString('base64'), bytes.toString('base64url')]) {
      expect(loadConfig({ KEY_ENCRYPTION_KEY: text }).auth.keyEncryptionKey).toEqual(bytes);
    }
    for (const text of ['short', randomBytes(16).toString('base64'), randomBytes(33).toString('hex')]) {
      const error = (() => {
        try {
          loadConfig({ KEY_ENCRYPTION_KEY: text });
        } catch (err) {
          return err as ConfigError;
        }
        throw new Error('expected a ConfigError');
      })();
      expect(error).toBeInstanceOf(ConfigError);
      expect(error.problems).toEqual([
        'KEY_ENCRYPTION_KEY: must be 32 bytes written as base64, base64url or hex (openssl rand -base64 32)',
      ]);
      // The message never repeats the value, which may be a real key with a typo.
      expect(error.message).not.toContain(text);
    }
  });

  it('keeps signing with the same keys after a restart with the same key-encryption key', async () => {
    const { url } = newDatabaseUrl();
    const env = { DATABASE_URL: url, KEY_ENCRYPTION_KEY: kek().toString('hex') };
    const first = await start(env);
    const oldToken = await adminToken(first);
    const { kid } = decodeProtectedHeader(oldToken);
    await stop(first);

    const second = await start(env);
    expect(second.services.auth.keys.signingKey().kid).toBe(kid);
    // A token of the first run verifies against the restarted service's key set…
    expect(await verifiesAgainst(second, oldToken)).toBe(true);
    // …and the restarted service signs with the decrypted private key of the same kid.
    const newToken = await adminToken(second);
    expect(decodeProtectedHeader(newToken).kid).toBe(kid);
    expect(await verifiesAgainst(second, newToken)).toBe(true);
  });

  it('refuses to start with the wrong key-encryption key, saying so, and changes nothing', async () => {
    const { url } = newDatabaseUrl();
    const first = await start({ DATABASE_URL: url, KEY_ENCRYPTION_KEY: kek().toString('base64url') });
    const before = await storedKeys(first);
    await stop(first);

    const wrong = kek().toString('base64url');
    const refused = buildTestApp({ ...ADMIN, DATABASE_URL: url, KEY_ENCRYPTION_KEY: wrong });
    apps.push(refused);
    const second = await refused.start().catch((err: unknown) => err);
    expect(second).toBeInstanceOf(ConfigError);
    expect((second as ConfigError).problems).toEqual([
      expect.stringMatching(
        new RegExp(`^KEY_ENCRYPTION_KEY: cannot decrypt signing key ${before[0]!.kid}: it was encrypted with another`),
      ),
    ]);

    const db = createDb(loadConfig(testEnv({ DATABASE_URL: url })).database);
    try {
      expect(await db.kysely.selectFrom('signing_keys').select(['kid', 'private_jwk']).execute()).toEqual(before);
    } finally {
      await db.destroy();
    }

    // The command line reports it as a configuration error: exit code 78 and the message on stderr.
    const cli = runCli(['serve'], { ...testEnv({ DATABASE_URL: url, KEY_ENCRYPTION_KEY: wrong }) });
    expect(await cli.exited).toBe(78);
    expect(cli.stderr()).toContain(`  - KEY_ENCRYPTION_KEY: cannot decrypt signing key ${before[0]!.kid}`);
    expect(cli.stderr()).not.toContain(wrong);
  }, 30_000);

  it('generates an owner-only development key beside the SQLite database when none is set, and reuses it', async () => {
    const { url, dir } = newDatabaseUrl();
    const logs = captureLogger('info');
    const first = await start({ DATABASE_URL: url }, logs);
    const file = join(dir, 'key-encryption.key');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8')).toMatch(/^[\w-]{43}\n$/);
    expect(logs.lines()).toContainEqual(
      expect.objectContaining({
        level: 40,
        file,
        msg: expect.stringContaining('KEY_ENCRYPTION_KEY is not set') as unknown,
      }),
    );
    const kid = first.services.auth.keys.signingKey().kid;
    await stop(first);

    const key = readFileSync(file, 'utf8');
    const second = await start({ DATABASE_URL: url });
    expect(second.services.auth.keys.signingKey().kid).toBe(kid);
    expect(readFileSync(file, 'utf8')).toBe(key);
    // The generated key is the one the rows are sealed with: the same key, given explicitly, opens them.
    await stop(second);
    const explicit = await start({ DATABASE_URL: url, KEY_ENCRYPTION_KEY: key.trim() });
    expect(explicit.services.auth.keys.signingKey().kid).toBe(kid);
  });

  it('refuses to start in production without a key-encryption key (exit code 78, naming the key)', async () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(ConfigError);
    const cli = runCli(['serve'], { ...testEnv({ DATABASE_URL: newDatabaseUrl().url }), NODE_ENV: 'production' });
    expect(await cli.exited).toBe(78);
    expect(cli.stderr()).toContain('  - KEY_ENCRYPTION_KEY: is required when NODE_ENV=production');
  }, 30_000);

  it('encrypts on start a private key an older version stored in plaintext, and keeps signing with it', async () => {
    const { url } = newDatabaseUrl();
    const config = loadConfig(testEnv({ DATABASE_URL: url }));
    const db = createDb(config.database);
    const { publicKey, privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
    const publicJwk = await exportJWK(publicKey);
    const kid = await calculateJwkThumbprint(publicJwk);
    try {
      await migrateToLatest(db);
      await db.kysely
        .insertInto('signing_keys')
        .values({
          kid,
          alg: 'EdDSA',
          public_jwk: JSON.stringify(publicJwk),
          private_jwk: JSON.stringify(await exportJWK(privateKey)),
          created_at: new Date().toISOString(),
          retired_at: null,
        })
        .execute();
    } finally {
      await db.destroy();
    }

    const logs = captureLogger('info');
    const app = await start({ DATABASE_URL: url, KEY_ENCRYPTION_KEY: kek().toString('hex') }, logs);
    const rows = await storedKeys(app);
    expect(rows).toEqual([{ kid, private_jwk: expect.stringMatching(/^v1:/) as unknown }]);
    expect(logs.lines()).toContainEqual(
      expect.objectContaining({ keys: 1, msg: 'signing keys stored in plaintext are now encrypted' }),
    );
    const token = await adminToken(app);
    expect(decodeProtectedHeader(token).kid).toBe(kid);
    expect(await verifiesAgainst(app, token)).toBe(true);
  });

  it('agent-service keys rotate seals the new key with the configured key-encryption key', async () => {
    const { url } = newDatabaseUrl();
    const key = kek().toString('base64');
    const out: string[] = [];
    const io = { out: (line: string) => out.push(line), readStdin: () => Promise.resolve('') };
    await keysCommand(loadConfig(testEnv({ DATABASE_URL: url, KEY_ENCRYPTION_KEY: key })), ['rotate'], io);
    expect(out).toEqual([expect.stringMatching(/^new signing key ([\w-]{43}); 2 key\(s\) now verify tokens$/)]);
    const rotatedKid = /^new signing key ([\w-]{43});/.exec(out[0]!)![1];

    const app = await start({ DATABASE_URL: url, KEY_ENCRYPTION_KEY: key });
    const rows = await storedKeys(app);
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(row.private_jwk).toMatch(/^v1:/);
    expect(decodeProtectedHeader(await adminToken(app)).kid).toBe(rotatedKid);

    // With another key the command refuses instead of adding a key nobody could use.
    const other = loadConfig(testEnv({ DATABASE_URL: url, KEY_ENCRYPTION_KEY: kek().toString('base64') }));
    await expect(keysCommand(other, ['rotate'], io)).rejects.toThrow(/KEY_ENCRYPTION_KEY: cannot decrypt/);
  });
});
