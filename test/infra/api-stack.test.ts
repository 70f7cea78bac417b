import type { Template } from 'aws-cdk-lib/assertions'
import { describe, expect, it } from 'vitest'
import { POOL_PLAN_TAG } from '#keys/usage-plans-config.ts'
import { BEARER_CHALLENGE, BEARER_TOKEN_VALIDATION_PATTERN } from '#shared/auth/bearer-token.ts'
import { DEFAULT_ENTERPRISE_LIMITS, PLAN_TAGS } from '#shared/config/plans-config.ts'
import { ROUTES } from '#shared/config/routes-config.ts'
import { ERROR_MESSAGES, type ErrorCode } from '#shared/errors/error-codes.ts'
import {
  appStage,
  type CfnResource,
  functionByService,
  liveAliasIdOf,
  propsOf,
  resourcesOf,
  synthesizeApp,
} from './support/synth-app.ts'

const production = appStage('production').api
const staging = appStage('staging').api

const only = (
  template: Template,
  type: string,
  named: (logicalId: string) => boolean = () => true,
): [string, CfnResource] => {
  const found = resourcesOf(template, type).filter(([logicalId]) => named(logicalId))
  expect(found).toHaveLength(1)
  return found[0] as [string, CfnResource]
}

type Ref = { Ref?: string; 'Fn::GetAtt'?: [string, string] }

/** `/v1/pets/{petId}` of an API Gateway resource id (the root resource is ''). */
const pathOf = (template: Template, ref: Ref): string => {
  if (ref['Fn::GetAtt']?.[1] === 'RootResourceId') return ''
  const resource = template.toJSON().Resources[ref.Ref as string] as CfnResource
  const props = propsOf(resource)
  return `${pathOf(template, props.ParentId as Ref)}/${props.PathPart as string}`
}

/** The route methods (the CORS preflights, OPTIONS, are test/infra/cors.test.ts's). */
const methodsOf = (template: Template) =>
  resourcesOf(template, 'AWS::ApiGateway::Method')
    .filter(([, method]) => propsOf(method).HttpMethod !== 'OPTIONS')
    .map(([, method]) => {
      const props = propsOf(method)
      return {
        route: `${props.HttpMethod as string} ${pathOf(template, props.ResourceId as Ref)}`,
        props,
      }
    })

describe('routes', () => {
  it('serves exactly the shared route table under /v1, nothing else', () => {
    for (const template of [production, staging]) {
      expect(
        methodsOf(template)
          .map(({ route }) => route)
          .sort(),
      ).toEqual(ROUTES.map((route) => `${route.method} /v1${route.path}`).sort())
    }
  })

  it('sends each route to its own function as a Lambda proxy integration', () => {
    for (const route of ROUTES) {
      const method = methodsOf(production).find(
        (candidate) => candidate.route === `${route.method} /v1${route.path}`,
      )
      const [functionId] = functionByService(production, route.operationId)
      expect(method?.props).toMatchObject({
        OperationName: route.operationId,
        Integration: { Type: 'AWS_PROXY', IntegrationHttpMethod: 'POST' },
      })
      // Through the live alias, never $LATEST: a rollout's traffic shifting applies to it.
      expect(JSON.stringify(method?.props.Integration)).toContain(
        `{"Ref":"${liveAliasIdOf(production, functionId)}"}`,
      )
    }
  })

  it('lets API Gateway invoke each live alias only from its own method of the stage', () => {
    for (const template of [production, staging]) {
      const permissions = resourcesOf(template, 'AWS::Lambda::Permission')
        .filter(([, permission]) => propsOf(permission).Principal === 'apigateway.amazonaws.com')
        .map(([, permission]) => ({
          target: propsOf(permission).FunctionName,
          source: JSON.stringify(propsOf(permission).SourceArn),
        }))
      // Three methods and the authorizer; no test-invoke permission open to any stage.
      expect(permissions).toHaveLength(ROUTES.length + 1)
      // A permission on the function alone would not cover its alias: every call would fail.
      const aliasOf = (service: string) => ({
        Ref: liveAliasIdOf(template, functionByService(template, service)[0]),
      })
      for (const route of ROUTES) {
        const suffix = `/${route.method}/v1${route.path.replace(/\{\w+\}/g, '*')}"`
        const permission = permissions.find(({ source }) => source.endsWith(`${suffix}]]}`))
        expect(permission?.target, route.operationId).toEqual(aliasOf(route.operationId))
      }
      const authorizer = permissions.find(({ source }) => source.includes('/authorizers/'))
      expect(authorizer?.target).toEqual(aliasOf('authorizer'))
    }
  })
})

