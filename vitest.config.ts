import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['node_modules', 'dist', 'test/reliability/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    env: { TZ: 'UTC' },
  },
});
