import { beforeEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { closeAfterEach, startTestApp } from '../helpers/app.js';
import { PASSWORD, TestClock, call, createUser } from '../helpers/auth.js';
import { unusedPort } from '../helpers/http.js';
import { answerConsent, authorizeClient, openAuthorization, pkce, register, tokenRequest } from '../helpers/oauth.js';

/**
 * Each attack on the authorization server is refused with the RFC's error code, and nothing is issued.
 */
const closing = closeAfterEach();
const REDIRECT = 'http://127.0.0.1:40111/callback';
let app: App;
let clock: TestClock;
let clientId: string;
let resource: string;

beforeEach(async () => {
  clock = new TestClock();
  app = closing(await startTestApp({ PORT: String(await unusedPort()) }, { now: clock.now }));
  resource = `${app.url('main')}/mcp`;
  await createUser(app, 'alice');
  const registered = await register(app, { client_name: 'Victim IDE', redirect_uris: [REDIRECT] });
  expect(registered.status).toBe(201);
  clientId = registered.body.client_id as string;
});

function authorizeUrl(params: Record<string, string>): string {
  const url = new URL(`${app.url('main')}/oauth/authorize`);
  for (const [key, value] of Object.entries({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge_method: 'S256',
    state: 'st-1',
    resource,
    ...params,
  }))
    url.searchParams.set(key, value);
  return url.href;
}

/** Runs authorization through consent; answers the code and the verifier that redeems it. */
async function obtainCode(): Promise<{ code: string; verifier: string }> {
  const { verifier, challenge } = pkce();
  const page = await openAuthorization(authorizeUrl({ code_challenge: challenge }));
  const answer = await answerConsent(app, page, { decision: 'approve', username: 'alice', password: PASSWORD });
  expect(answer.status).toBe(303);
  return { code: answer.location!.searchParams.get('code')!, verifier };
}

const redeem = (code: string, verifier: string | undefined, extra: Record<string, string> = {}) =>
  tokenRequest(app, {
    grant_type: 'authorization_code',
    client_id: clientId,
    code,
    redirect_uri: REDIRECT,
    ...(verifier !== undefined && { code_verifier: verifier }),
    ...extra,
  });

const mcpStatus = async (token: string) => (await call(app, 'GET', '/tools', { token })).status;

async function grantCount(): Promise<number> {
  const login = await call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } });
  const grants = await call(app, 'GET', '/api/v1/oauth/grants', { token: login.body.access_token as string });
  return (grants.body.grants as unknown[]).length;
}

describe('PKCE', () => {
  it('a missing verifier: invalid_request, nothing issued', async () => {
    const { code } = await obtainCode();
    const answer = await redeem(code, undefined);
    expect(answer).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    expect(answer.body.access_token).toBeUndefined();
  });

  it('a wrong verifier: invalid_grant, nothing issued', async () => {
    const { code } = await obtainCode();
    const answer = await redeem(code, pkce().verifier);
    expect(answer).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(answer.body.access_token).toBeUndefined();
  });

  it('the plain method: refused at the authorization endpoint, back to the client with an error', async () => {
    const res = await fetch(authorizeUrl({ code_challenge: 'x'.repeat(43), code_challenge_method: 'plain' }), {
      redirect: 'manual',
    });
    expect(res.status).toBe(302);
    const back = new URL(res.headers.get('location')!);
    expect(back.origin + back.pathname).toBe(REDIRECT);
    expect(back.searchParams.get('error')).toBe('invalid_request');
    expect(back.searchParams.get('code')).toBeNull();
  });
});

