import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';
import type { Availability } from './services.js';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export function probeChromium(): Availability {
  return existsSync(CHROMIUM_PATH)
    ? { available: true, reason: '' }
    : { available: false, reason: `no Chromium at ${CHROMIUM_PATH} (apt-get install chromium)` };
}

/** Headless Debian Chromium, with the flags this sandboxed, offline machine needs. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
