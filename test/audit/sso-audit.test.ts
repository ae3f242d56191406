import { expect, it } from 'vitest';
import { closeAfterEach } from '../helpers/app.js';
import { call } from '../helpers/auth.js';
import { browse, signInAtIdp } from '../helpers/idp-browser.js';
import { startWithIdp } from '../helpers/sso.js';

// A real OpenID Connect provider (oidc-provider) on loopback, as in test/auth/sso.test.ts.

const closing = closeAfterEach();

it('records single sign-on logins and logouts, and erases an SSO user with their linked account', async () => {
  const { app, idp, base, jar } = await startWithIdp(closing, {
    carol: { email: 'carol@corp.example', preferred_username: 'carol-sso' },
  });
  const signIn = async () => {
    const start = await browse(jar, `${base}/auth/sso/login`);
    await browse(jar, await signInAtIdp(start.headers.get('location')!, 'carol', jar));
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
  expect((await browse(jar, `${base}/auth/sso/logout`)).status).toBe(302);
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
