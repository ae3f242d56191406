import { UnauthorizedError, auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { beforeEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { closeAfterEach, startTestApp } from '../helpers/app.js';
import { ADMIN_PASSWORD, PASSWORD, call, createUser } from '../helpers/auth.js';
import { unusedPort } from '../helpers/http.js';
import { restoreGlobalWebSocketAfterEach, sdkTransports } from '../helpers/mcp.js';
import { MemoryOAuthClient, answerConsent, openAuthorization, tokenRequest } from '../helpers/oauth.js';

/**
 * An MCP client signs in by itself, as today's IDEs and desktop apps do: the official SDK client discovers the
 * authorization server from the 401, registers, sends the user to the consent page (driven here over HTTP), redeems
 * the code, calls a tool, refreshes and revokes.
 */
const closing = closeAfterEach();
restoreGlobalWebSocketAfterEach();
let app: App;
let mcpUrl: URL;

async function startApp(env: Record<string, string> = {}): Promise<void> {
  // The issuer and resource URLs name the real port, as they would behind a fixed public URL.
  app = closing(await startTestApp({ PORT: String(await unusedPort()), ADMIN_PASSWORD, ...env }));
  mcpUrl = new URL(`${app.url('main')}/mcp`);
  await createUser(app, 'alice');
}

/** Connects an SDK client that authenticates with `provider`; rejects with UnauthorizedError until it has a token. */
async function connect(provider: MemoryOAuthClient): Promise<Client> {
  const client = new Client({ name: 'test-ide', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
  return closing(client);
}

/** Runs the whole sign-in as the user would: the client's first attempt, the consent page, the code's redemption. */
async function signIn(provider: MemoryOAuthClient, as = 'alice', scope?: string): Promise<void> {
  await expect(connect(provider)).rejects.toBeInstanceOf(UnauthorizedError);
  expect(provider.authorizationUrl).toBeDefined();
  // The SDK asks for every scope the resource lists; a client may ask for less.
  if (scope) provider.authorizationUrl!.searchParams.set('scope', scope);
  const page = await openAuthorization(provider.authorizationUrl!);
  expect(page.status).toBe(200);
  expect(page.html).toContain('Allow Test IDE to use Agent Service?');
  const answer = await answerConsent(app, page, { decision: 'approve', username: as, password: PASSWORD });
  expect(answer.status).toBe(303);
  const back = answer.location!;
  expect(`${back.origin}${back.pathname}`).toBe(provider.redirectUrl);
  expect(back.searchParams.get('iss')).toBe(app.url('main'));
  expect(back.searchParams.get('state')).toBe(provider.authorizationUrl!.searchParams.get('state'));
  await new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }).finishAuth(
    back.searchParams.get('code')!,
  );
}

describe('MCP authorization, end to end with the SDK client', () => {
  beforeEach(() => startApp());

  it('discovers, registers, signs in with consent, calls a tool, refreshes and revokes', async () => {
    const provider = new MemoryOAuthClient();
    await signIn(provider);
    expect(provider.client?.client_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(provider.saved).toMatchObject({ token_type: 'Bearer', scope: 'mcp:read mcp:tools' });
    const first = provider.saved!;

    const client = await connect(provider);
    const result = await client.callTool({ name: 'conversation_search', arguments: { query: 'hello' } });
    expect(result.isError).toBe(false);

    // The SDK refreshes with the refresh token it holds: a new pair, and the old refresh token is spent.
    expect(await auth(provider, { serverUrl: mcpUrl })).toBe('AUTHORIZED');
    expect(provider.saved!.refresh_token).not.toBe(first.refresh_token);
    expect(provider.saved!.access_token).not.toBe(first.access_token);
    const again = await connect(provider);
    expect((await again.listTools()).tools.length).toBeGreaterThan(0);

    // The user sees the client they authorised.
    const login = await call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } });
    const userToken = login.body.access_token as string;
    const grants = await call(app, 'GET', '/api/v1/oauth/grants', { token: userToken });
    expect(grants.status).toBe(200);
    expect(grants.body.grants).toEqual([
      expect.objectContaining({ client_name: 'Test IDE', scope: 'mcp:read mcp:tools', resource: mcpUrl.href }),
    ]);

    // The client revokes its refresh token (RFC 7009): the grant ends, and with it every token it was given.
    const revoked = await tokenRequest(
      app,
      { token: provider.saved!.refresh_token!, client_id: provider.client!.client_id },
      '/oauth/revoke',
    );
    expect(revoked.status).toBe(200);
    const afterRevoke = await fetch(mcpUrl, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${provider.saved!.access_token}`,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(afterRevoke.status).toBe(401);
    expect(afterRevoke.headers.get('www-authenticate')).toContain('resource_metadata=');
    expect((await call(app, 'GET', '/api/v1/oauth/grants', { token: userToken })).body.grants).toEqual([]);

    const audit = await call(app, 'GET', '/api/v1/audit-log?limit=50', { token: await adminToken() });
    const types = (audit.body.items as { event_type: string }[] | undefined)?.map((e) => e.event_type) ?? [];
    expect(types).toEqual(expect.arrayContaining(['oauth.consent_granted', 'oauth.grant_revoked']));
  });

  it('the token works on every MCP wire', async () => {
    const provider = new MemoryOAuthClient();
    await signIn(provider);
    const headers = { Authorization: `Bearer ${provider.saved!.access_token}` };
    for (const [wire, transport] of Object.entries(sdkTransports)) {
      const client = closing(new Client({ name: 'test-ide', version: '1.0.0' }));
      await client.connect(transport(app, headers));
      const result = await client.callTool({ name: 'conversation_search', arguments: { query: 'x' } });
      expect(result.isError, wire).toBe(false);
    }
  });

  it('binds tokens to the MCP endpoint: the rest of the API refuses them', async () => {
    const provider = new MemoryOAuthClient();
    await signIn(provider);
    const me = await call(app, 'GET', '/auth/me', { token: provider.saved!.access_token });
    expect(me.status).toBe(401);
    expect(await call(app, 'GET', '/api/v1/api-keys', { token: provider.saved!.access_token })).toMatchObject({
      status: 401,
    });
    // The REST-style MCP routes are the MCP resource too.
    const tools = await call(app, 'GET', '/tools', { token: provider.saved!.access_token });
    expect(tools.status).toBe(200);
  });

  it('a read-only grant lists and reads, but may not call a tool that changes data', async () => {
    const provider = new MemoryOAuthClient();
    await signIn(provider, 'alice', 'mcp:read');
    expect(provider.saved!.scope).toBe('mcp:read');
    const client = await connect(provider);
    const read = await client.callTool({ name: 'conversation_search', arguments: { query: 'hello' } });
    expect(read.isError).toBe(false);
    const write = await client.callTool({ name: 'chat', arguments: { query: 'hi' } });
    expect(write.isError).toBe(true);
    expect(JSON.stringify(write.content)).toContain('mcp:tools');
  });

  it('the user revokes a client from their grants: its tokens stop at once', async () => {
    const provider = new MemoryOAuthClient();
    await signIn(provider);
    const login = await call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } });
    const userToken = login.body.access_token as string;
    const [grant] = (await call(app, 'GET', '/api/v1/oauth/grants', { token: userToken })).body.grants as {
      grant_id: string;
    }[];
    expect((await call(app, 'DELETE', `/api/v1/oauth/grants/${grant!.grant_id}`, { token: userToken })).status).toBe(
      204,
    );
    expect((await call(app, 'GET', '/tools', { token: provider.saved!.access_token })).status).toBe(401);
    const refreshed = await tokenRequest(app, {
      grant_type: 'refresh_token',
      refresh_token: provider.saved!.refresh_token!,
      client_id: provider.client!.client_id,
    });
    expect(refreshed).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    // Someone else's grant, or none: 404, and nothing changes.
    expect((await call(app, 'DELETE', `/api/v1/oauth/grants/${grant!.grant_id}`, { token: userToken })).status).toBe(
      404,
    );
  });

  it("puts the grants in the user's data export (their erasure: test/data-subject/erasure.test.ts)", async () => {
    const provider = new MemoryOAuthClient();
    await signIn(provider);
    const login = await call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } });
    const userToken = login.body.access_token as string;
    const exported = await call(app, 'GET', '/api/v1/users/me/data', { token: userToken });
    expect(exported.status).toBe(200);
    expect(exported.body.oauth_grants).toEqual([expect.objectContaining({ client_name: 'Test IDE' })]);
  });
});

async function adminToken(): Promise<string> {
  const login = await call(app, 'POST', '/auth/login', { body: { username: 'admin', password: ADMIN_PASSWORD } });
  return login.body.access_token as string;
}