describe('redirect URIs', () => {
  it('an unregistered redirect URI is never redirected to (no open redirect)', async () => {
    const res = await fetch(
      authorizeUrl({ code_challenge: pkce().challenge, redirect_uri: 'https://evil.example/cb' }),
      {
        redirect: 'manual',
      },
    );
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(await res.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('registration takes only https or loopback http redirect URIs', async () => {
    for (const uri of ['http://evil.example/cb', 'javascript:alert(1)', 'https://app.example/cb#frag']) {
      const answer = await register(app, { client_name: 'x', redirect_uris: [uri] });
      expect(answer.status, uri).toBe(400);
      expect(answer.body.error, uri).toBe('invalid_client_metadata');
    }
    const ok = await register(app, { client_name: 'x', redirect_uris: ['https://app.example/cb'] });
    expect(ok.status).toBe(201);
    // Public clients only: no secret, whatever was asked for.
    expect(ok.body).toMatchObject({ token_endpoint_auth_method: 'none' });
    expect(ok.body.client_secret).toBeUndefined();
  });

  it('registration checks the application type against the redirect URIs, and says which type it took', async () => {
    const cases: [Record<string, unknown>, number, string?][] = [
      // A web client redirects to a site over https; a native one to loopback or its own private-use scheme.
      [{ application_type: 'web', redirect_uris: ['https://app.example/cb'] }, 201, 'web'],
      [{ application_type: 'web', redirect_uris: [REDIRECT] }, 400],
      [{ application_type: 'web', redirect_uris: ['https://localhost/cb'] }, 400],
      [{ application_type: 'native', redirect_uris: [REDIRECT, 'com.example.ide:/oauth'] }, 201, 'native'],
      [{ application_type: 'native', redirect_uris: ['https://app.example/cb'] }, 400],
      [{ application_type: 'native', redirect_uris: ['myapp:/cb'] }, 400],
      [{ application_type: 'desktop', redirect_uris: [REDIRECT] }, 400],
      // A client that does not say (2025-era) gets the type its redirect URIs show; no private-use schemes.
      [{ redirect_uris: [REDIRECT] }, 201, 'native'],
      [{ redirect_uris: ['https://app.example/cb', REDIRECT] }, 201, 'web'],
      [{ redirect_uris: ['com.example.ide:/oauth'] }, 400],
    ];
    for (const [metadata, status, type] of cases) {
      const answer = await register(app, { client_name: 'typed', ...metadata });
      expect(answer.status, JSON.stringify(metadata)).toBe(status);
      if (type) expect(answer.body.application_type).toBe(type);
      else expect(answer.body.error).toBe('invalid_client_metadata');
    }
  });

  it('takes offline_access as a request for refresh tokens, kept out of the grant; no refresh grant, no refresh token', async () => {
    const metadata = await call(app, 'GET', '/.well-known/oauth-authorization-server');
    expect(metadata.body.scopes_supported).toEqual(['mcp:read', 'mcp:tools', 'offline_access']);
    const offline = await authorizeClient(app, 'alice', PASSWORD, REDIRECT, 'mcp:read offline_access', {
      scope: 'mcp:read offline_access',
    });
    expect(offline.tokens).toMatchObject({
      scope: 'mcp:read',
      refresh_token: expect.stringMatching(/^ort_/) as unknown,
    });
    const refreshed = await tokenRequest(app, {
      grant_type: 'refresh_token',
      client_id: offline.clientId,
      refresh_token: offline.tokens.refresh_token as string,
      scope: 'mcp:read offline_access',
    });
    expect(refreshed.body).toMatchObject({ scope: 'mcp:read' });

    // A client registered for the authorization code alone gets access tokens only.
    const once = await authorizeClient(app, 'alice', PASSWORD, REDIRECT, 'mcp:tools offline_access', {
      grant_types: ['authorization_code'],
    });
    expect(once.tokens.access_token).toEqual(expect.any(String));
    expect(once.tokens).not.toHaveProperty('refresh_token');
  });

  it('a code redeemed with another redirect URI: invalid_grant', async () => {
    const { code, verifier } = await obtainCode();
    const answer = await redeem(code, verifier, { redirect_uri: 'http://127.0.0.1:40111/other' });
    expect(answer).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  });
});

describe('codes', () => {
  it('a code used twice: invalid_grant, and the tokens of its first use are revoked', async () => {
    const { code, verifier } = await obtainCode();
    const first = await redeem(code, verifier);
    expect(first.status).toBe(200);
    const access = first.body.access_token as string;
    expect(await mcpStatus(access)).toBe(200);

    const second = await redeem(code, verifier);
    expect(second).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(second.body.access_token).toBeUndefined();
    expect(await mcpStatus(access)).toBe(401);
    const refreshed = await tokenRequest(app, {
      grant_type: 'refresh_token',
      client_id: clientId,
      refresh_token: first.body.refresh_token as string,
    });
    expect(refreshed).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(await grantCount()).toBe(0);
  });

  it('an expired code: invalid_grant', async () => {
    const { code, verifier } = await obtainCode();
    clock.advance(121_000);
    expect(await redeem(code, verifier)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  });

  it("another client's code: invalid_grant", async () => {
    const { code, verifier } = await obtainCode();
    const other = await register(app, { client_name: 'Thief', redirect_uris: [REDIRECT] });
    const answer = await tokenRequest(app, {
      grant_type: 'authorization_code',
      client_id: other.body.client_id as string,
      code,
      code_verifier: verifier,
    });
    expect(answer).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  });
});

describe('resources (RFC 8707)', () => {
  it('a token for another resource is not issued', async () => {
    const res = await fetch(authorizeUrl({ code_challenge: pkce().challenge, resource: 'https://other.example/mcp' }), {
      redirect: 'manual',
    });
    expect(res.status).toBe(302);
    expect(new URL(res.headers.get('location')!).searchParams.get('error')).toBe('invalid_target');

    const { code, verifier } = await obtainCode();
    const answer = await redeem(code, verifier, { resource: 'https://other.example/mcp' });
    expect(answer).toMatchObject({ status: 400, body: { error: 'invalid_target' } });
  });

  it("the service's own tokens are not MCP-bound tokens, and MCP-bound tokens open nothing else", async () => {
    const { code, verifier } = await obtainCode();
    const issued = await redeem(code, verifier);
    const access = issued.body.access_token as string;
    expect(await mcpStatus(access)).toBe(200);
    expect((await call(app, 'GET', '/api/v1/oauth/grants', { token: access })).status).toBe(401);
    expect((await call(app, 'GET', '/auth/me', { token: access })).status).toBe(401);
  });
});

describe('refresh tokens', () => {
  it('a refresh token replayed after rotation: invalid_grant, and the whole grant ends', async () => {
    const { code, verifier } = await obtainCode();
    const issued = await redeem(code, verifier);
    const refresh = (token: string) =>
      tokenRequest(app, { grant_type: 'refresh_token', client_id: clientId, refresh_token: token });
    const rotated = await refresh(issued.body.refresh_token as string);
    expect(rotated.status).toBe(200);
    expect(await mcpStatus(rotated.body.access_token as string)).toBe(200);

    const replay = await refresh(issued.body.refresh_token as string);
    expect(replay).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(replay.body.access_token).toBeUndefined();
    // The thief's and the owner's tokens alike: the family is gone.
    expect(await mcpStatus(rotated.body.access_token as string)).toBe(401);
    expect(await refresh(rotated.body.refresh_token as string)).toMatchObject({ body: { error: 'invalid_grant' } });
  });

  it('a refresh may narrow the scope, never widen it', async () => {
    const { verifier, challenge } = pkce();
    const page = await openAuthorization(authorizeUrl({ code_challenge: challenge, scope: 'mcp:read' }));
    const answer = await answerConsent(app, page, { decision: 'approve', username: 'alice', password: PASSWORD });
    const issued = await redeem(answer.location!.searchParams.get('code')!, verifier);
    expect(issued.body.scope).toBe('mcp:read');
    const widened = await tokenRequest(app, {
      grant_type: 'refresh_token',
      client_id: clientId,
      refresh_token: issued.body.refresh_token as string,
      scope: 'mcp:read mcp:tools',
    });
    expect(widened).toMatchObject({ status: 400, body: { error: 'invalid_scope' } });
  });
});

describe('the consent page', () => {
  it('a form posted without the browser cookie (cross-site request forgery): 403, no code', async () => {
    const page = await openAuthorization(authorizeUrl({ code_challenge: pkce().challenge }));
    // The attacker knows the request id and the form's secret (from their own page), but not the victim's cookie.
    const forged = await answerConsent(app, page, { decision: 'approve', username: 'alice', password: PASSWORD }, '');
    expect(forged.status).toBe(403);
    expect(forged.location).toBeUndefined();
    const wrongSecret = await answerConsent(
      app,
      { ...page, csrf: 'x'.repeat(43) },
      { decision: 'approve', username: 'alice', password: PASSWORD },
    );
    expect(wrongSecret.status).toBe(403);
    expect(await grantCount()).toBe(0);
    // The page's own browser can still answer.
    const real = await answerConsent(app, page, { decision: 'approve', username: 'alice', password: PASSWORD });
    expect(real.status).toBe(303);
    expect(real.location!.searchParams.get('code')).toMatch(/^oc_/);
  });

  it('a wrong password shows the page again; a denial goes back to the client with access_denied', async () => {
    const page = await openAuthorization(authorizeUrl({ code_challenge: pkce().challenge }));
    const wrong = await answerConsent(app, page, { decision: 'approve', username: 'alice', password: 'nope' });
    expect(wrong.status).toBe(401);
    expect(wrong.html).toContain('Invalid username or password');
    const denied = await answerConsent(app, page, { decision: 'deny' });
    expect(denied.status).toBe(303);
    expect(denied.location!.searchParams.get('error')).toBe('access_denied');
    expect(denied.location!.searchParams.get('state')).toBe('st-1');
    expect(denied.location!.searchParams.get('iss')).toBe(app.url('main'));
    // Answered once: the request is spent.
    expect((await answerConsent(app, page, { decision: 'approve' })).status).toBe(404);
  });

  it('is served with a strict policy: no script, not framable', async () => {
    const res = await fetch(authorizeUrl({ code_challenge: pkce().challenge }));
    const policy = res.headers.get('content-security-policy') ?? '';
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).not.toContain('script-src');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('set-cookie')).toMatch(/HttpOnly/i);
  });
});

describe('metadata', () => {
  it('publishes RFC 8414 metadata at both discovery paths, and the resource names this server', async () => {
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      const { status, body } = await call(app, 'GET', path);
      expect(status).toBe(200);
      expect(body).toMatchObject({
        issuer: app.url('main'),
        code_challenge_methods_supported: ['S256'],
        authorization_response_iss_parameter_supported: true,
      });
    }
    const resourceMetadata = await call(app, 'GET', '/.well-known/oauth-protected-resource/mcp');
    expect(resourceMetadata.body).toMatchObject({ resource, authorization_servers: [app.url('main')] });
  });

  it('behind a gateway at a path, also answers at the path-inserted well-known forms', async () => {
    const gateway = 'https://gateway.example/agent';
    const behind = closing(await startTestApp({ PUBLIC_URL: gateway }));
    for (const path of [
      '/.well-known/oauth-authorization-server/agent',
      '/.well-known/openid-configuration/agent',
      '/.well-known/oauth-authorization-server',
    ]) {
      const { status, body } = await call(behind, 'GET', path);
      expect(status, path).toBe(200);
      expect(body, path).toMatchObject({ issuer: gateway, token_endpoint: `${gateway}/oauth/token` });
    }
    const { status, body } = await call(behind, 'GET', '/.well-known/oauth-protected-resource/agent/mcp');
    expect(status).toBe(200);
    expect(body).toMatchObject({ resource: `${gateway}/mcp`, authorization_servers: [gateway] });
    // An issuer at the root has no path form beyond the root one.
    expect((await call(app, 'GET', '/.well-known/oauth-authorization-server/agent')).status).toBe(404);
  });
});
