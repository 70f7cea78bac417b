import type { DomainName, RestApi, UsagePlan } from 'aws-cdk-lib/aws-apigateway'
import type { ITable } from 'aws-cdk-lib/aws-dynamodb'
import type { LogGroup } from 'aws-cdk-lib/aws-logs'
import type { Secret } from 'aws-cdk-lib/aws-secretsmanager'
import { Construct } from 'constructs'
import type { KeyMacSecret } from '#infra/config/key-mac-config.ts'
import type { StageConfig } from '#infra/config/stage-config.ts'
import type { PlanName } from '#shared/config/plans-config.ts'
import { API_VERSION_PATH, type OperationId } from '#shared/config/routes-config.ts'
import { addAddressBlock } from './address-block-construct.ts'
import { addApiKeyAuthorizer, addApiKeyAuthorizerFunction } from './api-key-authorizer-construct.ts'
import { addRouteMethods } from './api-routes-construct.ts'
import { addCursorSecret } from './cursor-secret-construct.ts'
import { addCustomDomain } from './custom-domain-construct.ts'
import { addGatewayResponses } from './gateway-responses-construct.ts'
import { addKeySync } from './key-sync-construct.ts'
import { addOperationFunctions } from './operation-functions-construct.ts'
import type { PetstoreFunction } from './petstore-function-construct.ts'
import { addRestApi } from './rest-api-construct.ts'
import { addStoreKeyPool, type StoreKeyPool } from './store-key-pool-construct.ts'
import { addUsagePlans } from './usage-plans-construct.ts'
import { addWebAcl, type WebAcl } from './web-acl-construct.ts'

export interface PetstoreApiProps {
  config: StageConfig
  petTable: ITable
  rateLimitTable: ITable
  idempotencyTable: ITable
  /** The stage's copy of its API keys and plans: the key sync writes it, the authorizer reads it. */
  keyMirrorTable: ITable
  /** Keys only in the project's store: the keys CLI writes it, the authorizer reads it. */
  storeKeyTable: ITable
  /** The key MAC secrets by version, resolved into the authorizer's environment. */
  keyMacSecrets: readonly KeyMacSecret[]
}

/**
 * The stage's REST API: one function per route of the shared route table under `/v1`, the
 * TOKEN authorizer in front of every method, API keys taken from the authorizer and metered by
 * the usage plans, API Gateway's own errors rewritten to the API's Error body, and the key sync
 * that mirrors the stage's keys and plans for the authorizer.
 *
 * Its parts are built by the `add…` functions of the other `*-construct.ts` files, not by nested
 * constructs: a nested construct adds a segment to the construct path, which changes every
 * logical id below it, and CloudFormation would replace the deployed resources (a new RestApi
 * means a new base URL; the fixed-name log groups would fail to create). The functions create
 * their resources in this construct's scope, so paths and logical ids stay as deployed. They run
 * in the order the resources were always created, which keeps the templates identical.
 */
export class PetstoreApi extends Construct {
  readonly api: RestApi
  readonly functions: Record<OperationId, PetstoreFunction>
  readonly authorizerFunction: PetstoreFunction
  readonly keySyncFunction: PetstoreFunction
  /** The automatic block (with the WAF): the access log's unauthorized answers to block lists. */
  readonly addressBlockFunction: PetstoreFunction | undefined
  readonly usagePlans: Record<PlanName, UsagePlan>
  /** The pool plan and key store keys are metered under. */
  readonly pool: StoreKeyPool
  readonly accessLogGroup: LogGroup
  readonly domain: DomainName | undefined
  /** The key of the listings' cursor tags, generated at deploy time per stage. */
  readonly cursorSecret: Secret
  readonly webAcl: WebAcl | undefined
  /** `https://.../v1`: the base address clients use. */
  readonly baseUrl: string

  constructor(
    scope: Construct,
    id: string,
    {
      config,
      petTable,
      rateLimitTable,
      idempotencyTable,
      keyMirrorTable,
      storeKeyTable,
      keyMacSecrets,
    }: PetstoreApiProps,
  ) {
    super(scope, id)
    this.authorizerFunction = addApiKeyAuthorizerFunction(this, config, {
      keyMirrorTable,
      storeKeyTable,
      keyMacSecrets,
    })
    this.functions = addOperationFunctions(this, {
      config,
      petTable,
      rateLimitTable,
      idempotencyTable,
    })
    this.cursorSecret = addCursorSecret(this, config, this.functions)
    const authorizer = addApiKeyAuthorizer(this, config, this.authorizerFunction)
    const { api, accessLogGroup } = addRestApi(this, config, authorizer)
    this.api = api
    this.accessLogGroup = accessLogGroup
    addRouteMethods(api, this.functions, config.corsAllowOrigin)
    addGatewayResponses(api, config.corsAllowOrigin)
    this.webAcl = config.waf ? addWebAcl(this, config, api) : undefined
    this.usagePlans = addUsagePlans(api, config)
    this.pool = addStoreKeyPool(this, config, api)
    this.authorizerFunction.function.addEnvironment(
      'POOL_USAGE_KEY',
      this.pool.secret.secretValue.unsafeUnwrap(),
    )
    this.domain = config.customDomain ? addCustomDomain(this, api, config.customDomain) : undefined
    this.baseUrl = config.customDomain
      ? `https://${config.customDomain.domainName}${API_VERSION_PATH}`
      : `${api.url}${API_VERSION_PATH.slice(1)}`
    this.keySyncFunction = addKeySync(this, config, {
      api,
      keyMirrorTable,
      usagePlans: Object.values(this.usagePlans),
    })
    this.addressBlockFunction = this.webAcl
      ? addAddressBlock(this, config, { accessLogGroup, ipSets: this.webAcl })
      : undefined
  }
}
