import { describe, expect, it } from 'vitest';
import { closeAfterEach } from '../helpers/app.js';
import { pkce, register, tokenRequest } from '../helpers/oauth.js';
import { browse, signInAtIdp } from '../helpers/idp-browser.js';
import { startWithIdp } from '../helpers/sso.js';

/**
 * With an identity provider (AUTH_PROVIDER=oidc), the MCP client's sign-in page hands off to single sign-on at a
 * real OpenID Connect provider (oidc-provider) and comes back to the consent page, signed in.
 */
const closing = closeAfterEach();
const REDIRECT = 'http://127.0.0.1:40112/callback';

describe.each(['session', 'token'])('MCP client sign-in through single sign-on (%s mode)', (mode) => {
  it('hands off to the identity provider and back to consent', async () => {
    const { app, jar, base } = await startWithIdp(
      closing,
      { alice: { email: 'alice@example.test' } },
      {
        AUTH_MODE: mode,
      },
    );
    const registered = await register(app, { client_name: 'SSO IDE', redirect_uris: [REDIRECT] });
    const { verifier, challenge } = pkce();
    const authorize = new URL(`${base}/oauth/authorize`);
    for (const [key, value] of Object.entries({
      response_type: 'code',
      client_id: registered.body.client_id as string,
      redirect_uri: REDIRECT,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'sso-state',
    }))
      authorize.searchParams.set(key, value);

    const first = await browse(jar, authorize);
    const page = await first.text();
    const sso = /<a class="sso" href="([^"]+)"/.exec(page)?.[1]?.replaceAll('&amp;', '&');
    expect(sso).toMatch(/^\/auth\/sso\/login\?redirect_uri=/);

    const start = await browse(jar, new URL(sso!, base));
    expect(start.status).toBe(302);
    const callback = await signInAtIdp(start.headers.get('location')!, 'alice', jar);
    const landed = await browse(jar, callback);
    expect(landed.status).toBe(302);
    const back = new URL(landed.headers.get('location')!, base);
    expect(back.pathname).toBe('/oauth/consent');

    const consent = await browse(jar, back);
    const html = await consent.text();
    expect(consent.status).toBe(200);
    expect(html).toContain('Signed in as <strong>alice');
    const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)![1]!;

    const answer = await fetch(`${base}/oauth/consent`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'Content-Type': 'application/x-www-form-urlencoded',
        Cookie: jar.header(`${base}/oauth/consent`)!,
        Origin: base,
      },
      body: new URLSearchParams({ request: field('request'), csrf: field('csrf'), decision: 'approve' }),
    });
    expect(answer.status).toBe(303);
    const code = new URL(answer.headers.get('location')!).searchParams.get('code')!;
    const tokens = await tokenRequest(app, {
      grant_type: 'authorization_code',
      client_id: registered.body.client_id as string,
      code,
      code_verifier: verifier,
      redirect_uri: REDIRECT,
    });
    expect(tokens.status).toBe(200);
    const tools = await fetch(`${base}/tools`, {
      headers: { Authorization: `Bearer ${tokens.body.access_token as string}` },
    });
    expect(tools.status).toBe(200);
  });
});
