import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { FakeOpenAi } from '../fakes/openai.js';
import { PASSWORD, accessToken, createUser } from '../helpers/auth.js';
import { probeChromium } from '../helpers/browser.js';
import { connect, nodeEl, settled, textOf } from '../helpers/canvas.js';
import { describeWithService } from '../helpers/services.js';
import {
  ARTIFACTS,
  ensureWebBuilt,
  openWatchedPage,
  startWebTestService,
  type WatchedPage,
  type WebTestService,
} from '../helpers/web.js';

// The builder's own screen at the two window sizes a new user found it lacking at, in headless Chromium against
// the real service: tabs, minimap, banners, edge labels, the side panel's splitter, starter templates and a run's
// trace. The model behind the agent nodes is a FAKE of an OpenAI-compatible API (no hosted model can run here).

const SIZES = [
  { width: 1280, height: 800 },
  { width: 1440, height: 900 },
] as const;

type Json = Record<string, unknown>;
interface SavedWorkflow {
  name: string;
  description: string;
  tags: string[];
  nodes: { id: string; type: string; data: Json }[];
  edges: Json[];
}
interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

// What the checks that run in the page read of it (the tests compile without the DOM's types).
interface PageRect {
  x: number;
  y: number;
  width: number;
  height: number;
  left: number;
  right: number;
  top: number;
  bottom: number;
}
interface PageElement {
  textContent: string | null;
  scrollWidth: number;
  clientWidth: number;
  offsetWidth: number;
  children: Iterable<PageElement>;
  getBoundingClientRect(): PageRect;
  getAttribute(name: string): string | null;
  querySelectorAll(selector: string): Iterable<PageElement>;
  contains(other: unknown): boolean;
  scrollIntoView(): void;
}
interface PageWindow {
  innerWidth: number;
  location: { hash: string };
  document: { elementFromPoint(x: number, y: number): unknown };
  getComputedStyle(element: PageElement): { fontSize: string };
}

async function boxOf(locator: Locator): Promise<Box> {
  const box = await locator.boundingBox();
  if (!box) throw new Error('element not on screen');
  return box;
}

const overlaps = (a: Box, b: Box) =>
  a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;

/**
 * A long pipeline laid out as a snake over three rows, ending at the bottom right: fitted to a landscape canvas
 * it fills it, so its last node lands in the corner the minimap sits in unless fitting leaves room for it.
 */
function pipeline(): Json {
  const agent = (id: string, x: number, y: number) => ({
    id,
    type: 'agent',
    position: { x, y },
    data: { label: `Step ${id.slice(1)}`, system_prompt: 'Improve the text a little.' },
  });
  const nodes = [
    { id: 'start', type: 'start', position: { x: 0, y: 0 }, data: { label: 'Start' } },
    agent('s1', 400, 0),
    agent('s2', 800, 0),
    agent('s3', 800, 350),
    agent('s4', 400, 350),
    agent('s5', 0, 350),
    agent('s6', 0, 700),
    agent('s7', 400, 700),
    { id: 'end', type: 'end', position: { x: 800, y: 700 }, data: { label: 'End' } },
  ];
  const edges = nodes.slice(1).map((n, i) => ({ id: `e${i + 1}`, source: nodes[i]!.id, target: n.id }));
  return { name: 'Long pipeline', nodes, edges };
}

/**
 * A router with three branches, one of them behind a long condition: the shape of the builder's "Router" starter
 * template, made here so that each test stands on its own.
 */
