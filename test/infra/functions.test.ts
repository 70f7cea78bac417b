import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { join } from 'node:path'
import type { Template } from 'aws-cdk-lib/assertions'
import { describe, expect, it } from 'vitest'
import { FUNCTION_TIMEOUT_SECONDS } from '#shared/config/function-timeouts-config.ts'
import {
  indexesOfRoute,
  ROUTES,
  type RouteDefinition,
  tableAccessOf,
} from '#shared/config/routes-config.ts'
import { TABLE_ACCESS_LEVELS, type TableGrant } from '#shared/config/table-access-config.ts'
import { type IndexDefinition, TABLE_INDEXES } from '#shared/config/table-indexes-config.ts'
import { KEY_SYNC_OPERATION } from '#shared/observability/metrics.ts'
import { moduleGraph } from '#test/support/module-graph.ts'
import {
  appAssemblyDir,
  appStage,
  type CfnResource,
  envOf,
  functionByService,
  propsOf,
  resourcesOf,
} from './support/synth-app.ts'

const SERVICES = [
  ...ROUTES.map((route) => route.operationId),
  'authorizer',
  KEY_SYNC_OPERATION,
] as const
const STAGES = ['staging', 'production'] as const

// Templates and bundles of the run's one synthesis of app.ts.
const assemblyDir = appAssemblyDir()
const apiOf = (stage: (typeof STAGES)[number]): Template => appStage(stage).api

const resourceById = (template: Template, id: string): CfnResource =>
  template.toJSON().Resources[id] as CfnResource