describe('authorization', () => {
  it('puts the TOKEN authorizer on the Authorization header in front of every method', () => {
    const [authorizerId, authorizer] = only(production, 'AWS::ApiGateway::Authorizer')
    const [authorizerFunctionId] = functionByService(production, 'authorizer')
    expect(propsOf(authorizer)).toMatchObject({
      Type: 'TOKEN',
      IdentitySource: 'method.request.header.Authorization',
    })
    expect(JSON.stringify(propsOf(authorizer).AuthorizerUri)).toContain(
      `{"Ref":"${liveAliasIdOf(production, authorizerFunctionId)}"}`,
    )
    // Malformed tokens are refused by the gateway before the function runs.
    expect(propsOf(authorizer).IdentityValidationExpression).toBe(BEARER_TOKEN_VALIDATION_PATTERN)
    for (const { props } of methodsOf(production)) {
      expect(props).toMatchObject({
        AuthorizationType: 'CUSTOM',
        AuthorizerId: { Ref: authorizerId },
        ApiKeyRequired: true,
      })
    }
  })

  it('takes API keys from the authorizer (usageIdentifierKey), not from x-api-key', () => {
    const [, api] = only(production, 'AWS::ApiGateway::RestApi')
    expect(propsOf(api)).toMatchObject({
      Name: 'petstore-production',
      ApiKeySourceType: 'AUTHORIZER',
      EndpointConfiguration: { Types: ['REGIONAL'] },
    })
  })

  it('validates the bearer token in the gateway in every stage', () => {
    for (const template of [production, staging]) {
      expect(
        propsOf(only(template, 'AWS::ApiGateway::Authorizer')[1]).IdentityValidationExpression,
      ).toBe(BEARER_TOKEN_VALIDATION_PATTERN)
    }
  })

  it('caches authorizer decisions per stage: 5 minutes in production, 1 in staging', () => {
    expect(propsOf(only(production, 'AWS::ApiGateway::Authorizer')[1])).toMatchObject({
      AuthorizerResultTtlInSeconds: 300,
    })
    expect(propsOf(only(staging, 'AWS::ApiGateway::Authorizer')[1])).toMatchObject({
      AuthorizerResultTtlInSeconds: 60,
    })
  })
})

