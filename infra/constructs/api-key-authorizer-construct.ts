import { Duration, Fn } from 'aws-cdk-lib'
import { TokenAuthorizer } from 'aws-cdk-lib/aws-apigateway'
import type { ITable } from 'aws-cdk-lib/aws-dynamodb'
import type { Construct } from 'constructs'
import { AUTHORIZER_ENTRY } from '#functions/function-entries.ts'
import type { KeyMacSecret } from '#infra/config/key-mac-config.ts'
import type { StageConfig } from '#infra/config/stage-config.ts'
import { BEARER_TOKEN_VALIDATION_PATTERN } from '#shared/auth/bearer-token.ts'
import { FUNCTION_TIMEOUT_SECONDS } from '#shared/config/function-timeouts-config.ts'
import { AUTHORIZER_OPERATION } from '#shared/observability/metrics.ts'
import { PetstoreFunction, stageFunctionDefaults } from './petstore-function-construct.ts'

/**
 * The authorizer function (id `Authorizer`, in `scope` itself: see PetstoreApi), allowed one
 * GetItem on the stage's key mirror and on its store key table and nothing else: the request
 * path never calls the API Gateway management API (docs/rate-limits-and-keys.md, "Key mirror and
 * key sync"); the key-sync function does. Its secrets come in its environment, resolved by
 * CloudFormation at deploy time (dynamic references, as the cursor secret reaches listPets), so no
 * cold start waits for Secrets Manager: KEY_MAC_SECRETS, each version's key MAC secret as
 * `<version>:<secret>` (shared/auth/project-key.ts), and POOL_USAGE_KEY (added with the pool).
 * Whoever may read the function's configuration sees them; CloudFormation resolves them again
 * only when it updates the function, which adding or removing a version does.
 */
export const addApiKeyAuthorizerFunction = (
  scope: Construct,
  config: StageConfig,
  {
    keyMirrorTable,
    storeKeyTable,
    keyMacSecrets,
  }: { keyMirrorTable: ITable; storeKeyTable: ITable; keyMacSecrets: readonly KeyMacSecret[] },
): PetstoreFunction => {
  const { stage } = config
  const macSecrets = Fn.join(
    ',',
    keyMacSecrets.map(({ version, secret }) =>
      Fn.join(':', [String(version), secret.secretValue.unsafeUnwrap()]),
    ),
  )
  return new PetstoreFunction(scope, 'Authorizer', {
    ...stageFunctionDefaults(config),
    entry: AUTHORIZER_ENTRY,
    serviceName: AUTHORIZER_OPERATION,
    description: `Petstore ${stage}: API key authorizer`,
    logGroupName: `/petstore/${stage}/authorizer`,
    // Small and quick: it hashes a header and reads one item of the key mirror.
    memorySize: 256,
    timeout: Duration.seconds(FUNCTION_TIMEOUT_SECONDS.authorizer),
    liveAlias: true,
    // A cap as well as a floor: a flood of forged keys takes at most this much of the account's
    // concurrency from the operations (docs/operations.md, "Edge rules"). Unset by default.
    ...(config.authorizerReservedConcurrency === undefined
      ? {}
      : { reservedConcurrentExecutions: config.authorizerReservedConcurrency }),
    environment: { KEY_MAC_SECRETS: macSecrets },
  })
    .bindTable(keyMirrorTable, 'LOOKUP', { envVar: 'KEY_MIRROR_TABLE_NAME' })
    .bindTable(storeKeyTable, 'LOOKUP', { envVar: 'STORE_KEY_TABLE_NAME' })
}

/** The TOKEN authorizer (id `ApiKeyAuthorizer`, in `scope` itself) that calls the function. */
export const addApiKeyAuthorizer = (
  scope: Construct,
  config: StageConfig,
  fn: PetstoreFunction,
): TokenAuthorizer =>
  new TokenAuthorizer(scope, 'ApiKeyAuthorizer', {
    authorizerName: `petstore-${config.stage}-api-key`,
    handler: fn.invokeTarget,
    identitySource: 'method.request.header.Authorization',
    // A header that does not match is answered 401 by the gateway without invoking the function.
    validationRegex: BEARER_TOKEN_VALIDATION_PATTERN,
    // The cache key is the Authorization header; the policy covers the whole stage, so one
    // decision serves every route. 0 turns caching off.
    resultsCacheTtl: Duration.seconds(config.authorizerCacheTtlSeconds),
  })
