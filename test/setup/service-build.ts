import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { transformWithOxc } from 'vite';

/**
 * The tests that run the service (or a fixture server) as a process of its own used to start it through tsx,
 * whose loader hooks resolve and transform every module on a separate thread: about three seconds of a core per
 * process start, more than the start itself, and the suite starts dozens. Here the TypeScript sources are
 * transformed once per run, by the transform vitest applies to the same files in-process, into a copy of their
 * tree; those tests start the copy with plain `node` (test/helpers/entry.ts). Nothing else changes: the same
 * entry point and modules, with source maps, so stack traces still name the .ts lines.
 *
 * The copy lives in node_modules/.cache, inside the repository, so that its imports of packages resolve as the
 * sources' do, and the service finds package.json (and what it reads beside it) by walking up as it does from
 * the sources. Each run has a copy of its own, removed after it.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Every directory of TypeScript a process started by the tests may load. */
const SOURCES = ['src', 'transports', 'tools', 'workflows', 'migrations', 'test/fixtures'];
const BUILDS = join(ROOT, 'node_modules', '.cache', 'service-build');
/** Copies left by runs that never got to remove theirs (a killed run) are removed once they are this old. */
const STALE_MS = 24 * 60 * 60 * 1000;

let build: string | undefined;

function typescriptFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return typescriptFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

function removeStale(): void {
  let entries: string[];
  try {
    entries = readdirSync(BUILDS);
  } catch {
    return;
  }
  for (const name of entries) {
    const path = join(BUILDS, name);
    if (Date.now() - statSync(path).mtimeMs > STALE_MS) rmSync(path, { recursive: true, force: true });
  }
}

export async function setup(): Promise<void> {
  removeStale();
  const target = join(BUILDS, `${process.pid}-${randomBytes(4).toString('hex')}`);
  build = target;
  const files = SOURCES.flatMap((dir) => typescriptFiles(join(ROOT, dir)));
  await Promise.all(
    files.map(async (file) => {
      const { code, map } = await transformWithOxc(readFileSync(file, 'utf8'), file, { sourcemap: true });
      const sourceMap = Buffer.from(JSON.stringify(map)).toString('base64');
      const out = join(target, relative(ROOT, file)).replace(/\.ts$/, '.js');
      mkdirSync(dirname(out), { recursive: true });
      writeFileSync(out, `${code}\n//# sourceMappingURL=data:application/json;base64,${sourceMap}\n`);
    }),
  );
  process.env.TEST_SERVICE_BUILD = target;
}

export function teardown(): void {
  if (build) rmSync(build, { recursive: true, force: true });
}