describe('gateway responses', () => {
  const EXPECTED: Record<string, [number, ErrorCode]> = {
    UNAUTHORIZED: [401, 'unauthorized'],
    ACCESS_DENIED: [401, 'unauthorized'],
    INVALID_API_KEY: [401, 'unauthorized'],
    MISSING_AUTHENTICATION_TOKEN: [404, 'route_not_found'],
    RESOURCE_NOT_FOUND: [404, 'route_not_found'],
    THROTTLED: [429, 'rate_limited'],
    QUOTA_EXCEEDED: [429, 'quota_exceeded'],
    BAD_REQUEST_BODY: [400, 'validation_failed'],
    BAD_REQUEST_PARAMETERS: [400, 'validation_failed'],
    REQUEST_TOO_LARGE: [413, 'payload_too_large'],
    UNSUPPORTED_MEDIA_TYPE: [415, 'unsupported_media_type'],
    DEFAULT_4XX: [400, 'validation_failed'],
    DEFAULT_5XX: [500, 'internal_error'],
  }

  const responses = () =>
    new Map(
      resourcesOf(production, 'AWS::ApiGateway::GatewayResponse').map(([, response]) => [
        propsOf(response).ResponseType as string,
        propsOf(response),
      ]),
    )

  it('rewrites every API Gateway error the API can produce, and only those', () => {
    expect([...responses().keys()].sort()).toEqual(Object.keys(EXPECTED).sort())
  })

  it.each(Object.entries(EXPECTED))(
    '%s answers %i with the JSON Error body of its code',
    (type, [status, code]) => {
      const response = responses().get(type)
      expect(response?.StatusCode).toBe(String(status))
      const templates = response?.ResponseTemplates as Record<string, string>
      expect(Object.keys(templates)).toEqual(['application/json'])
      expect(JSON.parse(templates['application/json'] as string)).toEqual({
        code,
        message: ERROR_MESSAGES[code],
        status,
        requestId: '$context.requestId',
      })
    },
  )

  it('sends the bearer challenge with every 401', () => {
    for (const [type, response] of responses()) {
      const headers = (response.ResponseParameters ?? {}) as Record<string, string>
      if (response.StatusCode === '401') {
        expect(headers['gatewayresponse.header.WWW-Authenticate'], type).toBe(
          `'${BEARER_CHALLENGE}'`,
        )
      } else {
        expect(headers['gatewayresponse.header.WWW-Authenticate'], type).toBeUndefined()
      }
    }
  })

  it('tells throttled clients when to retry', () => {
    const retryAfter = (type: string) =>
      (responses().get(type)?.ResponseParameters as Record<string, string> | undefined)?.[
        'gatewayresponse.header.Retry-After'
      ]
    // A minute for the per-minute limit; some whole number of seconds for the daily quota.
    expect(retryAfter('THROTTLED')).toBe("'60'")
    expect(retryAfter('QUOTA_EXCEEDED')).toMatch(/^'[1-9]\d*'$/)
  })
})

const plansOf = (template: Template) =>
  new Map(
    resourcesOf(template, 'AWS::ApiGateway::UsagePlan')
      .map(([, plan]) => {
        const props = propsOf(plan)
        const tags = props.Tags as { Key: string; Value: string }[]
        return [tags.find((tag) => tag.Key === PLAN_TAGS.plan)?.Value, props] as const
      })
      // The pool plan of store keys has no plan tag (below).
      .filter(([plan]) => plan !== undefined),
  )

/** The pool plan store keys are metered under, and its one key. */
const poolOf = (template: Template) => {
  const [pool, ...others] = resourcesOf(template, 'AWS::ApiGateway::UsagePlan').filter(([, plan]) =>
    (propsOf(plan).Tags as { Key: string; Value: string }[]).some(
      (tag) => tag.Key === POOL_PLAN_TAG.key && tag.Value === POOL_PLAN_TAG.value,
    ),
  )
  expect(others).toEqual([])
  return pool as [string, CfnResource]
}

/** Each plan's `petstore:*` tags (the stack's own tags, e.g. petstore:stage, aside). */
const tagsOfPlans = (template: Template) =>
  new Map(
    [...plansOf(template)].map(([plan, props]) => [
      plan,
      Object.fromEntries(
        (props.Tags as { Key: string; Value: string }[])
          .filter(({ Key }) => (Object.values(PLAN_TAGS) as string[]).includes(Key))
          .map(({ Key, Value }) => [Key, Value]),
      ),
    ]),
  )

