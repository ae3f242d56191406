import { afterEach, expect, it } from 'vitest';
import { startTestApp } from '../helpers/app.js';
import { call } from '../helpers/auth.js';
import { unusedPort } from '../helpers/http.js';
import { CookieJar, signInAtIdp } from '../helpers/idp-browser.js';
import { startTestIdp } from '../fakes/oidc-idp.js';

// A real OpenID Connect provider (oidc-provider) on loopback, as in test/auth/sso.test.ts.

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

it('records single sign-on logins and logouts, and erases an SSO user with their linked account', async () => {
  const port = await unusedPort();
  const base = `http://127.0.0.1:${port}`;
  const idp = await startTestIdp({
    redirectUris: [`${base}/auth/sso/callback`],
    accounts: { carol: { email: 'carol@corp.example', preferred_username: 'carol-sso' } },
    postLogoutRedirectUris: [`${base}/`],
  });
  cleanups.push(idp.close);
  const app = await startTestApp({
    PORT: String(port),
    AUTH_MODE: 'session',
    AUTH_PROVIDER: 'oidc',
    OIDC_ISSUER_URL: idp.issuer,
    OIDC_CLIENT_ID: idp.clientId,
    OIDC_CLIENT_SECRET: idp.clientSecret,
    OIDC_REDIRECT_URI: `${base}/auth/sso/callback`,
    ADMIN_PASSWORD: 'bootstrap-secret-1',
  });
  cleanups.push(() => app.close());

  const jar = new CookieJar();
  const browse = async (url: string | URL) => {
    const cookie = jar.header(url);
    const res = await fetch(url, { redirect: 'manual', headers: cookie ? { Cookie: cookie } : {} });
    jar.store(url, res.headers);
    return res;
  };
  const signIn = async () => {
    const start = await browse(`${base}/auth/sso/login`);
    await browse(await signInAtIdp(start.headers.get('location')!, 'carol', jar));
    return jar.header(`${base}/`)!;
  };

  await signIn();
  const carol = (await app.services.users.getByUsername('carol-sso'))!;
  expect(await app.services.audit.eventsOf(carol.id)).toMatchObject([
    {
      event_type: 'sso.login',
      actor_id: carol.id,
      ip_address: '127.0.0.1',
      details: { issuer: idp.issuer, session_id: expect.any(String) as unknown },
    },
  ]);
  expect((await browse(`${base}/auth/sso/logout`)).status).toBe(302);
  expect((await app.services.audit.eventsOf(carol.id)).map((e) => [e.event_type, e.details.method])).toEqual([
    ['sso.login', undefined],
    ['logout', 'sso'],
  ]);

  const cookie = await signIn();
  expect(await app.services.users.findByIdentity(idp.issuer, 'carol')).toMatchObject({ id: carol.id });
  const erased = await call(app, 'DELETE', '/api/v1/users/me?confirm=true', { cookie });
  expect(erased.status).toBe(200);
  expect(await app.services.users.findByIdentity(idp.issuer, 'carol')).toBeUndefined();
  expect(await app.services.audit.eventsOf(carol.id)).toEqual([]);
});
