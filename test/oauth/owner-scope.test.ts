import { describe, expect, it } from 'vitest';
import { closeAfterEach, startTestApp } from '../helpers/app.js';
import { ADMIN_PASSWORD, PASSWORD, accessToken, call, createUser } from '../helpers/auth.js';
import { unusedPort } from '../helpers/http.js';
import { authorizeClient, tokenRequest } from '../helpers/oauth.js';

const closing = closeAfterEach();

describe("an OAuth grant is only its user's and its client's to end", () => {
  it("another user's revocation and another client's refresh or revocation are refused and end nothing", async () => {
    // The issuer and resource URLs name the real port, as they would behind a fixed public URL.
    const app = closing(await startTestApp({ PORT: String(await unusedPort()), ADMIN_PASSWORD }));
    await createUser(app, 'alice');
    await createUser(app, 'bob');
    const alice = await authorizeClient(app, 'alice', PASSWORD);
    const bob = await authorizeClient(app, 'bob', PASSWORD, 'http://127.0.0.1:40114/callback');
    const aliceToken = await accessToken(app, 'alice');
    const bobToken = await accessToken(app, 'bob');
    const grants = async () => (await call(app, 'GET', '/api/v1/oauth/grants', { token: aliceToken })).body.grants;
    const before = await grants();
    const [grant] = before as { grant_id: string }[];
    expect(grant).toBeDefined();

    const refused = await call(app, 'DELETE', `/api/v1/oauth/grants/${grant!.grant_id}`, { token: bobToken });
    expect(refused).toMatchObject({ status: 404, body: { error: 'not_found', code: 'OAUTH_GRANT_NOT_FOUND' } });

    // Bob's client presents alice's refresh token: refused at the token endpoint, ignored at revocation.
    const stolen = await tokenRequest(app, {
      grant_type: 'refresh_token',
      refresh_token: alice.tokens.refresh_token as string,
      client_id: bob.clientId,
    });
    expect(stolen).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    for (const token of [alice.tokens.refresh_token, alice.tokens.access_token] as string[]) {
      const revoked = await tokenRequest(app, { token, client_id: bob.clientId }, '/oauth/revoke');
      expect(revoked.status).toBe(200);
    }

    // Alice's grant, her client's access token and her refresh token are as they were.
    expect(await grants()).toEqual(before);
    expect((await call(app, 'GET', '/tools', { token: alice.tokens.access_token as string })).status).toBe(200);
    const refreshed = await tokenRequest(app, {
      grant_type: 'refresh_token',
      refresh_token: alice.tokens.refresh_token as string,
      client_id: alice.clientId,
    });
    expect(refreshed.status).toBe(200);
  });
});
