import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { startTestApp } from '../helpers/app.js';
import { nodeArgsFor } from '../helpers/entry.js';
import { TOOL_NAMES } from '../helpers/mcp.js';
import { PASSWORD, call, createUser } from '../helpers/auth.js';

/**
 * The MCP Inspector's command-line client (`@modelcontextprotocol/inspector-cli`, the CLI the Inspector runs for
 * `--cli`; the Inspector's own launcher needs Node 22) lists and calls tools over stdio and streamable HTTP.
 */
const run = promisify(execFile);
const require = createRequire(import.meta.url);
// The CLI finds its own package.json relative to the working directory, so it runs from its build folder.
const CLI_DIR = join(dirname(require.resolve('@modelcontextprotocol/inspector-cli/package.json')), 'build');
const ROOT = join(import.meta.dirname, '../..');

async function inspector(args: string[], env: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const { stdout } = await run(process.execPath, [join(CLI_DIR, 'index.js'), ...args], {
    cwd: CLI_DIR,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    timeout: 60_000,
  });
  return JSON.parse(stdout) as Record<string, unknown>;
}

let app: App;
let token: string;

beforeAll(async () => {
  app = await startTestApp({ ADMIN_PASSWORD: 'bootstrap-secret-1' });
  await createUser(app, 'alice');
  token = (await call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } })).body
    .access_token as string;
});
afterAll(() => app.close());

describe('MCP Inspector CLI', () => {
  it('lists and calls tools over streamable HTTP', async () => {
    const target = [`${app.url('main')}/mcp`, '--transport', 'http', '--header', `Authorization: Bearer ${token}`];
    const listed = await inspector([...target, '--method', 'tools/list']);
    expect((listed.tools as { name: string }[]).map((t) => t.name)).toContain('conversation_search');
    const called = await inspector([
      ...target,
      '--method',
      'tools/call',
      '--tool-name',
      'chat',
      '--tool-arg',
      'query=inspected',
    ]);
    expect(called.structuredContent).toMatchObject({
      model: 'offline',
      response: expect.stringContaining('inspected') as unknown,
    });
  });

  it('lists and calls tools over stdio (agent-service stdio)', async () => {
    const env = {
      DATABASE_URL: `sqlite:${join(mkdtempSync(join(tmpdir(), 'agent-inspector-')), 'agent.db')}`,
      ADMIN_PASSWORD: 'bootstrap-secret-1',
    };
    const target = [process.execPath, ...nodeArgsFor(join(ROOT, 'src/main.ts')), 'stdio'];
    const listed = await inspector([...target, '--method', 'tools/list'], env);
    expect((listed.tools as { name: string }[]).map((t) => t.name)).toEqual(TOOL_NAMES);
    const called = await inspector(
      [...target, '--method', 'tools/call', '--tool-name', 'search_web', '--tool-arg', 'query=API keys'],
      env,
    );
    expect(called.isError).toBe(false);
    expect(JSON.stringify(called.structuredContent)).toContain('documentation');
  });
});
