import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { PASSWORD } from '../helpers/auth.js';
import { probeChromium } from '../helpers/browser.js';
import { describeWithService } from '../helpers/services.js';
import type { FakeOpenAi } from '../fakes/openai.js';
import {
  ensureWebBuilt,
  expectServedStrictly,
  openWatchedPage,
  startWebTestService,
  type WatchedPage,
  type WebTestService,
} from '../helpers/web.js';

// The playground's main journey in headless Chromium, against the real service. The model behind it is a FAKE of
// an OpenAI-compatible API (no hosted model can run here), scripted to call a tool and to stream slowly enough to
// watch tokens arrive and to stop an answer half-way.
describeWithService('the playground web UI', probeChromium(), () => {
  let app: App;
  let fake: FakeOpenAi;
  let service: WebTestService;
  let watched: WatchedPage;
  let page: Page;

  const shot = (name: string) => watched.shot(name);

  beforeAll(async () => {
    await ensureWebBuilt('playground');
    service = await startWebTestService();
    ({ app, fake } = service);
    watched = await openWatchedPage('playground', app.url('playground'), { viewport: { width: 1280, height: 800 } });
    page = watched.page;
  }, 120_000);

  afterAll(async () => {
    await watched?.close();
    await service?.close();
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

      watched.expectClean();
    },
  );

  it('is served offline under a strict Content Security Policy, with cacheable assets', async () => {
    await expectServedStrictly(app.url('playground'));
  });
});
