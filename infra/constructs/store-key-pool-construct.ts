import { Tags, Validations } from 'aws-cdk-lib'
import {
  CfnApiKey,
  CfnUsagePlanKey,
  type RestApi,
  type UsagePlan,
} from 'aws-cdk-lib/aws-apigateway'
import { Secret } from 'aws-cdk-lib/aws-secretsmanager'
import type { Construct } from 'constructs'
import type { StageConfig } from '#infra/config/stage-config.ts'
import { POOL_PLAN_TAG, poolPlanSpec } from '#keys/usage-plans-config.ts'

/** The pool plan, its one key and the secret that key's value is. */
export interface StoreKeyPool {
  plan: UsagePlan
  key: CfnApiKey
  secret: Secret
}

/**
 * What API Gateway meters store keys under: it meters only through an API Gateway key, and store
 * keys are not API Gateway keys. So the stage has one pool usage-plan key, on a usage plan with
 * neither throttle nor quota (both are optional: "Usage plans and API keys for REST APIs", AWS
 * docs), which therefore never refuses before the stage throttle: no store-key customer's traffic
 * ever empties a bucket another is counted in. Each store key's own backstop is the WAF's per-key
 * rule (web-acl-construct.ts); its exact limits are the functions' limiter's, as for every key.
 * The key's value is a Secrets Manager secret generated at deploy time, resolved by CloudFormation
 * into the key and into the authorizer's environment (POOL_USAGE_KEY): the authorizer returns it
 * as usageIdentifierKey for every store key, and refuses it as a bearer key. The key sync leaves
 * the plan out (its tag), so the key is never in the key mirror.
 */
export const addStoreKeyPool = (
  scope: Construct,
  config: StageConfig,
  api: RestApi,
): StoreKeyPool => {
  const spec = poolPlanSpec(config.stage)
  const plan = api.addUsagePlan('UsagePlan-pool', {
    name: spec.name,
    description: spec.description,
    apiStages: [{ api, stage: api.deploymentStage }],
  })
  // The key sync and the keys CLI know the pool by this tag: never a customer's plan.
  for (const [key, value] of Object.entries(spec.tags)) Tags.of(plan).add(key, value)
  const secret = new Secret(scope, 'PoolKeySecret', {
    description: `Petstore ${config.stage}: the pool usage-plan key store keys are metered under`,
    // API Gateway takes 20 to 128 characters; letters and digits, as the console's own keys.
    generateSecretString: { passwordLength: 40, excludePunctuation: true },
  })
  Validations.of(secret).acknowledge({
    id: 'AwsSolutions-SMG4',
    reason:
      'The pool key is never handed to a client and never a bearer key; replacing it (a deploy with a new secret) changes nothing a client sees.',
  })
  const key = new CfnApiKey(scope, 'PoolKey', {
    name: `${spec.name}-pool`,
    description: `Petstore ${config.stage}: meters store keys; a secret, never a bearer key`,
    enabled: true,
    value: secret.secretValue.unsafeUnwrap(),
    tags: [{ key: POOL_PLAN_TAG.key, value: POOL_PLAN_TAG.value }],
  })
  new CfnUsagePlanKey(scope, 'PoolUsagePlanKey', {
    keyId: key.ref,
    keyType: 'API_KEY',
    usagePlanId: plan.usagePlanId,
  })
  return { plan, key, secret }
}
