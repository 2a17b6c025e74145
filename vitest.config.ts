import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: files run two at a time; each has its own schema and topic prefix.
    pool: 'forks',
    maxWorkers: 2,
    reporters: process.env.CI ? ['default'] : ['default'],
  },
});
