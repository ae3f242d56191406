import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { SummaryReporter } from './test/summary-reporter.js';

export default defineConfig({
  test: {
    environment: 'node',
    include: ['test/**/*.test.ts'],
    // service-build.ts transforms the sources once for the tests that start the service as a process of its own.
    globalSetup: ['test/setup/postgres-template.ts', 'test/setup/service-build.ts'],
    // leaks.ts fails a file that leaves a server or a child process behind (the files share their worker, below);
    // password-cost.ts hashes the in-process apps' passwords at a test cost.
    setupFiles: ['test/setup/leaks.ts', 'test/setup/password-cost.ts'],
    pool: 'forks',
    // Each file imports the whole service (seconds of module evaluation): a worker that keeps its modules between
    // files imports it once. The service keeps no state in its modules beyond caches of what it loaded, each app
    // has its own stores, registry and database, and setup/leaks.ts checks that a file leaves nothing running.
    isolate: false,
    // Vitest's default is one worker fewer than the cores: one, on a 2-core machine. Much of the suite waits on
    // processes, browsers and the network rather than computing: on 2 cores, with a worker per core both were busy
    // about 57 % of the time, and one worker more took a full run from 498 s to 394 s on the same machine.
    maxWorkers: availableParallelism() + 1,
    reporters: ['default', new SummaryReporter()],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Service-backed suites create their own databases and key prefixes, so files may run in parallel.
    fileParallelism: true,
  },
});
