import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'vite';

const WEB = 'web';
const BUILT = 'dist/web/playground/index.html';

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** Builds the web UI (as `npm run build:web` does) unless the built files are newer than every source. */
export async function ensureWebBuilt(): Promise<void> {
  if (existsSync(BUILT) && statSync(BUILT).mtimeMs >= newestSource(WEB)) return;
  await build({ configFile: 'web/playground/vite.config.ts', logLevel: 'warn' });
}
