import { mkdirSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { startTestApp } from '../helpers/app.js';
import { PASSWORD, createUser } from '../helpers/auth.js';
import { launchChromium, probeChromium } from '../helpers/browser.js';
import { describeWithService } from '../helpers/services.js';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { ensureWebBuilt } from '../helpers/web.js';

const ARTIFACTS = 'test/artifacts';

// The playground's main journey in headless Chromium, against the real service. The model behind it is a FAKE of
// an OpenAI-compatible API (no hosted model can run here), scripted to call a tool and to stream slowly enough to
// watch tokens arrive and to stop an answer half-way.
describeWithService('the playground web UI', probeChromium(), () => {
  let app: App;
  let fake: FakeOpenAi;
  let browser: Browser;
  let page: Page;
  const external: string[] = [];
  const cspViolations: string[] = [];
  const pageErrors: string[] = [];

  const shot = (name: string) => page.screenshot({ path: `${ARTIFACTS}/playground-${name}.png`, fullPage: false });

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    await ensureWebBuilt();
    fake = await startFakeOpenAi(['gpt-test']);
    app = await startTestApp({
      ADMIN_PASSWORD: 'bootstrap-secret-1',
      LLM_PROVIDER: 'openai',
      LLM_BASE_URL: fake.url,
      LLM_MODEL: 'gpt-test',
      LLM_API_KEY: 'sk-fake',
    });
    await createUser(app, 'alice');
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const origin = new URL(app.url('playground')).origin;
    await page.route('**/*', async (route) => {
      const url = route.request().url();
      if (url.startsWith(origin) || url.startsWith('data:')) return route.continue();
      external.push(url);
      return route.abort();
    });
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
    });
    page.on('pageerror', (error) => pageErrors.push(error.message));
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await fake?.close();
  });

  it(
    'signs in, chats with streamed tokens and a tool call, stops an answer, and shows the trace',
    { timeout: 90_000 },
    async () => {
      await page.goto(app.url('playground'));
      await page.getByRole('textbox', { name: 'Username' }).fill('alice');
      await page.getByLabel('Password').fill(PASSWORD);
      await shot('01-sign-in');
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByRole('button', { name: 'New session' }).waitFor();

      await page.getByRole('button', { name: 'New session' }).click();
      await expect.poll(() => page.getByRole('list', { name: 'Sessions' }).getByRole('listitem').count()).toBe(1);

      // First message: the model calls search_web, then streams its answer word by word.
      fake.chunkDelayMs = 60;
      fake.replies.push(
        { toolCalls: [{ name: 'search_web', arguments: { query: 'session cookies' } }] },
        { text: Array.from({ length: 30 }, (_, i) => `Cookie${i}`).join(' ') },
      );
      const composer = page.getByRole('textbox', { name: 'Message' });
      await composer.fill('How do session cookies work?');
      await page.getByRole('button', { name: 'Send', exact: true }).click();
      const answer = page.getByRole('article', { name: 'Assistant' }).last();
      await answer.getByText('Cookie0').waitFor();
      const partial = (await answer.textContent()) ?? '';
      await shot('02-streaming');
      await answer.getByText('Cookie29').waitFor({ timeout: 15_000 });
      // The text grew after it first appeared: tokens were shown as they came.
      expect(partial).not.toContain('Cookie29');
      await expect.poll(() => answer.getByText(/Tool call search_web/).count()).toBeGreaterThan(0);
      await answer
        .getByText(/Tool call search_web/)
        .first()
        .click();
      await shot('03-answer-with-tool-call');

      // Second message: stopped half-way.
      fake.replies.push({ text: Array.from({ length: 200 }, (_, i) => `Word${i}`).join(' ') });
      fake.chunkDelayMs = 80;
      await composer.fill('Tell me everything');
      await page.getByRole('button', { name: 'Send', exact: true }).click();
      const second = page.getByRole('article', { name: 'Assistant' }).last();
      await second.getByText('Word1').waitFor();
      await page.getByRole('button', { name: 'Stop', exact: true }).click();
      await second.getByText('Stopped', { exact: true }).waitFor();
      await expect.poll(() => fake.abandoned).toBe(1);
      expect((await second.textContent()) ?? '').not.toContain('Word199');
      await shot('04-stopped');

      // The trace panel: a waterfall of both turns, with the tool call among the spans.
      await page.getByRole('button', { name: 'Trace', exact: true }).click();
      const panel = page.getByRole('complementary', { name: 'Observability' });
      await panel
        .getByRole('button', { name: /execute_tool search_web/ })
        .first()
        .waitFor();
      expect(await panel.getByRole('button', { name: /invoke_agent/ }).count()).toBe(2);
      await panel
        .getByRole('button', { name: /execute_tool search_web/ })
        .first()
        .click();
      await shot('05-trace');
      await panel.getByRole('tab', { name: 'Metrics' }).click();
      await panel.getByText('Tool calls').waitFor();
      await shot('06-metrics');

      // On a phone the panel is a drawer over the chat.
      await panel.getByRole('button', { name: 'Close panel' }).click();
      await page.setViewportSize({ width: 390, height: 844 });
      await shot('07-phone-chat');
      await page.getByRole('button', { name: 'Trace', exact: true }).click();
      await page.getByRole('complementary', { name: 'Observability' }).getByRole('tab', { name: 'Trace' }).click();
      await page.waitForTimeout(500); // the drawer slides in
      await shot('08-phone-trace');

      expect(external).toEqual([]);
      expect(cspViolations).toEqual([]);
      expect(pageErrors).toEqual([]);
    },
  );

  it('is served offline under a strict Content Security Policy, with cacheable assets', async () => {
    const res = await fetch(app.url('playground'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(res.headers.get('content-security-policy')).not.toContain('unsafe-inline');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const html = await res.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/<style/);
    const script = /src="\.?\/?(assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`${app.url('playground')}/${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toContain('immutable');
  });
});
