import {
  APIGatewayClient,
  CreateApiKeyCommand,
  CreateUsagePlanCommand,
  CreateUsagePlanKeyCommand,
  GetApiKeysCommand,
  GetUsagePlansCommand,
} from '@aws-sdk/client-api-gateway'
import { ScanCommand } from '@aws-sdk/lib-dynamodb'
import type { CloudFormationCustomResourceEvent } from 'aws-lambda'
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest'
import { keySyncDependencies } from '#functions/key-sync/key-sync-dependencies.ts'
import { keySyncHandler } from '#functions/key-sync/key-sync-handler.ts'
import { ApiGatewayKeySource, type KeySourceSnapshot } from '#keys/api-gateway-key-source.ts'
import type { KeySyncResult } from '#keys/key-sync-contract.ts'
import { CONTROL_SECRET_VARIABLE, controlSecretCredentials } from '#keys/local-control-config.ts'
import { runKeysCommand } from '#ops/keys/keys-command.ts'
import { CLI_SYNC_EVENT, type MirrorView, type StageSync } from '#ops/keys/stage-sync-client.ts'
import { openDeployedStage, type StageTarget } from '#ops/keys/stage-target-resolver.ts'
import { smokeKeys } from '#ops/smoke/smoke-command.ts'
import { stageOutputsFrom } from '#ops/stage/stack-outputs-reader.ts'
import { PLAN_DISPLAY_NAMES, PLAN_NAMES, type PlanName } from '#shared/config/plans-config.ts'
import { createDocumentClient } from '#shared/data/dynamo-client.ts'
import { hashApiKey } from '#shared/data/key-mirror-item.ts'
import { KeyMirrorReader } from '#shared/data/key-mirror-reader.ts'
import { DynamoRateLimiter } from '#shared/rate-limit/rate-limiter.ts'
import { keySyncContext, scheduledEvent } from '#test/support/api-gateway-events.ts'
import { type InProcessServer, startInProcessServer } from '#test/support/local-server.ts'
import { whileTheClockRuns } from '#test/support/moving-clock.ts'
import { pool } from '#test/support/task-pool.ts'
import {
  createRestApi,
  deployStageToMoto,
  type MotoStage,
  motoClients,
} from './support/moto-stage.ts'

/**
 * The management-API half of the project against moto, an AWS emulator written independently
 * of it, and the same scenario against the local control plane: where the two disagree, one of
 * them misreads AWS. Run by .ci/moto.sh (moto_server on loopback); see docs/reliability.md for
 * what moto lacks (paging, GetUsage, FlushStageAuthorizersCache, TagResource).
 */

const STAGE = 'staging'
/** More than API Gateway's page of 500 twice over, so a real API Gateway pages every listing. */
const BULK_KEYS = 1_200

interface StageView {
  client: APIGatewayClient
  restApiId: string
  stageName: string
  planIds: Record<PlanName, string>
  /** A REST API stage that is not this one. */
  otherStage: { apiId: string; stage: string }
}

/** Keys on tagged plans, on a plan without tags, with a typo, of another API, disabled, on none. */
const seedScenario = async ({ client, restApiId, stageName, planIds, otherStage }: StageView) => {
  const send = client.send.bind(client) as APIGatewayClient['send']
  const keyOn = async (name: string, usagePlanId?: string, enabled = true) => {
    const { id } = await send(new CreateApiKeyCommand({ name, enabled, tags: { team: 'moto' } }))
    if (usagePlanId) {
      await send(new CreateUsagePlanKeyCommand({ usagePlanId, keyId: id, keyType: 'API_KEY' }))
    }
  }
  const planOf = async (
    name: string,
    tags: Record<string, string>,
    stage = { apiId: restApiId, stage: stageName },
  ) => {
    const { id } = await send(new CreateUsagePlanCommand({ name, apiStages: [stage], tags }))
    return id as string
  }
  const untagged = await planOf('untagged', {})
  const typo = await planOf('typo', { 'petstore:plan': 'prp' })
  const otherApi = await planOf('other-api', { 'petstore:plan': 'pro' }, otherStage)
  await pool(
    Array.from(
      { length: BULK_KEYS },
      (_, index) => () => keyOn(`bulk-${String(index).padStart(4, '0')}`, planIds.free),
    ),
    16,
  )
  for (const plan of ['pro', 'business', 'enterprise'] as const)
    await keyOn(`${plan}-a`, planIds[plan])
  await keyOn('disabled-a', planIds.pro, false)
  await keyOn('untagged-a', untagged)
  await keyOn('typo-a', typo)
  await keyOn('other-api-a', otherApi)
  await keyOn('no-plan-a')
}

