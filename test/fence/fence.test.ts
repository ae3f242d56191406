import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
const DEPCRUISE = join(ROOT, 'node_modules/.bin/depcruise');
const LAYERS = ['src', 'transports', 'tools', 'workflows', 'migrations'];

interface Violation {
  from: string;
  to: string;
  rule: { name: string };
}

/** Runs the project's fence over `cwd` and returns what it reports. */
async function cruise(cwd: string): Promise<string[]> {
  const paths = LAYERS.filter((layer) => cwd === ROOT || layer === 'src' || layer === 'transports');
  const { stdout } = await run(
    DEPCRUISE,
    ['--config', join(ROOT, '.dependency-cruiser.cjs'), '--output-type', 'json', ...paths],
    { cwd, maxBuffer: 64 * 1024 * 1024 },
  ).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
  return (JSON.parse(stdout) as { summary: { violations: Violation[] } }).summary.violations
    .map((v) => `${v.rule.name}: ${v.from} → ${v.to}`)
    .sort();
}

const fixtures: string[] = [];
afterAll(() => {
  for (const dir of fixtures) rmSync(dir, { recursive: true, force: true });
});

/** A throw-away tree laid out like the project, holding the given files. */
function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'fence-'));
  fixtures.push(dir);
  copyFileSync(join(ROOT, 'tsconfig.json'), join(dir, 'tsconfig.json'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

describe('the import fence', () => {
  it('finds no violation in the project itself', async () => {
    expect(await cruise(ROOT)).toEqual([]);
  }, 60_000);

  it('rejects upward imports, reaching into another module, and adapters in wires', async () => {
    const dir = tree({
      'src/modules/users/index.ts': "export { UsersService } from './users.service.js';\n",
      'src/modules/users/users.service.ts': 'export class UsersService {}\n',
      'src/modules/users/users.store.ts': 'export const findUser = () => undefined;\n',
      // Reaches past the users module's index.
      'src/modules/billing/billing.service.ts':
        "import { findUser } from '../users/users.store.js';\nexport const bill = () => findUser();\n",
      // Through the index: allowed.
      'src/modules/billing/billing.routes.ts':
        "import { UsersService } from '../users/index.js';\nexport const routes = () => new UsersService();\n",
      'src/adapters/cache/port.ts': 'export interface Cache { get(key: string): string | undefined }\n',
      // An adapter reaching up into a module.
      'src/adapters/cache/memory.ts':
        "import { UsersService } from '../../modules/users/index.js';\nexport const cache = () => new UsersService();\n",
      // A wire using an adapter implementation instead of its port.
      'transports/http.ts':
        "import { cache } from '../src/adapters/cache/memory.js';\nexport const serve = () => cache();\n",
      // A module reaching into a wire.
      'src/modules/users/users.routes.ts':
        "import { serve } from '../../../transports/http.js';\nexport const r = serve;\n",
    });
    expect(await cruise(dir)).toEqual([
      'adapters-below-modules: src/adapters/cache/memory.ts → src/modules/users/index.ts',
      'module-internals-stay-inside: src/modules/billing/billing.service.ts → src/modules/users/users.store.ts',
      'modules-depend-on-ports-not-adapters: transports/http.ts → src/adapters/cache/memory.ts',
      'nothing-below-wires-imports-wires: src/modules/users/users.routes.ts → transports/http.ts',
    ]);
  }, 60_000);
});
