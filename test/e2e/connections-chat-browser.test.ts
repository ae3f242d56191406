import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { startTestApp } from '../helpers/app.js';
import { PASSWORD, createUser } from '../helpers/auth.js';
import { probeChromium } from '../helpers/browser.js';
import { describeWithService } from '../helpers/services.js';
import { type TestUpstream, startTestUpstream } from '../helpers/upstreams.js';
import { type WatchedPage, ensureWebBuilt, openWatchedPage } from '../helpers/web.js';

/** Runs in the page: follows a link within it (a hashchange, as clicking one would). */
const setHash = (hash: string) => {
  (globalThis as unknown as { location: { hash: string } }).location.hash = hash;
};

/** The text of an element ('' when it has none), for `expect.poll`. */
const textOf = async (locator: Locator) => (await locator.textContent()) ?? '';

/**
 * The service with its offline model (deterministic: `/tool <name> {json}` calls that tool, and the same message
 * makes the same call again), allowed to reach MCP servers on loopback, where the test upstream listens; and alice.
 */
async function startService(): Promise<App> {
  const app = await startTestApp({
    ADMIN_PASSWORD: 'bootstrap-secret-1',
    LLM_PROVIDER: 'offline',
    // Slow enough that an answer is still being written when its card can be used (~1.5 s for one).
    OFFLINE_LLM_WORD_DELAY_MS: '30',
    CONNECTIONS_PRIVATE_HOSTS: '127.0.0.1',
  });
  await createUser(app, 'alice');
  return app;
}