describe('the pool of store keys', () => {
  it.each([
    ['staging', () => staging],
    ['production', () => production],
  ] as const)(
    '%s: one plan with neither throttle nor quota, never refusing before the stage throttle',
    (stage, template) => {
      const [, plan] = poolOf(template())
      expect(propsOf(plan).UsagePlanName).toBe(`petstore-${stage}-store-keys`)
      expect(propsOf(plan).Throttle).toBeUndefined()
      expect(propsOf(plan).Quota).toBeUndefined()
      expect(propsOf(plan).ApiStages).toHaveLength(1)
    },
  )

  it('has one pool key on it, its value a secret generated at deploy time and given to the authorizer alone', () => {
    for (const template of [staging, production]) {
      const [poolPlanId] = poolOf(template)
      const [keyId, key] = only(template, 'AWS::ApiGateway::ApiKey')
      const [secretId, secret] = only(template, 'AWS::SecretsManager::Secret', (id) =>
        id.startsWith('ApiPoolKeySecret'),
      )
      expect(propsOf(secret).GenerateSecretString).toMatchObject({ PasswordLength: 40 })
      expect(JSON.stringify(propsOf(key).Value)).toContain(`${secretId}`)
      expect(JSON.stringify(propsOf(key).Value)).toContain('{{resolve:secretsmanager:')
      expect(propsOf(only(template, 'AWS::ApiGateway::UsagePlanKey')[1])).toEqual({
        KeyId: { Ref: keyId },
        KeyType: 'API_KEY',
        UsagePlanId: { Ref: poolPlanId },
      })
      const holders = resourcesOf(template, 'AWS::Lambda::Function').filter(([, fn]) =>
        JSON.stringify(propsOf(fn).Environment ?? {}).includes(`${secretId}`),
      )
      expect(
        holders.map(
          ([, fn]) =>
            (propsOf(fn).Environment as { Variables: Record<string, unknown> }).Variables
              .POWERTOOLS_SERVICE_NAME,
        ),
      ).toEqual(['authorizer'])
    }
  })
})

describe('usage plans', () => {
  // docs/rate-limits-and-keys.md: burst 2 x per-minute, rate per-minute / 30, quota 3 x per-day.
  const EXPECTED = {
    free: { RateLimit: 2, BurstLimit: 120, quota: 3_000 },
    pro: { RateLimit: 10, BurstLimit: 600, quota: 30_000 },
    business: { RateLimit: 1000 / 30, BurstLimit: 2_000, quota: 300_000 },
    enterprise: {
      RateLimit: DEFAULT_ENTERPRISE_LIMITS.perMinute / 30,
      BurstLimit: 2 * DEFAULT_ENTERPRISE_LIMITS.perMinute,
      quota: 3 * DEFAULT_ENTERPRISE_LIMITS.perDay,
    },
  }

  it('has Free, Pro, Business and Enterprise per stage, tagged with their plan', () => {
    for (const [stage, template] of [
      ['production', production],
      ['staging', staging],
    ] as const) {
      const plans = plansOf(template)
      expect([...plans.keys()].sort()).toEqual(['business', 'enterprise', 'free', 'pro'])
      for (const [plan, props] of plans) {
        expect(props.UsagePlanName).toBe(`petstore-${stage}-${plan}`)
      }
    }
  })

  it.each(Object.entries(EXPECTED))(
    '%s: throttle and daily quota as docs/rate-limits-and-keys.md says',
    (plan, limits) => {
      const props = plansOf(production).get(plan)
      expect(props?.Throttle).toEqual({
        RateLimit: limits.RateLimit,
        BurstLimit: limits.BurstLimit,
      })
      expect(props?.Quota).toEqual({ Limit: limits.quota, Period: 'DAY' })
    },
  )

  it('attaches every plan to the stage of this API', () => {
    const [apiId] = only(production, 'AWS::ApiGateway::RestApi')
    const [stageId] = only(production, 'AWS::ApiGateway::Stage')
    for (const props of plansOf(production).values()) {
      expect(props.ApiStages).toEqual([
        expect.objectContaining({ ApiId: { Ref: apiId }, Stage: { Ref: stageId } }),
      ])
    }
  })

  it('tags Enterprise with its limits and the other plans with their plan only', () => {
    for (const template of [production, staging]) {
      const plans = tagsOfPlans(template)
      expect(plans.get('enterprise')).toEqual({
        [PLAN_TAGS.plan]: 'enterprise',
        [PLAN_TAGS.perMinute]: String(DEFAULT_ENTERPRISE_LIMITS.perMinute),
        [PLAN_TAGS.perDay]: String(DEFAULT_ENTERPRISE_LIMITS.perDay),
      })
      for (const plan of ['free', 'pro', 'business']) {
        expect(plans.get(plan)).toEqual({ [PLAN_TAGS.plan]: plan })
      }
    }
  })

  it('takes Enterprise limits from context', () => {
    const custom = synthesizeApp({
      stage: 'production',
      'production.enterpriseLimits': '12000/3000000',
    }).stage('production').api
    const enterprise = plansOf(custom).get('enterprise')
    expect(enterprise?.Throttle).toEqual({ RateLimit: 400, BurstLimit: 24_000 })
    expect(enterprise?.Quota).toEqual({ Limit: 9_000_000, Period: 'DAY' })
    expect(tagsOfPlans(custom).get('enterprise')).toMatchObject({
      [PLAN_TAGS.perMinute]: '12000',
      [PLAN_TAGS.perDay]: '3000000',
    })
    expect(plansOf(custom).get('free')?.Throttle).toEqual({ RateLimit: 2, BurstLimit: 120 })
    // Far below the stage's capacity: the stage throttle keeps its default.
    expect(propsOf(only(custom, 'AWS::ApiGateway::Stage')[1])).toMatchObject({
      MethodSettings: [{ ThrottlingRateLimit: 5_000, ThrottlingBurstLimit: 5_000 }],
    })
  })
})

