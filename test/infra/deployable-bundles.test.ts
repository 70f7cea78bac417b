import { readdirSync, readFileSync } from 'node:fs'
import { request } from 'node:http'
import {
  type APIGatewayClient,
  CreateApiKeyCommand,
  CreateUsagePlanKeyCommand,
  GetUsagePlansCommand,
  UpdateApiKeyCommand,
} from '@aws-sdk/client-api-gateway'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readAssemblyFunctions } from '#local/bundles/cloud-assembly-functions.ts'
import { ROUTES } from '#shared/config/routes-config.ts'
import {
  apiClient,
  type InProcessServer,
  managementClient,
  startInProcessServer,
  statusOf,
} from '#test/support/local-server.ts'
import { appAssemblyDir } from './support/synth-app.ts'

/**
 * What `cdk deploy` uploads, run as Lambda runs it: this run's cloud assembly (the one synthesis
 * the infra files share), each function's bundle in a `node` process of its own with its
 * template's handler and environment, behind the local gateway, calling the embedded DynamoDB
 * and the local management API over plain HTTP (the path the SDK takes for every emulator).
 * The whole end-to-end suite runs on the bundles in `.ci/run` (.ci/bundles.sh); this is the
 * quick check `npm test` makes of each function.
 */
let server: InProcessServer
let client: APIGatewayClient
let key: string

/** AWS credentials of the shell that starts the server: none of them may reach a bundle. */
const HOST_CREDENTIALS = {
  AWS_ACCESS_KEY_ID: 'AKIAHOSTSHELLONLY0001',
  AWS_SECRET_ACCESS_KEY: 'host-shell-secret-access-key-never-in-a-bundle',
  AWS_SESSION_TOKEN: 'host-shell-session-token-never-in-a-bundle',
}
const savedCredentials = Object.fromEntries(
  Object.keys(HOST_CREDENTIALS).map((name) => [name, process.env[name]]),
)

/**
 * The environment of every function process this process started from the assembly's bundles
 * (Linux: /proc). By their code directory too: test files in other worker threads of this process
 * may run function processes of their own.
 */
const functionEnvironments = (): Record<string, string>[] =>
  readdirSync('/proc')
    .filter((pid) => /^\d+$/.test(pid))
    .flatMap((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
        const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
        const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
        if (
          parent !== process.pid ||
          !command.includes('lambda-runtime-child.mjs') ||
          !command.includes(appAssemblyDir())
        ) {
          return []
        }
        const variables = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')
        return [Object.fromEntries(variables.filter(Boolean).map((v) => v.split(/=(.*)/s, 2)))]
      } catch {
        return [] // gone meanwhile
      }
    })

beforeAll(async () => {
  Object.assign(process.env, HOST_CREDENTIALS)
  server = await startInProcessServer(
    { PETSTORE_BUNDLES: appAssemblyDir(), PETSTORE_API_KEYS: '' },
    // The automatic block after 3 unauthorized answers a minute, so a test reaches it.
    { edgeNumbers: { wafAutoBlockUnauthorizedPerMinute: 3 } },
  )
  client = managementClient(server)
  const free = server.keys.created.find((entry) => entry.plan === 'free')
  if (!free) throw new Error('the local server made no free key')
  key = free.key
})
afterAll(async () => {
  client?.destroy()
  await server?.stop()
  for (const [name, value] of Object.entries(savedCredentials)) {
    if (value === undefined) delete process.env[name]
    else process.env[name] = value
  }
})

