import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page, ViewportSize } from 'playwright-core';
import { build } from 'vite';
import { expect } from 'vitest';
import type { App } from '../../src/app.js';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { startTestApp } from './app.js';
import { createUser } from './auth.js';
import { launchChromium } from './browser.js';

/** The service's web apps, each a folder under web/ built into the same folder under dist/web/. */
export type WebApp = 'playground' | 'builder' | 'run-view';

const WEB = 'web';
/** Where the browser tests leave their screenshots, for a person to look at. */
export const ARTIFACTS = 'test/artifacts';

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * Builds one web app (as `npm run build:web` does) unless its built files are newer than every source under web/:
 * the apps share code there, so a change to either may change both.
 */
export async function ensureWebBuilt(app: WebApp): Promise<void> {
  const built = `dist/${WEB}/${app}/index.html`;
  if (existsSync(built) && statSync(built).mtimeMs >= newestSource(WEB)) return;
  await build({ configFile: `${WEB}/${app}/vite.config.ts`, logLevel: 'warn' });
}

/** The service a browser test drives, and the scripted model behind it. */
export interface WebTestService {
  app: App;
  fake: FakeOpenAi;
  close: () => Promise<void>;
}

/**
 * Starts the service with a FAKE OpenAI-compatible model (no hosted model can run here) and one user, alice, who
 * signs in with the test password: what both web apps' journeys begin from.
 */
export async function startWebTestService(): Promise<WebTestService> {
  const fake = await startFakeOpenAi(['gpt-test']);
  const app = await startTestApp({
    ADMIN_PASSWORD: 'bootstrap-secret-1',
    LLM_PROVIDER: 'openai',
    LLM_BASE_URL: fake.url,
    LLM_MODEL: 'gpt-test',
    LLM_API_KEY: 'sk-fake',
  });
  await createUser(app, 'alice');
  return {
    app,
    fake,
    close: async () => {
      await app.close();
      await fake.close();
    },
  };
}

export interface WatchedPageOptions {
  viewport: ViewportSize;
  acceptDownloads?: boolean;
  /** URL schemes the page may load besides the app's own origin (the builder's downloads are blob: URLs). */
  allowSchemes?: readonly string[];
}

/** A Chromium page on one web app that records whatever would break the app's offline, strict-CSP promise. */
export interface WatchedPage {
  page: Page;
  /** Requests to anywhere but the app's origin, which are refused rather than sent. */
  external: string[];
  cspViolations: string[];
  pageErrors: string[];
  /** What the page logged as errors, a failed request's status among them (Chromium logs a 401 so). */
  consoleErrors: string[];
  /** Saves what the viewport shows as test/artifacts/<app>-<name>.png. */
  shot: (name: string) => Promise<Buffer>;
  /** Fails the test if the page reached outside its origin, broke the Content Security Policy or threw. */
  expectClean: () => void;
  close: () => Promise<void>;
}

/**
 * Launches headless Chromium on a page that may only reach `appUrl`'s origin, and records refused requests, CSP
 * violations and uncaught errors, so a browser test can prove the app works offline under the service's policy.
 */
export async function openWatchedPage(app: WebApp, appUrl: string, options: WatchedPageOptions): Promise<WatchedPage> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const allowed = [new URL(appUrl).origin, ...(options.allowSchemes ?? ['data:'])];
  const browser: Browser = await launchChromium();
  const page = await browser.newPage({ viewport: options.viewport, acceptDownloads: options.acceptDownloads });
  const external: string[] = [];
  const cspViolations: string[] = [];
  const pageErrors: string[] = [];
  const consoleErrors: string[] = [];
  await page.route('**/*', async (route) => {
    const url = route.request().url();
    if (allowed.some((prefix) => url.startsWith(prefix))) return route.continue();
    external.push(url);
    return route.abort();
  });
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
    if (message.type() === 'error') consoleErrors.push(`${message.text()} (${message.location().url})`);
  });
  page.on('pageerror', (error) => pageErrors.push(error.message));
  return {
    page,
    external,
    cspViolations,
    pageErrors,
    consoleErrors,
    shot: (name) => page.screenshot({ path: `${ARTIFACTS}/${app}-${name}.png`, fullPage: false }),
    expectClean: () => {
      expect(external).toEqual([]);
      expect(cspViolations).toEqual([]);
      expect(pageErrors).toEqual([]);
    },
    close: () => browser.close(),
  };
}

/**
 * Asserts that the service serves a web app as its Content Security Policy needs: no inline script or style, HTML
 * that is revalidated, and hashed assets cached for good. Returns the page's HTML for app-specific checks.
 */
export async function expectServedStrictly(appUrl: string): Promise<string> {
  const res = await fetch(appUrl);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
  expect(res.headers.get('content-security-policy')).not.toContain('unsafe-inline');
  expect(res.headers.get('cache-control')).toBe('no-cache');
  const html = await res.text();
  expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
  expect(html).not.toMatch(/<style/);
  const script = /src="\.?\/?(assets\/[^"]+\.js)"/.exec(html)?.[1];
  expect(script).toBeDefined();
  const asset = await fetch(`${appUrl}/${script}`);
  expect(asset.status).toBe(200);
  expect(asset.headers.get('cache-control')).toContain('immutable');
  return html;
}
