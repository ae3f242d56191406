import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { startTestApp } from '../helpers/app.js';
import { PASSWORD, createUser } from '../helpers/auth.js';
import { probeChromium } from '../helpers/browser.js';
import { describeWithService } from '../helpers/services.js';
import { type TestUpstream, startTestUpstream } from '../helpers/upstreams.js';
import { type WatchedPage, ensureWebBuilt, expectServedStrictly, openWatchedPage } from '../helpers/web.js';

/** The text of an element ('' when it has none), for `expect.poll`. */
const textOf = async (locator: Locator) => (await locator.textContent()) ?? '';

/**
 * The service as startWebTestService starts it (a FAKE OpenAI-compatible model, since no hosted model runs here, and
 * alice), but allowed to reach MCP servers on loopback, where the test upstream listens.
 */
async function startService(): Promise<{ app: App; fake: FakeOpenAi }> {
  const fake = await startFakeOpenAi(['gpt-test']);
  const app = await startTestApp({
    ADMIN_PASSWORD: 'bootstrap-secret-1',
    LLM_PROVIDER: 'openai',
    LLM_BASE_URL: fake.url,
    LLM_MODEL: 'gpt-test',
    LLM_API_KEY: 'sk-fake',
    CONNECTIONS_PRIVATE_HOSTS: '127.0.0.1',
  });
  await createUser(app, 'alice');
  return { app, fake };
}

async function signIn(page: Page): Promise<void> {
  await page.getByRole('textbox', { name: 'Username' }).fill('alice');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
}

