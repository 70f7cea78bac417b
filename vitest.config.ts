import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'

/**
 * Four projects mirror the test layers, so one layer runs alone (`npx vitest --project unit`):
 * unit (modules, no I/O), integration (dynalite), e2e (HTTP against the local server) and infra
 * (CDK templates).
 */
const env = { POWERTOOLS_LOG_LEVEL: 'SILENT', POWERTOOLS_DEV: 'false' }

export default defineConfig({
  test: {
    environment: 'node',
    env,
    // Vitest leaves one core free by default: a single worker on these 2-core machines. Much of
    // the suite waits on I/O (HTTP, child processes, dynalite), so one worker per core is faster
    // (measured: 35 s to 26 s for every project).
    maxWorkers: Math.max(2, availableParallelism()),
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'infra',
          include: ['test/infra/**/*.test.ts'],
          // Synthesizes and bundles the app once (infra/app.ts); every infra test file reads it.
          globalSetup: ['test/infra/support/app-synthesis-setup.ts'],
          // The files share no mutable state: one module graph per worker imports aws-cdk-lib once.
          isolate: false,
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
})