/** Names of keys as API Gateway lists them, by id. */
const keyNames = async (client: APIGatewayClient): Promise<Map<string, string>> => {
  const names = new Map<string, string>()
  let position: string | undefined
  do {
    const page = await client.send(new GetApiKeysCommand({ position, limit: 500 }))
    for (const key of page.items ?? []) if (key.id && key.name) names.set(key.id, key.name)
    position = page.position
  } while (position)
  return names
}

/** A snapshot in terms both implementations share: key names, plans, counts. */
const comparable = async (client: APIGatewayClient, snapshot: KeySourceSnapshot) => {
  const names = await keyNames(client)
  const seeded = (id: string) => names.get(id) ?? `unnamed ${id}`
  return {
    mirrored: snapshot.entries
      .map((entry) => `${seeded(entry.keyId)} ${entry.plan} ${entry.perMinute}/${entry.perDay}`)
      // The keys `npm start` makes for itself are not part of the scenario.
      .filter((line) => !line.startsWith('first-'))
      .sort(),
    refusedKeys: snapshot.refusedKeyIds.map(seeded).sort(),
    refusedPlans: snapshot.refusedPlans.map(({ reason }) => reason).sort(),
    disabledKeys: snapshot.disabledKeys,
  }
}

const planIdsFrom = (outputs: Record<string, string>): Record<PlanName, string> =>
  stageOutputsFrom(outputs, 'the stage').planIds

let stage: MotoStage
let moto: ReturnType<typeof motoClients>
let local: InProcessServer
let localClient: APIGatewayClient
let localOutputs: Record<string, string>

beforeAll(async () => {
  moto = motoClients()
  stage = await deployStageToMoto(STAGE, moto)
  local = await startInProcessServer()
  localClient = new APIGatewayClient({
    endpoint: local.managementEndpoint,
    region: 'us-east-1',
    credentials: controlSecretCredentials(local.controlSecret),
  })
  localOutputs = (await (
    await fetch(`${new URL(local.baseUrl).origin}/_local/outputs`)
  ).json()) as Record<string, string>
  const otherApiId = await createRestApi(moto.apiGateway, 'another-api', 'prod')
  await Promise.all([
    seedScenario({
      client: moto.apiGateway,
      restApiId: stage.restApiId,
      stageName: STAGE,
      planIds: planIdsFrom(stage.apiOutputs),
      otherStage: { apiId: otherApiId, stage: 'prod' },
    }),
    seedScenario({
      client: localClient,
      restApiId: localOutputs.RestApiId as string,
      stageName: localOutputs.StageName as string,
      planIds: planIdsFrom(localOutputs),
      otherStage: { apiId: 'another-api', stage: 'prod' },
    }),
  ])
}, 240_000)

afterAll(async () => {
  localClient?.destroy()
  await local?.stop()
})

