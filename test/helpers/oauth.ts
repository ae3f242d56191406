import { createHash, randomBytes } from 'node:crypto';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { App } from '../../src/app.js';

/** What an MCP client run by a user keeps: its registration, its tokens, and the URL it would open a browser at. */
export class MemoryOAuthClient implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | undefined;

  constructor(
    readonly redirectUrl = 'http://127.0.0.1:33418/callback',
    readonly scope?: string,
  ) {}

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Test IDE',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      ...(this.scope && { scope: this.scope }),
    };
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/** The page the browser got, the consent cookie it was given, and the form's hidden fields. */
export interface ConsentPage {
  status: number;
  html: string;
  cookie: string;
  request: string;
  csrf: string;
}

/** Opens the authorization URL as a browser would (no redirects followed). */
export async function openAuthorization(url: URL | string, cookie?: string): Promise<ConsentPage> {
  const res = await fetch(url, { redirect: 'manual', headers: cookie ? { Cookie: cookie } : {} });
  const html = await res.text();
  const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? '';
  return {
    status: res.status,
    html,
    cookie: (res.headers.get('set-cookie') ?? '').split(';')[0]!,
    request: field('request'),
    csrf: field('csrf'),
  };
}

/** Posts the consent form; answers the status and where the browser is sent. */
export function answerConsent(
  app: App,
  page: ConsentPage,
  form: Record<string, string>,
  cookie = page.cookie,
): Promise<{ status: number; location: URL | undefined; html: string }> {
  return answerConsentAt(app.url('main'), page, form, cookie);
}

/** `answerConsent` for a service reached by its URL (one running in another process). */
export async function answerConsentAt(
  base: string,
  page: ConsentPage,
  form: Record<string, string>,
  cookie = page.cookie,
): Promise<{ status: number; location: URL | undefined; html: string }> {
  const res = await fetch(`${base}/oauth/consent`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...(cookie && { Cookie: cookie }) },
    body: new URLSearchParams({ request: page.request, csrf: page.csrf, ...form }),
  });
  const location = res.headers.get('location');
  return { status: res.status, location: location ? new URL(location) : undefined, html: await res.text() };
}

/** A PKCE verifier and its S256 challenge. */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** Registers a public client (RFC 7591) and answers the response. */
export async function register(app: App, metadata: Record<string, unknown>) {
  const res = await fetch(`${app.url('main')}/oauth/register`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(metadata),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** A POST to the token or revocation endpoint, form-encoded as OAuth clients send it. */
export async function tokenRequest(app: App, form: Record<string, string>, path = '/oauth/token') {
  const res = await fetch(`${app.url('main')}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
}

/**
 * An MCP client authorised by `username` over HTTP, start to finish: registration, the consent page, the code's
 * redemption. Answers the client id and the token response.
 */
export async function authorizeClient(
  app: App,
  username: string,
  password: string,
  redirectUri = 'http://127.0.0.1:40113/callback',
  scope?: string,
  registration: Record<string, unknown> = {},
): Promise<{ clientId: string; tokens: Record<string, unknown> }> {
  const registered = await register(app, {
    client_name: 'Footprint IDE',
    redirect_uris: [redirectUri],
    ...registration,
  });
  const clientId = registered.body.client_id as string;
  const { verifier, challenge } = pkce();
  const authorize = new URL(`${app.url('main')}/oauth/authorize`);
  for (const [key, value] of Object.entries({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...(scope && { scope }),
  }))
    authorize.searchParams.set(key, value);
  const page = await openAuthorization(authorize);
  const answer = await answerConsent(app, page, { decision: 'approve', username, password });
  const code = answer.location?.searchParams.get('code');
  if (!code) throw new Error(`consent did not redirect with a code: ${answer.status} ${answer.html.slice(0, 200)}`);
  const tokens = await tokenRequest(app, {
    grant_type: 'authorization_code',
    client_id: clientId,
    code,
    code_verifier: verifier,
    redirect_uri: redirectUri,
  });
  if (tokens.status !== 200) throw new Error(`code redemption failed: ${JSON.stringify(tokens.body)}`);
  return { clientId, tokens: tokens.body };
}
