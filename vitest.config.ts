import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    // The longest stories (every gate, several times) take 30-40 s alone and twice that on a busy machine: the limit
    // is for a hang, not a measure of speed (bench/ measures that).
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Real git and child processes: two cores, so keep the pool small and predictable.
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
