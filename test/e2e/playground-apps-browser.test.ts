import type { FrameLocator, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { askThenAnswer } from '../builder/helpers.js';
import { ADMIN_PASSWORD, PASSWORD } from '../helpers/auth.js';
import { probeChromium } from '../helpers/browser.js';
import { type SignedIn, signIn } from '../helpers/client.js';
import { startTestApp } from '../helpers/app.js';
import { describeWithService } from '../helpers/services.js';
import { ensureWebBuilt, openWatchedPage, type WatchedPage } from '../helpers/web.js';

type Json = Record<string, unknown>;

const WORKFLOW = 'Greeter';
const FRAME_TITLE = `Workflow run: ${WORKFLOW}`;
const ANSWER = 'Say hello to the quokkas';

// The playground as an MCP Apps host, in headless Chromium against the real service and its default offline model
// (no hosted model can run here): a published workflow's tool, called by the agent in the chat, shows its run view
// under the call, live, and the person answers the run's question in it.
describeWithService('the playground shows the view of a tool call that has one', probeChromium(), () => {
  let app: App;
  let alice: SignedIn;
  let watched: WatchedPage;
  let page: Page;
  let workflowId: string;
  let tool: string;
  /** What the views asked the playground to call, in order. */
  const viewCalls: { name: string; arguments: Json }[] = [];

  beforeAll(async () => {
    await ensureWebBuilt('playground');
    await ensureWebBuilt('run-view');
    app = await startTestApp({ ADMIN_PASSWORD });
    alice = await signIn(app, 'alice');
    const created = await alice.at('builder').post('/api/builder/workflows', askThenAnswer(WORKFLOW));
    expect(created.status).toBe(201);
    workflowId = created.body.workflow_id as string;
    const published = await alice.at('builder').post(`/api/builder/workflows/${workflowId}/publish`);
    expect(published.status).toBe(200);
    tool = published.body.tool_name as string;

    watched = await openWatchedPage('playground', app.url('playground'), { viewport: { width: 1280, height: 800 } });
    page = watched.page;
    page.on('request', (request) => {
      if (request.method() === 'POST' && new URL(request.url()).pathname.endsWith('/api/playground/views/tools/call')) {
        viewCalls.push(request.postDataJSON() as { name: string; arguments: Json });
      }
    });
  }, 120_000);

  afterAll(async () => {
    await watched?.close();
    await app?.close();
  });

  /** The view under the last call of the tool, and the frame it shows. */
  function viewOf(answer: Locator): { element: Locator; frame: FrameLocator } {
    const element = answer.getByTitle(FRAME_TITLE);
    return { element, frame: element.contentFrame() };
  }

  it('lists the tools of the signed-in person that have a view', async () => {
    const res = await alice.at('playground').get<{ views: Json[] }>('/api/playground/views');
    expect(res.status).toBe(200);
    expect(res.body.views).toContainEqual(
      expect.objectContaining({ tool, workflow_id: workflowId, resource_uri: 'ui://agent-service/workflow-run.html' }),
    );
  });

  it(
    'shows the run under the tool call, asks its question there, and goes on with the answer to the output',
    { timeout: 120_000 },
    async () => {
      await page.goto(app.url('playground'));
      await page.getByRole('textbox', { name: 'Username' }).fill('alice');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByRole('button', { name: 'New session' }).click();
      await expect.poll(() => page.getByRole('list', { name: 'Sessions' }).getByRole('listitem').count()).toBe(1);

      await page.getByRole('textbox', { name: 'Message' }).fill(`/tool ${tool} {"input":"hello"}`);
      await page.getByRole('button', { name: 'Send', exact: true }).click();
      const answer = page.getByRole('article', { name: 'Assistant' }).last();
      await answer.getByText(new RegExp(`Tool call ${tool}`)).waitFor();

      // The view sits under the call, in a sandboxed frame of the page's own origin.
      const { element, frame } = viewOf(answer);
      await element.waitFor();
      expect(await element.getAttribute('sandbox')).toBe('allow-scripts allow-forms');
      const src = new URL((await element.getAttribute('src')) ?? '', app.url('playground'));
      expect(src.origin).toBe(new URL(app.url('playground')).origin);
      expect(src.pathname).toMatch(/\/views\/workflow-run\.html$/);
      // The call's collapsible details are still there, above the view.
      await expect.poll(() => answer.locator('details.tool-call').count()).toBe(1);

      // The run waits at its human step: the view asks the question, at the end of the conversation in sight.
      await frame.getByText('What should I say?').first().waitFor({ timeout: 20_000 });
      await frame.getByLabel('Your answer').waitFor();
      await frame.getByText('Waiting for an answer').first().waitFor();
      await page.waitForTimeout(300);
      await watched.shot('app-question');

      // The view is as tall as what it shows: the conversation scrolls, the view does not.
      const inner = await (await element.elementHandle()).contentFrame();
      await expect
        .poll(async () => {
          const shown = (await element.boundingBox())?.height ?? 0;
          const content = Number(await inner!.evaluate('document.documentElement.scrollHeight'));
          return Math.abs(shown - content);
        })
        .toBeLessThanOrEqual(2);
      expect((await element.boundingBox())?.height).toBeGreaterThan(400);
      await answer.locator('summary').first().scrollIntoViewIfNeeded();
      await watched.shot('app-view');

      // The keyboard reaches into the view: from the call's summary, the next stop is inside the frame.
      await answer.locator('summary').first().focus();
      await expect.poll(() => page.evaluate('document.activeElement?.tagName')).toBe('SUMMARY');
      await page.keyboard.press('Tab');
      await expect.poll(() => page.evaluate('document.activeElement?.tagName')).toBe('IFRAME');
      await page.keyboard.press('Shift+Tab');

      // The answer goes through the playground to workflow_resume; the run ends with its output.
      await frame.getByLabel('Your answer').fill(ANSWER);
      await frame.getByRole('button', { name: 'Send answer' }).click();
      await frame.getByText('Completed').first().waitFor({ timeout: 20_000 });
      await expect.poll(() => frame.getByText(ANSWER).count()).toBeGreaterThan(0);
      // The output, from the offline model's answer to it.
      await expect.poll(() => frame.getByText(/Offline model:/).count()).toBeGreaterThan(0);
      await frame.getByText('Output', { exact: true }).scrollIntoViewIfNeeded();
      await watched.shot('app-completed');

      expect(viewCalls.map((c) => c.name)).toContain('workflow_run_view');
      const resume = viewCalls.find((c) => c.name === 'workflow_resume');
      expect(resume?.arguments).toMatchObject({ workflow_id: workflowId, answer: ANSWER });
      const runs = await alice.at('builder').get<Json[]>(`/api/builder/workflows/${workflowId}/runs`);
      expect(runs.body[0]).toMatchObject({ status: 'completed', run_id: resume?.arguments.run_id });
      expect(String(runs.body[0]?.output)).toContain(ANSWER);

      // Dark, as the system says: the view follows the page.
      await page.emulateMedia({ colorScheme: 'dark' });
      await expect.poll(() => frame.locator('html').getAttribute('data-theme')).toBe('dark');
      await page.waitForTimeout(300);
      await watched.shot('app-dark');
      await page.emulateMedia({ colorScheme: 'light' });
      await expect.poll(() => frame.locator('html').getAttribute('data-theme')).toBe('light');

      // Reloaded, the session's stored messages show the view under the call again.
      await page.reload();
      const again = page.getByRole('article', { name: 'Assistant' }).last();
      const reloaded = viewOf(again);
      await reloaded.frame.getByText('Completed').first().waitFor({ timeout: 20_000 });
      await page.waitForTimeout(300);
      await watched.shot('app-reloaded');

      watched.expectClean();
      expect(watched.consoleErrors).toEqual([]);
    },
  );

  it('shows no view under a call of a tool that has none', { timeout: 60_000 }, async () => {
    await page.getByRole('textbox', { name: 'Message' }).fill('search for quokkas');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const answer = page.getByRole('article', { name: 'Assistant' }).last();
    await answer.getByText(/Tool call search_web/).waitFor();
    await answer.getByText('Offline model:').first().waitFor();
    expect(await answer.locator('iframe').count()).toBe(0);
    watched.expectClean();
    expect(watched.consoleErrors).toEqual([]);
  });
});
