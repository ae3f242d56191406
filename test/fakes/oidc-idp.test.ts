import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CookieJar, followRedirects, signInAtIdp, signOutAtIdp } from '../helpers/idp-browser.js';
import { type TestIdp, startTestIdp } from './oidc-idp.js';

// Nothing listens here: the relying party is openid-client itself, and the driver stops at the redirect to it.
const REDIRECT_URI = 'http://127.0.0.1:9/auth/sso/callback';
const POST_LOGOUT_REDIRECT_URI = 'http://127.0.0.1:9/signed-out';

/** An account with every claim the provider knows. */
const ADA = {
  email: 'ada@example.test',
  email_verified: true,
  name: 'Ada Lovelace',
  preferred_username: 'ada',
  groups: ['engineering', 'admins'],
  roles: ['owner'],
};

let idp: TestIdp;
let config: oidc.Configuration;

beforeAll(async () => {
  idp = await startTestIdp({
    redirectUris: [REDIRECT_URI],
    postLogoutRedirectUris: [POST_LOGOUT_REDIRECT_URI],
    accounts: { 'ada-1815': ADA, bob: { email: 'bob@example.test', name: 'Bob' } },
  });
  // The issuer is plain HTTP on loopback, which openid-client refuses unless told otherwise.
  config = await oidc.discovery(new URL(idp.issuer), idp.clientId, idp.clientSecret, undefined, {
    execute: [oidc.allowInsecureRequests],
  });
});

afterAll(() => idp?.close());

/** An authorization request as the service would make it: PKCE S256, state and nonce. */
async function authorizationRequest() {
  const pkceCodeVerifier = oidc.randomPKCECodeVerifier();
  const expectedState = oidc.randomState();
  const expectedNonce = oidc.randomNonce();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope: 'openid email profile',
    code_challenge: await oidc.calculatePKCECodeChallenge(pkceCodeVerifier),
    code_challenge_method: 'S256',
    state: expectedState,
    nonce: expectedNonce,
  });
  return { url, checks: { pkceCodeVerifier, expectedState, expectedNonce, idTokenExpected: true } };
}

describe('test identity provider driven by the fetch browser', () => {
  it('completes the code flow, puts the account claims in the ID token, and refuses a replayed code', async () => {
    const jar = new CookieJar();
    const { url, checks } = await authorizationRequest();

    const callback = await signInAtIdp(url.href, 'ada-1815', jar);
    expect(`${callback.origin}${callback.pathname}`).toBe(REDIRECT_URI);
    expect(callback.searchParams.get('state')).toBe(checks.expectedState);
    expect(callback.searchParams.get('code')).toBeTruthy();
    expect(callback.searchParams.get('iss')).toBe(idp.issuer);

    const tokens = await oidc.authorizationCodeGrant(config, callback, checks);
    expect(tokens.claims()).toMatchObject({
      iss: idp.issuer,
      aud: idp.clientId,
      sub: 'ada-1815',
      nonce: checks.expectedNonce,
      ...ADA,
    });
    const userinfo = await oidc.fetchUserInfo(config, tokens.access_token, 'ada-1815');
    expect(userinfo).toMatchObject({ email: 'ada@example.test', groups: ['engineering', 'admins'] });

    await expect(oidc.authorizationCodeGrant(config, callback, checks)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    // A reused code revokes what it was exchanged for (RFC 6749 §4.1.2).
    await expect(oidc.fetchUserInfo(config, tokens.access_token, 'ada-1815')).rejects.toThrow();
  });

  it('returns only the claims an account has, and turns away a login with no account', async () => {
    const bob = await authorizationRequest();
    const tokens = await oidc.authorizationCodeGrant(
      config,
      await signInAtIdp(bob.url.href, 'bob', new CookieJar()),
      bob.checks,
    );
    const claims = tokens.claims();
    expect(claims).toMatchObject({ sub: 'bob', email: 'bob@example.test', name: 'Bob' });
    expect(claims).not.toHaveProperty('groups');

    const stranger = await authorizationRequest();
    await expect(signInAtIdp(stranger.url.href, 'mallory', new CookieJar())).rejects.toThrow(
      'asked for a login again after "mallory": no such account',
    );
  });

  it('keeps the IdP session across sign-ins until RP-initiated logout ends it', async () => {
    const jar = new CookieJar();
    const first = await authorizationRequest();
    const tokens = await oidc.authorizationCodeGrant(
      config,
      await signInAtIdp(first.url.href, 'ada-1815', jar),
      first.checks,
    );

    // Signed in and consented already: the IdP sends the browser straight back, with no form on the way.
    const again = await authorizationRequest();
    const leavesIdp = (url: URL) => url.origin !== idp.issuer;
    const silent = await followRedirects(again.url, jar, leavesIdp);
    expect(silent.stopped).toBe(true);
    expect(silent.url.searchParams.get('code')).toBeTruthy();

    const endSession = oidc.buildEndSessionUrl(config, {
      id_token_hint: tokens.id_token!,
      post_logout_redirect_uri: POST_LOGOUT_REDIRECT_URI,
      state: 'logout-state',
    });
    const back = await signOutAtIdp(endSession.href, jar);
    expect(back.href).toBe(`${POST_LOGOUT_REDIRECT_URI}?state=logout-state`);

    // The IdP session is gone: the next authorization request stops at the login form.
    const afterLogout = await followRedirects((await authorizationRequest()).url, jar, leavesIdp);
    expect(afterLogout.stopped).toBe(false);
    expect(afterLogout.url.pathname).toMatch(/^\/interaction\//);
    expect(await afterLogout.response.text()).toContain('name="login"');
  });
});

describe('CookieJar', () => {
  const headers = (...cookies: string[]) => {
    const result = new Headers();
    for (const cookie of cookies) result.append('set-cookie', cookie);
    return result;
  };

  it('keeps cookies per host:port, matches Path by prefix, and drops expired ones', () => {
    const jar = new CookieJar();
    jar.store(
      'http://127.0.0.1:1000/auth/start',
      headers(
        'a=1; path=/',
        'b=2; path=/interaction/x; httponly',
        'c=3',
        'old=4; Expires=Thu, 01 Jan 1970 00:00:00 GMT',
      ),
    );
    expect(jar.header('http://127.0.0.1:1000/interaction/x')).toBe('b=2; a=1');
    expect(jar.header('http://127.0.0.1:1000/auth/next')).toBe('c=3; a=1');
    expect(jar.header('http://127.0.0.1:2000/')).toBeUndefined();

    jar.store('http://127.0.0.1:1000/', headers('a=; Max-Age=0; path=/', 'b=5; path=/interaction/x; Max-Age=60'));
    expect(jar.header('http://127.0.0.1:1000/interaction/x')).toBe('b=5');
    expect(jar.get('http://127.0.0.1:1000/interaction/x', 'b')).toBe('5');
  });
});