describe('the deploy-time path, as far as moto goes', () => {
  it('moto creates the data stack from its synthesized template, with the outputs the tools read', () => {
    for (const name of [
      'PetTableName',
      'RateLimitTableName',
      'IdempotencyTableName',
      'KeyMirrorTableName',
    ]) {
      expect(stage.dataOutputs[name], name).toMatch(/^petstore-staging-data-/)
    }
  })

  it("the usage plans carry exactly the template's names, tags, throttles and quotas", async () => {
    const outputs = stageOutputsFrom(stage.apiOutputs, 'the API stack')
    for (const plan of PLAN_NAMES) {
      expect(outputs.planIds[plan], PLAN_DISPLAY_NAMES[plan]).toBe(
        [...stage.planIds.values()].find((id) => id === outputs.planIds[plan]),
      )
    }
    expect(outputs.restApiId).toBe(stage.restApiId)
    expect(outputs.baseUrl).toBe(
      `https://${stage.restApiId}.execute-api.us-east-1.amazonaws.com/staging/v1`,
    )
  })
})

describe('the key source reads moto as it reads the local control plane', () => {
  it('agrees on every mirrored key, refused key and plan, and disabled key', async () => {
    const read = (client: APIGatewayClient, restApiId: string, stageName: string) =>
      new ApiGatewayKeySource({ client, restApiId, stage: stageName }).read()
    const [onMoto, onLocal] = await Promise.all([
      read(moto.apiGateway, stage.restApiId, STAGE).then((snapshot) =>
        comparable(moto.apiGateway, snapshot),
      ),
      read(localClient, localOutputs.RestApiId as string, localOutputs.StageName as string).then(
        (snapshot) => comparable(localClient, snapshot),
      ),
    ])
    expect(onMoto).toEqual(onLocal)
    expect(onMoto.mirrored).toHaveLength(BULK_KEYS + 3)
    expect(onMoto.refusedKeys).toEqual(['typo-a', 'untagged-a'])
    expect(onMoto.disabledKeys).toBe(1)
  })
})

/** The key-sync function as deployed (its dependency builder, on moto), answering into a list. */
const deployedKeySync = () => {
  const responses: unknown[] = []
  const handler = keySyncHandler({
    ...keySyncDependencies({
      ...process.env,
      KEY_MIRROR_TABLE_NAME: stage.dataOutputs.KeyMirrorTableName,
      REST_API_ID: stage.restApiId,
      API_STAGE: STAGE,
      DYNAMODB_ENDPOINT: process.env.AWS_ENDPOINT_URL,
    }),
    sendResponse: async (_url, body) => {
      responses.push(JSON.parse(body))
    },
  })
  return { handler, responses }
}

const mirrorTable = () => ({
  client: createDocumentClient({ endpoint: process.env.AWS_ENDPOINT_URL, region: 'us-east-1' }),
  tableName: stage.dataOutputs.KeyMirrorTableName as string,
})

const mirroredKeyIds = async (): Promise<string[]> => {
  const { client, tableName } = mirrorTable()
  const ids: string[] = []
  let startKey: Record<string, unknown> | undefined
  do {
    const page = await client.send(
      new ScanCommand({ TableName: tableName, ExclusiveStartKey: startKey }),
    )
    for (const item of page.Items ?? []) if (typeof item.keyId === 'string') ids.push(item.keyId)
    startKey = page.LastEvaluatedKey
  } while (startKey)
  return ids.sort()
}

