import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from 'aws-lambda'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  bundleCredentials,
  bundleEnvironment,
  DUMMY_CREDENTIALS,
} from '#local/bundles/bundle-functions.ts'
import { AssemblyError, type AssemblyFunction } from '#local/bundles/cloud-assembly-functions.ts'
import { LambdaProcess } from '#local/bundles/lambda-process.ts'

/** A bundle written here: what it sees of its process, and ways to fail as a function can. */
const BUNDLE = `
let invocations = 0
export const handler = async (event, context) => {
  invocations += 1
  if (event.action === 'unauthorized') throw new Error('Unauthorized')
  if (event.action === 'hang') return new Promise(() => {})
  if (event.action === 'crash') process.exit(3)
  return {
    invocations,
    event,
    requestId: context.awsRequestId,
    remainingMs: context.getRemainingTimeInMillis(),
    now: Date.now(),
    table: process.env.TABLE_NAME,
    handlerSetting: process.env._HANDLER,
    sourceMaps: process.sourceMapsEnabled,
    hostVariable: process.env.PETSTORE_HOST_ONLY ?? null,
  }
}
`

let dir: string
let fn: LambdaProcess
const context = { awsRequestId: 'request-1', functionName: 'probe' } as Context

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'lambda-process-'))
  writeFileSync(join(dir, 'index.mjs'), BUNDLE)
  writeFileSync(join(dir, 'broken.mjs'), 'throw new Error("no table configured")\n')
  process.env.PETSTORE_HOST_ONLY = 'leaked'
  fn = new LambdaProcess({
    name: 'probe',
    codeDir: dir,
    handler: 'index.handler',
    environment: {
      PATH: process.env.PATH ?? '',
      TABLE_NAME: 'pets',
      _HANDLER: 'index.handler',
      NODE_OPTIONS: '--enable-source-maps',
    },
    timeoutSeconds: 1,
  })
})
afterAll(async () => {
  delete process.env.PETSTORE_HOST_ONLY
  await fn.stop()
  rmSync(dir, { recursive: true, force: true })
})

interface ProbeResult {
  invocations: number
  event: unknown
  requestId: string
  remainingMs: number
  now: number
  table: string
  handlerSetting: string
  sourceMaps: boolean
  hostVariable: string | null
}

describe('a bundle in a process of its own (LambdaProcess)', () => {
  it('gets the event, the context and only the environment it is given, NODE_OPTIONS included', async () => {
    const result = await fn.invoke<ProbeResult>({ hello: 'world' }, context)
    expect(result).toMatchObject({
      event: { hello: 'world' },
      requestId: 'request-1',
      table: 'pets',
      handlerSetting: 'index.handler',
      sourceMaps: true,
      hostVariable: null,
    })
    expect(result.remainingMs).toBeGreaterThan(0)
    expect(result.remainingMs).toBeLessThanOrEqual(1_000)
  })

  it("hands a thrown error's name and message to the gateway (the authorizer's Unauthorized)", async () => {
    await expect(fn.invoke({ action: 'unauthorized' }, context)).rejects.toThrow(/^Unauthorized$/)
  })

  it("fails an invocation past the template's timeout with Lambda's message", async () => {
    await expect(fn.invoke({ action: 'hang' }, context)).rejects.toThrow(
      'Task timed out after 1 seconds',
    )
  })

  it('starts a new environment after a crash: module state begins again', async () => {
    await expect(fn.invoke({ action: 'crash' }, context)).rejects.toThrow(/exited \(3\)/)
    const after = await fn.invoke<ProbeResult>({}, context)
    expect(after.invocations).toBe(1)
  })

  it("follows the caller's clock when a test moved it, and the real one otherwise", async () => {
    const moved = Date.UTC(2030, 11, 5)
    const realNow = Date.now
    Date.now = () => moved
    try {
      const result = await fn.invoke<ProbeResult>({}, context)
      expect(result.now).toBeGreaterThanOrEqual(moved)
      expect(result.now).toBeLessThan(moved + 1_000)
    } finally {
      Date.now = realNow
    }
    const real = await fn.invoke<ProbeResult>({}, context)
    expect(Math.abs(real.now - Date.now())).toBeLessThan(1_000)
  })

  it('reports an init failure when it starts, naming the function and the cause', async () => {
    const broken = new LambdaProcess({
      name: 'broken',
      codeDir: dir,
      handler: 'broken.handler',
      environment: { PATH: process.env.PATH ?? '' },
      timeoutSeconds: 1,
    })
    await expect(broken.start()).rejects.toThrow('broken: init failed: no table configured')
    await broken.stop()
  })
})

