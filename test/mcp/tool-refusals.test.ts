import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { startTestApp } from '../helpers/app.js';
import { accessToken, call, createUser } from '../helpers/auth.js';

// A tool call the policy point refuses is rendered by each wire in its own way: MCP clients get a tool error
// (`isError`) that carries nothing private, the REST-style endpoint an HTTP 403 or 429 with the spec's body.

const apps: App[] = [];
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close().catch(() => undefined)));
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

async function setUp(env: Record<string, string> = {}) {
  const app = await startTestApp({ ADMIN_PASSWORD: 'bootstrap-secret-1', ...env });
  apps.push(app);
  await createUser(app, 'alice');
  return { app, alice: await accessToken(app, 'alice') };
}

async function sdkClient(app: App, token: string): Promise<Client> {
  const client = new Client({ name: 'tool-refusals', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${app.url('main')}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  clients.push(client);
  return client;
}

const restToolCall = (app: App, token: string, name: string, args: Record<string, unknown>) =>
  call(app, 'POST', '/mcp/tools/call', { token, body: { params: { name, arguments: args } } });

describe('a refused tools/call over the official SDK client', () => {
  it('is a tool error with the reason and no _meta when the caller may not call the tool', async () => {
    const { app, alice } = await setUp();
    await app.infrastructure.authz.delete([{ user: 'user:*', relation: 'executor', object: 'tool:search_web' }]);
    const client = await sdkClient(app, alice);
    const result = await client.callTool({ name: 'search_web', arguments: { query: 'x' } });
    expect(result).toEqual({
      content: [{ type: 'text', text: 'Permission denied: you may not call the tool search_web' }],
      isError: true,
    });
    expect(result).not.toHaveProperty('_meta');
  });

  it('is a tool error with no _meta beyond the tool-call budget', async () => {
    const { app, alice } = await setUp({ MCP_TOOL_CALLS_PER_MINUTE: '1' });
    const client = await sdkClient(app, alice);
    expect((await client.callTool({ name: 'search_web', arguments: { query: 'a' } })).isError).toBe(false);
    const limited = await client.callTool({ name: 'search_web', arguments: { query: 'b' } });
    expect(limited).toEqual({
      content: [{ type: 'text', text: expect.stringMatching(/^Too many tool calls/) as unknown }],
      isError: true,
    });
    expect(limited).not.toHaveProperty('_meta');
  });
});

describe('a refused tools/call on the REST-style endpoint', () => {
  it('is 403 permission_denied when the caller may not call the tool', async () => {
    const { app, alice } = await setUp();
    await app.infrastructure.authz.delete([{ user: 'user:*', relation: 'executor', object: 'tool:search_web' }]);
    const denied = await restToolCall(app, alice, 'search_web', { query: 'x' });
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({
      error: { code: 'permission_denied', message: 'Permission denied: you may not call the tool search_web' },
    });
  });

  it('is 429 with Retry-After and the tool-call window in the rate-limit headers beyond the budget', async () => {
    const { app, alice } = await setUp({ MCP_TOOL_CALLS_PER_MINUTE: '1' });
    expect((await restToolCall(app, alice, 'search_web', { query: 'a' })).status).toBe(200);
    const limited = await restToolCall(app, alice, 'search_web', { query: 'b' });
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({
      error: { code: 'rate_limit_exceeded', message: expect.stringMatching(/^Too many tool calls/) as unknown },
    });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.headers.get('x-ratelimit-limit')).toBe('1');
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
  });
});
