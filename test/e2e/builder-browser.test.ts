import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { FakeOpenAi } from '../fakes/openai.js';
import { PASSWORD, accessToken } from '../helpers/auth.js';
import { probeChromium } from '../helpers/browser.js';
import { centre, connect, nodeEl, settled, textOf } from '../helpers/canvas.js';
import { describeWithService } from '../helpers/services.js';
import {
  ensureWebBuilt,
  expectServedStrictly,
  openWatchedPage,
  startWebTestService,
  type WatchedPage,
  type WebTestService,
} from '../helpers/web.js';

const AGENT_REPLY = 'Three cat stories today: a rescue, a record nap, and a museum mascot.';

/** The definition fields of a workflow as the service answers it, to send back in an update. */
function pick(workflow: Record<string, unknown>): Record<string, unknown> {
  const { name, description, tags, nodes, edges } = workflow;
  return { name, description, tags, nodes, edges };
}

/** Drags a node on the canvas by its body until its centre is at a point of the page. */
async function moveNodeTo(page: Page, id: string, to: { x: number; y: number }): Promise<void> {
  const c = await centre(nodeEl(page, id));
  await page.mouse.move(c.x, c.y);
  await page.mouse.down();
  await page.mouse.move((c.x + to.x) / 2, (c.y + to.y) / 2, { steps: 5 });
  await page.mouse.move(to.x, to.y, { steps: 5 });
  await page.mouse.up();
}

