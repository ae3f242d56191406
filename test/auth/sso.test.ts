import { describe, expect, it } from 'vitest';
import { groupsFromClaims, rolesFromClaims, safeReturnPath } from '../../src/modules/auth/sso.js';
import { closeAfterEach } from '../helpers/app.js';
import { call } from '../helpers/auth.js';
import { CookieJar, browse, followRedirects, signInAtIdp, signOutAtIdp } from '../helpers/idp-browser.js';
import { type SsoSetUp, startWithIdp } from '../helpers/sso.js';

/**
 * Single sign-on end to end: a real OpenID Connect provider (oidc-provider) on loopback stands in for the
 * external identity provider, and the browser's side of every redirect is played with a cookie jar.
 */

const closing = closeAfterEach();

const ACCOUNTS = {
  alice: {
    email: 'alice@corp.example',
    email_verified: true,
    name: 'Alice Liddell',
    preferred_username: 'alice',
    groups: ['/engineering/backend', 'staff'],
    roles: ['admin'],
  },
  bob: { email: 'bob@corp.example', name: 'Bob', preferred_username: 'bob' },
};

const setUp = (mode: 'token' | 'session' = 'session') => startWithIdp(closing, ACCOUNTS, { AUTH_MODE: mode });

/** The whole browser round trip: our login → the provider's login and consent → our callback. */
async function signIn(env: SsoSetUp, login: string, returnTo?: string) {
  const start = await browse(
    env.jar,
    `${env.base}/auth/sso/login${returnTo ? `?redirect_uri=${encodeURIComponent(returnTo)}` : ''}`,
  );
  expect(start.status).toBe(302);
  const callback = await signInAtIdp(start.headers.get('location')!, login, env.jar);
  expect(callback.origin).toBe(env.base);
  expect(callback.pathname).toBe('/auth/sso/callback');
  return { callback, response: await browse(env.jar, callback) };
}