describe("the deployable bundles (the staging template's functions)", () => {
  it('are every function of the stage: one per route, the authorizer, the key sync and the automatic block', () => {
    const services = [...readAssemblyFunctions(appAssemblyDir(), 'staging').keys()].sort()
    expect(services).toEqual(
      [
        ...ROUTES.map((route) => route.operationId),
        'authorizer',
        'key-sync',
        'address-block',
      ].sort(),
    )
  })

  it('create, list and get a pet over HTTP on DynamoDB, with the rate-limit headers', async () => {
    const api = apiClient(server.baseUrl, key)
    const created = await api.post<{ id: number }>('/pets', { name: 'Bundle', categoryId: 7 })
    expect(created.status).toBe(201)
    expect(created.headers.get('location')).toBe(`${server.baseUrl}/pets/${created.json.id}`)
    expect(created.headers.get('x-ratelimit-limit')).toBe('60')

    const listed = await api.get<{ name: string }[]>('/pets?limit=5')
    expect(listed.status).toBe(200)
    expect(listed.json.map((pet) => pet.name)).toContain('Bundle')

    const fetched = await api.get(`/pets/${created.json.id}`)
    expect(fetched.status).toBe(200)
    expect(fetched.headers.get('deprecation')).toMatch(/^@\d+$/)
  })

  it("gives no function the shell's AWS credentials: dummy ones on the embedded DynamoDB", () => {
    const environments = functionEnvironments()
    // The operations, the authorizer, the key sync and the address-block function.
    expect(environments).toHaveLength(ROUTES.length + 3)
    for (const environment of environments) {
      for (const value of Object.values(HOST_CREDENTIALS)) {
        expect(JSON.stringify(environment)).not.toContain(value)
      }
      expect(environment).not.toHaveProperty('AWS_SESSION_TOKEN')
    }
    // The operations and the authorizer sign with dummy credentials; the key sync and the
    // address-block function with the local control plane's secret (their management and WAF calls).
    const signers = environments.map((environment) =>
      environment.AWS_ACCESS_KEY_ID === server.controlSecret
        ? 'control'
        : environment.AWS_ACCESS_KEY_ID,
    )
    expect(signers.sort()).toEqual(
      [...Array(ROUTES.length + 1).fill('local'), 'control', 'control'].sort(),
    )
  })

  it("refuses a key the authorizer's bundle does not find: 401 with an Error body", async () => {
    const refused = await apiClient(server.baseUrl, 'free-NoSuchKeyNoSuchKeyNoSuch').get('/pets')
    expect(refused.status).toBe(401)
    expect(refused.json).toMatchObject({ status: 401 })
  })

  it("takes a new key and a revocation through the key sync's bundle", async () => {
    const value = `pro-bundles-${'x'.repeat(24)}`
    const made = await client.send(
      new CreateApiKeyCommand({ name: 'bundle-check', value, enabled: true }),
    )
    const { items = [] } = await client.send(new GetUsagePlansCommand({}))
    const pro = items.find((plan) => plan.name?.toLowerCase().includes('pro'))
    await client.send(
      new CreateUsagePlanKeyCommand({ usagePlanId: pro?.id, keyId: made.id, keyType: 'API_KEY' }),
    )
    await server.keySyncSettled()
    expect(await statusOf(server.baseUrl, value)).toBe(200)

    await client.send(
      new UpdateApiKeyCommand({
        apiKey: made.id,
        patchOperations: [{ op: 'replace', path: '/enabled', value: 'false' }],
      }),
    )
    await server.keySyncSettled()
    expect(await statusOf(server.baseUrl, value)).toBe(401)
  })

  it("blocks an address through the address-block function's bundle, which writes WAF's IP set over HTTP", async () => {
    const from = (address: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          `${server.baseUrl}/pets`,
          {
            localAddress: address,
            headers: { Authorization: 'Bearer free-NoSuchKeyNoSuchKeyNoSuch' },
          },
          (res) => {
            res.resume()
            res.on('end', () => resolve(res.statusCode ?? 0))
          },
        )
        req.on('error', reject)
        req.end()
      })
    for (let i = 0; i < 4; i += 1) expect(await from('127.0.0.2')).toBe(401)
    await server.addressBlock.deliverLog()
    expect(server.addressBlock.waf.addresses(server.addressBlock.ipSets.ipv4)).toEqual([
      '127.0.0.2/32',
    ])
    expect(await from('127.0.0.2')).toBe(429)
    expect(await server.addressBlock.lift(['127.0.0.2'])).toMatchObject({ lifted: ['127.0.0.2'] })
    expect(await from('127.0.0.2')).toBe(401)
  })
})
