import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Starts the service on its embedded defaults in a process of its own (through tsx, so no build is needed) and
 * lists which optional drivers it loaded: those of the services it was not configured to use must stay unloaded,
 * so that a laptop's process does not carry their memory.
 */
const SCRIPT = `
  import { createRequire } from 'node:module';
  const { buildApp } = await import('./src/app.ts');
  const { loadConfig } = await import('./src/config.ts');
  const app = buildApp(loadConfig({ DATABASE_URL: 'sqlite::memory:', PORT: '0', PLAYGROUND_PORT: '0', BUILDER_PORT: '0',
    ADMIN_PASSWORD: 'footprint-password', LOG_LEVEL: 'silent' }), { announce: () => undefined });
  await app.start();
  const loaded = Object.keys(createRequire(import.meta.url).cache);
  const drivers = ['@openfga/sdk', 'ioredis', 'pg'].filter((name) =>
    loaded.some((path) => path.includes(\`/node_modules/\${name}/\`)));
  await app.close();
  process.stdout.write(JSON.stringify(drivers));
`;

describe('footprint on embedded defaults', () => {
  it('loads no OpenFGA, Redis or PostgreSQL client', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', SCRIPT],
      { cwd: ROOT, timeout: 60_000 },
    );
    expect(JSON.parse(stdout)).toEqual([]);
  }, 60_000);
});