describe('the real key sync against moto', () => {
  it('as the deploy calls it: mirrors every valid key and answers CloudFormation SUCCESS', async () => {
    const { handler, responses } = deployedKeySync()
    const event = {
      RequestType: 'Create',
      ServiceToken: 'arn:aws:lambda:us-east-1:123456789012:function:key-sync',
      ResponseURL: 'https://cloudformation-custom-resource-response.example/',
      StackId: 'arn:aws:cloudformation:us-east-1:123456789012:stack/petstore-staging-api/1',
      RequestId: 'deploy-1',
      LogicalResourceId: 'ApiKeySyncOnDeploy',
      ResourceType: 'Custom::KeySync',
      ResourceProperties: { ServiceToken: 'arn' },
    } as CloudFormationCustomResourceEvent
    const result = (await handler(
      event,
      keySyncContext('petstore-staging-key-sync'),
    )) as KeySyncResult
    expect(responses).toEqual([
      expect.objectContaining({ Status: 'SUCCESS', RequestId: 'deploy-1' }),
    ])
    expect(result).toMatchObject({ skipped: false, upserted: BULK_KEYS + 3, refusedKeys: 2 })
    // moto has no FlushStageAuthorizersCache: the run succeeds, the flush waits for the next run.
    expect(result.cacheFlushed).toBe(false)
    const names = await keyNames(moto.apiGateway)
    const mirrored = (await mirroredKeyIds()).map((id) => names.get(id))
    expect(mirrored).toHaveLength(BULK_KEYS + 3)
    expect(mirrored).not.toContain('disabled-a')
    expect(mirrored).not.toContain('other-api-a')
    expect(mirrored).toEqual(
      expect.arrayContaining(['pro-a', 'business-a', 'enterprise-a', 'bulk-0000', 'bulk-1199']),
    )
  })

  it('as the schedule calls it: an unchanged stage writes nothing', async () => {
    const { handler } = deployedKeySync()
    const result = (await handler(
      scheduledEvent,
      keySyncContext('petstore-staging-key-sync'),
    )) as KeySyncResult
    expect(result).toMatchObject({
      skipped: false,
      upserted: BULK_KEYS + 3,
      written: 0,
      deleted: 0,
    })
  })
})

/** The CLI's sync step, in-process: the same handler as the deployed function. */
class InProcessSync implements StageSync {
  constructor(
    readonly handler: ReturnType<typeof deployedKeySync>['handler'],
    readonly mirror: KeyMirrorReader,
  ) {}

  /** The event the CLI's Lambda invoke sends, to the same handler. */
  async run(ids: readonly string[]): Promise<KeySyncResult> {
    return (await this.handler(
      { ...CLI_SYNC_EVENT, detail: { ids } } as never,
      keySyncContext('petstore-staging-key-sync'),
    )) as KeySyncResult
  }

  async mirrored(keyHash: string): Promise<MirrorView | undefined> {
    return this.mirror.get(keyHash)
  }
}

const openMoto = (): Promise<StageTarget> =>
  openDeployedStage(
    { stage: STAGE, region: 'us-east-1', warn: () => undefined },
    ({ mirror }) => new InProcessSync(deployedKeySync().handler, mirror),
  )

const cli = async (argv: string[], url?: string) => {
  let stdout = ''
  let stderr = ''
  const io = {
    stdout: (text: string) => {
      stdout += text
    },
    stderr: (text: string) => {
      stderr += text
    },
    env: { ...process.env, [CONTROL_SECRET_VARIABLE]: local.controlSecret },
  }
  const code = url
    ? await runKeysCommand(['--url', url, ...argv], io)
    : await runKeysCommand(['--stage', STAGE, ...argv], io, () => openMoto())
  return { code, stdout, stderr }
}

/** Every key and usage plan id a gateway holds: ids differ between the two, sentences must not. */
const gatewayIds = async (client: APIGatewayClient): Promise<string[]> => {
  const plans = await client.send(new GetUsagePlansCommand({ limit: 500 }))
  return [...(await keyNames(client)).keys(), ...(plans.items ?? []).map((plan) => plan.id ?? '')]
}

/** Ids, key values and dates vary between the two: the sentence does not. */
const shape = (text: string, ids: readonly string[]): string => {
  let shaped = text
    .replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, '<date>')
    .replace(/\b[a-zA-Z0-9]{20,}\b/g, '<value>')
  for (const id of ids.filter(Boolean))
    shaped = shaped.replace(new RegExp(`\\b${id}\\b`, 'g'), '<id>')
  return (
    shaped
      .replace(/petstore-(staging|local)-/g, 'petstore-<stage>-')
      .replace(/stage (staging|local)/g, 'stage <stage>')
      // The commands a message names carry the target the command was run with.
      .replace(/npm run keys -- (--url \S+|--stage \S+ --region \S+)/g, 'npm run keys -- <target>')
  )
}

