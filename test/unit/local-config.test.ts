import { describe, expect, it } from 'vitest'
import { isAwsEndpoint, LocalConfigError, readLocalConfig } from '#local/local-config.ts'

describe('local config: PETSTORE_AUTHORIZER_CACHE_TTL', () => {
  // Key changes still show at once: the key sync flushes the cache after each (keys-cli.test.ts
  // and local-key-path.test.ts run with a 300 s TTL).
  it("defaults to the staging stage's 60 s", () => {
    expect(readLocalConfig({}).authorizerCacheTtlSeconds).toBe(60)
  })

  it('reads seconds from 0 to 3600, as API Gateway accepts', () => {
    expect(readLocalConfig({ PETSTORE_AUTHORIZER_CACHE_TTL: '0' }).authorizerCacheTtlSeconds).toBe(
      0,
    )
    expect(readLocalConfig({ PETSTORE_AUTHORIZER_CACHE_TTL: '60' }).authorizerCacheTtlSeconds).toBe(
      60,
    )
    expect(
      readLocalConfig({ PETSTORE_AUTHORIZER_CACHE_TTL: '3600' }).authorizerCacheTtlSeconds,
    ).toBe(3600)
  })

  it.each(['3601', '-1', '1.5', 'sixty'])('refuses %s', (value) => {
    expect(() => readLocalConfig({ PETSTORE_AUTHORIZER_CACHE_TTL: value })).toThrow(
      LocalConfigError,
    )
  })
})

describe('local config: a malformed PETSTORE_API_KEYS entry', () => {
  const SECRET = 'RECOGNISABLE-secret-0123456789abcdef'
  /** Every 6-character piece of the key: none may appear in the message. */
  const pieces = Array.from({ length: SECRET.length - 5 }, (_, i) => SECRET.slice(i, i + 6))

  it.each([
    ['without a plan', SECRET, 'entry 1 is not'],
    ['with an unknown plan', `gold:${SECRET}`, 'entry 1 is not'],
    ['with a key too short', `free:${SECRET.slice(0, 12)}`, 'the free key (entry 1)'],
    ['with a character keys never have', `pro:${SECRET}!`, 'the pro key (entry 1)'],
    ['in second place', `business:ok-key-0123456789abcdefgh,${SECRET}`, 'entry 2 is not'],
  ])('%s is named by its position, without echoing the key', (_, value, named) => {
    let message = ''
    try {
      readLocalConfig({ PETSTORE_API_KEYS: value })
    } catch (error) {
      expect(error).toBeInstanceOf(LocalConfigError)
      message = (error as Error).message
    }
    expect(message).toContain(named)
    for (const piece of pieces) expect(message).not.toContain(piece)
  })
})

describe('local config: a malformed variable', () => {
  it.each([
    ['PORT', 'abc', 'PORT must be a port number from 0 to 65535, got "abc"'],
    ['PORT', '65536', 'PORT must be a port number from 0 to 65535, got "65536"'],
    [
      'DYNAMODB_ENDPOINT',
      'not a url',
      'DYNAMODB_ENDPOINT must be a URL such as http://127.0.0.1:8000, got "not a url"',
    ],
    ['ENTERPRISE_LIMITS', 'lots', 'ENTERPRISE_LIMITS: Invalid plan limits "lots"'],
    [
      'ENTERPRISE_LIMITS',
      '100/5',
      'ENTERPRISE_LIMITS: Invalid plan limits "100/5": perDay (5) is below perMinute (100); expected "perMinute/perDay" as whole numbers, perMinute at least 1 and perDay at least perMinute',
    ],
  ])('%s=%j is refused, naming the variable and what it expects', (name, value, message) => {
    expect(() => readLocalConfig({ [name]: value })).toThrow(message)
  })
})

describe('local config: ENTERPRISE_LIMITS', () => {
  it('refuses limits whose usage plan API Gateway would refuse (the DAY quota is 3 x per day)', () => {
    expect(() => readLocalConfig({ ENTERPRISE_LIMITS: '100000/1000000000' })).toThrow(
      'ENTERPRISE_LIMITS: its usage plan would be refused: quota.limit must be an integer from 0 to 2147483647',
    )
    expect(readLocalConfig({ ENTERPRISE_LIMITS: '100000/715827882' }).enterpriseLimits).toEqual({
      perMinute: 100_000,
      perDay: 715_827_882,
    })
  })
})

describe("local config: the bundles' credentials (PETSTORE_BUNDLES_HOST_CREDENTIALS)", () => {
  const bundles = { PETSTORE_BUNDLES: 'cdk.out' }
  const onAws = 'https://dynamodb.eu-west-1.amazonaws.com'

  it('gives bundles dummy credentials on the embedded DynamoDB and on DynamoDB Local', () => {
    expect(readLocalConfig(bundles).bundles?.hostCredentials).toBe(false)
    const local = { ...bundles, DYNAMODB_ENDPOINT: 'http://127.0.0.1:8000' }
    expect(readLocalConfig(local).bundles?.hostCredentials).toBe(false)
  })

  it("hands over the shell's only when asked, for an endpoint on AWS", () => {
    const asked = { ...bundles, DYNAMODB_ENDPOINT: onAws, PETSTORE_BUNDLES_HOST_CREDENTIALS: '1' }
    expect(readLocalConfig(asked).bundles?.hostCredentials).toBe(true)
  })

  it('refuses the opt-in where nothing checks credentials, and an AWS endpoint without it', () => {
    expect(() => readLocalConfig({ ...bundles, PETSTORE_BUNDLES_HOST_CREDENTIALS: '1' })).toThrow(
      /only a DYNAMODB_ENDPOINT on AWS .* needs; the embedded DynamoDB takes the dummy ones/,
    )
    expect(() =>
      readLocalConfig({
        ...bundles,
        DYNAMODB_ENDPOINT: 'http://127.0.0.1:8000',
        PETSTORE_BUNDLES_HOST_CREDENTIALS: '1',
      }),
    ).toThrow(LocalConfigError)
    expect(() => readLocalConfig({ ...bundles, DYNAMODB_ENDPOINT: onAws })).toThrow(
      `DYNAMODB_ENDPOINT ${onAws} is on AWS: the bundles get dummy credentials, none of this shell's, unless you set PETSTORE_BUNDLES_HOST_CREDENTIALS=1`,
    )
    expect(() => readLocalConfig({ ...bundles, PETSTORE_BUNDLES_HOST_CREDENTIALS: 'yes' })).toThrow(
      'PETSTORE_BUNDLES_HOST_CREDENTIALS must be 1 or 0, got "yes"',
    )
  })

  it("knows AWS's DynamoDB endpoints: regional, FIPS, dual-stack, account-based, China", () => {
    for (const endpoint of [
      onAws,
      'https://dynamodb-fips.us-east-1.amazonaws.com',
      'https://dynamodb.us-east-2.api.aws',
      'https://123456789012.ddb.us-east-1.amazonaws.com',
      'https://dynamodb.cn-north-1.amazonaws.com.cn',
    ]) {
      expect(isAwsEndpoint(endpoint), endpoint).toBe(true)
    }
    for (const endpoint of [
      undefined,
      'http://127.0.0.1:8000',
      'http://localhost:8000',
      'https://amazonaws.com.example.org',
    ]) {
      expect(isAwsEndpoint(endpoint), endpoint).toBe(false)
    }
  })
})
