import type { Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { startTestApp } from '../helpers/app.js';
import { ADMIN_PASSWORD, PASSWORD, accessToken, call, createUser } from '../helpers/auth.js';
import { probeChromium } from '../helpers/browser.js';
import { describeWithService } from '../helpers/services.js';
import {
  ensureWebBuilt,
  openWatchedPage,
  startWebTestService,
  type WatchedPage,
  type WebTestService,
} from '../helpers/web.js';

// What a new user found lacking, checked in headless Chromium at the two window sizes they used: a stopped answer
// keeps its token counts (in the message, the trace and the metrics, and in what the model is sent next), the
// notice says where messages go in a sentence, and a signed-out visit logs no error. The model behind the openai
// configuration is a FAKE of an OpenAI-compatible API (no hosted model can run here).
const SIZES = [
  { width: 1280, height: 800 },
  { width: 1440, height: 900 },
] as const;

interface StoredUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

async function signIn(page: Page): Promise<void> {
  await page.getByRole('textbox', { name: 'Username' }).fill('alice');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('button', { name: 'New session' }).waitFor();
}

/** Opens the playground signed out and waits until nothing more is asked of the service. */
async function openSignedOut(page: Page, app: App): Promise<void> {
  await page.goto(app.url('playground'));
  await page.getByRole('textbox', { name: 'Username' }).waitFor();
  await page.waitForLoadState('networkidle');
}

/** What the checks read of an element in the page (the tests are compiled without the DOM's types). */
interface PageElement {
  scrollWidth: number;
  clientWidth: number;
  scrollHeight: number;
  clientHeight: number;
  getBoundingClientRect(): { left: number; top: number; right: number; bottom: number };
}

/** Fails when the element's text is cut off or runs out of the window. */
async function expectUnclipped(element: Locator, page: Page): Promise<void> {
  const box = await element.evaluate((node) => {
    const el = node as unknown as PageElement;
    const rect = el.getBoundingClientRect();
    return {
      overflowX: el.scrollWidth - el.clientWidth,
      overflowY: el.scrollHeight - el.clientHeight,
      right: rect.right,
      bottom: rect.bottom,
      left: rect.left,
      top: rect.top,
    };
  });
  const viewport = page.viewportSize()!;
  expect(box.overflowX).toBeLessThanOrEqual(1);
  expect(box.overflowY).toBeLessThanOrEqual(1);
  expect(box.left).toBeGreaterThanOrEqual(0);
  expect(box.top).toBeGreaterThanOrEqual(0);
  expect(box.right).toBeLessThanOrEqual(viewport.width);
  expect(box.bottom).toBeLessThanOrEqual(viewport.height);
}

for (const size of SIZES) {
  const at = `${size.width}x${size.height}`;

  describeWithService(`the playground web UI at ${size.width}×${size.height}`, probeChromium(), () => {
    let service: WebTestService;
    let offline: App;
    let watched: WatchedPage | undefined;
    let page: Page;

    const shot = (name: string) => watched!.shot(`polish-${at}-${name}`);
    /** A page that may reach only `app`'s playground. */
    const watch = async (app: App) => {
      watched = await openWatchedPage('playground', app.url('playground'), { viewport: size });
      page = watched.page;
      return watched;
    };

    beforeAll(async () => {
      await ensureWebBuilt('playground');
      service = await startWebTestService();
      // No LLM configured: the offline stand-in answers. Signed in by a session cookie, which the page cannot read.
      offline = await startTestApp({ ADMIN_PASSWORD, AUTH_MODE: 'session' });
      await createUser(offline, 'alice');
    }, 120_000);

    afterEach(async () => {
      await watched?.close();
      watched = undefined;
    });

    afterAll(async () => {
      await offline?.close();
      await service?.close();
    });

    it('opens signed out without a console error, stays signed in by its cookie, and says who answers', async () => {
      const { consoleErrors } = await watch(offline);
      await openSignedOut(page, offline);
      expect(consoleErrors).toEqual([]);
      await expect.poll(() => page.getByText(/· offline model$/).count()).toBe(1);
      await shot('01-offline-signed-out');

      await signIn(page);
      const notice = page.getByText(/^Messages go to/);
      await notice.waitFor();
      expect(await notice.textContent()).toBe(
        'Messages go to the offline model (no LLM configured), a stand-in that repeats what you send instead of ' +
          'answering it. Replies stream in as they are written; every tool call shows its arguments and result, ' +
          'and the Trace panel shows where the time went.',
      );
      await expectUnclipped(notice, page);
      // The model's badge beside the connection's: "offline" alone would read as if the service were down.
      const chat = page.getByRole('region', { name: 'Chat' });
      await chat.getByText('offline model', { exact: true }).waitFor();
      await shot('02-offline-notice');

      // The cookie still signs the page in after a reload; once signed out, a reload finds it signed out.
      await page.reload();
      await page.getByRole('button', { name: 'New session' }).waitFor();
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('textbox', { name: 'Username' }).waitFor();
      await openSignedOut(page, offline);
      expect(consoleErrors).toEqual([]);
      watched!.expectClean();
    });

    it(
      'keeps a stopped answer’s tokens in the message, the trace and the metrics, and in what the model is sent next',
      { timeout: 90_000 },
      async () => {
        const { app, fake } = service;
        const { consoleErrors } = await watch(app);
        await openSignedOut(page, app);
        expect(consoleErrors).toEqual([]);
        await shot('03-openai-signed-out');

        await signIn(page);
        const notice = page.getByText(/^Messages go to/);
        await notice.waitFor();
        expect(await notice.textContent()).toMatch(/^Messages go to gpt-test through an OpenAI-compatible API\. /);
        await expectUnclipped(notice, page);

        await page.getByRole('button', { name: 'New session' }).click();
        fake.chunkDelayMs = 80;
        fake.replies.push({ text: Array.from({ length: 200 }, (_, i) => `Word${i}`).join(' ') });
        const composer = page.getByRole('textbox', { name: 'Message' });
        await composer.fill('Tell me everything');
        await page.getByRole('button', { name: 'Send', exact: true }).click();
        const answer = page.getByRole('article', { name: 'Assistant' }).last();
        await answer.getByText(/Word3\b/).waitFor();
        await page.getByRole('button', { name: 'Stop', exact: true }).click();
        await answer.getByText('Stopped', { exact: true }).waitFor();

        // The stopped answer as the service keeps it, and as the page shows it.
        const token = await accessToken(app, 'alice');
        const sessions = await call(app, 'GET', '/api/playground/sessions', { token, listener: 'playground' });
        const sessionId = (sessions.body as unknown as { session_id: string }[])[0]!.session_id;
        const detail = await call(app, 'GET', `/api/playground/sessions/${sessionId}`, {
          token,
          listener: 'playground',
        });
        const stored = (detail.body.messages as { content: string; usage: StoredUsage }[])[1]!;
        const { prompt_tokens: input, completion_tokens: output, total_tokens: total } = stored.usage;
        expect(output).toBeGreaterThan(0);
        const meta = answer.getByText(`${total} tokens (${input} in / ${output} out)`, { exact: false });
        await meta.waitFor();
        await expectUnclipped(meta, page);
        await expect.poll(() => page.getByRole('status').first().textContent()).toBe(`Stopped, ${total} tokens.`);
        const shown = ((await answer.locator('.message__content').textContent()) ?? '').trim();
        expect(shown).toBe(stored.content.trim());
        await shot('04-stopped-with-tokens');

        // The trace and the metrics count the same tokens.
        await page.getByRole('button', { name: 'Trace', exact: true }).click();
        const panel = page.getByRole('complementary', { name: 'Observability' });
        await panel.getByRole('button', { name: /invoke_agent/ }).click();
        const turn = panel.getByRole('group', { name: /^Span invoke_agent/ });
        /** The value a term names in a description list: the definition right after it. */
        const fact = (scope: Locator, label: string) =>
          scope
            .getByRole('term')
            .filter({ hasText: new RegExp(`^${label}$`) })
            .locator('xpath=following-sibling::dd[1]');
        await expect.poll(() => fact(turn, 'Input tokens').textContent()).toBe(String(input));
        expect(await fact(turn, 'Output tokens').textContent()).toBe(String(output));
        await shot('05-trace-tokens');
        await panel.getByRole('tab', { name: 'Metrics' }).click();
        await expect.poll(() => fact(panel, 'Total tokens').textContent()).toBe(String(total));
        await shot('06-metrics-tokens');
        await panel.getByRole('button', { name: 'Close panel' }).click();

        // Read back after a reload, the stopped answer still shows what it used.
        await page.reload();
        const again = page.getByRole('article', { name: 'Assistant' }).last();
        await again.getByText(`${total} tokens (${input} in / ${output} out)`, { exact: false }).waitFor();

        // The next turn's request carries the stopped answer as the model's previous message.
        fake.chunkDelayMs = 0;
        fake.replies.push({ text: 'Carrying on from there.' });
        await page.getByRole('textbox', { name: 'Message' }).fill('Go on');
        await page.getByRole('button', { name: 'Send', exact: true }).click();
        await page.getByRole('article', { name: 'Assistant' }).last().getByText('Carrying on from there.').waitFor();
        const sent = fake.requests.filter((r) => r.path === '/v1/chat/completions').at(-1)!.body as {
          messages: { role: string; content: string }[];
        };
        expect(sent.messages.slice(-3)).toEqual([
          { role: 'user', content: 'Tell me everything' },
          { role: 'assistant', content: stored.content },
          { role: 'user', content: 'Go on' },
        ]);
        await shot('07-next-turn');

        expect(consoleErrors).toEqual([]);
        watched!.expectClean();
      },
    );
  });
}