function routed(): Json {
  const agent = (id: string, label: string, y: number) => ({
    id,
    type: 'agent',
    position: { x: 760, y },
    data: { label, system_prompt: 'Answer briefly.' },
  });
  return {
    name: 'Routed requests',
    nodes: [
      { id: 'start', type: 'start', position: { x: 0, y: 200 }, data: { label: 'Start' } },
      { id: 'triage', type: 'router', position: { x: 250, y: 200 }, data: { label: 'What is it about?' } },
      agent('search', 'Search', 0),
      agent('billing', 'Billing', 200),
      agent('support', 'Support', 400),
      { id: 'end', type: 'end', position: { x: 1010, y: 200 }, data: { label: 'End' } },
    ],
    edges: [
      { id: 'e1', source: 'start', target: 'triage' },
      {
        id: 'e2',
        source: 'triage',
        target: 'search',
        label: 'a search',
        data: { condition: 'input contains "search"' },
      },
      {
        id: 'e3',
        source: 'triage',
        target: 'billing',
        label: 'billing',
        data: { condition: 'input contains "invoice" or input contains "refund"' },
      },
      { id: 'e4', source: 'triage', target: 'support', label: 'anything else' },
      { id: 'e5', source: 'search', target: 'end' },
      { id: 'e6', source: 'billing', target: 'end' },
      { id: 'e7', source: 'support', target: 'end' },
    ],
  };
}

/** An agent that searches, a tool node that searches again, a person who reviews: every kind of trace entry. */
function traced(): Json {
  return {
    name: 'Traced research',
    nodes: [
      { id: 'start', type: 'start', position: { x: 0, y: 0 }, data: { label: 'Start' } },
      {
        id: 'researcher',
        type: 'agent',
        position: { x: 280, y: 0 },
        data: { label: 'Researcher', system_prompt: 'Search, then answer.', tools: ['search_web'] },
      },
      {
        id: 'lookup',
        type: 'tool',
        position: { x: 560, y: 0 },
        data: { label: 'Look up', tool: 'search_web', args: { query: '{{ input }}', max_results: 2 } },
      },
      { id: 'review', type: 'human', position: { x: 840, y: 0 }, data: { label: 'Review', question: 'Good?' } },
      { id: 'end', type: 'end', position: { x: 1120, y: 0 }, data: { label: 'End' } },
    ],
    edges: [
      { id: 'e1', source: 'start', target: 'researcher' },
      { id: 'e2', source: 'researcher', target: 'lookup' },
      { id: 'e3', source: 'lookup', target: 'review' },
      { id: 'e4', source: 'review', target: 'end' },
    ],
  };
}

const ANSWER = 'Otters hold hands while they sleep, so that they do not drift apart.';

/** A run's recorded events as the service keeps them: each with `at`, a node's tokens joined into longer ones. */
function recordedEvents(runId: string, workflowId: string): Json[] {
  const t0 = Date.parse('2025-03-04T10:00:00.000Z');
  const at = (ms: number) => new Date(t0 + ms).toISOString();
  let seq = 0;
  const event = (ms: number, type: string, body: Json = {}) => ({ type, seq: ++seq, at: at(ms), ...body });
  return [
    event(0, 'run_started', { run_id: runId, workflow_id: workflowId, version: 1 }),
    event(0, 'node_started', { node_id: 'start', node_type: 'start' }),
    event(20, 'node_finished', { node_id: 'start', node_type: 'start' }),
    event(100, 'node_started', { node_id: 'researcher', node_type: 'agent' }),
    event(300, 'tool_call', { node_id: 'researcher', name: 'search_web', args: { query: 'sea otters' } }),
    event(700, 'tool_result', {
      node_id: 'researcher',
      name: 'search_web',
      content: '1. Sea otter facts\n   https://example.org/otters',
      is_error: false,
    }),
    event(900, 'token', { node_id: 'researcher', text: 'Recorded: sea otters ' }),
    event(1500, 'token', { node_id: 'researcher', text: 'use rocks as tools.' }),
    event(1600, 'node_finished', { node_id: 'researcher', node_type: 'agent' }),
    event(1600, 'node_started', { node_id: 'lookup', node_type: 'tool' }),
    event(1650, 'tool_call', { node_id: 'lookup', name: 'search_web', args: { query: 'otters', max_results: 2 } }),
    event(1900, 'tool_result', { node_id: 'lookup', name: 'search_web', content: 'No results.', is_error: false }),
    event(1900, 'node_finished', { node_id: 'lookup', node_type: 'tool' }),
    event(1900, 'node_started', { node_id: 'review', node_type: 'human' }),
    event(1950, 'interrupt', { run_id: runId, node_id: 'review', question: 'Good?' }),
    event(1950, 'end', {
      run_id: runId,
      status: 'waiting',
      output: null,
      path: ['start', 'researcher', 'lookup'],
    }),
    event(6000, 'run_started', { run_id: runId, workflow_id: workflowId, version: 1 }),
    event(6000, 'node_started', { node_id: 'review', node_type: 'human' }),
    event(6010, 'node_finished', { node_id: 'review', node_type: 'human' }),
    event(6010, 'node_started', { node_id: 'end', node_type: 'end' }),
    event(6020, 'node_finished', { node_id: 'end', node_type: 'end' }),
    event(6040, 'end', {
      run_id: runId,
      status: 'completed',
      output: 'No results.',
      path: ['start', 'researcher', 'lookup', 'review', 'end'],
    }),
  ];
}