describe('function configuration', () => {
  it.each(SERVICES)('%s: Node 24 on arm64, active tracing, one ESM bundle', (service) => {
    for (const stage of STAGES) {
      const [, fn] = functionByService(apiOf(stage), service)
      expect(propsOf(fn)).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
        TracingConfig: { Mode: 'Active' },
      })
    }
  })

  it('gives pet functions and the sync 512 MB, the authorizer 256 MB, each the timeout the local gateway reports', () => {
    for (const route of ROUTES) {
      expect(propsOf(functionByService(apiOf('production'), route.operationId)[1])).toMatchObject({
        MemorySize: 512,
        Timeout: FUNCTION_TIMEOUT_SECONDS[route.operationId],
      })
    }
    expect(propsOf(functionByService(apiOf('production'), 'authorizer')[1])).toMatchObject({
      MemorySize: 256,
      Timeout: FUNCTION_TIMEOUT_SECONDS.authorizer,
    })
    expect(propsOf(functionByService(apiOf('production'), KEY_SYNC_OPERATION)[1])).toMatchObject({
      MemorySize: 512,
      Timeout: FUNCTION_TIMEOUT_SECONDS.keySync,
    })
  })

  it('never retries a key sync: the next minute is the retry', () => {
    for (const stage of STAGES) {
      const template = apiOf(stage)
      const [syncId] = functionByService(template, KEY_SYNC_OPERATION)
      const configs = resourcesOf(template, 'AWS::Lambda::EventInvokeConfig').filter(
        ([, config]) =>
          JSON.stringify(propsOf(config).FunctionName) === JSON.stringify({ Ref: syncId }),
      )
      expect(configs.map(([, config]) => propsOf(config))).toEqual([
        {
          FunctionName: { Ref: syncId },
          Qualifier: '$LATEST',
          MaximumRetryAttempts: 0,
          MaximumEventAgeInSeconds: 60,
        },
      ])
    }
  })

  it.each(STAGES)(
    '%s: each function logs to its own log group with the stage retention',
    (stage) => {
      const template = apiOf(stage)
      const names = SERVICES.map((service) => {
        const [, fn] = functionByService(template, service)
        const { LogGroup } = propsOf(fn).LoggingConfig as { LogGroup: { Ref: string } }
        const group = resourceById(template, LogGroup.Ref)
        expect(group.Type).toBe('AWS::Logs::LogGroup')
        expect(propsOf(group).RetentionInDays).toBe(stage === 'production' ? 90 : 14)
        expect(group.DeletionPolicy).toBe(
          stage === 'production' ? 'RetainExceptOnCreate' : 'Delete',
        )
        return propsOf(group).LogGroupName
      })
      expect(names.sort()).toEqual(
        [
          `/petstore/${stage}/authorizer`,
          `/petstore/${stage}/key-sync`,
          ...ROUTES.map((route) => `/petstore/${stage}/${route.functionName}`),
        ].sort(),
      )
    },
  )

  it('configures pet functions with both tables and Powertools, per stage', () => {
    for (const stage of STAGES) {
      for (const route of ROUTES) {
        const env = envOf(functionByService(apiOf(stage), route.operationId)[1])
        expect(env).toMatchObject({
          POWERTOOLS_SERVICE_NAME: route.operationId,
          POWERTOOLS_METRICS_NAMESPACE: `Petstore/${stage}`,
          POWERTOOLS_LOGGER_LOG_EVENT: 'false',
        })
        expect(JSON.stringify(env.TABLE_NAME)).toMatch(/petstore-[a-z]+-data:.*PetTable/)
        expect(JSON.stringify(env.RATE_LIMIT_TABLE_NAME)).toMatch(/RateLimitTable/)
        expect(env.ENTERPRISE_LIMITS).toBeUndefined()
        expect(env.KEY_MIRROR_TABLE_NAME).toBeUndefined()
        // Only createPet keeps idempotency records.
        if (route.operationId === 'createPet') {
          expect(JSON.stringify(env.IDEMPOTENCY_TABLE_NAME)).toMatch(/IdempotencyTable/)
        } else expect(env.IDEMPOTENCY_TABLE_NAME).toBeUndefined()
      }
    }
  })

  /** The settings of a function's environment, Powertools' own and NODE_OPTIONS aside. */
  const ownSettingsOf = (env: Record<string, unknown>): Record<string, unknown> =>
    Object.fromEntries(
      Object.entries(env).filter(
        ([name]) => !name.startsWith('POWERTOOLS_') && name !== 'NODE_OPTIONS',
      ),
    )

  it('gives the authorizer its two tables and its secrets, resolved at deploy time, and nothing else', () => {
    for (const stage of STAGES) {
      const env = envOf(functionByService(apiOf(stage), 'authorizer')[1])
      expect(env).toMatchObject({
        POWERTOOLS_SERVICE_NAME: 'authorizer',
      })
      expect(Object.keys(ownSettingsOf(env)).sort()).toEqual([
        'KEY_MAC_SECRETS',
        'KEY_MIRROR_TABLE_NAME',
        'POOL_USAGE_KEY',
        'STORE_KEY_TABLE_NAME',
      ])
      expect(JSON.stringify(env.KEY_MIRROR_TABLE_NAME)).toMatch(
        new RegExp(`petstore-${stage}-data:.*KeyMirrorTable`),
      )
      expect(JSON.stringify(env.STORE_KEY_TABLE_NAME)).toMatch(
        new RegExp(`petstore-${stage}-data:.*StoreKeyTable`),
      )
      // Dynamic references CloudFormation resolves when it deploys the function: no Secrets
      // Manager call on a cold start. Every MAC version in use, as <version>:<secret>.
      const macSecrets = JSON.stringify(env.KEY_MAC_SECRETS)
      expect(macSecrets).toContain('{{resolve:secretsmanager:')
      expect(macSecrets).toMatch(/\[":",\["1",/)
      expect(JSON.stringify(env.POOL_USAGE_KEY)).toContain('{{resolve:secretsmanager:')
    }
  })

  it("gives the key sync this stage's API, stage name and key mirror table", () => {
    for (const stage of STAGES) {
      const template = apiOf(stage)
      const env = envOf(functionByService(template, KEY_SYNC_OPERATION)[1])
      const [[apiId]] = resourcesOf(template, 'AWS::ApiGateway::RestApi') as [[string, unknown]]
      const [[stageId]] = resourcesOf(template, 'AWS::ApiGateway::Stage') as [[string, unknown]]
      expect(Object.keys(ownSettingsOf(env)).sort()).toEqual(
        ['API_STAGE', 'KEY_MIRROR_TABLE_NAME', 'REST_API_ID'].sort(),
      )
      expect(env).toMatchObject({
        POWERTOOLS_SERVICE_NAME: KEY_SYNC_OPERATION,
        POWERTOOLS_METRICS_NAMESPACE: `Petstore/${stage}`,
        POWERTOOLS_LOGGER_LOG_EVENT: 'false',
        REST_API_ID: { Ref: apiId },
        API_STAGE: { Ref: stageId },
      })
      expect(JSON.stringify(env.KEY_MIRROR_TABLE_NAME)).toMatch(
        new RegExp(`petstore-${stage}-data:.*KeyMirrorTable`),
      )
    }
  })
})

