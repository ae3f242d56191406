import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { closeAfterEach } from '../helpers/app.js';
import { type SignedIn, startTestClient } from '../helpers/client.js';
import { sdkTransports } from '../helpers/mcp.js';

// A tool call the policy point refuses is rendered by each wire in its own way: MCP clients get a tool error
// (`isError`) that carries nothing private, the REST-style endpoint an HTTP 403 or 429 with the spec's body.

const closing = closeAfterEach();

async function setUp(env: Record<string, string> = {}) {
  const { app, as } = closing(await startTestClient(env));
  return { app, alice: await as('alice') };
}

async function sdkClient(app: App, caller: SignedIn): Promise<Client> {
  const client = new Client({ name: 'tool-refusals', version: '1.0.0' });
  await client.connect(sdkTransports['streamable HTTP'](app, caller.credentials));
  closing({ close: () => client.close().catch(() => undefined) });
  return client;
}

const restToolCall = (caller: SignedIn, name: string, args: Record<string, unknown>) =>
  caller.post('/mcp/tools/call', { params: { name, arguments: args } });

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
    const denied = await restToolCall(alice, 'search_web', { query: 'x' });
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({
      error: { code: 'permission_denied', message: 'Permission denied: you may not call the tool search_web' },
    });
  });

  it('is 429 with Retry-After and the tool-call window in the rate-limit headers beyond the budget', async () => {
    const { alice } = await setUp({ MCP_TOOL_CALLS_PER_MINUTE: '1' });
    expect((await restToolCall(alice, 'search_web', { query: 'a' })).status).toBe(200);
    const limited = await restToolCall(alice, 'search_web', { query: 'b' });
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({
      error: { code: 'rate_limit_exceeded', message: expect.stringMatching(/^Too many tool calls/) as unknown },
    });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.headers.get('x-ratelimit-limit')).toBe('1');
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
  });
});