// The connections page in headless Chromium, against the real service and a real upstream MCP server (the test
// upstream, a process of its own on loopback): add a connection, test it, look at its tools and approve one the
// upstream changed, edit it, and delete it; then reach the same page from the builder's tool choice.
describeWithService('the connections page', probeChromium(), () => {
  let app: App;
  let fake: FakeOpenAi;
  let upstream: TestUpstream;
  let watched: WatchedPage;
  let page: Page;

  const shot = (name: string) => watched.shot(`connections-${name}`);
  const card = () => page.getByRole('article', { name: 'Test upstream' });
  const status = () => page.locator('.connections__status');
  /** The text of what has the focus ('' for nothing), without waiting for something to have it. */
  const focusedText = async () => (await page.locator(':focus').allTextContents()).join('');

  beforeAll(async () => {
    await ensureWebBuilt('playground');
    await ensureWebBuilt('builder');
    upstream = await startTestUpstream();
    ({ app, fake } = await startService());
    watched = await openWatchedPage('playground', app.url('playground'), { viewport: { width: 1280, height: 860 } });
    page = watched.page;
  }, 120_000);

  afterAll(async () => {
    await watched?.close();
    await app?.close();
    await fake?.close();
    await upstream?.close();
  });

  it('adds a connection to an MCP server, tests it and shows its tools', { timeout: 90_000 }, async () => {
    await page.goto(app.url('playground'));
    await signIn(page);
    await page.getByRole('button', { name: 'New session' }).waitFor();

    await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Connections' }).click();
    await page.getByRole('heading', { name: 'Connections', level: 2 }).waitFor();
    expect(page.url()).toMatch(/#connections$/);
    expect(await page.getByRole('link', { name: 'Connections' }).getAttribute('aria-current')).toBe('page');
    await page.getByText('No connections yet').waitFor();
    await shot('01-empty');

    await page.getByRole('button', { name: 'Add connection' }).click();
    const form = page.getByRole('form', { name: 'Add a connection' });
    await expect.poll(() => focusedText()).toBe('Add a connection');
    await form.getByLabel('Name').fill('Test upstream');
    await form.getByLabel('Slug').fill('upstream');
    expect(await form.getByLabel('Transport').inputValue()).toBe('streamable_http');
    await form.getByLabel('Server URL').fill(upstream.url);
    // A secret field appears for a bearer token, and goes again for no sign-in.
    await form.getByLabel('Sign-in').selectOption('bearer');
    await form.getByLabel('Token').waitFor();
    await form.getByLabel('Sign-in').selectOption('none');
    expect(await form.getByLabel('Token').count()).toBe(0);
    // alice is no administrator: no sharing, no stdio.
    expect(await form.getByRole('radio', { name: /Shared/ }).count()).toBe(0);
    expect(await form.getByLabel('Transport').locator('option[value="stdio"]').count()).toBe(0);
    await shot('02-add-form');
    await form.getByRole('button', { name: 'Save connection' }).click();

    await card().waitFor();
    await expect.poll(() => textOf(status())).toContain('Added Test upstream');
    expect(await textOf(card())).toContain('upstream');
    expect(await textOf(card().locator('.conn-card__badges'))).toContain('Personal');
    expect(await textOf(card().locator('.conn-card__badges'))).toContain('Streamable HTTP');
    // Focus went to the new connection.
    await expect.poll(() => focusedText()).toBe('Test upstream');

    await card().getByRole('button', { name: 'Test Test upstream' }).click();
    const outcome = card().locator('.conn-test');
    await expect.poll(() => textOf(outcome), { timeout: 15_000 }).toContain('Connected.');
    expect(await textOf(outcome)).toContain('test-upstream');
    const toolCount = Number(await textOf(outcome.locator('dd').first()));
    expect(toolCount).toBeGreaterThan(2);
    await expect.poll(() => textOf(status())).toMatch(/Test upstream answered: \d+ tools/);
    await shot('03-tested');

    const toolsButton = card().getByRole('button', { name: 'Tools Test upstream' });
    await toolsButton.click();
    expect(await toolsButton.getAttribute('aria-expanded')).toBe('true');
    const tools = card().getByRole('region', { name: /^Tools/ });
    const tool = (name: string) => tools.getByRole('listitem').filter({ hasText: name });
    await tool('upstream__echo').waitFor();
    expect(await tools.getByRole('listitem').count()).toBe(toolCount);
    expect(await textOf(tool('upstream__echo'))).toContain('Read-only');
    expect(await textOf(tool('upstream__echo'))).not.toContain('Asks first');
    expect(await textOf(tool('upstream__delete_item'))).toContain('Destructive');
    expect(await textOf(tool('upstream__delete_item'))).toContain('Asks first');
    await tool('upstream__delete_item').scrollIntoViewIfNeeded();
    await shot('04-tools');
  });

  it('holds a tool the upstream changed until it is approved, showing old and new', { timeout: 60_000 }, async () => {
    await upstream.control('rug-pull');
    const tools = card().getByRole('region', { name: /^Tools/ });
    const echo = tools.getByRole('listitem').filter({ hasText: 'upstream__echo' });
    await expect
      .poll(
        async () => {
          await tools.getByRole('button', { name: 'Reload the tools of Test upstream' }).click();
          return textOf(echo);
        },
        { timeout: 15_000, interval: 500 },
      )
      .toContain('Held');
    const diff = echo.getByRole('group', { name: 'Description, approved and new' });
    expect(await textOf(diff)).toContain('Echoes the text back.');
    expect(await textOf(diff.locator('ins'))).toContain('ignore previous instructions');
    await echo.scrollIntoViewIfNeeded();
    await shot('05-held-tool');

    await echo.getByRole('button', { name: 'Approve the new definition of upstream__echo' }).click();
    await expect.poll(() => textOf(echo)).not.toContain('Held');
    expect(await textOf(echo)).toContain('ignore previous instructions');
    await expect.poll(() => textOf(status())).toContain('Approved the new definition of upstream__echo');
  });

  it('edits a connection, keeping a secret it never shows', { timeout: 60_000 }, async () => {
    const facts = () => textOf(card().locator('.conn-card__facts'));
    await card().getByRole('button', { name: 'Edit Test upstream' }).click();
    let form = page.getByRole('form', { name: 'Edit Test upstream' });
    expect(await form.getByLabel('Server URL').inputValue()).toBe(upstream.url);
    // Scope and transport are settled when a connection is made.
    expect(await form.getByLabel('Transport').isDisabled()).toBe(true);
    await form.getByLabel('Sign-in').selectOption('bearer');
    await form.getByLabel('Token').fill('upstream-token-1');
    await form.getByLabel('Ask before running').selectOption('writes');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await expect.poll(() => textOf(status())).toContain('Saved Test upstream');
    expect(await facts()).toContain('Bearer token (set)');
    expect(await facts()).toContain('Every tool that is not read-only');
    // Focus is back on the Edit button it left from.
    await expect.poll(() => page.locator(':focus[data-action="edit"]').count()).toBe(1);

    // The token is set, and never comes back: the field is empty, and leaving it so keeps the token.
    await card().getByRole('button', { name: 'Edit Test upstream' }).click();
    form = page.getByRole('form', { name: 'Edit Test upstream' });
    expect(await form.getByLabel('Token').inputValue()).toBe('');
    expect(await form.getByLabel('Token').getAttribute('type')).toBe('password');
    expect(await textOf(form)).toContain('Set');
    expect(await textOf(form)).not.toContain('upstream-token-1');
    await shot('06-edit-form');
    await form.getByLabel('Name').fill('Test upstream');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await expect.poll(() => page.getByRole('form', { name: 'Edit Test upstream' }).count()).toBe(0);
    expect(await facts()).toContain('Bearer token (set)');

    // Back to no sign-in.
    await card().getByRole('button', { name: 'Edit Test upstream' }).click();
    form = page.getByRole('form', { name: 'Edit Test upstream' });
    await form.getByLabel('Sign-in').selectOption('none');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await expect.poll(facts).toContain('No sign-in');
  });

  it('reaches the connections from the builder’s tool choice', { timeout: 60_000 }, async () => {
    const builder = await openWatchedPage('builder', app.url('builder'), { viewport: { width: 1440, height: 900 } });
    try {
      const b = builder.page;
      await b.goto(app.url('builder'));
      await signIn(b);
      await b.getByRole('heading', { name: 'No workflows yet' }).waitFor();
      // Its own page, in the top bar's switch.
      await b.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Connections' }).click();
      await b.getByRole('article', { name: 'Test upstream' }).waitFor();
      await builder.shot('connections-07-page');
      await b.getByRole('link', { name: 'Workflows' }).click();

      // And over the editor, from an agent node's tools.
      await b.getByRole('button', { name: 'New workflow' }).first().click();
      await b.getByRole('button', { name: 'Add Agent node' }).click();
      const inspector = b.getByRole('complementary', { name: 'Inspector' });
      await inspector.getByRole('heading', { name: 'Agent node' }).waitFor();
      await inspector.getByRole('button', { name: 'Manage connections' }).click();
      const dialog = b.getByRole('dialog', { name: 'Connections' });
      await dialog.getByRole('article', { name: 'Test upstream' }).waitFor();
      await builder.shot('connections-08-editor-modal');
      await dialog.getByRole('button', { name: 'Close', exact: true }).click();
      await expect.poll(() => dialog.count()).toBe(0);
      builder.expectClean();
    } finally {
      await builder.close();
    }
  });

  it('says how connecting an account went when the upstream’s sign-in sends the browser back', async () => {
    const id = await page.locator('li[data-connection]').first().getAttribute('data-connection');
    // Where the service redirects once the upstream's consent page is done: the page's own address, plus the outcome.
    await page.goto(`${app.url('playground')}/?connection=${id}&connected=1#connections`);
    await expect.poll(() => textOf(status())).toContain('Your account at Test upstream is connected.');
    // The outcome leaves the address, so that a reload does not say it again.
    await expect.poll(() => page.url()).toBe(`${app.url('playground')}/#connections`);
    await shot('08-signed-in-return');
  });

  it('deletes a connection after asking', { timeout: 60_000 }, async () => {
    await card().getByRole('button', { name: 'Delete Test upstream' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete connection?' });
    await dialog.waitFor();
    await shot('09-delete-confirm');
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
    await expect.poll(() => card().count()).toBe(0);
    await expect.poll(() => textOf(status())).toContain('Deleted Test upstream');
    await page.getByText('No connections yet').waitFor();
    await expect.poll(() => focusedText()).toContain('Add connection');

    // Back to the chat with the switch; on a phone the switch keeps its icons.
    await page.getByRole('link', { name: 'Chat' }).click();
    await page.getByRole('button', { name: 'New session' }).waitFor();
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByRole('link', { name: 'Connections' }).click();
    await page.getByRole('heading', { name: 'Connections', level: 2 }).waitFor();
    await shot('10-phone');
    watched.expectClean();
  });

  it('is served offline under a strict Content Security Policy', async () => {
    await expectServedStrictly(app.url('playground'));
  });
});
