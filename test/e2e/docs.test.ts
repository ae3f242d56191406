import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { startTestApp } from '../helpers/app.js';
import { launchChromium, probeChromium } from '../helpers/browser.js';
import { describeWithService } from '../helpers/services.js';

describeWithService('interactive API docs render offline', probeChromium(), () => {
  let app: App;
  let browser: Browser;
  let page: Page;
  const external: string[] = [];

  beforeAll(async () => {
    app = await startTestApp();
    browser = await launchChromium();
    page = await browser.newPage();
    const origin = new URL(app.url('main')).origin;
    // Anything not served by the service itself is refused, as it would be on a machine with no network.
    await page.route('**/*', async (route) => {
      const url = route.request().url();
      if (url.startsWith(origin) || url.startsWith('blob:') || url.startsWith('data:')) return route.continue();
      external.push(url);
      return route.abort();
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it('Swagger UI at /docs lists the operations from /openapi.json', async () => {
    await page.goto(`${app.url('main')}/docs`);
    await page.locator('.opblock-summary-path', { hasText: '/api/version' }).first().waitFor({ timeout: 20_000 });
    expect(await page.locator('.opblock-summary-path').count()).toBeGreaterThanOrEqual(7);
    await expect(page.locator('.info .title').first().textContent()).resolves.toContain('Agent Service');
    expect(external).toEqual([]);
  });

  it('Redoc at /redoc renders the reference', async () => {
    await page.goto(`${app.url('main')}/redoc`);
    await page.locator('h1', { hasText: 'Agent Service' }).waitFor({ timeout: 15_000 });
    await page.locator('h2', { hasText: 'Service release and API version metadata' }).waitFor({ timeout: 15_000 });
    // Redoc's footer asks its CDN for a decorative logo; refused here, the reference renders all the same.
    expect(external.filter((url) => !url.startsWith('https://cdn.redoc.ly/'))).toEqual([]);
  });
});
