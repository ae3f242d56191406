import type { App } from '../../src/app.js';
import { type TestIdp, type TestIdpAccount, startTestIdp } from '../fakes/oidc-idp.js';
import { type Closable, startTestApp } from './app.js';
import { ADMIN_PASSWORD } from './auth.js';
import { unusedPort } from './http.js';
import { CookieJar } from './idp-browser.js';

export interface SsoSetUp {
  app: App;
  idp: TestIdp;
  /** The app's main URL, which the provider redirects back to. */
  base: string;
  /** The browser's cookies, for every party. */
  jar: CookieJar;
}

/**
 * The app signing users in at a real OpenID Connect provider (oidc-provider) on loopback with these accounts, in
 * session mode unless `env` says otherwise. The provider is started first, on the app's future callback URL; `track`
 * receives each of the two for closing (closeAfterEach's function closes the app first).
 */
export async function startWithIdp(
  track: <T extends Closable>(resource: T) => T,
  accounts: Record<string, TestIdpAccount>,
  env: Record<string, string> = {},
): Promise<SsoSetUp> {
  const port = await unusedPort();
  const base = `http://127.0.0.1:${port}`;
  const idp = track(
    await startTestIdp({
      redirectUris: [`${base}/auth/sso/callback`],
      accounts,
      postLogoutRedirectUris: [`${base}/`],
    }),
  );
  const app = track(
    await startTestApp({ PORT: String(port), AUTH_MODE: 'session', ...oidcSettings(idp, base), ...env }),
  );
  return { app, idp, base, jar: new CookieJar() };
}

/** The settings that sign users in at `idp`, for a service whose main URL is `base`. */
export function oidcSettings(idp: TestIdp, base: string): Record<string, string> {
  return {
    AUTH_PROVIDER: 'oidc',
    OIDC_ISSUER_URL: idp.issuer,
    OIDC_CLIENT_ID: idp.clientId,
    OIDC_CLIENT_SECRET: idp.clientSecret,
    OIDC_REDIRECT_URI: `${base}/auth/sso/callback`,
    ADMIN_PASSWORD,
  };
}