describe('IAM: least privilege per function', () => {
  /** "action on resource" pairs of everything a function's role may do, resources labelled. */
  const grantsOf = (template: Template, service: string): string[] => {
    const [, fn] = functionByService(template, service)
    const roleId = (propsOf(fn).Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0]
    const role = resourceById(template, roleId)
    expect(propsOf(role).ManagedPolicyArns).toBeUndefined()
    expect(propsOf(role).Policies).toBeUndefined()
    const { LogGroup } = propsOf(fn).LoggingConfig as { LogGroup: { Ref: string } }
    const label = (resource: unknown): string => {
      const text = JSON.stringify(resource)
      if (text === '"*"') return '*'
      if (text === JSON.stringify({ 'Fn::GetAtt': [LogGroup.Ref, 'Arn'] })) return 'own-log-group'
      const index = /"\/index\/([^"]+)"/.exec(text)?.[1]
      const table = text.includes('PetTable')
        ? 'pet-table'
        : text.includes('RateLimitTable')
          ? 'rate-limit-table'
          : text.includes('KeyMirrorTable')
            ? 'key-mirror-table'
            : text.includes('IdempotencyTable')
              ? 'idempotency-table'
              : text.includes('StoreKeyTable')
                ? 'store-key-table'
                : undefined
      if (table && text.includes('Fn::ImportValue'))
        return index ? `${table}/index/${index}` : table
      if (text.includes('/cache/authorizers')) {
        return 'apigateway:/restapis/{this api}/stages/{this stage}/cache/authorizers'
      }
      const apiPath = /:apigateway:",\{"Ref":"AWS::Region"\},"::(\/[^"]*)"/.exec(text)?.[1]
      if (apiPath) return `apigateway:${apiPath}`
      return text
    }
    return resourcesOf(template, 'AWS::IAM::Policy')
      .filter(([, policy]) =>
        (propsOf(policy).Roles as { Ref: string }[]).some((ref) => ref.Ref === roleId),
      )
      .flatMap(([, policy]) => {
        const statements = (
          propsOf(policy).PolicyDocument as {
            Statement: {
              Effect: string
              Action: string | string[]
              Resource: unknown
              Condition?: unknown
            }[]
          }
        ).Statement
        return statements.flatMap((statement) => {
          expect(statement.Effect).toBe('Allow')
          const actions = [statement.Action].flat()
          const resources = [statement.Resource].flat()
          const condition = statement.Condition ? ` if ${JSON.stringify(statement.Condition)}` : ''
          return actions.flatMap((action) =>
            resources.map((r) => `${action} on ${label(r)}${condition}`),
          )
        })
      })
      .sort()
  }

  const BASE = [
    'logs:CreateLogStream on own-log-group',
    'logs:PutLogEvents on own-log-group',
    'xray:PutTelemetryRecords on *',
    'xray:PutTraceSegments on *',
  ]
  const TABLE_LABELS = {
    pets: 'pet-table',
    idempotency: 'idempotency-table',
    rateLimits: 'rate-limit-table',
  } as const
  /**
   * What the route table says the route's function may do, labelled as grantsOf labels: each
   * level's table grants on the table, its index grants on each index the route names.
   */
  const routeGrants = (route: (typeof ROUTES)[number]): string[] =>
    tableAccessOf(route).flatMap(([table, access]) =>
      (TABLE_ACCESS_LEVELS[access] as readonly TableGrant[]).flatMap((grant) =>
        grant.actions.flatMap((action) =>
          grant.on === 'table'
            ? [`dynamodb:${action} on ${TABLE_LABELS[table]}`]
            : indexesOfRoute(route, table).map(
                (name) =>
                  `dynamodb:${action} on ${TABLE_LABELS[table]}/index/${(TABLE_INDEXES[table] as Record<string, IndexDefinition>)[name]?.indexName}`,
              ),
        ),
      ),
    )

  // A level too narrow fails the handler's tests (test/integration/route-table-access.test.ts);
  // this rule makes sure the stack grants no more than the level names.
  it.each(STAGES)(
    "%s: every route's function can do exactly the DynamoDB actions its route's table access names, and no more",
    (stage) => {
      for (const route of ROUTES) {
        const dynamo = grantsOf(apiOf(stage), route.operationId).filter((grant) =>
          grant.startsWith('dynamodb:'),
        )
        expect(
          dynamo,
          `${route.operationId}: its role's DynamoDB grants differ from what its route entry names (tables ${JSON.stringify(route.tables)}, indexes ${JSON.stringify((route as RouteDefinition).indexes ?? {})}): the CDK's translation of the route table is wrong; infra/constructs/operation-functions-construct.ts binds each table at its route's level, with Query on each index the route names and no other`,
        ).toEqual(routeGrants(route).sort())
        expect(
          grantsOf(apiOf(stage), route.operationId).filter((g) => !g.startsWith('dynamodb:')),
        ).toEqual(BASE)
      }
    },
  )

  it('gives the rate limiter its counters only: reads and updates, never a put', () => {
    expect(routeGrants(ROUTES[0]).filter((grant) => grant.includes('rate-limit-table'))).toEqual([
      'dynamodb:GetItem on rate-limit-table',
      'dynamodb:UpdateItem on rate-limit-table',
    ])
  })

  it.each(STAGES)(
    '%s: the authorizer reads one key mirror or store key item, never API Gateway',
    (stage) => {
      expect(grantsOf(apiOf(stage), 'authorizer')).toEqual(
        [
          ...BASE,
          'dynamodb:GetItem on key-mirror-table',
          'dynamodb:GetItem on store-key-table',
        ].sort(),
      )
    },
  )

  it.each(STAGES)('%s: the key sync reads keys and plans and rebuilds the mirror', (stage) => {
    expect(grantsOf(apiOf(stage), KEY_SYNC_OPERATION)).toEqual(
      [
        ...BASE,
        'apigateway:GET on apigateway:/apikeys',
        'apigateway:GET on apigateway:/apikeys/*',
        'apigateway:GET on apigateway:/usageplans',
        'apigateway:GET on apigateway:/usageplans/*/keys',
        // FlushStageAuthorizersCache of its own stage, after a run that changed the mirror.
        'apigateway:DELETE on apigateway:/restapis/{this api}/stages/{this stage}/cache/authorizers',
        // KeyMirrorRepository.diff/apply: a Scan, then BatchWriteItem puts and deletes.
        'dynamodb:BatchWriteItem on key-mirror-table',
        'dynamodb:Scan on key-mirror-table',
        // Its lease and state: single-item calls on its own item only, never on a key's.
        'dynamodb:GetItem on key-mirror-table if {"ForAllValues:StringEquals":{"dynamodb:LeadingKeys":["#key-sync"]}}',
        'dynamodb:UpdateItem on key-mirror-table if {"ForAllValues:StringEquals":{"dynamodb:LeadingKeys":["#key-sync"]}}',
      ].sort(),
    )
  })

  it.each(STAGES)('%s: no other role of the stack may call API Gateway', (stage) => {
    const template = apiOf(stage)
    const [, sync] = functionByService(template, KEY_SYNC_OPERATION)
    const syncRoleId = (propsOf(sync).Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0]
    const rolesWithApiGateway = resourcesOf(template, 'AWS::IAM::Policy')
      .filter(([, policy]) =>
        JSON.stringify(propsOf(policy).PolicyDocument).includes('apigateway:'),
      )
      .flatMap(([, policy]) => (propsOf(policy).Roles as { Ref: string }[]).map((ref) => ref.Ref))
    expect(rolesWithApiGateway).toEqual([syncRoleId])
    // Nor through a managed or inline policy of a role.
    for (const [id, role] of resourcesOf(template, 'AWS::IAM::Role')) {
      if (id === syncRoleId) continue
      expect(JSON.stringify(propsOf(role).Policies ?? []), id).not.toContain('apigateway:')
    }
  })
})