// The chat's side of connected tools, in headless Chromium against the real service and a real upstream MCP server
// (the test upstream, a process of its own): a destructive tool asks the person first, with a card under the call;
// approved, the message goes again and the call runs once; declined, nothing runs. A tool whose server needs the
// person's own account offers to connect it and brings them back to the chat; links to a connection
// (`#connections?connect=<id>`) open the connections page on it.
describeWithService('connected tools in the playground chat', probeChromium(), () => {
  let app: App;
  let upstream: TestUpstream;
  let watched: WatchedPage;
  let page: Page;
  /** The OAuth connection the connect test adds. */
  let secureId = '';

  const shot = (name: string) => watched.shot(`connections-chat-${name}`);
  const calls = async (tool: string) => ((await upstream.control('calls')) as Record<string, number>)[tool] ?? 0;
  const answers = () => page.getByRole('article', { name: 'Assistant' });
  const asked = () => page.getByRole('article', { name: 'You' });
  const statusLine = () => page.locator('.status-line__text');
  const composer = () => page.getByRole('textbox', { name: 'Message' });
  /** The text of what has the focus ('' for nothing), without waiting for something to have it. */
  const focusedText = async () => (await page.locator(':focus').allTextContents()).join('');

  async function say(text: string): Promise<void> {
    await composer().fill(text);
    await page.getByRole('button', { name: 'Send', exact: true }).click();
  }

  async function addConnection(
    name: string,
    slug: string,
    options: { oauth?: boolean } = {},
  ): Promise<{ id: string; card: Locator }> {
    await page.getByRole('button', { name: 'Add connection' }).click();
    const form = page.getByRole('form', { name: 'Add a connection' });
    await form.getByLabel('Name').fill(name);
    await form.getByLabel('Slug').fill(slug);
    await form.getByLabel('Server URL').fill(upstream.url);
    if (options.oauth) await form.getByLabel('Sign-in').selectOption('oauth');
    await form.getByRole('button', { name: 'Save connection' }).click();
    const card = page.getByRole('article', { name });
    await card.waitFor();
    const id = await page.locator('li[data-connection]').filter({ has: card }).getAttribute('data-connection');
    expect(id).toBeTruthy();
    return { id: id!, card };
  }

  beforeAll(async () => {
    await ensureWebBuilt('playground');
    upstream = await startTestUpstream();
    app = await startService();
    watched = await openWatchedPage('playground', app.url('playground'), { viewport: { width: 1280, height: 900 } });
    page = watched.page;
  }, 120_000);

  afterAll(async () => {
    await watched?.close();
    await app?.close();
    await upstream?.close();
  });

  it('asks before a destructive call, and runs it once after Approve', { timeout: 90_000 }, async () => {
    await page.goto(`${app.url('playground')}/#connections`);
    await page.getByRole('textbox', { name: 'Username' }).fill('alice');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'Connections', level: 2 }).waitFor();
    await addConnection('Test upstream', 'upstream');
    await upstream.control('reset');

    await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Chat' }).click();
    await say('/tool upstream__delete_item {"id":"a1"}');

    const card = answers()
      .first()
      .getByRole('region', { name: /^Approval needed/ });
    await card.waitFor({ timeout: 15_000 });
    expect(await card.getAttribute('aria-labelledby')).toBeTruthy();
    expect(await textOf(card)).toContain('upstream__delete_item');
    expect(await textOf(card)).toContain('"id": "a1"');
    // The server's name comes from the approval request.
    await expect.poll(() => textOf(card)).toContain('at Test upstream');
    await expect
      .poll(() => textOf(statusLine()), { timeout: 15_000 })
      .toBe('Answer complete. upstream__delete_item waits for your approval.');
    // The call did not run (it waits for the person, not failed as such), and nothing reached the upstream.
    expect(await textOf(answers().first().locator('.tool-call'))).toContain('needs approval');
    expect(await calls('delete_item')).toBe(0);
    await shot('01-approval-card');

    // By keyboard: Enter on Approve.
    const approve = card.getByRole('button', { name: 'Approve and run upstream__delete_item' });
    await approve.focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => textOf(card.getByRole('status'))).toContain('Approved.');
    // The buttons are gone; the focus went to the card's title rather than being lost.
    expect(await card.getByRole('button').count()).toBe(0);
    await expect.poll(() => focusedText()).toBe('Approval needed');

    // The same message went again, and this time the call ran.
    await expect.poll(() => asked().count(), { timeout: 15_000 }).toBe(2);
    expect(await textOf(asked().nth(1))).toContain('/tool upstream__delete_item {"id":"a1"}');
    const second = answers().nth(1);
    await expect.poll(() => textOf(second), { timeout: 15_000 }).toContain('deleted a1');
    await expect.poll(() => textOf(statusLine()), { timeout: 15_000 }).toMatch(/^Answer complete/);
    expect(await second.getByRole('region', { name: /^Approval needed/ }).count()).toBe(0);
    expect(await textOf(second.locator('.tool-call'))).toContain('done');
    await second.locator('.tool-call summary').click();
    expect(await textOf(second.locator('.tool-call'))).toContain('deleted a1');
    expect(await calls('delete_item')).toBe(1);
    await card.scrollIntoViewIfNeeded();
    await shot('02-approved-and-ran');
  });

  it(
    'approved while the answer is still written, sends the message again once it ends',
    { timeout: 60_000 },
    async () => {
      await say('/tool upstream__delete_item {"id":"c3"}');
      await expect.poll(() => answers().count(), { timeout: 15_000 }).toBe(3);
      const card = answers()
        .nth(2)
        .getByRole('region', { name: /^Approval needed/ });
      await card.waitFor({ timeout: 15_000 });
      await page.getByRole('button', { name: 'Stop' }).waitFor();
      await card.getByRole('button', { name: 'Approve and run upstream__delete_item' }).click();
      await expect.poll(() => textOf(card.getByRole('status'))).toContain('Approved.');
      // Not while the answer runs (the service takes one turn at a time per session); right after it.
      expect(await asked().count()).toBe(3);
      await expect.poll(() => asked().count(), { timeout: 15_000 }).toBe(4);
      await expect.poll(() => textOf(answers().nth(3)), { timeout: 15_000 }).toContain('deleted c3');
      await expect.poll(() => textOf(statusLine()), { timeout: 15_000 }).toMatch(/^Answer complete/);
      expect(await calls('delete_item')).toBe(2);
    },
  );

  it('runs nothing after Decline', { timeout: 60_000 }, async () => {
    await say('/tool upstream__delete_item {"id":"b2"}');
    await expect.poll(() => answers().count(), { timeout: 15_000 }).toBe(5);
    const card = answers()
      .nth(4)
      .getByRole('region', { name: /^Approval needed/ });
    await card.waitFor({ timeout: 15_000 });
    await expect.poll(() => textOf(statusLine()), { timeout: 15_000 }).toContain('waits for your approval');
    await card.getByRole('button', { name: 'Decline upstream__delete_item' }).click();
    await expect.poll(() => textOf(card.getByRole('status'))).toBe('Declined. upstream__delete_item did not run.');
    expect(await textOf(card)).toContain('Declined');
    // Nothing was sent again, and the status line no longer points at the settled card.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await asked().count()).toBe(5);
    expect(await textOf(statusLine())).toBe('');
    expect(await calls('delete_item')).toBe(2);
    await shot('03-declined');

    // Asked again, the declined call asks again rather than running.
    await say('/tool upstream__delete_item {"id":"b2"}');
    const again = answers()
      .nth(5)
      .getByRole('region', { name: /^Approval needed/ });
    await again.waitFor({ timeout: 15_000 });
    expect(await calls('delete_item')).toBe(2);

    // On a phone, and in the dark.
    await page.setViewportSize({ width: 390, height: 844 });
    await again.scrollIntoViewIfNeeded();
    await shot('03b-phone');
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.emulateMedia({ colorScheme: 'dark' });
    await again.scrollIntoViewIfNeeded();
    // The buttons' colour transitions settle first.
    await new Promise((resolve) => setTimeout(resolve, 400));
    await shot('03c-dark');
    await page.emulateMedia({ colorScheme: 'light' });
    watched.expectClean();
  });

  it('offers to connect the account a tool needs, and comes back to the chat', { timeout: 90_000 }, async () => {
    const sessionHash = new URL(page.url()).hash;
    expect(sessionHash).toMatch(/^#session=/);

    // A connection whose server signs each person in (OAuth), with tools known from before it did (pinned when it
    // signed nobody in): calling one now needs alice's own account there.
    await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Connections' }).click();
    const { id, card } = await addConnection('Secure upstream', 'secure');
    secureId = id;
    await card.getByRole('button', { name: 'Test Secure upstream' }).click();
    await expect.poll(() => textOf(card.locator('.conn-test')), { timeout: 15_000 }).toContain('Connected.');
    await card.getByRole('button', { name: 'Edit Secure upstream' }).click();
    const form = page.getByRole('form', { name: 'Edit Secure upstream' });
    await form.getByLabel('Sign-in').selectOption('oauth');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await expect.poll(() => textOf(card)).toContain('Your account: not connected');

    // The service says what the call needs with a `connect_required` event after the call's result.
    await page.goto(`${app.url('playground')}/${sessionHash}`);
    await say('/tool secure__echo {"text":"hi"}');
    const connect = answers()
      .last()
      .getByRole('region', { name: /^Connect your account/ });
    await connect.waitFor({ timeout: 15_000 });
    expect(await textOf(answers().last().locator('.tool-call'))).toContain('needs sign-in');
    await expect.poll(() => textOf(connect)).toContain('your own account at Secure upstream');
    await expect
      .poll(() => textOf(statusLine()), { timeout: 15_000 })
      .toBe('Answer complete. secure__echo needs your account at its server.');
    await shot('04-connect-card');

    // Connect: the service answers where to sign in, and afterwards sends the browser back to return_to. The test
    // upstream has no authorization server, so the test stands in for both: the sign-in "page" is the way back.
    let returnTo = '';
    await page.route(`**/api/v1/connections/${id}/account`, async (route) => {
      returnTo = (route.request().postDataJSON() as { return_to: string }).return_to;
      const back = new URL(returnTo);
      back.searchParams.set('connection', id);
      back.searchParams.set('connected', '1');
      await route.fulfill({ json: { authorization_url: back.toString() } });
    });
    await connect.getByRole('button', { name: 'Connect Secure upstream' }).click();
    await page.waitForURL(/connected=1/);
    await page.unroute(`**/api/v1/connections/${id}/account`);
    expect(returnTo).toBe(`${app.url('playground')}/${sessionHash}`);

    // Back in the same session: the outcome is said, and leaves the address; Send again is offered (and focused).
    const notice = page.locator('.chat-notice');
    await expect.poll(() => textOf(notice)).toContain('Your account at Secure upstream is connected.');
    await expect.poll(() => page.url()).toBe(`${app.url('playground')}/${sessionHash}`);
    const again = page.getByRole('button', { name: 'Send last message again' });
    await expect.poll(() => focusedText()).toBe('Send last message again');
    await shot('05-back-from-sign-in');
    const before = await asked().count();
    await again.click();
    await expect.poll(() => asked().count(), { timeout: 15_000 }).toBe(before + 1);
    expect(await textOf(asked().last())).toContain('/tool secure__echo {"text":"hi"}');
    await expect.poll(() => notice.count()).toBe(0);
    await expect.poll(() => textOf(statusLine()), { timeout: 15_000 }).toMatch(/^Answer complete/);
    watched.expectClean();
  });

  it('opens the connections page on the connection a link points at', { timeout: 60_000 }, async () => {
    expect(secureId).not.toBe('');
    const secure = page.getByRole('article', { name: 'Secure upstream' });

    // An OAuth connection without alice's account: marked, with a prompt to connect it, its button focused.
    await page.goto(`${app.url('playground')}/#connections?connect=${secureId}`);
    const prompt = secure.locator('.conn-card__prompt');
    await prompt.waitFor();
    expect(await textOf(prompt)).toContain('Connect your account');
    // The prompt takes the place of the account's row, which would say the same.
    expect(await secure.getByRole('button', { name: 'Connect Secure upstream' }).count()).toBe(0);
    expect(await secure.getAttribute('class')).toContain('conn-card--highlight');
    await expect.poll(() => focusedText()).toBe('Connect your account at Secure upstream');
    await shot('06-link-to-connection');

    // A link to one that needs no account: it is marked instead, its heading focused.
    const plain = page.getByRole('article', { name: 'Test upstream' });
    const plainId = await page.locator('li[data-connection]').filter({ has: plain }).getAttribute('data-connection');
    await page.evaluate(setHash, `#connections?connect=${plainId!}`);
    await expect.poll(() => plain.getAttribute('class')).toContain('conn-card--highlight');
    await expect.poll(() => focusedText()).toBe('Test upstream');
    expect(await secure.getAttribute('class')).not.toContain('conn-card--highlight');
    expect(await secure.locator('.conn-card__prompt').count()).toBe(0);

    // A link to a connection that is not there says so.
    await page.evaluate(setHash, '#connections?connect=00000000-0000-4000-8000-000000000000');
    await expect.poll(() => textOf(page.locator('.connections__status'))).toContain('not one of yours');
    watched.expectClean();
  });
});
