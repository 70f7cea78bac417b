import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'
import { BaseSequencer, type TestSpecification } from 'vitest/node'

/**
 * Four projects mirror the test layers, so one layer runs alone (`npx vitest --project unit`):
 * unit (modules, no I/O), integration (dynalite), e2e (HTTP against the local server) and infra
 * (CDK templates).
 */
const env = { POWERTOOLS_LOG_LEVEL: 'SILENT', POWERTOOLS_DEV: 'false' }

/**
 * The longest files first, whatever their project (vitest's own order runs one project after
 * another): both workers stay busy to the end, and the files that mostly wait (injected faults,
 * a shutdown's grace period) run beside busy ones instead of last. Files with no time recorded
 * yet keep vitest's order, ahead of the others. The infra files come last: they wait for the
 * app's synthesis, which runs in the background from the start (app-synthesis-setup.ts).
 */
class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const order = (file: TestSpecification) =>
      file.project.name === 'infra'
        ? 0
        : (this.ctx.cache.getTestSpecificationResult(file)?.duration ?? Number.MAX_SAFE_INTEGER)
    return (await super.sort(files)).sort((a, b) => order(b) - order(a))
  }
}

export default defineConfig({
  test: {
    environment: 'node',
    env,
    // Vitest leaves one core free by default: a single worker on these 2-core machines. Much of
    // the suite waits on I/O (HTTP, child processes, dynalite), so one worker per core is faster
    // (measured: 35 s to 26 s for every project).
    maxWorkers: Math.max(2, availableParallelism()),
    sequence: { sequencer: LongestFirstSequencer },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          // Modules with no I/O and no module-level state a test changes: one module graph per
          // worker imports zod, middy and the SDK once, not once per file (15 s to 5 s).
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          // One module graph and one dynalite per worker (test/support/dynamo-test-env.ts): files
          // use tables of their own, and reimporting the SDK and handlers per file cost 10 s.
          isolate: false,
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          // One module graph per worker, as for integration: each in-process server still gets
          // function instances of its own (entryUrl in local/local-server.ts). A module graph per
          // file cost about 15 s of CPU.
          isolate: false,
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