const assemblyFunction = (environment: Record<string, unknown>): AssemblyFunction => ({
  logicalId: 'ApiGetPetFunction1234',
  service: 'getPet',
  handler: 'index.handler',
  runtime: 'nodejs24.x',
  codeDir: '/assembly/asset.abc',
  environment,
  timeoutSeconds: 10,
  memoryMb: 512,
})

describe("a bundle's environment (bundleEnvironment)", () => {
  const local = {
    TABLE_NAME: 'petstore-local-pets',
    IDEMPOTENCY_TABLE_NAME: 'petstore-local-idempotency',
    DYNAMODB_ENDPOINT: 'http://127.0.0.1:4567',
    AWS_REGION: 'us-east-1',
    POWERTOOLS_LOG_LEVEL: 'WARN',
  }

  it("keeps the template's values, resolves deploy-time ones by name, and adds where it runs", () => {
    const environment = bundleEnvironment(
      assemblyFunction({
        POWERTOOLS_SERVICE_NAME: 'getPet',
        POWERTOOLS_LOG_LEVEL: 'INFO',
        NODE_OPTIONS: '--enable-source-maps',
        TABLE_NAME: { 'Fn::ImportValue': 'petstore-staging-data:PetTable' },
      }),
      local,
    )
    expect(environment).toMatchObject({
      POWERTOOLS_SERVICE_NAME: 'getPet',
      NODE_OPTIONS: '--enable-source-maps',
      TABLE_NAME: 'petstore-local-pets',
      DYNAMODB_ENDPOINT: 'http://127.0.0.1:4567',
      POWERTOOLS_LOG_LEVEL: 'WARN',
      _HANDLER: 'index.handler',
      AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
      LAMBDA_TASK_ROOT: '/assembly/asset.abc',
    })
  })

  it('gives a function no table its template does not name', () => {
    const environment = bundleEnvironment(assemblyFunction({ POWERTOOLS_SERVICE_NAME: 'x' }), local)
    expect(environment).not.toHaveProperty('TABLE_NAME')
    expect(environment).not.toHaveProperty('IDEMPOTENCY_TABLE_NAME')
  })

  it('refuses a deploy-time value the local stage cannot resolve, naming the variable', () => {
    expect(() =>
      bundleEnvironment(assemblyFunction({ QUEUE_URL: { Ref: 'Queue' } }), local),
    ).toThrow(AssemblyError)
    expect(() =>
      bundleEnvironment(assemblyFunction({ QUEUE_URL: { Ref: 'Queue' } }), local),
    ).toThrow(/reads QUEUE_URL/)
  })
})

describe("a bundle's credentials (bundleCredentials)", () => {
  const source = { assemblyDir: 'cdk.out', stage: 'staging' }
  const shell = {
    AWS_ACCESS_KEY_ID: 'AKIASHELL',
    AWS_SECRET_ACCESS_KEY: 'shell-secret',
    AWS_SESSION_TOKEN: 'shell-token',
  }

  it("are dummy ones, whatever the shell has, and replace the local stage's", () => {
    expect(bundleCredentials(source, shell)).toEqual(DUMMY_CREDENTIALS)
    // The local stage's environment keeps the shell's credentials for the sources' own process.
    const localStage: Record<string, string> = {
      DYNAMODB_ENDPOINT: 'http://127.0.0.1:4567',
      AWS_ACCESS_KEY_ID: 'AKIASHELL',
      AWS_SECRET_ACCESS_KEY: 'shell-secret',
    }
    const environment = bundleEnvironment(assemblyFunction({}), {
      ...localStage,
      ...bundleCredentials(source, shell),
    })
    expect(environment).toMatchObject({
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
    })
    expect(environment).not.toHaveProperty('AWS_SESSION_TOKEN')
  })

  it("are the shell's on the operator's word, and the start stops when it has none", () => {
    expect(bundleCredentials({ ...source, hostCredentials: true }, shell)).toEqual(shell)
    expect(() => bundleCredentials({ ...source, hostCredentials: true }, {})).toThrow(
      /aws configure export-credentials --format env/,
    )
  })
})
