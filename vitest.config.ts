import { defineConfig } from 'vitest/config';
import { SummaryReporter } from './test/summary-reporter.js';

export default defineConfig({
  test: {
    environment: 'node',
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/setup/postgres-template.ts'],
    pool: 'forks',
    reporters: ['default', new SummaryReporter()],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Service-backed suites create their own databases and key prefixes, so files may run in parallel.
    fileParallelism: true,
  },
});