describe('stage', () => {
  it('is named after the environment, traced, logged in JSON and throttled', () => {
    const [, stage] = only(production, 'AWS::ApiGateway::Stage')
    const props = propsOf(stage)
    expect(props).toMatchObject({
      StageName: 'production',
      TracingEnabled: true,
      MethodSettings: [
        {
          ResourcePath: '/*',
          HttpMethod: '*',
          LoggingLevel: 'ERROR',
          DataTraceEnabled: false,
          // The Enterprise backstop, the largest: 5000 / 30 rounded up, and 2 x 5000.
          ThrottlingRateLimit: 5_000,
          ThrottlingBurstLimit: 5_000,
        },
      ],
    })
    const accessLogs = props.AccessLogSetting as { Format: string; DestinationArn: unknown }
    const format = JSON.parse(accessLogs.Format) as Record<string, string>
    expect(format).toMatchObject({
      requestId: '$context.requestId',
      httpMethod: '$context.httpMethod',
      resourcePath: '$context.resourcePath',
      status: '$context.status',
      keyId: '$context.authorizer.principalId',
    })
    // The key's id is logged, never the key.
    expect(accessLogs.Format).not.toContain('$context.identity.apiKey"')
    const [logGroupId, logGroup] = resourcesOf(production, 'AWS::Logs::LogGroup').find(
      ([, group]) => propsOf(group).LogGroupName === '/petstore/production/api-access',
    ) as [string, CfnResource]
    expect(JSON.stringify(accessLogs.DestinationArn)).toContain(`{"Ref":"${logGroupId}"}`)
    expect(propsOf(logGroup).RetentionInDays).toBe(90)
  })

  it('sets the account-wide API Gateway logging role, kept when a stage is deleted', () => {
    const [, account] = only(production, 'AWS::ApiGateway::Account')
    const roleId = (propsOf(account).CloudWatchRoleArn as { 'Fn::GetAtt': [string, string] })[
      'Fn::GetAtt'
    ][0]
    expect((production.toJSON().Resources[roleId] as CfnResource).DeletionPolicy).toBe('Retain')
    const without = synthesizeApp({
      stage: 'staging',
      'staging.apiGatewayCloudWatchRole': 'false',
    }).stage('staging').api
    expect(resourcesOf(without, 'AWS::ApiGateway::Account')).toHaveLength(0)
    // One per function: the operations, the authorizer, the key sync and the automatic block.
    expect(resourcesOf(without, 'AWS::IAM::Role')).toHaveLength(ROUTES.length + 3)
  })

  it('throttles each stage for all its clients together: production 5,000/s, staging 1,000/s', () => {
    expect(propsOf(only(production, 'AWS::ApiGateway::Stage')[1])).toMatchObject({
      StageName: 'production',
      MethodSettings: [
        {
          HttpMethod: '*',
          ResourcePath: '/*',
          ThrottlingRateLimit: 5_000,
          ThrottlingBurstLimit: 5_000,
        },
      ],
    })
    expect(propsOf(only(staging, 'AWS::ApiGateway::Stage')[1])).toMatchObject({
      StageName: 'staging',
      MethodSettings: [{ ThrottlingRateLimit: 1_000, ThrottlingBurstLimit: 2_000 }],
    })
  })

  it('leaves room above every plan backstop: hundreds of Business keys at their allowed rate', () => {
    const businessPerMinute = 1_000
    for (const [template, keys] of [
      [production, 300],
      [staging, 60],
    ] as const) {
      const [settings] = propsOf(only(template, 'AWS::ApiGateway::Stage')[1]).MethodSettings as {
        ThrottlingRateLimit: number
      }[]
      const rates = [...plansOf(template)].map(
        ([, props]) => (props.Throttle as { RateLimit: number }).RateLimit,
      )
      expect(settings?.ThrottlingRateLimit).toBeGreaterThanOrEqual(Math.max(...rates))
      // The old default (167/s, the Enterprise backstop) was exhausted by eleven of them.
      expect(Math.floor(((settings?.ThrottlingRateLimit ?? 0) * 60) / businessPerMinute)).toBe(keys)
    }
  })

  it('takes a higher stage throttle from context, and refuses a rate below a plan backstop', () => {
    const raised = synthesizeApp({
      stage: 'staging',
      'staging.throttleRateLimit': '1500',
      'staging.throttleBurstLimit': '3000',
    }).stage('staging').api
    expect(propsOf(only(raised, 'AWS::ApiGateway::Stage')[1])).toMatchObject({
      MethodSettings: [{ ThrottlingRateLimit: 1_500, ThrottlingBurstLimit: 3_000 }],
    })
    expect(() =>
      synthesizeApp({
        stage: 'staging',
        'staging.throttleRateLimit': '166',
        'staging.waf': 'false',
      }),
    ).toThrow(/staging\.throttleRateLimit=.*at least 167.*enterprise usage plan/)
  })

  it('publishes the base address, ending in /v1', () => {
    const outputs = production.toJSON().Outputs as Record<string, { Value: unknown }>
    const baseUrl = JSON.stringify(outputs.BaseUrl?.Value)
    expect(baseUrl).toMatch(/\.execute-api\..*\/v1"\]\]\}$/)
  })

  it('serves a custom domain at https://{domain}/v1 when the context configures one', () => {
    const custom = synthesizeApp({
      stage: 'production',
      'production.domainName': 'api.example.com',
      'production.certificateArn': 'arn:aws:acm:eu-west-1:123456789012:certificate/abc',
      'production.hostedZoneId': 'Z123456ABCDEFG',
      'production.hostedZoneName': 'example.com',
    }).stage('production').api
    expect(propsOf(only(custom, 'AWS::ApiGateway::DomainName')[1])).toMatchObject({
      DomainName: 'api.example.com',
      RegionalCertificateArn: 'arn:aws:acm:eu-west-1:123456789012:certificate/abc',
      EndpointConfiguration: { Types: ['REGIONAL'] },
      SecurityPolicy: 'TLS_1_2',
    })
    const [, mapping] = only(custom, 'AWS::ApiGateway::BasePathMapping')
    expect(propsOf(mapping).BasePath).toBeUndefined()
    expect(propsOf(only(custom, 'AWS::Route53::RecordSet')[1])).toMatchObject({
      Name: 'api.example.com.',
      Type: 'A',
      HostedZoneId: 'Z123456ABCDEFG',
    })
    const outputs = custom.toJSON().Outputs as Record<string, { Value: unknown }>
    expect(outputs.BaseUrl?.Value).toBe('https://api.example.com/v1')
    expect(resourcesOf(production, 'AWS::ApiGateway::DomainName')).toHaveLength(0)
  })
})
