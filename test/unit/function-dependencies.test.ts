import { describe, expect, it } from 'vitest'
import { authorizerDependencies } from '#functions/authorizer/authorizer-dependencies.ts'
import { createPetDependencies } from '#functions/create-pet/create-pet-dependencies.ts'
import { getPetDependencies } from '#functions/get-pet/get-pet-dependencies.ts'
import { keySyncDependencies } from '#functions/key-sync/key-sync-dependencies.ts'
import { listPetsDependencies } from '#functions/list-pets/list-pets-dependencies.ts'

/**
 * Each function's wiring (`functions/<fn>/<fn>-dependencies.ts`) reads its environment once, at
 * the cold start: a variable its stack forgot fails there, naming the variable, never later in a
 * request. (test/infra/functions.test.ts starts every deployed bundle with its stack's
 * environment.)
 */
const AWS = { AWS_REGION: 'eu-west-1' }
const PET_OPERATION = { ...AWS, TABLE_NAME: 'pets', RATE_LIMIT_TABLE_NAME: 'rate-limits' }

const functions = [
  ['getPet', getPetDependencies, PET_OPERATION],
  ['listPets', listPetsDependencies, { ...PET_OPERATION, CURSOR_SECRET: 'c'.repeat(64) }],
  ['createPet', createPetDependencies, { ...PET_OPERATION, IDEMPOTENCY_TABLE_NAME: 'idempotency' }],
  [
    'authorizer',
    authorizerDependencies,
    {
      ...AWS,
      KEY_MIRROR_TABLE_NAME: 'key-mirror',
      STORE_KEY_TABLE_NAME: 'store-keys',
      KEY_MAC_SECRETS: `1:${'m'.repeat(64)}`,
      POOL_USAGE_KEY: 'p'.repeat(40),
    },
  ],
  [
    'keySync',
    keySyncDependencies,
    {
      ...AWS,
      KEY_MIRROR_TABLE_NAME: 'key-mirror',
      REST_API_ID: 'a1b2c3d4e5',
      API_STAGE: 'staging',
    },
  ],
] as const

const requiredVariables = functions.flatMap(([name, build, env]) =>
  Object.keys(env)
    .filter((variable) => !(variable in AWS))
    .map((variable) => [name, variable, build, env] as const),
)

describe('function dependencies', () => {
  it('the authorizer refuses MAC secrets it cannot read, at the cold start', () => {
    const [, build, env] = functions[3]
    for (const KEY_MAC_SECRETS of ['1:short', 'one:'.padEnd(40, 'x'), `0:${'m'.repeat(64)}`]) {
      expect(() => build({ ...env, KEY_MAC_SECRETS })).toThrow(/KEY_MAC_SECRETS must be/)
    }
  })

  it.each(functions)('%s builds from the environment its stack gives it', (_name, build, env) => {
    // Act
    const dependencies = build(env)

    // Assess
    expect(dependencies).toEqual(expect.objectContaining({ logger: expect.anything() }))
  })

  it.each(requiredVariables)(
    '%s fails the cold start without %s',
    (_name, variable, build, env) => {
      // Prepare
      const incomplete = { ...env, [variable]: ' ' }

      // Act & Assess
      expect(() => build(incomplete)).toThrow(`Missing required environment variable ${variable}`)
    },
  )
})