describe('SSO against a real OpenID Connect provider', () => {
  it('sends the browser to the provider with PKCE S256, state and nonce', async () => {
    const env = await setUp();
    const res = await browse(env.jar, `${env.base}/auth/sso/login`);
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get('location')!);
    expect(`${location.origin}`).toBe(env.idp.issuer);
    expect(Object.fromEntries(location.searchParams)).toMatchObject({
      client_id: env.idp.clientId,
      response_type: 'code',
      redirect_uri: `${env.base}/auth/sso/callback`,
      scope: 'openid email profile',
      code_challenge_method: 'S256',
      code_challenge: expect.stringMatching(/^[\w-]{43}$/) as unknown,
      state: expect.any(String) as unknown,
      nonce: expect.any(String) as unknown,
    });
    expect(res.headers.get('set-cookie')).toMatch(
      /^sso_state=[^;]+; Max-Age=600; Path=\/auth\/sso; Expires=.*; HttpOnly; SameSite=Lax$/,
    );
  });

  it('provisions the user on first login, maps roles and groups, starts a session and returns to the given path', async () => {
    const env = await setUp();
    const { response } = await signIn(env, 'alice', '/playground');
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/playground');
    const cookie = env.jar.header(`${env.base}/auth/me`)!;
    expect(cookie).toMatch(/session_id=/);
    const me = await call(env.app, 'GET', '/auth/me', { cookie });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({
      username: 'alice',
      email: 'alice@corp.example',
      email_verified: true,
      name: 'Alice Liddell',
      roles: ['user', 'admin'],
      groups: ['/engineering/backend', '/staff'],
    });

    // A second login links to the same local user instead of creating another.
    const again = await signIn({ ...env, jar: new CookieJar() }, 'alice');
    expect(again.response.status).toBe(200);
    expect(((await again.response.json()) as { user: { id: string } }).user.id).toBe(me.body.id);
    expect(await env.app.services.users.count()).toBe(2); // alice and the bootstrap administrator
  });

  it('answers with a token pair in token mode when no return path was given', async () => {
    const env = await setUp('token');
    const { response } = await signIn(env, 'bob');
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      access_token: string;
      token_type: string;
      user: { username: string; roles: string[] };
    };
    expect(body).toMatchObject({ token_type: 'Bearer', user: { username: 'bob', roles: ['user'] } });
    expect((await call(env.app, 'GET', '/auth/me', { token: body.access_token })).body.username).toBe('bob');
  });

  it('refuses a replayed callback and a callback from another browser', async () => {
    const env = await setUp();
    const { callback, response } = await signIn(env, 'alice');
    expect(response.status).toBe(200);
    const replay = await browse(env.jar, callback);
    expect(replay.status).toBe(401);

    // A second browser started its own login; it cannot be handed the first browser's callback.
    const start = await browse(env.jar, `${env.base}/auth/sso/login`);
    const fresh = await signInAtIdp(start.headers.get('location')!, 'alice', env.jar);
    const elsewhere = await fetch(fresh, { redirect: 'manual' });
    expect(elsewhere.status).toBe(401);
    expect(await elsewhere.json()).toMatchObject({
      error: 'authentication_failed',
      code: 'AUTH_ACCESS_DENIED',
      message: 'This login was not started in this browser',
    });
  });

  it('reports a refusal at the provider as authentication_failed', async () => {
    const env = await setUp();
    const start = await browse(env.jar, `${env.base}/auth/sso/login`);
    const state = new URL(start.headers.get('location')!).searchParams.get('state')!;
    const res = await browse(
      env.jar,
      `${env.base}/auth/sso/callback?error=access_denied&error_description=User+cancelled&state=${state}`,
    );
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({
      error: 'authentication_failed',
      message: 'The identity provider refused the login: User cancelled',
    });
  });

  it('refuses to return anywhere but a path on this service', async () => {
    const env = await setUp();
    for (const target of ['https://evil.example.com/', '//evil.example.com', '/\\evil.example.com']) {
      const res = await browse(env.jar, `${env.base}/auth/sso/login?redirect_uri=${encodeURIComponent(target)}`);
      expect(res.status).toBe(400);
    }
  });

  it('logs out here and at the provider', async () => {
    const env = await setUp();
    await signIn(env, 'alice');
    const cookie = env.jar.header(`${env.base}/auth/me`)!;
    const out = await browse(env.jar, `${env.base}/auth/sso/logout`);
    expect(out.status).toBe(302);
    const endSession = new URL(out.headers.get('location')!);
    expect(endSession.origin).toBe(env.idp.issuer);
    expect(endSession.searchParams.get('id_token_hint')).toMatch(/^ey/);
    expect((await call(env.app, 'GET', '/auth/me', { cookie })).status).toBe(401);
    const landed = await signOutAtIdp(endSession.toString(), env.jar);
    expect(landed.toString()).toBe(`${env.base}/`);
    // The provider's session is gone too: the next login asks for credentials again.
    const start = await browse(env.jar, `${env.base}/auth/sso/login`);
    const page = await followRedirects(start.headers.get('location')!, env.jar, (url) => url.origin !== env.idp.issuer);
    expect(page.stopped).toBe(false);
    expect(await page.response.text()).toMatch(/<form[^>]*>[\s\S]*name="login"/);
  });
});

describe('claim mapping', () => {
  it('reads roles from roles, Keycloak realm roles and client roles', () => {
    expect(
      rolesFromClaims(
        {
          roles: ['Editor'],
          realm_access: { roles: ['admin', 'offline_access'] },
          resource_access: { agent: { roles: ['auditor'] }, other: { roles: ['x'] } },
        },
        'agent',
      ),
    ).toEqual(['user', 'editor', 'admin', 'offline_access', 'auditor']);
    expect(rolesFromClaims({ roles: 'admin', realm_access: null }, 'agent')).toEqual(['user']);
  });

  it('turns group claims into path-like names and drops invalid ones', () => {
    expect(groupsFromClaims({ groups: ['/a/b', 'staff', '', 42, '/../x'] })).toEqual(['/a/b', '/staff']);
  });

  it('accepts only paths on this service as return targets', () => {
    expect(safeReturnPath('/x?y=1')).toBe('/x?y=1');
    expect(safeReturnPath(undefined)).toBeUndefined();
    expect(() => safeReturnPath('http://x')).toThrow();
    expect(() => safeReturnPath('/a\r\nSet-Cookie: x')).toThrow();
  });
});
