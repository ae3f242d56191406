import { createServer, type Server } from 'node:http';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client as ModernClient } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Browser, Frame, Page } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { probeChromium, launchChromium } from '../helpers/browser.js';
import { type SignedIn, signIn } from '../helpers/client.js';
import { connectModernClient } from '../helpers/mcp.js';
import { describeWithService } from '../helpers/services.js';
import { ARTIFACTS, ensureWebBuilt, startWebTestService, type WebTestService } from '../helpers/web.js';

/** What a host that renders MCP App views announces (SEP-1865). */
const APPS = { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } } };
const DRAFT = 'A draft about quokkas: they smile, they hop, they live on Rottnest Island.';
const FINAL = 'Final answer, as you asked: short and cheerful.';

type Json = Record<string, unknown>;
type AnyClient = Pick<Client, 'callTool' | 'listTools' | 'readResource' | 'close'>;

/** Drafts with the model, asks a person what to change, then answers with the model. */
function draftAskAnswer() {
  const at = (x: number) => ({ x, y: 80 });
  return {
    name: 'Draft and check',
    nodes: [
      { id: 'start', type: 'start', position: at(0), data: { label: 'Start' } },
      { id: 'draft', type: 'agent', position: at(200), data: { label: 'Draft', system_prompt: 'Draft it.' } },
      { id: 'check', type: 'human', position: at(400), data: { label: 'Check', question: 'What should change?' } },
      { id: 'answer', type: 'agent', position: at(600), data: { label: 'Answer', system_prompt: 'Apply it.' } },
      { id: 'end', type: 'end', position: at(800), data: { label: 'End' } },
    ],
    edges: [
      { id: 'e1', source: 'start', target: 'draft' },
      { id: 'e2', source: 'draft', target: 'check' },
      { id: 'e3', source: 'check', target: 'answer' },
      { id: 'e4', source: 'answer', target: 'end' },
    ],
  };
}

