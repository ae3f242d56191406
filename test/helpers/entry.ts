import { join, relative } from 'node:path';

const ROOT = join(import.meta.dirname, '../..');

/**
 * The `node` arguments that run a TypeScript file of the repository (an entry point such as src/main.ts, or a
 * fixture server) as a process of its own: the file's copy in this run's transformed tree when there is one
 * (test/setup/service-build.ts, which says why), else the file itself through tsx.
 */
export function nodeArgsFor(file: string): string[] {
  const build = process.env.TEST_SERVICE_BUILD;
  if (!build) return ['--import', 'tsx', file];
  return ['--enable-source-maps', join(build, relative(ROOT, file)).replace(/\.ts$/, '.js')];
}
