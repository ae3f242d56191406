import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    environment: 'node',
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Service-backed suites create their own databases and key prefixes, so files may run in parallel.
    fileParallelism: true,
  },
});