describe('every keys CLI command with --stage staging, against moto and the local server', () => {
  const origin = () => new URL(local.baseUrl).origin

  /** Runs one command on both; the same exit code and the same sentences. */
  const both = async (
    argv: (ids: { moto: string; local: string }) => string[],
    ids = { moto: '', local: '' },
  ) => {
    // Ids read before the command too: a revoked key's id is gone after it.
    const before = await Promise.all([gatewayIds(moto.apiGateway), gatewayIds(localClient)])
    const onMoto = await cli(argv({ moto: ids.moto, local: ids.moto }))
    const onLocal = await cli(argv({ moto: ids.local, local: ids.local }), origin())
    const after = await Promise.all([gatewayIds(moto.apiGateway), gatewayIds(localClient)])
    const motoIds = [...before[0], ...after[0]]
    const localIds = [...before[1], ...after[1]]
    expect({ code: onMoto.code, stderr: shape(onMoto.stderr, motoIds) }).toEqual({
      code: onLocal.code,
      stderr: shape(onLocal.stderr, localIds),
    })
    return { onMoto, onLocal }
  }

  it('create, disable, enable, move, rotate, revoke, plan list and plan create agree', async () => {
    const created = await both(() => ['create', '--plan', 'free', '--name', 'cli-a'])
    expect(created.onMoto.code, created.onMoto.stderr).toBe(0)
    const value = created.onMoto.stdout.trim()
    const motoId = /created key (\S+)/.exec(created.onMoto.stderr)?.[1] as string
    const localId = /created key (\S+)/.exec(created.onLocal.stderr)?.[1] as string
    const ids = { moto: motoId, local: localId }
    const { client, tableName } = mirrorTable()
    const mirror = new KeyMirrorReader({ client, tableName })
    expect(await mirror.get(hashApiKey(value))).toMatchObject({ keyId: motoId, plan: 'free' })

    for (const argv of [
      (id: { moto: string }) => ['disable', id.moto],
      (id: { moto: string }) => ['enable', id.moto],
      (id: { moto: string }) => ['move', id.moto, '--plan', 'pro'],
    ]) {
      const { onMoto } = await both(argv, ids)
      expect(onMoto.code, onMoto.stderr).toBe(0)
    }
    expect(await mirror.get(hashApiKey(value))).toMatchObject({ keyId: motoId, plan: 'pro' })

    const rotated = await both((id) => ['rotate', id.moto], ids)
    expect(rotated.onMoto.code, rotated.onMoto.stderr).toBe(0)
    expect(await mirror.get(hashApiKey(rotated.onMoto.stdout.trim()))).toMatchObject({
      plan: 'pro',
    })

    const revoked = await both((id) => ['revoke', id.moto], ids)
    expect(revoked.onMoto.code, revoked.onMoto.stderr).toBe(0)
    expect(await mirror.get(hashApiKey(value))).toBeUndefined()

    const plans = await both(() => [
      'plan',
      'create',
      '--customer',
      'acme',
      '--per-minute',
      '100',
      '--per-day',
      '5000',
    ])
    expect(plans.onMoto.code, plans.onMoto.stderr).toBe(0)
    const listed = await both(() => ['plan', 'list'])
    expect(listed.onMoto.code).toBe(0)
    expect(listed.onMoto.stdout).toContain('enterprise:acme')
    // The same plans, limits and key counts, in the same order.
    const [motoIds, localIds] = await Promise.all([
      gatewayIds(moto.apiGateway),
      gatewayIds(localClient),
    ])
    // Columns are as wide as the ids (moto's are longer), and the local server's first keys add
    // to its counts: the rows are compared without the widths and the KEYS column.
    const rows = (text: string) =>
      text
        .trim()
        .split('\n')
        .map((line) => line.split(/ {2,}/).slice(0, -1).join(' | '))
    expect(rows(shape(listed.onMoto.stdout, motoIds))).toEqual(
      rows(shape(listed.onLocal.stdout, localIds)),
    )
    expect(listed.onMoto.stdout).toMatch(/petstore-staging-free .* 1200\n/)
  })

  it("list counts today's use in the stage's rate-limit table (DynamoDB on moto)", async () => {
    const listed = await cli(['list', '--json'])
    expect(listed.code, listed.stderr).toBe(0)
    const rows = JSON.parse(listed.stdout) as { name: string; usedToday: number | null }[]
    expect(rows.map((row) => row.name)).toEqual(expect.arrayContaining(['pro-a', 'bulk-1199']))
    // No request went through this stage: every key's admitted count today is 0.
    expect(rows.every((row) => row.usedToday === 0)).toBe(true)
    expect(listed.stderr).not.toContain('TODAY and suspensions are not shown')
  })

  it("show, lift and usage read and change the rate-limit table as the functions' limiter wrote it", async () => {
    const { stdout } = await cli(['list', '--json'])
    const keyId = (JSON.parse(stdout) as { id: string; name: string }[]).find(
      (row) => row.name === 'pro-a',
    )?.id as string
    // The functions' own limiter on moto's table: 2 admitted, then 3 refusals suspend the key.
    // The CLI reads "this minute" from Date: it is held at the limiter's instant, or a run that
    // crosses a minute boundary (3.5 s on a busy machine) reads the next minute's 0.
    const now = Date.now()
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(now)
    onTestFinished(() => {
      vi.useRealTimers()
    })
    const limiter = new DynamoRateLimiter({
      client: createDocumentClient({ endpoint: process.env.AWS_ENDPOINT_URL, region: 'us-east-1' }),
      tableName: stage.dataOutputs.RateLimitTableName as string,
      clock: () => now,
    })
    const outcomes = []
    for (let i = 0; i < 5; i += 1) {
      outcomes.push((await limiter.consume(keyId, { perMinute: 2, perDay: 100 })).outcome)
    }
    expect(outcomes).toEqual([
      'admitted',
      'admitted',
      'rate_limited',
      'rate_limited',
      'key_suspended',
    ])
    const shown = await cli(['show', keyId, '--json'])
    expect(shown.code, shown.stderr).toBe(0)
    expect(JSON.parse(shown.stdout)).toMatchObject({
      id: keyId,
      works: false,
      usage: { minute: 2, day: 2 },
    })
    expect(JSON.parse(shown.stdout).suspendedUntil).not.toBeNull()
    // lift returns once every instance rereads the suspension: it waits on the clock held here,
    // which this test moves on (half a second at a time) until it returns.
    const lifted = await whileTheClockRuns(cli(['lift', keyId]))
    expect(lifted.stderr).toMatch(/lifted the suspension/)
    expect(JSON.parse((await cli(['show', keyId, '--json'])).stdout)).toMatchObject({
      works: true,
      suspendedUntil: null,
    })
    const month = new Date(now).toISOString().slice(0, 7)
    const exported = await cli(['usage', '--month', month, '--csv'])
    expect(exported.code, exported.stderr).toBe(0)
    expect(exported.stdout).toContain(
      `${keyId},pro-a,pro,${new Date(now).toISOString().slice(0, 10)},2\r\n`,
    )
  })

  it('refuses an unknown key id on both, naming it', async () => {
    await both(() => ['revoke', 'nosuchkey1'])
  })
})

describe("the smoke test's management-API part against moto", () => {
  it('makes a working temporary key and revokes it', async () => {
    const target = await openMoto()
    try {
      const keys = smokeKeys(target.admin)
      const handedOut: string[] = []
      const key = await keys.create((id) => handedOut.push(id))
      expect(handedOut).toEqual([key.id])
      const { client, tableName } = mirrorTable()
      const mirror = new KeyMirrorReader({ client, tableName })
      expect(await mirror.get(hashApiKey(key.value))).toMatchObject({ keyId: key.id, plan: 'free' })
      await keys.revoke(key.id)
      expect(await mirror.get(hashApiKey(key.value))).toBeUndefined()
    } finally {
      target.close()
    }
  })
})
