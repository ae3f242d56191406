import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { startTestApp } from '../helpers/app.js';
import { PASSWORD, createUser } from '../helpers/auth.js';
import { launchChromium, probeChromium } from '../helpers/browser.js';
import { serveOnLoopback, unusedPort } from '../helpers/http.js';
import { MemoryOAuthClient } from '../helpers/oauth.js';
import { describeWithService } from '../helpers/services.js';
import { ARTIFACTS } from '../helpers/web.js';

/**
 * The sign-in a person does in a real browser when an MCP client sends them to the service: the consent page
 * renders under its strict policy, the form signs in and allows, and the browser lands on the client's loopback
 * callback with the code, which the official SDK client redeems before calling a tool.
 */
describeWithService('MCP client sign-in in a browser', probeChromium(), () => {
  let app: App;
  let browser: Browser;
  let callback: Awaited<ReturnType<typeof serveOnLoopback>>;
  const codes: string[] = [];

  beforeAll(async () => {
    app = await startTestApp({ PORT: String(await unusedPort()) });
    await createUser(app, 'alice');
    // The client's own loopback listener, as a desktop MCP client runs one for the redirect.
    callback = await serveOnLoopback((req, res) => {
      const code = new URL(req.url ?? '/', 'http://127.0.0.1').searchParams.get('code');
      if (code) codes.push(code);
      res.writeHead(200, { 'Content-Type': 'text/html' }).end('<p>Signed in. You can close this window.</p>');
    });
    browser = await launchChromium();
    mkdirSync(ARTIFACTS, { recursive: true });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await callback?.close();
    await app?.close();
  });

  it('signs in, allows, and the client calls a tool with the token', async () => {
    const mcpUrl = new URL(`${app.url('main')}/mcp`);
    const provider = new MemoryOAuthClient(`${callback.url}/callback`);
    const client = new Client({ name: 'browser-ide', version: '1.0.0' });
    await expect(
      client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider })),
    ).rejects.toBeInstanceOf(UnauthorizedError);

    const page = await browser.newPage({ viewport: { width: 900, height: 760 } });
    const violations: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error' && message.text().includes('Content Security Policy'))
        violations.push(message.text());
    });
    await page.goto(provider.authorizationUrl!.href);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe(
      'Allow Test IDE to use Agent Service?',
    );
    await page.getByLabel('Username or email').fill('alice');
    await page.getByLabel('Password').fill('wrong password');
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.getByRole('alert').waitFor();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('Invalid username or password');
    await page.screenshot({ path: join(ARTIFACTS, 'oauth-consent-error.png'), fullPage: true });

    await page.getByLabel('Username or email').fill('alice');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.screenshot({ path: join(ARTIFACTS, 'oauth-consent.png'), fullPage: true });
    await Promise.all([
      page.waitForURL(`${callback.url}/callback**`),
      page.getByRole('button', { name: 'Allow' }).click(),
    ]);
    await expect(page.textContent('body')).resolves.toContain('Signed in');
    expect(violations).toEqual([]);
    expect(codes).toHaveLength(1);

    await new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }).finishAuth(codes[0]!);
    const signedIn = new Client({ name: 'browser-ide', version: '1.0.0' });
    await signedIn.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
    const result = await signedIn.callTool({ name: 'conversation_search', arguments: { query: 'anything' } });
    expect(result.isError).toBe(false);
    await signedIn.close();
    await page.close();
  });
});