describeWithService('the workflow builder at 1280×800 and 1440×900', probeChromium(), () => {
  let app: App;
  let fake: FakeOpenAi;
  let service: WebTestService;

  beforeAll(async () => {
    await ensureWebBuilt('builder');
    service = await startWebTestService();
    ({ app, fake } = service);
    for (const size of SIZES) await createUser(app, `user${size.width}`);
  }, 180_000);

  afterAll(async () => {
    await service?.close();
  });

  describe.each(SIZES)('at $width×$height', (size) => {
    const username = `user${size.width}`;
    let watched: WatchedPage;
    let page: Page;
    let token: string;
    /** The workflows some tests share, made on first use. */
    const made = new Map<string, Promise<string>>();
    const workflow = (definition: () => Json) => {
      const name = definition().name as string;
      if (!made.has(name)) made.set(name, create(definition()));
      return made.get(name)!;
    };

    const shot = (name: string) => watched.shot(`layout-${size.width}-${name}`);
    const inspector = () => page.getByRole('complementary', { name: 'Inspector' });
    const tablist = () => inspector().getByRole('tablist', { name: 'Inspector views' });
    const splitter = () => page.getByRole('separator', { name: 'Resize the side panel' });
    const saveState = () => page.locator('.save-state');

    /** A call to the builder's REST API as this size's user. */
    async function builderApi<T = Json>(
      method: string,
      path: string,
      body?: unknown,
    ): Promise<{ status: number; body: T }> {
      const res = await fetch(`${app.url('builder')}/api/builder${path}`, {
        method,
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
    }

    async function create(definition: Json): Promise<string> {
      const res = await builderApi('POST', '/workflows', definition);
      expect(res.status).toBe(201);
      return res.body.workflow_id as string;
    }

    /** Opens a saved workflow in the editor, as its address does. */
    async function open(id: string, name: string): Promise<void> {
      await page.evaluate(
        (hash) => {
          (globalThis as unknown as { location: { hash: string } }).location.hash = hash;
        },
        `#/workflows/${encodeURIComponent(id)}`,
      );
      await expect.poll(() => page.getByRole('textbox', { name: 'Workflow name' }).inputValue()).toBe(name);
      await page.locator('.react-flow__node').first().waitFor();
      await expect.poll(() => textOf(saveState())).toMatch(/^Saved · v\d+$/);
      await settled(page);
    }

    /** Every inspector tab's label is whole: nothing scrolled away or cut off by the tab list or the tab. */
    async function expectTabsWhole(): Promise<void> {
      const facts = await tablist().evaluate((element) => {
        const list = element as unknown as PageElement;
        const { innerWidth } = globalThis as unknown as PageWindow;
        const outer = list.getBoundingClientRect();
        return {
          list: { scroll: list.scrollWidth, client: list.clientWidth },
          tabs: [...list.querySelectorAll('[role="tab"]')].map((tab) => {
            const r = tab.getBoundingClientRect();
            return {
              name: tab.textContent,
              scroll: tab.scrollWidth,
              client: tab.clientWidth,
              inside: r.left >= outer.left - 0.5 && r.right <= outer.right + 0.5 && r.right <= innerWidth,
            };
          }),
        };
      });
      expect(facts.tabs.map((t) => t.name?.trim())).toEqual(['Properties', 'History', 'Code', 'Run']);
      expect(facts.list.scroll).toBeLessThanOrEqual(facts.list.client);
      for (const tab of facts.tabs) {
        expect(tab.scroll, `${tab.name} overflows`).toBeLessThanOrEqual(tab.client);
        expect(tab.inside, `${tab.name} is cut off`).toBe(true);
      }
    }

    beforeAll(async () => {
      token = await accessToken(app, username);
      watched = await openWatchedPage('builder', app.url('builder'), { viewport: size });
      page = watched.page;
      await page.goto(app.url('builder'));
      await page.getByRole('textbox', { name: 'Username' }).fill(username);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    }, 60_000);

    afterAll(async () => {
      await watched?.close();
    });

    it(
      'offers starter templates on the empty list, and each one saves as a valid workflow',
      { timeout: 60_000 },
      async () => {
        await page.getByRole('heading', { name: 'No workflows yet' }).waitFor();
        const templates = page.getByRole('region', { name: 'Or start from a template' });
        const buttons = templates.getByRole('button', { name: /^Use template / });
        await expect.poll(() => buttons.count()).toBeGreaterThanOrEqual(2);
        await shot('01-templates');
        const names = await buttons.evaluateAll((els) =>
          els.map((e) => (e as unknown as PageElement).getAttribute('aria-label') ?? ''),
        );
        const titles = names.map((name) => name.replace('Use template ', ''));
        expect(titles).toEqual(['Agent with search', 'Human approval step', 'Router']);

        for (const [index, title] of titles.entries()) {
          await page.getByRole('button', { name: `Use template ${title}` }).click();
          await expect.poll(() => page.getByRole('textbox', { name: 'Workflow name' }).inputValue()).toBe(title);
          await expect.poll(() => textOf(saveState())).toBe('Saved · v1');
          await expect.poll(() => textOf(page.locator('.validity')), { timeout: 10_000 }).toBe('Valid');
          const id = decodeURIComponent(/#\/workflows\/([^/]+)$/.exec(page.url())![1]!);

          // What was saved passes the service's validation with neither errors nor warnings.
          const saved = await builderApi<SavedWorkflow>('GET', `/workflows/${encodeURIComponent(id)}`);
          expect(saved.status).toBe(200);
          const { name, description, tags, nodes, edges } = saved.body;
          expect(name).toBe(title);
          // Each shows what its name says.
          expect(nodes.map((n) => n.type)).toContain(({ 0: 'agent', 1: 'human', 2: 'router' } as const)[index]);
          if (index === 0) expect(nodes.find((n) => n.type === 'agent')?.data.tools).toEqual(['search_web']);
          const report = await builderApi('POST', '/validate', { name, description, tags, nodes, edges });
          expect(report.status).toBe(200);
          expect(report.body).toEqual({ valid: true, errors: [], warnings: [] });
          await shot(`02-template-${index + 1}`);

          // The list offers templates only while it is empty: take this one away again.
          expect((await builderApi('DELETE', `/workflows/${encodeURIComponent(id)}`)).status).toBe(204);
          await page.getByRole('button', { name: 'Workflows', exact: true }).click();
          await page.getByRole('heading', { name: 'No workflows yet' }).waitFor();
        }
      },
    );

    it(
      "shows every inspector tab's whole label, whichever tab is selected, and at the narrowest",
      { timeout: 60_000 },
      async () => {
        await open(await workflow(routed), 'Routed requests');
        for (const name of ['Properties', 'History', 'Code', 'Run']) {
          await inspector()
            .getByRole('tab', { name: new RegExp(`^${name}`) })
            .click();
          await expectTabsWhole();
        }
        await shot('03-tabs-run');
        // At the narrowest the side panel may be made, the tabs still fit (they drop their icons).
        await splitter().focus();
        await page.keyboard.press('Home');
        await expect
          .poll(() => splitter().getAttribute('aria-valuenow'))
          .toBe(await splitter().getAttribute('aria-valuemin'));
        await expectTabsWhole();
        await shot('04-tabs-narrowest');
        await page.keyboard.press('Enter'); // back to the default width
        await inspector().getByRole('tab', { name: 'Properties' }).click();
      },
    );

    it('fits the view with no node under the minimap or the zoom controls', { timeout: 60_000 }, async () => {
      const id = await create(pipeline());
      await open(id, 'Long pipeline');
      const minimap = page.locator('.react-flow__minimap');
      const controls = page.locator('.react-flow__controls');
      const clear = async () => {
        const boxes = await page.locator('.react-flow__node').evaluateAll((els) =>
          els.map((element) => {
            const el = element as unknown as PageElement;
            const r = el.getBoundingClientRect();
            return { id: el.getAttribute('data-id'), x: r.x, y: r.y, width: r.width, height: r.height };
          }),
        );
        expect(boxes).toHaveLength(9);
        const map = await boxOf(minimap);
        const zoom = await boxOf(controls);
        return boxes.filter((node) => overlaps(node, map) || overlaps(node, zoom)).map((node) => node.id);
      };
      // As the workflow opens, and after Fit View.
      expect(await clear()).toEqual([]);
      await page.getByRole('button', { name: 'Zoom In' }).click();
      await page.getByRole('button', { name: 'Zoom In' }).click();
      await settled(page);
      await page.getByRole('button', { name: 'Fit View' }).click();
      await settled(page);
      expect(await clear()).toEqual([]);
      // Every node is still in view: fitting left room rather than pushing nodes out.
      const pane = await boxOf(page.locator('.react-flow__pane'));
      for (const node of await page.locator('.react-flow__node').all()) {
        const box = await boxOf(node);
        expect(box.x >= pane.x && box.x + box.width <= pane.x + pane.width).toBe(true);
        expect(box.y >= pane.y && box.y + box.height <= pane.y + pane.height).toBe(true);
      }
      await shot('05-minimap-clear');
    });

    it(
      "shows each router branch's label whole, above the nodes and at a readable size",
      { timeout: 60_000 },
      async () => {
        await open(await workflow(routed), 'Routed requests');
        const labels = page.locator('.wf-edge-label');
        await expect.poll(() => labels.count()).toBe(3);
        for (const label of await labels.all()) {
          const facts = await label.evaluate((element) => {
            const el = element as unknown as PageElement;
            const view = globalThis as unknown as PageWindow;
            const r = el.getBoundingClientRect();
            const scale = r.width / el.offsetWidth;
            const parts = [...el.children].map((part) => ({
              text: part.textContent,
              scroll: part.scrollWidth,
              client: part.clientWidth,
              px: parseFloat(view.getComputedStyle(part).fontSize) * scale,
            }));
            const cx = r.left + r.width / 2;
            const cy = r.top + r.height / 2;
            const points = [
              [cx, cy],
              [r.left + 8, cy],
              [r.right - 8, cy],
              [cx, r.top + 3],
              [cx, r.bottom - 3],
            ] as const;
            const covered = points.filter(([x, y]) => !el.contains(view.document.elementFromPoint(x, y))).length;
            return { text: el.textContent, parts, covered };
          });
          for (const part of facts.parts) {
            expect(part.scroll, `“${part.text}” is cut short`).toBeLessThanOrEqual(part.client);
            expect(part.px, `“${part.text}” is too small to read`).toBeGreaterThanOrEqual(9);
          }
          expect(facts.covered, `“${facts.text}” is covered`).toBe(0);
        }
        const billing = labels.filter({ hasText: 'billing' });
        expect(await textOf(billing)).toContain('input contains "invoice" or input contains "refund"');
        await shot('06-edge-labels');
        await page
          .locator('.canvas')
          .screenshot({ path: `${ARTIFACTS}/builder-layout-${size.width}-07-edge-labels-canvas.png` });
      },
    );

    it(
      'takes the "Not saved" banner away once the problems that caused it are fixed',
      { timeout: 60_000 },
      async () => {
        await page.getByRole('button', { name: 'Workflows', exact: true }).click();
        await page.getByRole('button', { name: 'New workflow' }).first().click();
        await nodeEl(page, 'end').waitFor();
        await settled(page);
        await page.getByRole('button', { name: 'Save', exact: true }).click();
        const banner = page.getByRole('alert').filter({ hasText: 'Not saved' });
        await expect.poll(() => textOf(banner)).toMatch(/^Not saved: \d+ problems? needs? fixing first/);
        await shot('08-banner-shown');

        await connect(page, 'start', 'end');
        await page.getByRole('status').filter({ hasText: 'No problems' }).waitFor();
        await expect.poll(() => banner.count(), { timeout: 10_000 }).toBe(0);
        expect(await textOf(saveState())).toBe('Not saved yet');
        await shot('09-banner-gone');
        await page.getByRole('button', { name: 'Save', exact: true }).click();
        await expect.poll(() => textOf(saveState())).toBe('Saved · v1');
      },
    );

    it(
      'widens the code panel with its splitter, by pointer and by keyboard, within bounds, and remembers it',
      { timeout: 60_000 },
      async () => {
        await open(await workflow(routed), 'Routed requests');
        await inspector().getByRole('tab', { name: 'Code' }).click();
        const code = inspector().getByRole('region', { name: /^Generated .* code$/ });
        await expect.poll(() => textOf(code), { timeout: 10_000 }).toContain('StateGraph');
        const width = async () => (await code.boundingBox())?.width ?? 0;
        const now = async () => Number(await splitter().getAttribute('aria-valuenow'));
        const before = await width();
        const min = Number(await splitter().getAttribute('aria-valuemin'));
        const max = Number(await splitter().getAttribute('aria-valuemax'));
        expect(min).toBeLessThan(before);
        // At its widest, the palette and a usable canvas stay beside it.
        expect(max).toBeLessThanOrEqual(size.width - 212 - 360);

        // Dragged 160 px to the left, the panel and its code are 160 px wider.
        const grip = await boxOf(splitter());
        const x = grip.x + grip.width / 2;
        const y = grip.y + grip.height / 2;
        await page.mouse.move(x, y);
        await page.mouse.down();
        await page.mouse.move(x - 80, y, { steps: 4 });
        await page.mouse.move(x - 160, y, { steps: 4 });
        await page.mouse.up();
        await expect.poll(width).toBeGreaterThan(before + 150);
        expect(await width()).toBeLessThan(before + 170);
        await shot('10-code-widened');

        // From the keyboard: arrows step 16 px (Shift 64), End and Home go to the bounds.
        const dragged = await now();
        await splitter().focus();
        await page.keyboard.press('ArrowLeft');
        await page.keyboard.press('ArrowLeft');
        await expect.poll(now).toBe(dragged + 32);
        await page.keyboard.press('ArrowRight');
        await expect.poll(now).toBe(dragged + 16);
        await page.keyboard.press('Shift+ArrowLeft');
        await expect.poll(now).toBe(dragged + 80);
        const keyed = await width();
        expect(keyed).toBeGreaterThan(before + 150 + 60);
        await page.keyboard.press('End');
        await expect.poll(now).toBe(max);
        expect(Math.round((await boxOf(inspector())).width)).toBe(max);
        await page.keyboard.press('Home');
        await expect.poll(now).toBe(min);
        expect(Math.round((await boxOf(inspector())).width)).toBe(min);

        // The width is remembered: after a reload it is the same.
        await page.keyboard.press('End');
        await expect.poll(now).toBe(max);
        await page.reload();
        await page.locator('.react-flow__node').first().waitFor();
        await expect.poll(async () => Math.round((await boxOf(inspector())).width)).toBe(max);
        // Enter gives the default width back.
        await splitter().focus();
        await page.keyboard.press('Enter');
        await inspector().getByRole('tab', { name: 'Code' }).click();
        await expect.poll(async () => Math.abs((await width()) - before)).toBeLessThan(2);
        await inspector().getByRole('tab', { name: 'Properties' }).click();
      },
    );

    it(
      'traces a run: when each node ran and for how long, its streamed text, its tool calls and their results',
      { timeout: 60_000 },
      async () => {
        await open(await workflow(traced), 'Traced research');
        fake.chunkDelayMs = 25;
        fake.replies.push({ toolCalls: [{ name: 'search_web', arguments: { query: 'otters' } }] }, { text: ANSWER });
        await inspector().getByRole('tab', { name: /^Run/ }).click();
        await inspector().getByLabel('Input', { exact: true }).fill('Tell me about otters');
        await inspector().getByRole('button', { name: 'Run', exact: true }).click();

        const log = inspector().getByRole('log', { name: 'Run events' });
        const question = inspector()
          .getByRole('form')
          .filter({ has: page.getByLabel('Your answer') });
        await question.waitFor({ timeout: 15_000 });
        // While the run is in progress its tab carries a dot, and every tab's label is still whole.
        await expect.poll(() => inspector().getByRole('tab', { name: 'Run (in progress)' }).count()).toBe(1);
        await expectTabsWhole();
        await shot('11-trace-waiting');
        await question.getByLabel('Your answer').fill('Yes');
        await question.getByRole('button', { name: 'Send answer' }).click();
        await inspector().locator('.run__current').getByText('Completed').waitFor({ timeout: 15_000 });

        // The run as a whole: how long it took, its steps and tool calls, on a time axis.
        const current = inspector().locator('.run__current');
        await expect.poll(() => textOf(current)).toMatch(/Took \d+(\.\d+)? (ms|s)/);
        expect(await textOf(current)).toContain('5 steps');
        expect(await textOf(current)).toContain('2 tool calls');

        // Each node: its duration, when it started, and a bar of when it ran.
        for (const name of ['Start', 'Researcher', 'Look up', 'Review', 'End']) {
          const entry = log.getByRole('group', { name, exact: true });
          await expect.poll(() => textOf(entry.locator('.run-time').first())).toMatch(/^in (< )?\d+(\.\d+)? (ms|s)$/);
          expect(await textOf(entry)).toMatch(/started \+\d+(\.\d+)? (ms|s)/);
          await entry.locator('.trace-bar__fill').waitFor();
        }
        // The agent: its streamed text, when its first token came, and its tool call with arguments and result.
        const researcher = log.getByRole('group', { name: 'Researcher', exact: true });
        expect(await textOf(researcher)).toContain(ANSWER);
        expect(await textOf(researcher)).toMatch(/first token after \d+(\.\d+)? (ms|s)/);
        const call = researcher.locator('details.run-tool');
        await call.locator('summary').click();
        expect(await textOf(call)).toMatch(/search_web.*done/);
        expect(await textOf(call.locator('pre').first())).toContain('"query": "otters"');
        await expect.poll(() => textOf(call.locator('pre').nth(1))).not.toBe('');
        expect(await textOf(call)).toContain('Result');
        // The tool node: the arguments it filled from the input.
        const lookup = log.getByRole('group', { name: 'Look up', exact: true });
        await lookup.locator('details.run-tool summary').click();
        expect(await textOf(lookup.locator('pre').first())).toContain('"query": "Tell me about otters"');
        await current.evaluate((el) => (el as unknown as PageElement).scrollIntoView());
        await shot('12-trace-completed');
        await inspector()
          .locator('.side__body')
          .screenshot({
            path: `${ARTIFACTS}/builder-layout-${size.width}-13-trace-panel.png`,
          });
      },
    );

    it(
      "reopens a past run's trace from its recorded events, and says when they are not available",
      { timeout: 60_000 },
      async () => {
        // A run made through the API: it pauses at the review, and goes on with the answer.
        const workflowId = await workflow(traced);
        const base = `/workflows/${encodeURIComponent(workflowId)}`;
        fake.chunkDelayMs = 0;
        fake.replies.push({ text: ANSWER });
        const started = await builderApi('POST', `${base}/run`, { input: 'Otters, please' });
        expect(started.body).toMatchObject({ status: 'waiting' });
        const runId = started.body.run_id as string;
        expect((await builderApi('POST', `${base}/runs/${runId}/resume`, { answer: 'Yes' })).body).toMatchObject({
          status: 'completed',
        });
        await open(workflowId, 'Traced research');
        await inspector().getByRole('tab', { name: /^Run/ }).click();
        const past = inspector().getByRole('region', { name: 'Past runs' });
        await past.getByRole('button', { name: 'Reload past runs' }).click();
        const show = past
          .getByRole('listitem')
          .filter({ hasText: 'Otters, please' })
          .getByRole('button', { name: /^Show the run started / });
        const log = inspector().getByRole('log', { name: 'Run events' });
        const events = `**/api/builder/workflows/${encodeURIComponent(workflowId)}/runs/${runId}/events`;

        // Where the service keeps a run's events, the run shows again as it went: its streamed text, its tool calls.
        const kept = await builderApi<unknown>('GET', `${base}/runs/${runId}/events`);
        if (kept.status === 200) {
          await show.click();
          const researcher = log.getByRole('group', { name: 'Researcher', exact: true });
          await expect.poll(() => textOf(researcher)).toContain(ANSWER);
          await expect.poll(() => textOf(researcher.locator('.run-item__head .run-time'))).toMatch(/^in /);
          const lookup = log.getByRole('group', { name: 'Look up', exact: true });
          await lookup.locator('details.run-tool summary').click();
          expect(await textOf(lookup.locator('pre').first())).toContain('"query": "Otters, please"');
          await shot('14-trace-reopened-from-service');
        } else {
          expect(kept.status).toBe(404);
        }

        // Its events, as the service records them, give back everything the run showed live.
        await page.route(events, (route) =>
          route.fulfill({ status: 200, contentType: 'application/json', json: recordedEvents(runId, workflowId) }),
        );
        await show.click();
        const researcher = log.getByRole('group', { name: 'Researcher', exact: true });
        await expect.poll(() => textOf(researcher)).toContain('Recorded: sea otters use rocks as tools.');
        expect(await textOf(researcher.locator('.run-item__head .run-time'))).toBe('in 1.50 s');
        expect(await textOf(researcher)).toContain('started +100 ms');
        expect(await textOf(researcher)).toContain('first token after 800 ms');
        const call = researcher.locator('details.run-tool');
        expect(await textOf(call.locator('summary'))).toMatch(/search_web.*done.*400 ms/);
        await call.locator('summary').click();
        expect(await textOf(call.locator('pre').first())).toContain('"query": "sea otters"');
        expect(await textOf(call.locator('pre').nth(1))).toContain('Sea otter facts');
        const lookup = log.getByRole('group', { name: 'Look up', exact: true });
        expect(await textOf(lookup.locator('.run-item__head .run-time'))).toBe('in 300 ms');
        // The human node waited from its question until the answer came, 4.11 s later.
        const review = log.getByRole('group', { name: 'Review', exact: true });
        expect(await textOf(review.locator('.run-item__head .run-time'))).toBe('in 4.11 s');
        expect(await textOf(inspector().locator('.run__current'))).toContain('Took 6.04 s');
        await expect.poll(() => log.locator(':scope > li').count()).toBe(5);
        await inspector()
          .locator('.run__current')
          .evaluate((el) => (el as unknown as PageElement).scrollIntoView());
        await shot('14-trace-reopened');
        await page.unroute(events);

        // A service that kept no events for the run answers 404: the summary shows, and the panel says so.
        await page.route(events, (route) =>
          route.fulfill({
            status: 404,
            contentType: 'application/json',
            json: { error: 'not_found', message: 'No run' },
          }),
        );
        await show.click();
        await inspector().getByRole('status').filter({ hasText: 'This run’s details are not available' }).waitFor();
        await expect.poll(() => log.locator(':scope > li').count()).toBe(5);
        expect(await inspector().getByRole('alert').count()).toBe(0);
        await shot('15-trace-unavailable');
        await page.unroute(events);
        watched.expectClean();
      },
    );
  });
});