// The builder's journey in headless Chromium against the real service: build a workflow on the canvas, see and fix a
// validation error, save, edit, compare and restore versions, generate code, run it and answer its question, then
// manage it from the list. The model behind the agent node is a FAKE of an OpenAI-compatible API (no hosted model
// can run here) that streams a scripted answer.
describeWithService('the workflow builder web UI', probeChromium(), () => {
  let app: App;
  let fake: FakeOpenAi;
  let service: WebTestService;
  let watched: WatchedPage;
  let page: Page;

  const shot = (name: string) => watched.shot(name);
  const problems = () => page.getByRole('list', { name: 'Problems' });
  const inspector = () => page.getByRole('complementary', { name: 'Inspector' });
  const saveState = () => page.locator('.save-state');

  beforeAll(async () => {
    await ensureWebBuilt('builder');
    service = await startWebTestService();
    ({ app, fake } = service);
    watched = await openWatchedPage('builder', app.url('builder'), {
      viewport: { width: 1440, height: 900 },
      acceptDownloads: true,
      allowSchemes: ['data:', 'blob:'],
    });
    page = watched.page;
  }, 180_000);

  afterAll(async () => {
    await watched?.close();
    await service?.close();
  });

  it('signs in and builds a workflow on the canvas, with undo, redo and Delete', { timeout: 90_000 }, async () => {
    await page.goto(app.url('builder'));
    await page.getByRole('textbox', { name: 'Username' }).fill('alice');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'No workflows yet' }).waitFor();
    await shot('01-empty-list');

    await page.getByRole('button', { name: 'New workflow' }).first().click();
    await nodeEl(page, 'start').waitFor();
    await nodeEl(page, 'end').waitFor();
    const pane = page.locator('.react-flow__pane');
    const box = (await pane.boundingBox())!;
    /** A point of the canvas, as fractions of its width and height. */
    const spot = (fx: number, fy: number) => ({ x: box.x + box.width * fx, y: box.y + box.height * fy });
    const inPane = (p: { x: number; y: number }) => ({ x: p.x - box.x, y: p.y - box.y });

    // Room for five nodes in a row: zoom out, and move start and end to the sides.
    await page.getByRole('button', { name: 'Zoom Out' }).click();
    await page.getByRole('button', { name: 'Zoom Out' }).click();
    await settled(page);
    await moveNodeTo(page, 'start', spot(0.1, 0.35));
    await moveNodeTo(page, 'end', spot(0.9, 0.35));
    // Agent: dragged from the palette.
    await page
      .getByRole('button', { name: 'Add Agent node' })
      .dragTo(pane, { targetPosition: inPane(spot(0.3, 0.35)) });
    await nodeEl(page, 'agent_1').waitFor();
    // Router: added with the keyboard in the middle of the view, then moved into place.
    await page.getByRole('button', { name: 'Add Router node' }).focus();
    await page.keyboard.press('Enter');
    await nodeEl(page, 'router_1').waitFor();
    await moveNodeTo(page, 'router_1', spot(0.5, 0.35));
    // Human: dragged from the palette, a little lower.
    await page
      .getByRole('button', { name: 'Add Human node' })
      .dragTo(pane, { targetPosition: inPane(spot(0.7, 0.58)) });
    await nodeEl(page, 'human_1').waitFor();
    expect(await page.locator('.react-flow__node').count()).toBe(5);

    // Undo takes the human node away again, redo brings it back.
    await pane.click({ position: inPane(spot(0.4, 0.8)) });
    await page.keyboard.press('Control+z');
    await expect.poll(() => nodeEl(page, 'human_1').count()).toBe(0);
    await page.keyboard.press('Control+Shift+z');
    await nodeEl(page, 'human_1').waitFor();
    await page.getByRole('button', { name: 'Undo' }).click();
    await expect.poll(() => nodeEl(page, 'human_1').count()).toBe(0);
    await page.getByRole('button', { name: 'Redo' }).click();
    await nodeEl(page, 'human_1').waitFor();

    await connect(page, 'start', 'agent_1');
    await connect(page, 'agent_1', 'router_1');
    await connect(page, 'human_1', 'end');
    await connect(page, 'router_1', 'end');
    await expect.poll(() => page.locator('.react-flow__edge').count()).toBe(4);

    // A stray edge, selected from the keyboard and removed with Delete.
    await connect(page, 'start', 'end');
    await expect.poll(() => page.locator('.react-flow__edge').count()).toBe(5);
    const stray = page.getByRole('group', { name: /^Edge from Start to End/ });
    await stray.focus();
    await page.keyboard.press('Enter');
    await page.keyboard.press('Delete');
    await expect.poll(() => page.locator('.react-flow__edge').count()).toBe(4);
    await shot('02-canvas-built');
  });

  it('highlights a router without a default branch, and clears it once fixed', { timeout: 60_000 }, async () => {
    // The router's only branch gets a condition: now it has no default.
    await page.getByRole('group', { name: /^Edge from Router to End/ }).focus();
    await page.keyboard.press('Enter');
    await inspector().getByRole('heading', { name: 'Router branch' }).waitFor();
    await inspector().getByLabel('Condition', { exact: true }).fill('approved');
    await inspector().getByLabel('Label', { exact: true }).fill('approved');

    const routerCard = nodeEl(page, 'router_1').locator('.wf-node');
    await expect.poll(() => routerCard.getAttribute('data-severity'), { timeout: 10_000 }).toBe('error');
    const issue = problems().getByRole('button', { name: /has no default branch/ });
    await issue.waitFor();
    // The message is also on the node, shown on hover and focus and read with it.
    await nodeEl(page, 'router_1').hover();
    await expect.poll(() => textOf(nodeEl(page, 'router_1').getByRole('tooltip'))).toContain('no default branch');
    expect(await nodeEl(page, 'router_1').getAttribute('aria-describedby')).toContain('wf-issues-router_1');
    await shot('03-validation-error');

    // The service refuses to save it, and says why.
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    const refused = page.getByRole('alert').filter({ hasText: 'Not saved' });
    await expect.poll(() => textOf(refused)).toMatch(/Not saved: \d+ problems? needs? fixing/);
    expect(await textOf(saveState())).toBe('Not saved yet');

    // Choosing the issue selects the node it names.
    await issue.click();
    await inspector().getByRole('heading', { name: 'Router node' }).waitFor();
    await settled(page);

    await connect(page, 'router_1', 'human_1');
    await expect.poll(() => routerCard.getAttribute('data-severity'), { timeout: 10_000 }).toBeNull();
    await page.getByRole('status').filter({ hasText: 'No problems' }).waitFor();
    // The refusal was about those problems: with them fixed, it has nothing left to say.
    await expect.poll(() => refused.count()).toBe(0);

    await page.getByRole('textbox', { name: 'Workflow name' }).fill('Cat news review');
    await page.locator('.react-flow__pane').click({ position: { x: 40, y: 40 } });
    await inspector().getByRole('heading', { name: 'Workflow' }).waitFor();
    await inspector().getByLabel('Tags').fill('demo');
    await page.keyboard.press('Enter');
    await inspector().getByText('demo', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Fit View' }).click();
    await shot('04-valid');
  });

  it(
    'saves, saves an edit as a new version, compares the two and restores the first',
    { timeout: 60_000 },
    async () => {
      await expect.poll(() => textOf(saveState())).toBe('Not saved yet');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await expect.poll(() => textOf(saveState())).toBe('Saved · v1');
      expect(page.url()).toMatch(/#\/workflows\/[^/]+$/);

      await nodeEl(page, 'agent_1').click();
      await inspector().getByRole('heading', { name: 'Agent node' }).waitFor();
      await inspector().getByLabel('Label', { exact: true }).fill('Researcher');
      await expect.poll(() => textOf(saveState())).toBe('Unsaved changes');
      await page.keyboard.press('Control+s');
      await expect.poll(() => textOf(saveState())).toBe('Saved · v2');
      await expect.poll(() => textOf(nodeEl(page, 'agent_1'))).toContain('Researcher');

      await inspector().getByRole('tab', { name: 'History' }).click();
      const versions = inspector().getByRole('list', { name: 'Versions' });
      await expect.poll(() => versions.getByRole('listitem').count()).toBe(2);
      await inspector().getByRole('button', { name: 'Compare' }).click();
      const diff = page.getByRole('dialog', { name: 'Changes from version 1 to version 2' });
      await diff.getByRole('heading', { name: /Changed agent_1/ }).waitFor();
      const row = diff.getByRole('row', { name: /data\.label/ });
      await expect.poll(() => textOf(row.getByRole('cell').first())).toContain('Agent');
      await expect.poll(() => textOf(row.getByRole('cell').last())).toContain('Researcher');
      await shot('05-diff');
      await diff.getByRole('button', { name: 'Close' }).first().click();

      await inspector().getByRole('button', { name: 'View version 1' }).click();
      const view = page.getByRole('dialog', { name: 'Version 1' });
      await view.locator('.react-flow__node').first().waitFor();
      await expect.poll(() => textOf(view.locator('.react-flow__node[data-id="agent_1"]'))).toContain('Agent');
      await shot('06-version-view');
      await view.getByRole('button', { name: 'Restore this version' }).click();
      await page.getByRole('dialog', { name: 'Restore version 1?' }).getByRole('button', { name: 'Restore' }).click();
      await expect.poll(() => textOf(saveState())).toBe('Saved · v3');
      await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
      await expect.poll(() => textOf(nodeEl(page, 'agent_1'))).not.toContain('Researcher');
      await expect.poll(() => versions.getByRole('listitem').count()).toBe(3);
      await expect.poll(() => textOf(versions.getByRole('listitem').first())).toContain('Restored from v1');
      await shot('07-restored');
    },
  );

  it('says when someone else saved meanwhile, and reloads their version', { timeout: 30_000 }, async () => {
    // Another tab saves version 4 behind this one's back.
    const id = decodeURIComponent(/#\/workflows\/([^/]+)$/.exec(page.url())![1]!);
    const headers = { Authorization: `Bearer ${await accessToken(app, 'alice')}`, 'Content-Type': 'application/json' };
    const url = `${app.url('builder')}/api/builder/workflows/${encodeURIComponent(id)}`;
    const current = (await (await fetch(url, { headers })).json()) as Record<string, unknown>;
    const elsewhere = await fetch(url, {
      method: 'PUT',
      headers,
      body: JSON.stringify({ ...pick(current), description: 'Saved from another tab', version: 3 }),
    });
    expect(elsewhere.status).toBe(200);

    await nodeEl(page, 'agent_1').click();
    await inspector().getByRole('tab', { name: 'Properties' }).click();
    await inspector().getByLabel('Label', { exact: true }).fill('Stale edit');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'Someone else saved this workflow' });
    await expect.poll(() => textOf(alert)).toContain('now version 4');
    await shot('08-conflict');
    await alert.getByRole('button', { name: 'Reload latest' }).click();
    await expect.poll(() => textOf(saveState())).toBe('Saved · v4');
    await expect.poll(() => textOf(nodeEl(page, 'agent_1'))).not.toContain('Stale edit');
    await page.locator('.react-flow__pane').click({ position: { x: 40, y: 40 } });
    await expect.poll(() => inspector().getByLabel('Description').inputValue()).toBe('Saved from another tab');
  });

  it('generates Python and TypeScript code', { timeout: 30_000 }, async () => {
    await inspector().getByRole('tab', { name: 'Code' }).click();
    const code = inspector().getByRole('region', { name: /^Generated .* code$/ });
    await expect.poll(() => textOf(code), { timeout: 10_000 }).toContain('StateGraph');
    await expect.poll(() => textOf(code)).toContain('from langgraph');
    await shot('09-code-python');
    await inspector().getByRole('tab', { name: 'TypeScript' }).click();
    await expect.poll(() => textOf(code), { timeout: 10_000 }).toContain('@langchain/langgraph');
    expect(await inspector().getByRole('button', { name: 'Copy' }).isEnabled()).toBe(true);
    const download = page.waitForEvent('download');
    await inspector().getByRole('button', { name: 'Download' }).click();
    expect((await download).suggestedFilename()).toMatch(/\.ts$/);
    await shot('10-code-typescript');
  });

  it(
    'runs the workflow, streams the agent, answers the question and sees the run end',
    { timeout: 60_000 },
    async () => {
      fake.chunkDelayMs = 40;
      fake.replies.push({ text: AGENT_REPLY });
      await inspector().getByRole('tab', { name: /^Run/ }).click();
      await inspector().getByLabel('Input', { exact: true }).fill('What happened to cats today?');
      await inspector().getByRole('button', { name: 'Run', exact: true }).click();

      const log = inspector().getByRole('log', { name: 'Run events' });
      await log.getByText('Three cat stories').waitFor({ timeout: 15_000 });
      const question = inspector()
        .getByRole('form')
        .filter({ has: page.getByLabel('Your answer') });
      await question.waitFor({ timeout: 15_000 });
      await expect.poll(() => textOf(question)).toContain('Does this look right?');
      await expect.poll(() => textOf(log)).toContain(AGENT_REPLY);
      // The node the run waits in is highlighted on the canvas.
      await expect.poll(() => nodeEl(page, 'human_1').locator('.wf-node').getAttribute('data-run')).toBe('running');
      await shot('11-run-waiting');

      await question.getByLabel('Your answer').fill('Yes, publish it');
      await question.getByRole('button', { name: 'Send answer' }).click();
      await inspector().locator('.run__current').getByText('Completed').waitFor({ timeout: 15_000 });
      await expect.poll(() => textOf(log)).toContain('Yes, publish it');
      await expect.poll(() => nodeEl(page, 'human_1').locator('.wf-node').getAttribute('data-run')).toBe('visited');
      const past = inspector().getByRole('region', { name: 'Past runs' });
      await expect.poll(() => past.getByText('Completed').count(), { timeout: 10_000 }).toBe(1);
      await shot('12-run-completed');
    },
  );

  it(
    'publishes the workflow as an MCP tool, then lists, filters, exports, imports and deletes',
    { timeout: 60_000 },
    async () => {
      await page.getByRole('button', { name: 'Publish', exact: true }).click();
      await page.getByRole('button', { name: 'Unpublish', exact: true }).waitFor();
      expect(await textOf(page.locator('.editor-bar'))).toContain('Published');

      await page.getByRole('button', { name: 'Workflows', exact: true }).click();
      const table = page.getByRole('table');
      const row = table.getByRole('row', { name: /Cat news review/ });
      await row.waitFor();
      await expect.poll(() => textOf(row)).toContain('v4');
      await expect.poll(() => textOf(row)).toContain('demo');
      await expect.poll(() => textOf(row)).toContain('Published');

      await page.getByLabel('Filter by tag').fill('nothing-has-this');
      await page.getByRole('heading', { name: 'No workflows tagged “nothing-has-this”' }).waitFor();
      await page.getByRole('button', { name: 'Clear the filter' }).click();
      await row.getByRole('button', { name: 'Show workflows tagged demo' }).click();
      await expect.poll(() => page.getByLabel('Filter by tag').inputValue()).toBe('demo');
      await expect.poll(() => table.getByRole('row').count()).toBe(2);

      const download = page.waitForEvent('download');
      await row.getByRole('button', { name: 'Export Cat news review as JSON' }).click();
      const file = await download;
      expect(file.suggestedFilename()).toBe('cat-news-review.workflow.json');
      const exported = JSON.parse(readFileSync(await file.path(), 'utf8')) as {
        name: string;
        nodes: { id: string; type: string }[];
        edges: unknown[];
      };
      expect(exported.name).toBe('Cat news review');
      expect(exported.nodes.map((n) => n.type).sort()).toEqual(['agent', 'end', 'human', 'router', 'start']);
      expect(exported.edges).toHaveLength(5);

      await page.locator('input[type="file"]').setInputFiles({
        name: 'copy.workflow.json',
        mimeType: 'application/json',
        buffer: Buffer.from(JSON.stringify({ ...exported, name: 'Imported copy' })),
      });
      await page.getByRole('textbox', { name: 'Workflow name' }).waitFor();
      await expect.poll(() => page.getByRole('textbox', { name: 'Workflow name' }).inputValue()).toBe('Imported copy');
      await expect.poll(() => textOf(saveState())).toBe('Saved · v1');
      await page.getByRole('button', { name: 'Workflows', exact: true }).click();
      await page.getByLabel('Filter by tag').fill('');
      await table.getByRole('row', { name: /Imported copy/ }).waitFor();
      await shot('13-list');

      await table.getByRole('button', { name: 'Delete Imported copy' }).click();
      const confirm = page.getByRole('dialog', { name: 'Delete workflow?' });
      await confirm.getByRole('button', { name: 'Delete' }).click();
      await expect.poll(() => table.getByRole('row', { name: /Imported copy/ }).count()).toBe(0);
      await expect.poll(() => table.getByRole('row', { name: /Cat news review/ }).count()).toBe(1);

      watched.expectClean();
    },
  );

  it('is served under a strict Content Security Policy, with cacheable assets', async () => {
    const html = await expectServedStrictly(app.url('builder'));
    // React Flow's stylesheet is bundled, not fetched from elsewhere.
    const css = /href="\.?\/?(assets\/[^"]+\.css)"/.exec(html)?.[1];
    const styles = await (await fetch(`${app.url('builder')}/${css}`)).text();
    expect(styles).toContain('.react-flow__node');
    expect(styles).not.toMatch(/url\((['"]?)(data:|https?:)/);
  });
});