/** Serves the test host (built from test/fixtures/apps-host) on a port of its own: the host's origin. */
async function serveHost(): Promise<{ url: string; server: Server }> {
  const outDir = mkdtempSync(join(tmpdir(), 'apps-host-'));
  await build({
    root: 'test/fixtures/apps-host',
    base: './',
    logLevel: 'warn',
    configFile: false,
    build: { outDir, emptyOutDir: true, target: 'es2022', modulePreload: { polyfill: false } },
  });
  const server = createServer((req, res) => {
    const path = req.url === '/' ? '/index.html' : (req.url ?? '/');
    try {
      const body = readFileSync(join(outDir, path.replace(/\.\./g, '')));
      res.setHeader('Content-Type', path.endsWith('.js') ? 'text/javascript' : 'text/html');
      res.end(body);
    } catch {
      res.statusCode = 404;
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return { url: `http://127.0.0.1:${address.port}/`, server };
}

describeWithService('MCP Apps: a published workflow run shown in a host', probeChromium(), () => {
  let service: WebTestService;
  let alice: SignedIn;
  let host: { url: string; server: Server };
  let browser: Browser;
  let tool: string;
  let workflowId: string;

  beforeAll(async () => {
    await ensureWebBuilt('run-view');
    service = await startWebTestService();
    alice = await signIn(service.app, 'alice');
    const created = await alice.at('builder').post('/api/builder/workflows', draftAskAnswer());
    expect(created.status).toBe(201);
    workflowId = created.body.workflow_id as string;
    const published = await alice.at('builder').post(`/api/builder/workflows/${workflowId}/publish`);
    tool = published.body.tool_name as string;
    host = await serveHost();
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    host?.server.close();
    await service?.close();
  });

  /** The host page, recording every request that leaves the host's origin and every console error. */
  async function openHost(client: AnyClient, size = { width: 1000, height: 860 }) {
    const page = await browser.newPage({ viewport: size });
    const offHost: string[] = [];
    const errors: string[] = [];
    await page.route('**/*', async (route) => {
      const url = route.request().url();
      if (url.startsWith(host.url) || url.startsWith('about:')) return route.continue();
      offHost.push(url);
      return route.abort();
    });
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    page.on('pageerror', (error) => errors.push(error.message));
    const calls: string[] = [];
    await page.exposeFunction('hostCallTool', async (params: { name: string; arguments?: Json }) => {
      calls.push(params.name);
      return client.callTool(params);
    });
    await page.goto(host.url);
    return { page, offHost, errors, calls };
  }

  /** The view's frame, once the host has put it in place. */
  async function viewFrame(page: Page): Promise<Frame> {
    await expect.poll(() => page.frames().length).toBeGreaterThan(1);
    return page.frames()[1]!;
  }

  // What the check in the page reads of it (the tests compile without the DOM's types).
  interface StyledElement {
    ownerDocument: { defaultView: { getComputedStyle(of: StyledElement): { backgroundColor: string; color: string } } };
    querySelector(selector: string): StyledElement;
  }

  /** Relative luminance (0 black, 1 white) of a computed `rgb()`/`rgba()` colour. */
  function luminance(color: string): number {
    const [r, g, b] = (color.match(/[\d.]+/g) ?? []).slice(0, 3).map((part) => {
      const c = Number(part) / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
  }

  async function journey(client: AnyClient, label: string, theme: 'light' | 'dark') {
    const listed = await client.listTools();
    const described = listed.tools.find((t) => t.name === tool)!;
    const uri = (described._meta as { ui?: { resourceUri?: string } } | undefined)?.ui?.resourceUri;
    expect(uri).toBe('ui://agent-service/workflow-run.html');
    const resource = await client.readResource({ uri: uri! });
    const content = resource.contents[0] as { mimeType: string; text: string; _meta?: { ui?: { csp?: Json } } };
    expect(content.mimeType).toBe('text/html;profile=mcp-app');
    // One self-contained file: nothing for the view to fetch.
    expect(content.text).not.toContain('./assets/');

    const { page, offHost, errors, calls } = await openHost(client);
    await page.evaluate(
      (view) => (globalThis as unknown as { openView: (v: unknown) => Promise<void> }).openView(view),
      { html: content.text, tool: described, theme, csp: content._meta?.ui?.csp ?? {} },
    );
    const frame = await viewFrame(page);

    // The model streams slowly, so the run is seen going before the host's call returns.
    service.fake.chunkDelayMs = 150;
    service.fake.replies.push({ text: DRAFT }, { text: FINAL });
    const args = { input: 'Write about quokkas' };
    await page.evaluate(
      (a) => (globalThis as unknown as { sendToolInput: (a: Json) => Promise<void> }).sendToolInput(a),
      args,
    );
    let returned = false;
    const call = client.callTool({ name: tool, arguments: args }).then((result) => {
      returned = true;
      return result;
    });
    await expect.poll(() => frame.getByText('quokkas: they smile').count(), { timeout: 15_000 }).toBeGreaterThan(0);
    expect(returned).toBe(false);
    await page.screenshot({ path: `${ARTIFACTS}/mcp-app-${label}-running.png` });

    const result = await call;
    expect((result.structuredContent as Json).status).toBe('waiting');
    await page.evaluate(
      (r) => (globalThis as unknown as { sendToolResult: (r: unknown) => Promise<void> }).sendToolResult(r),
      result,
    );
    await expect.poll(() => frame.getByText('What should change?').count()).toBeGreaterThan(0);
    await frame.getByLabel('Your answer').scrollIntoViewIfNeeded();
    await expect.poll(() => frame.getByText('Waiting for an answer').count()).toBeGreaterThan(0);
    // The question stands out from its box in the host's theme, not the system's (dark text on the light box, light
    // on the dark one): the box's colours once followed only the system's preference.
    const { box, text } = await frame.locator('.interrupt').evaluate((node) => {
      const element = node as unknown as StyledElement;
      const style = (of: StyledElement) => element.ownerDocument.defaultView.getComputedStyle(of);
      return { box: style(element).backgroundColor, text: style(element.querySelector('.interrupt__question')).color };
    });
    expect(Math.abs(luminance(box) - luminance(text)), `${text} on ${box}`).toBeGreaterThan(0.4);
    expect(luminance(box) < 0.5, `box ${box}`).toBe(theme === 'dark');
    await page.screenshot({ path: `${ARTIFACTS}/mcp-app-${label}-question.png` });

    service.fake.chunkDelayMs = 0;
    await frame.getByLabel('Your answer').fill('Make it cheerful');
    await frame.getByRole('button', { name: 'Send answer' }).click();
    await expect.poll(() => frame.getByText(FINAL).count(), { timeout: 15_000 }).toBeGreaterThan(0);
    await expect.poll(() => frame.getByText('Completed').count()).toBeGreaterThan(0);
    await page.screenshot({ path: `${ARTIFACTS}/mcp-app-${label}-completed.png` });

    // Everything the view did went through the host to the server, as the person using it.
    expect(calls).toContain('workflow_run_view');
    expect(calls).toContain('workflow_resume');
    // The answer reached the model: it was asked to apply it.
    const last = service.fake.requests.at(-1)!;
    expect(JSON.stringify(last.body)).toContain('Make it cheerful');
    expect(offHost).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  }

  it('shows the run live, asks its question, resumes with the answer and shows the output (1.x client)', async () => {
    const client = new Client({ name: 'test-host', version: '1.0.0' }, { capabilities: APPS });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${service.app.url('main')}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${alice.token}` } },
      }),
    );
    try {
      await journey(client, 'sdk1', 'light');
    } finally {
      await client.close();
    }
  });

  it('does the same for a 2.x client pinned to 2026-07-28, in the dark', async () => {
    const client: ModernClient = await connectModernClient(service.app, alice.token, {
      capabilities: { ...APPS, elicitation: { form: {} } },
    });
    try {
      await journey(client as unknown as AnyClient, 'sdk2', 'dark');
    } finally {
      await client.close();
    }
  });
});
