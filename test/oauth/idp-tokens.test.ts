import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { type TestIdp, startTestIdp } from '../fakes/oidc-idp.js';
import { closeAfterEach, startTestApp } from '../helpers/app.js';
import { call } from '../helpers/auth.js';
import { unusedPort } from '../helpers/http.js';
import { CookieJar, signInAtIdp } from '../helpers/idp-browser.js';
import { oidcSettings } from '../helpers/sso.js';
import { pkce } from '../helpers/oauth.js';

/**
 * With AUTH_PROVIDER=oidc, MCP clients get their tokens from the identity provider itself (a real OpenID Connect
 * provider, oidc-provider, issuing JWT access tokens for resource indicators): the protected-resource metadata
 * names it, and the MCP wires accept its tokens for the MCP resource, and nothing else does.
 */
const closing = closeAfterEach();

async function setUp(): Promise<{ app: App; idp: TestIdp; base: string; mcp: string }> {
  const port = await unusedPort();
  const base = `http://127.0.0.1:${port}`;
  const mcp = `${base}/mcp`;
  const idp = closing(
    await startTestIdp({
      redirectUris: [`${base}/auth/sso/callback`],
      resourceServers: { [mcp]: { scope: 'mcp:read mcp:tools' }, 'https://other.example/api': { scope: 'mcp:tools' } },
    }),
  );
  const app = closing(await startTestApp({ PORT: String(port), ...oidcSettings(idp, base) }));
  return { app, idp, base, mcp };
}

/** The official SDK client on the MCP endpoint, presenting `token`. */
async function connectWith(mcp: string, token: string): Promise<Client> {
  const client = closing(new Client({ name: 'idp-ide', version: '1.0.0' }));
  await client.connect(
    new StreamableHTTPClientTransport(new URL(mcp), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
  );
  return client;
}

/** An access token from the provider for `resource`, as an MCP client pointed at the provider would get one. */
async function idpToken(idp: TestIdp, base: string, resource: string, scope: string): Promise<string> {
  const { verifier, challenge } = pkce();
  const redirectUri = `${base}/auth/sso/callback`;
  const authorize = new URL(`${idp.issuer}/auth`);
  for (const [key, value] of Object.entries({
    client_id: idp.clientId,
    response_type: 'code',
    redirect_uri: redirectUri,
    scope: `openid ${scope}`,
    resource,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 'client-state',
  }))
    authorize.searchParams.set(key, value);
  const back = await signInAtIdp(authorize.href, 'alice', new CookieJar());
  const code = back.searchParams.get('code');
  expect(code, back.href).toBeTruthy();
  const res = await fetch(`${idp.issuer}/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: code!,
      redirect_uri: redirectUri,
      code_verifier: verifier,
      client_id: idp.clientId,
      client_secret: idp.clientSecret,
      resource,
    }),
  });
  const body = (await res.json()) as { access_token?: string };
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body.access_token!;
}

describe('identity provider tokens on the MCP wires', () => {
  it('points clients at the provider, and accepts its tokens for the MCP resource only', async () => {
    const { app, idp, base, mcp } = await setUp();
    const metadata = await call(app, 'GET', '/.well-known/oauth-protected-resource/mcp');
    expect(metadata.body).toMatchObject({ resource: mcp, authorization_servers: [idp.issuer] });

    const token = await idpToken(idp, base, mcp, 'mcp:read mcp:tools');
    const client = await connectWith(mcp, token);
    const result = await client.callTool({ name: 'conversation_search', arguments: { query: 'x' } });
    expect(result.isError).toBe(false);
    // The person is the local user linked to the provider's subject (provisioned on first use).
    expect(await app.services.users.findByIdentity(idp.issuer, 'alice')).toMatchObject({ username: 'alice' });

    // Not a credential for the rest of the service.
    expect((await call(app, 'GET', '/auth/me', { token })).status).toBe(401);
  });

  it("refuses the provider's tokens for another audience, and forged ones", async () => {
    const { app, idp, base } = await setUp();
    const other = await idpToken(idp, base, 'https://other.example/api', 'mcp:tools');
    expect((await call(app, 'GET', '/tools', { token: other })).status).toBe(401);
    const [header, payload] = other.split('.');
    expect((await call(app, 'GET', '/tools', { token: `${header}.${payload}.AAAA` })).status).toBe(401);
  });

  it('the provider away: keys already fetched still verify; an instance without them answers 503, not 401', async () => {
    const { app, idp, base, mcp } = await setUp();
    const token = await idpToken(idp, base, mcp, 'mcp:read mcp:tools');
    expect((await call(app, 'GET', '/tools', { token })).status).toBe(200);
    const fresh = closing(await startTestApp({ ...oidcSettings(idp, base), MCP_TOKEN_AUDIENCE: mcp }));
    await idp.close();
    expect((await call(app, 'GET', '/tools', { token })).status).toBe(200);
    const refused = await call(fresh, 'GET', '/tools', { token });
    expect(refused.status).toBe(503);
  });

  it("narrows to the token's MCP scopes", async () => {
    const { app, idp, base, mcp } = await setUp();
    const token = await idpToken(idp, base, mcp, 'mcp:read');
    const client = await connectWith(mcp, token);
    const write = await client.callTool({ name: 'chat', arguments: { query: 'hi' } });
    expect(write.isError).toBe(true);
    expect(JSON.stringify(write.content)).toContain('mcp:tools');
    expect((await call(app, 'GET', '/tools', { token })).status).toBe(200);
  });
});
