/**
 * Plays the browser in an OpenID Connect redirect round trip with plain `fetch`: cookies are kept per origin,
 * redirects are followed by hand (so a test sees exactly where each one goes), and the identity provider's HTML forms
 * (oidc-provider's devInteractions login and consent, its logout confirmation) are submitted as a user would.
 */

interface StoredCookie {
  name: string;
  value: string;
  path: string;
  /** Epoch milliseconds; undefined for a session cookie. */
  expires: number | undefined;
}

/**
 * A deliberately small cookie jar: cookies are host-only per `host:port` (Domain and Secure are ignored, as every
 * party in these tests is plain HTTP on loopback), Path is a prefix match, and expired or `Max-Age=0` cookies are
 * dropped, which is how servers delete them.
 */
export class CookieJar {
  readonly #byHost = new Map<string, Map<string, StoredCookie>>();

  /** Records the `Set-Cookie` headers of a response to a request for `url`. */
  store(url: string | URL, headers: Headers): void {
    const target = new URL(url);
    let cookies = this.#byHost.get(target.host);
    if (!cookies) this.#byHost.set(target.host, (cookies = new Map<string, StoredCookie>()));
    for (const line of headers.getSetCookie()) {
      const cookie = parseSetCookie(line, target);
      if (!cookie) continue;
      const key = `${cookie.name};${cookie.path}`;
      if (cookie.expires !== undefined && cookie.expires <= Date.now()) cookies.delete(key);
      else cookies.set(key, cookie);
    }
  }

  /** The `Cookie` request header for `url`, or undefined when no cookie applies. */
  header(url: string | URL): string | undefined {
    const applicable = this.#matching(new URL(url));
    return applicable.length ? applicable.map(({ name, value }) => `${name}=${value}`).join('; ') : undefined;
  }

  /** The value of the cookie `name` that would be sent to `url`. */
  get(url: string | URL, name: string): string | undefined {
    return this.#matching(new URL(url)).find((cookie) => cookie.name === name)?.value;
  }

