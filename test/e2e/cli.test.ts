import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createDb } from '../../src/db/create-db.js';
import { knownMigrations } from '../../src/db/migrate.js';
import { UsersService } from '../../src/modules/users/users.service.js';
import { killRunning, run, startServing } from '../helpers/service-process.js';

afterEach(killRunning);

/**
 * A preload (for NODE_OPTIONS) that records every module the process loads: a loader hook appends each one's URL
 * to a file as it is loaded, from the loader's own thread, so that nothing is lost when the command exits at once.
 */
function moduleRecorder(): { nodeOptions: string; loaded: () => string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'agent-cli-modules-'));
  const file = join(dir, 'loaded.txt');
  const hooks = join(dir, 'hooks.mjs');
  writeFileSync(
    hooks,
    `import { appendFileSync } from 'node:fs';\n` +
      `export async function load(url, context, next) {\n` +
      `  appendFileSync(${JSON.stringify(file)}, url + '\\n');\n` +
      `  return next(url, context);\n` +
      `}\n`,
  );
  const preload = join(dir, 'preload.mjs');
  writeFileSync(
    preload,
    `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`,
  );
  return {
    nodeOptions: `--import ${pathToFileURL(preload).href}`,
    loaded: () => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []),
  };
}

describe('agent-service command line', () => {
  it('refuses invalid configuration with one message naming every bad key, exit code 78', async () => {
    const bad = run(['serve'], { PORT: 'x', AUTH_MODE: 'cookie', LLM_PROVIDER: 'openai' });
    expect(await bad.exited).toBe(78);
    const message = bad.stderr();
    expect(message).toMatch(/^Invalid configuration:/);
    for (const key of ['PORT', 'AUTH_MODE', 'LLM_MODEL']) expect(message).toContain(`  - ${key}: `);
  });

  it('refuses an unknown command with usage, exit code 64', async () => {
    const bad = run(['frobnicate']);
    expect(await bad.exited).toBe(64);
    expect(bad.stderr()).toContain('Unknown command "frobnicate"');
    expect(bad.stderr()).toContain('Usage: agent-service');
  });

  it('migrates a new database, then has nothing to do', async () => {
    const env = { DATABASE_URL: `sqlite:${join(mkdtempSync(join(tmpdir(), 'agent-cli-')), 'agent.db')}` };
    const first = run(['migrate'], env);
    expect(await first.exited).toBe(0);
    expect(first.lines.map((l) => l.text)).toEqual([
      `applied ${knownMigrations().join(', ')}; schema at ${knownMigrations().at(-1)}`,
    ]);
    const second = run(['migrate'], env);
    expect(await second.exited).toBe(0);
    expect(second.lines.map((l) => l.text)).toEqual([`nothing to apply; schema at ${knownMigrations().at(-1)}`]);
  });

  it('serves, stops with exit code 0 on SIGTERM, and finds its data after a restart', async () => {
    const dbFile = join(mkdtempSync(join(tmpdir(), 'agent-cli-')), 'nested', 'agent.db');
    const first = await startServing(dbFile);
    expect(first.migrated).toBe('database migrated');
    const live = await fetch(`${first.url}/health/live`);
    expect(live.status).toBe(200);
    expect(live.headers.get('x-request-id')).toBeTruthy();

    first.run.child.kill('SIGTERM');
    expect(await first.run.exited).toBe(0);
    expect(first.run.lines.map((l) => l.msg)).toContain('stopped');

    const second = await startServing(dbFile);
    expect(second.migrated).toBe('database schema up to date');
    expect(second.instance).toBe(first.instance);
    second.run.child.kill('SIGINT');
    expect(await second.run.exited).toBe(0);
  });

  it('finishes a request already in flight when SIGTERM arrives', async () => {
    const dbFile = join(mkdtempSync(join(tmpdir(), 'agent-cli-')), 'agent.db');
    const { run: serving, url } = await startServing(dbFile);
    const { hostname, port } = new URL(url);
    const socket = connect(Number(port), hostname);
    await new Promise((resolve) => socket.once('connect', resolve));
    let response = '';
    socket.on('data', (chunk: Buffer) => (response += chunk.toString()));
    const body = JSON.stringify({ hello: 'world' });
    // Headers and half the body now; the request stays in flight until the rest arrives.
    socket.write(
      `POST /api/version HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    serving.child.kill('SIGTERM');
    await serving.waitFor((l) => l.msg === 'shutting down');
    socket.write(body.slice(5));
    await new Promise((resolve) => socket.once('end', resolve));
    expect(response).toMatch(/^HTTP\/1\.1 404 /);
    expect(response).toContain('Connection: close');
    expect(response).toContain('"code":"ROUTE_NOT_FOUND"');
    expect(await serving.exited).toBe(0);
  });

  it('loads the service only for the commands that run it', async () => {
    const env = { DATABASE_URL: `sqlite:${join(mkdtempSync(join(tmpdir(), 'agent-cli-')), 'agent.db')}` };
    const loadedBy = async (args: string[]) => {
      const recorder = moduleRecorder();
      await run(args, { ...env, NODE_OPTIONS: recorder.nodeOptions }).exited;
      return recorder.loaded();
    };
    const service = (urls: string[]) => urls.filter((url) => /\/src\/(app|compose\/[\w-]+)\.[jt]s$/.test(url));
    const migrated = await loadedBy(['migrate']);
    // The recorder sees what a command loads: migrate's own modules.
    expect(migrated.filter((url) => /\/src\/db\/migrate\.[jt]s$/.test(url))).toHaveLength(1);
    expect(service(migrated)).toEqual([]);
    for (const args of [['help'], ['frobnicate'], ['config'], ['users', 'list'], ['keys', 'spin']])
      expect(service(await loadedBy(args)), args.join(' ')).toEqual([]);
  }, 60_000); // six processes, each starting through tsx with a loader hook

  it('manages users: create with a password from stdin or generated, list, set-password', async () => {
    const dbFile = join(mkdtempSync(join(tmpdir(), 'agent-cli-')), 'agent.db');
    const env = { DATABASE_URL: `sqlite:${dbFile}` };
    const created = run(
      ['users', 'create', 'carol', '--email', 'carol@example.com', '--role', 'admin', '--password-stdin'],
      env,
      'from stdin 123\n',
    );
    expect(await created.exited).toBe(0);
    expect(created.lines.map((l) => l.text)).toEqual([
      expect.stringMatching(/^created carol \([0-9a-f-]{36}\) with roles admin$/),
    ]);

    const generated = run(['users', 'create', 'dave'], env);
    expect(await generated.exited).toBe(0);
    const password = /^password: (\S+)$/.exec(String(generated.lines[1]?.text))?.[1];
    expect(password).toHaveLength(24);

    const duplicate = run(['users', 'create', 'CAROL'], env);
    expect(await duplicate.exited).toBe(64);
    expect(duplicate.stderr()).toContain('Username CAROL is taken');
    const invalid = run(['users', 'create', 'bad name!'], env);
    expect(await invalid.exited).toBe(64);
    expect(invalid.stderr()).toContain('username: must be 1–64 letters');

    const list = run(['users', 'list', '--json'], env);
    expect(await list.exited).toBe(0);
    const listed = JSON.parse(list.stdout()) as {
      username: string;
      roles: string[];
    }[];
    expect(listed.map((u) => [u.username, u.roles])).toEqual([
      ['carol', ['admin']],
      ['dave', ['user']],
    ]);
    expect(JSON.stringify(listed)).not.toMatch(/argon2|password/i);

    const changed = run(['users', 'set-password', 'dave', '--password-stdin'], env, 'a brand new password\n');
    expect(await changed.exited).toBe(0);
    const db = createDb({ dialect: 'sqlite', filename: dbFile });
    try {
      const users = new UsersService(db.kysely);
      expect(await users.authenticate('carol@example.com', 'from stdin 123')).toMatchObject({ username: 'carol' });
      expect(await users.authenticate('dave', password!)).toBeUndefined();
      expect(await users.authenticate('dave', 'a brand new password')).toMatchObject({ username: 'dave' });
    } finally {
      await db.destroy();
    }
    const unknown = run(['users', 'set-password', 'nobody'], env);
    expect(await unknown.exited).toBe(64);
  }, 60_000); // seven processes, each starting through tsx

  it('rotates the signing key, keeping the old one in the key set', async () => {
    const dbFile = join(mkdtempSync(join(tmpdir(), 'agent-cli-')), 'agent.db');
    const first = run(['keys', 'rotate'], { DATABASE_URL: `sqlite:${dbFile}` });
    expect(await first.exited).toBe(0);
    expect(first.lines[0]?.text).toMatch(/^new signing key [\w-]{43}; 2 key\(s\) now verify tokens$/);
    expect(await run(['keys', 'spin'], { DATABASE_URL: `sqlite:${dbFile}` }).exited).toBe(64);
  });
});
