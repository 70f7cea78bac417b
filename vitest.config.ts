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
 * A test's time limit guards against a hang, never measures speed (that is the bench's). The
 * CPU-bound unit tests (every one-character change of 40 cursors, 60 days of limiter items) take
 * about 1 s on an idle 2-core machine and over 7 s at a load average of 10, past vitest's 5 s
 * default: unit tests get 30 s; integration tests 120 s (the key sync's simulations of minutes
 * of keys and plans took over 30 s at a load average of 20); e2e tests, some of which start
 * `npm start` and CLI child processes (each transpiles its TypeScript: over 30 s in all at a load
 * average of 15), get 90 s; infra (cfn-lint took over 60 s at a load average of 15) and moto
 * 120 s.
 */
const HANG_GUARD_MS = 30_000
const INTEGRATION_HANG_GUARD_MS = 120_000
const CHILD_PROCESS_HANG_GUARD_MS = 90_000

/**
 * The `slow` project: files that run the project as child processes (`npm start`, the keys and
 * smoke CLIs as a user runs them; git for the release tag and the rollback's lines), pack and
 * install the client package, drive Chromium, load the key sync, the authorizer and the local
 * server at scale (1,000 plans, a 1,000-call spike on cold authorizers, 200 concurrent creates, the
 * usage-plan backstop's minutes of requests), model minutes of key changes reaching callers, or
 * wait out injected faults in real time (answers held past the SDK's timeouts, stalls, the key
 * sync's faults). They took over half of the suite's time; `npm test` leaves them out, and
 * `npm run test:all` (what CI runs) adds them (PETSTORE_SLOW_TESTS=1).
 */
const SLOW_FILES = [
  'test/e2e/browser.test.ts',
  'test/e2e/client-package.test.ts',
  'test/e2e/gateway-backstop.test.ts',
  'test/e2e/keys-cli.test.ts',
  'test/e2e/load-without-loss.test.ts',
  'test/e2e/local-control-plane-guard.test.ts',
  'test/e2e/local-key-file.test.ts',
  'test/e2e/local-server-restart.test.ts',
  'test/e2e/local-server.test.ts',
  'test/e2e/smoke-test.test.ts',
  'test/integration/conditional-writes-late-answers.test.ts',
  'test/integration/authorizer-load-simulation.test.ts',
  'test/integration/datastore-faults.test.ts',
  'test/integration/key-propagation-latency.test.ts',
  'test/integration/key-sync-at-scale.test.ts',
  'test/integration/rate-limiter-ambiguous-writes.test.ts',
  'test/integration/key-sync-faults.test.ts',
  'test/unit/release-tag.test.ts',
  'test/unit/rollback-docs.test.ts',
]
const slowTests = process.env.PETSTORE_SLOW_TESTS === '1'

/**
 * Infra files that `npm test` leaves out and `npm run test:all` runs in the infra project (they read
 * its one synthesis): AWS's CloudFormation linter, a Python process that took 13 s of a 2-core
 * machine's CPU on every run (CI requires it: PETSTORE_REQUIRE_CFN_LINT=1).
 */
const SLOW_INFRA_FILES = ['test/infra/cfn-lint.test.ts']

/** The order the projects run in: the infra files last, as they wait for the app's synthesis. */
const PROJECT_ORDER = ['slow', 'e2e', 'bundles', 'integration', 'unit', 'infra', 'moto']

/**
 * End-to-end files whose subject is a seam of the sources alone, left out of the bundles run: the
 * key sync run cut short by a clock that jumps 40 s at every read, injected into the sync's
 * handler (a bundle reads the machine's clock, as on Lambda).
 */
const SOURCES_ONLY_E2E = ['test/e2e/local-key-sync-changes.test.ts']

/**
 * One project after another, its longest files first. A worker runs the next file only if it is of
 * the same project (vitest stops it otherwise, and a new one imports the project's modules again:
 * interleaving the projects started 32 workers instead of 8). Longest first keeps both workers busy
 * to the end of each project; files with no time recorded yet go first. The app's synthesis runs
 * in the background from the start (app-synthesis-setup.ts), so the infra files rarely wait.
 */
class ProjectThenLongestSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => PROJECT_ORDER.indexOf(file.project.name)
    const duration = (file: TestSpecification) =>
      this.ctx.cache.getTestSpecificationResult(file)?.duration ?? Number.MAX_SAFE_INTEGER
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b) || duration(b) - duration(a))
  }
}

export default defineConfig({
  test: {
    environment: 'node',
    env,
    // Vitest leaves one core free by default: a single worker on these 2-core machines. One worker
    // per core, each a thread, not a process, for the in-process layers: a thread asks the main
    // process for its modules over a MessagePort rather than a child process's IPC channel
    // (measured on an idle 2-core machine, npm test's files with 2 workers: threads 56.3 s and
    // 88 s of CPU, processes 65.1 s and 105 s; 3 workers took more CPU and were no faster, as
    // processes 72.1 s and 136 s). Lint and type-check run beside the tests at a lower priority
    // and take what the two leave idle (test/support/test-steps.ts). Each thread has its module
    // graph, its process.env and its dynalite; the files whose subject is processes and signals
    // keep a process each (`slow`, `bundles`, `moto`).
    maxWorkers: availableParallelism(),
    pool: 'threads',
    sequence: { sequencer: ProjectThenLongestSequencer },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          exclude: SLOW_FILES,
          // Modules with no I/O and no module-level state a test changes: one module graph per
          // worker imports zod, middy and the SDK once, not once per file (15 s to 5 s).
          isolate: false,
          testTimeout: HANG_GUARD_MS,
          hookTimeout: HANG_GUARD_MS,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          exclude: SLOW_FILES,
          // One module graph and one dynalite per worker (test/support/dynamo-test-env.ts): files
          // use tables of their own, and reimporting the SDK and handlers per file cost 10 s.
          isolate: false,
          testTimeout: INTEGRATION_HANG_GUARD_MS,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          exclude: SLOW_FILES,
          // One module graph per worker, as for integration: each in-process server still gets
          // function instances of its own (entryUrl in local/local-server.ts). A module graph per
          // file cost about 15 s of CPU.
          isolate: false,
          testTimeout: CHILD_PROCESS_HANG_GUARD_MS,
          hookTimeout: 60_000,
        },
      },
      ...(slowTests
        ? [
            {
              extends: true,
              test: {
                name: 'slow',
                include: SLOW_FILES,
                pool: 'forks',
                isolate: false,
                testTimeout: INTEGRATION_HANG_GUARD_MS,
                hookTimeout: 120_000,
              },
            },
          ]
        : []),
      {
        extends: true,
        test: {
          name: 'infra',
          include: ['test/infra/**/*.test.ts'],
          exclude: slowTests ? [] : SLOW_INFRA_FILES,
          // Synthesizes and bundles the app once (infra/app.ts); every infra test file reads it.
          globalSetup: ['test/infra/support/app-synthesis-setup.ts'],
          // The files share no mutable state: one module graph per worker imports aws-cdk-lib once.
          isolate: false,
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      // The end-to-end suite again on the functions as `cdk deploy` ships them: the bundles of the
      // cloud assembly in PETSTORE_BUNDLES, each in a process of its own (`npm run test:bundles`,
      // .ci/run). Only where that is set, never in `npm test`.
      ...(process.env.PETSTORE_BUNDLES
        ? [
            {
              extends: true,
              test: {
                name: 'bundles',
                include: ['test/e2e/**/*.test.ts'],
                pool: 'forks',
                exclude: SOURCES_ONLY_E2E,
                isolate: false,
                testTimeout: CHILD_PROCESS_HANG_GUARD_MS,
                hookTimeout: 60_000,
              },
            },
          ]
        : []),
      // The management API against moto_server, an AWS emulator this project did not write: only
      // where .ci/moto.sh starts one (AWS_ENDPOINT_URL), never in `npm test`.
      ...(process.env.PETSTORE_MOTO === '1'
        ? [
            {
              extends: true,
              test: {
                name: 'moto',
                include: ['test/moto/**/*.test.ts'],
                pool: 'forks',
                testTimeout: 120_000,
                hookTimeout: 300_000,
              },
            },
          ]
        : []),
    ],
  },
})