  #matching(url: URL): StoredCookie[] {
    const now = Date.now();
    return [...(this.#byHost.get(url.host)?.values() ?? [])]
      .filter(
        (cookie) => url.pathname.startsWith(cookie.path) && (cookie.expires === undefined || cookie.expires > now),
      )
      .sort((a, b) => b.path.length - a.path.length); // RFC 6265: more specific paths first
  }
}

function parseSetCookie(line: string, url: URL): StoredCookie | undefined {
  const [pair = '', ...attributes] = line.split(';');
  const eq = pair.indexOf('=');
  const name = pair.slice(0, eq).trim();
  if (eq < 1 || !name) return undefined;
  // RFC 6265 default-path: the request path up to, not including, its last slash.
  let path = url.pathname.slice(0, url.pathname.lastIndexOf('/')) || '/';
  let expires: number | undefined;
  let maxAge: number | undefined;
  for (const attribute of attributes) {
    const [rawKey = '', ...rest] = attribute.split('=');
    const key = rawKey.trim().toLowerCase();
    const value = rest.join('=').trim();
    if (key === 'path' && value.startsWith('/')) path = value;
    else if (key === 'max-age' && /^-?\d+$/.test(value)) maxAge = Number(value);
    else if (key === 'expires' && !Number.isNaN(Date.parse(value))) expires = Date.parse(value);
  }
  // Max-Age wins over Expires (RFC 6265 §5.3).
  if (maxAge !== undefined) expires = maxAge <= 0 ? 0 : Date.now() + maxAge * 1000;
  return { name, value: pair.slice(eq + 1).trim(), path, expires };
}

/** A GET with the browser's cookies, storing what the response sets; redirects are not followed. */
export async function browse(jar: CookieJar, url: string | URL): Promise<Response> {
  const cookie = jar.header(url);
  const res = await fetch(url, { redirect: 'manual', headers: cookie ? { Cookie: cookie } : {} });
  jar.store(url, res.headers);
  return res;
}

export interface FollowOptions {
  method?: 'GET' | 'POST';
  /** A form body; fetch sends it as application/x-www-form-urlencoded. */
  body?: URLSearchParams;
}

export interface FollowResult {
  /** Where the walk stopped: the redirect target `stopWhen` accepted (not requested), else the final page's URL. */
  url: URL;
  /** The redirect that pointed at `url` when `stopped` (its body discarded), else the final, non-redirect response. */
  response: Response;
  /** True when a redirect target satisfied `stopWhen`. */
  stopped: boolean;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 20;
/** Login, consent, and a spare: any flow longer than this is going round in circles. */
const MAX_FORMS = 4;

/**
 * Requests `start` (with `options` for that first request only) and follows redirects until one points somewhere
 * `stopWhen` accepts, or a response is not a redirect. Cookies go out from and come back into `jar`, per origin.
 */
export async function followRedirects(
  start: string | URL,
  jar: CookieJar,
  stopWhen: (url: URL) => boolean,
  options: FollowOptions = {},
): Promise<FollowResult> {
  let url = new URL(start);
  let method = options.method ?? 'GET';
  let body = options.body;
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    const cookie = jar.header(url);
    const response = await fetch(url, {
      method,
      body,
      redirect: 'manual',
      headers: cookie === undefined ? {} : { cookie },
    });
    jar.store(url, response.headers);
    const location = response.headers.get('location');
    if (!REDIRECT_STATUSES.has(response.status) || location === null) return { url, response, stopped: false };
    // A redirect's body is never shown; discarding it frees the connection.
    await response.body?.cancel();
    const next = new URL(location, url);
    if (stopWhen(next)) return { url: next, response, stopped: true };
    // As browsers do: 303, and 301/302 after a POST, continue as a GET; 307/308 repeat the request.
    if (response.status === 303 || (method === 'POST' && response.status <= 302)) {
      method = 'GET';
      body = undefined;
    }
    url = next;
  }
  throw new Error(`More than ${MAX_REDIRECTS} redirects starting at ${new URL(start).href}`);
}

/**
 * Signs `login` in at the identity provider the authorization URL points at, and returns the URL of the first
 * redirect that leaves the provider: the relying party's callback with `code` and `state` (or with `error`, which is
 * the relying party's to handle, so it is returned too). The steps are oidc-provider's devInteractions:
 * the login form (`prompt=login`, `login`, `password`; any password is accepted) and the consent form
 * (`prompt=consent`), both POSTed back to /interaction/:uid, each answered with a redirect to /auth/:uid (resume).
 */
export async function signInAtIdp(authorizationUrl: string, login: string, jar: CookieJar): Promise<URL> {
  const idp = new URL(authorizationUrl).origin;
  const leavesIdp = (url: URL): boolean => url.origin !== idp;
  let step = await followRedirects(authorizationUrl, jar, leavesIdp);
  let submittedLogin = false;
  for (let form = 0; form <= MAX_FORMS; form++) {
    if (step.stopped) return step.url;
    const html = await step.response.text();
    const interaction = parseForms(html, step.url).find((candidate) => candidate.fields.has('prompt'));
    const prompt = interaction?.fields.get('prompt');
    if (!interaction || (prompt !== 'login' && prompt !== 'consent')) {
      throw new Error(`Sign-in ${stuckAt(idp, step, html)}`);
    }
    if (prompt === 'login') {
      // devInteractions take any login; only findAccount knows the real ones, and sends unknown ones back here.
      if (submittedLogin)
        throw new Error(`Sign-in at ${idp} asked for a login again after "${login}": no such account`);
      interaction.fields.set('login', login);
      interaction.fields.set('password', 'test-password');
      submittedLogin = true;
    }
    step = await followRedirects(interaction.action, jar, leavesIdp, { method: 'POST', body: interaction.fields });
  }
  throw new Error(`Sign-in at ${idp} went through more than ${MAX_FORMS} forms without returning to the client`);
}

/**
 * Completes RP-initiated logout at the identity provider: requests the end_session URL, answers oidc-provider's
 * confirmation form (hidden `xsrf`, plus `logout=yes` from its "Yes, sign me out" button, which sits outside the
 * form) with a POST to /session/end/confirm, and returns the post-logout redirect URL (with `state`), or the
 * provider's own /session/end/success page when no post_logout_redirect_uri was given.
 */
export async function signOutAtIdp(endSessionUrl: string, jar: CookieJar): Promise<URL> {
  const idp = new URL(endSessionUrl).origin;
  const leavesIdp = (url: URL): boolean => url.origin !== idp;
  let step = await followRedirects(endSessionUrl, jar, leavesIdp);
  for (let form = 0; form <= MAX_FORMS; form++) {
    if (step.stopped) return step.url;
    if (step.response.ok && step.url.pathname.endsWith('/session/end/success')) {
      await step.response.body?.cancel();
      return step.url;
    }
    const html = await step.response.text();
    // Without an IdP session the provider skips the question and auto-posts the same fields; both carry `xsrf`.
    const confirm = parseForms(html, step.url).find((candidate) => candidate.fields.has('xsrf'));
    if (!confirm) throw new Error(`Sign-out ${stuckAt(idp, step, html)}`);
    confirm.fields.set('logout', 'yes');
    step = await followRedirects(confirm.action, jar, leavesIdp, { method: 'POST', body: confirm.fields });
  }
  throw new Error(`Sign-out at ${idp} went through more than ${MAX_FORMS} forms without finishing`);
}

interface HtmlForm {
  action: URL;
  fields: URLSearchParams;
}

/** The forms on a page with their `<input>` fields: enough for oidc-provider's plain, server-rendered HTML. */
function parseForms(html: string, pageUrl: URL): HtmlForm[] {
  return [...html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)].map(([, formAttributes = '', inner = '']) => {
    const fields = new URLSearchParams();
    for (const [, inputAttributes = ''] of inner.matchAll(/<input\b([^>]*)>/gi)) {
      const input = parseAttributes(inputAttributes);
      if (input.name !== undefined) fields.append(input.name, input.value ?? '');
    }
    return { action: new URL(parseAttributes(formAttributes).action ?? pageUrl.href, pageUrl), fields };
  });
}

function parseAttributes(source: string): Record<string, string> {
  const attributes: Record<string, string> = {};
  for (const [, name = '', quoted, singleQuoted, bare] of source.matchAll(
    /([^\s=/>]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?/g,
  )) {
    attributes[name.toLowerCase()] = decodeEntities(quoted ?? singleQuoted ?? bare ?? '');
  }
  return attributes;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", '#x27': "'" };

function decodeEntities(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|#39|#x27);/g, (_match, entity: string) => ENTITIES[entity] ?? '');
}

/** Describes a page the flow could not get past, with its visible text (e.g. oidc-provider's error and description). */
function stuckAt(idp: string, step: FollowResult, html: string): string {
  const text = html
    .replace(/<(style|script)\b[\s\S]*?<\/\1>/gi, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return `at ${idp} stopped on HTTP ${step.response.status} ${step.url.href} instead of redirecting away: ${decodeEntities(text).slice(0, 400)}`;
}