describe('bundles', () => {
  const bundleDirOf = (service: string): string => {
    const [, fn] = functionByService(apiOf('production'), service)
    const { S3Key } = propsOf(fn).Code as { S3Key: string }
    return join(assemblyDir, `asset.${S3Key.replace(/\.zip$/, '')}`)
  }
  /** The module's own import statements and import() calls, as esbuild parses them. */
  const importsOf = (file: string): string[] =>
    Object.values(moduleGraph(file).inputs)
      .flatMap((input) => input.imports.map((entry) => entry.path))
      .sort()

  it.each(SERVICES)('%s: minified ESM with a source map and the AWS SDK inside', (service) => {
    const dir = bundleDirOf(service)
    expect(readdirSync(dir).sort()).toEqual(['index.mjs', 'index.mjs.map'])
    const code = readFileSync(join(dir, 'index.mjs'), 'utf8')
    expect(code).toMatch(
      /^import \{ createRequire as __petstoreCreateRequire \} from 'node:module'/,
    )
    expect(code.trimEnd()).toMatch(/\/\/# sourceMappingURL=index\.mjs\.map$/)
    // Minified: a few very long lines, not one statement per line.
    expect(code.length / code.split('\n').length).toBeGreaterThan(1000)
    // Everything but Node built-ins is inside: nothing from the runtime's AWS SDK or any package.
    const imports = importsOf(join(dir, 'index.mjs'))
    expect(imports).toContain('node:module')
    expect(
      imports.filter((specifier) => !builtinModules.includes(specifier.replace(/^node:/, ''))),
    ).toEqual([])
    const map = JSON.parse(readFileSync(join(dir, 'index.mjs.map'), 'utf8')) as {
      sources: string[]
    }
    expect(map.sources).toContainEqual(expect.stringContaining('node_modules/@aws-sdk/'))
    // node:http only by require: its ES module import loads undici, 15 to 30 ms of a cold start
    // (infra/config/node-http-require.cjs).
    expect(imports).not.toContain('node:http')
    expect(imports).not.toContain('http')
    // Well inside Lambda's 250 MB unzipped limit, and small enough for quick cold starts.
    expect(statSync(join(dir, 'index.mjs')).size).toBeLessThan(2.5 * 1024 * 1024)
  })

  /**
   * The environment a function gets on AWS: its template's variables (values CloudFormation
   * resolves at deploy time, such as table names and the cursor key, as placeholders) and what
   * Lambda itself sets.
   */
  /**
   * A value as CloudFormation would resolve it: a reference becomes a placeholder, a dynamic
   * reference to a secret a secret's shape (64 letters), a join the join of its parts.
   */
  const resolved = (value: unknown, name: string): string => {
    if (typeof value === 'string') return value
    const join = (value as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join']
    if (!join) return `resolved-${name.toLowerCase()}`
    const text = join[1].map((part) => resolved(part, name)).join(join[0])
    return text.startsWith('{{resolve:secretsmanager:') ? 's'.repeat(64) : text
  }
  const deployedEnvOf = (stage: (typeof STAGES)[number], service: string): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH,
    AWS_REGION: 'eu-west-1',
    ...Object.fromEntries(
      Object.entries(envOf(functionByService(apiOf(stage), service)[1])).map(([name, value]) => [
        name,
        resolved(value, name),
      ]),
    ),
    POWERTOOLS_LOG_LEVEL: 'SILENT',
  })

  /**
   * One Node 24 process per stage imports every bundle in turn, each with exactly the variables its
   * template gives it (the process's environment is replaced before each import, when a bundle
   * reads it), and reports per bundle what it exports and anything it wrote to stderr: one process
   * start per stage instead of one per bundle.
   */
  const IMPORT_EACH = `
for (const { service, file, env } of JSON.parse(process.argv[1])) {
  for (const name of Object.keys(process.env)) delete process.env[name]
  Object.assign(process.env, env)
  process.stderr.write('\\n@@' + service + '\\n')
  const handler = await import(file).then((m) => typeof m.handler, (error) => { process.stderr.write(String(error?.stack ?? error)); return 'threw' })
  process.stdout.write(JSON.stringify({ service, handler }) + '\\n')
}`
  const loads = new Map<
    string,
    { handler: Record<string, string>; stderr: Record<string, string> }
  >()
  const loadsOf = (stage: (typeof STAGES)[number]) => {
    const known = loads.get(stage)
    if (known) return known
    const bundles = SERVICES.map((service) => ({
      service,
      file: join(bundleDirOf(service), 'index.mjs'),
      env: deployedEnvOf(stage, service),
    }))
    const result = spawnSync(
      process.execPath,
      ['--input-type=module', '-e', IMPORT_EACH, JSON.stringify(bundles)],
      { encoding: 'utf8', env: {} },
    )
    const handler = Object.fromEntries(
      result.stdout
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { service: string; handler: string })
        .map(({ service, handler }) => [service, handler]),
    )
    const stderr = Object.fromEntries(
      result.stderr
        .split('\n@@')
        .slice(1)
        .map((part) => [part.slice(0, part.indexOf('\n')), part.slice(part.indexOf('\n') + 1)]),
    )
    const loaded = { handler, stderr }
    loads.set(stage, loaded)
    return loaded
  }

  // With exactly the variables its template gives it: a variable the code requires and the
  // stack does not pass would fail every cold start on AWS.
  it.each(SERVICES)('%s: loads on Node 24 as a module and exports its handler', (service) => {
    for (const stage of STAGES) {
      const { handler, stderr } = loadsOf(stage)
      const output = stderr[service] ?? ''
      // The thrown error's own line: the rest of a minified bundle's stack is one huge line.
      const thrown = /^\w*Error: .*$/m.exec(output)?.[0]
      expect(thrown ?? output.slice(0, 500), stage).toBe('')
      expect(handler[service], stage).toBe('function')
    }
  })
})
