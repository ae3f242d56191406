import { randomBytes } from 'node:crypto';
import type { Response } from 'express';
import type { PendingAuthorization } from './oauth.service.js';

/** The cookie that ties a consent form to the browser that opened it (the CSRF defence of the consent page). */
export const CONSENT_COOKIE = 'oauth_consent';

const SCOPE_TEXT: Record<string, string> = {
  'mcp:read': 'See the tools, resources and prompts you may use, and call tools that only read',
  'mcp:tools': 'Call tools on your behalf, including tools that change your data',
};

const escape = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export interface ConsentView {
  pending: PendingAuthorization;
  /** The browser's consent secret, repeated in the form. */
  csrf: string;
  /** Who is signed in on this browser (session mode); undefined shows the sign-in fields. */
  signedInAs?: string;
  error?: string;
  /** What was typed as the username, kept when the page is shown again. */
  username?: string;
  /** Where the page's form posts. */
  action: string;
  /** Where single sign-on starts (and comes back to this page), when the service signs users in through an IdP. */
  ssoUrl?: string;
}

/**
 * Sends the sign-in and consent page: no script at all, styles allowed by a per-response nonce only, not framable
 * (clickjacking), and a form that may post to this server only and then redirect to the client's redirect URI.
 */
export function sendConsentPage(res: Response, view: ConsentView, status = 200): void {
  const redirect = new URL(view.pending.redirectUri);
  // The form posts here, then the browser follows the redirect to the client: both must be allowed.
  const nonce = sendPageHeaders(res, status, `form-action 'self' ${redirect.origin}`);
  res.send(render(view, nonce, redirect));
}

/** The headers of every page here (no script, styles by nonce, not framable); answers the nonce. */
function sendPageHeaders(res: Response, status: number, formAction = "form-action 'none'"): string {
  const nonce = randomBytes(16).toString('base64');
  res.status(status).set({
    'Content-Type': 'text/html; charset=utf-8',
    'Cache-Control': 'no-store',
    'X-Frame-Options': 'DENY',
    // The form's POST must carry its Origin (the Host and Origin guard checks it); no-referrer would send null.
    'Referrer-Policy': 'same-origin',
    'Content-Security-Policy': `default-src 'none'; style-src 'nonce-${nonce}'; ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
  });
  return nonce;
}

/** A page that ends the flow here, when there is no client to send the user back to. */
export function sendConsentError(res: Response, status: number, title: string, message: string): void {
  const nonce = sendPageHeaders(res, status);
  res.send(
    page(
      nonce,
      title,
      `<h1>${escape(title)}</h1><p role="alert">${escape(message)}</p><p>Start again from your MCP client.</p>`,
    ),
  );
}

function render(view: ConsentView, nonce: string, redirect: URL): string {
  const { pending } = view;
  const scopes = pending.scopes
    .map((scope) => `<li><code>${escape(scope)}</code>: ${escape(SCOPE_TEXT[scope] ?? scope)}</li>`)
    .join('');
  const sso = view.ssoUrl
    ? `<p><a class="sso" href="${escape(view.ssoUrl)}">Sign in with your organization’s single sign-on</a></p>
       <p>Or sign in with a password below.</p>`
    : '';
  const identity = view.signedInAs
    ? `<p>Signed in as <strong>${escape(view.signedInAs)}</strong>.</p>`
    : `${sso}<fieldset><legend>Sign in to continue</legend>
        <label for="username">Username or email</label>
        <input id="username" name="username" autocomplete="username" required value="${escape(view.username ?? '')}">
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="current-password" required>
      </fieldset>`;
  const body = `
    <h1>Allow ${escape(pending.clientName)} to use Agent Service?</h1>
    ${view.error ? `<p class="error" role="alert">${escape(view.error)}</p>` : ''}
    <p><strong>${escape(pending.clientName)}</strong> (a name the application gave itself) will be sent back to
      <code>${escape(redirect.origin)}</code> and will be able to:</p>
    <ul>${scopes}</ul>
    <p>Its access works only on <code>${escape(pending.resource)}</code>. You can revoke it at any time.</p>
    <form method="post" action="${escape(view.action)}">
      <input type="hidden" name="request" value="${escape(pending.id)}">
      <input type="hidden" name="csrf" value="${escape(view.csrf)}">
      ${identity}
      <div class="actions">
        <button type="submit" name="decision" value="approve">Allow</button>
        <button type="submit" name="decision" value="deny" formnovalidate class="secondary">Deny</button>
      </div>
    </form>`;
  return page(nonce, `Authorize ${pending.clientName}`, body);
}

function page(nonce: string, title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${escape(title)} · Agent Service</title>
<style nonce="${nonce}">
  body { font: 16px/1.5 system-ui, sans-serif; color: #1b1f24; background: #f4f6f8; margin: 0; }
  main { max-width: 32rem; margin: 3rem auto; background: #fff; padding: 2rem; border-radius: 8px;
         box-shadow: 0 1px 4px rgba(0,0,0,.12); }
  h1 { font-size: 1.4rem; margin-top: 0; }
  fieldset { border: 1px solid #c9d1d9; border-radius: 6px; padding: 1rem; margin: 1rem 0; }
  label { display: block; font-weight: 600; margin-top: .5rem; }
  input { width: 100%; box-sizing: border-box; padding: .5rem; font: inherit; border: 1px solid #8c959f; border-radius: 4px; }
  input:focus, button:focus { outline: 3px solid #0969da; outline-offset: 2px; }
  .actions { display: flex; gap: .75rem; margin-top: 1.25rem; }
  button { font: inherit; padding: .55rem 1.4rem; border-radius: 6px; border: 1px solid #1a7f37; background: #1a7f37;
           color: #fff; cursor: pointer; }
  button.secondary { background: #fff; color: #1b1f24; border-color: #8c959f; }
  .error { background: #ffebe9; border: 1px solid #cf222e; padding: .5rem .75rem; border-radius: 6px; color: #82071e; }
  a.sso { display: inline-block; padding: .55rem 1rem; border: 1px solid #0969da; border-radius: 6px; color: #0969da;
          text-decoration: none; font-weight: 600; }
  a.sso:focus { outline: 3px solid #0969da; outline-offset: 2px; }
  code { background: #eef1f4; padding: 0 .25rem; border-radius: 3px; }
</style>
</head>
<body><main>${body}</main></body>
</html>`;
}
