import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { join } from 'node:path'
import type { Template } from 'aws-cdk-lib/assertions'
import { buildSync } from 'esbuild'
import { describe, expect, it } from 'vitest'
import { ROUTES } from '#shared/config/routes-config.ts'
import { PET_TABLE } from '#shared/data/table-schema.ts'
import {
  appAssemblyDir,
  appStage,
  type CfnResource,
  envOf,
  functionByService,
  propsOf,
  resourcesOf,
  synthesizeApp,
} from './support/synth-app.ts'

const SERVICES = [...ROUTES.map((route) => route.operationId), 'authorizer'] as const
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

  it('gives pet functions 512 MB and 10 s, the authorizer 256 MB and 5 s', () => {
    for (const route of ROUTES) {
      expect(propsOf(functionByService(apiOf('production'), route.operationId)[1])).toMatchObject({
        MemorySize: 512,
        Timeout: 10,
      })
    }
    expect(propsOf(functionByService(apiOf('production'), 'authorizer')[1])).toMatchObject({
      MemorySize: 256,
      Timeout: 5,
    })
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
        expect(group.DeletionPolicy).toBe(stage === 'production' ? 'Retain' : 'Delete')
        return propsOf(group).LogGroupName
      })
      expect(names.sort()).toEqual(
        [
          `/petstore/${stage}/authorizer`,
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
          NODE_OPTIONS: '--enable-source-maps',
        })
        expect(JSON.stringify(env.TABLE_NAME)).toMatch(/petstore-[a-z]+-data:.*PetTable/)
        expect(JSON.stringify(env.RATE_LIMIT_TABLE_NAME)).toMatch(/RateLimitTable/)
        expect(env.ENTERPRISE_LIMITS).toBeUndefined()
      }
    }
  })

  it('gives the authorizer its Enterprise limits and no table', () => {
    const env = envOf(functionByService(apiOf('production'), 'authorizer')[1])
    expect(env).toMatchObject({
      POWERTOOLS_SERVICE_NAME: 'authorizer',
      POWERTOOLS_TRACER_CAPTURE_RESPONSE: 'false',
      ENTERPRISE_LIMITS: '5000/1000000',
    })
    expect(env.TABLE_NAME).toBeUndefined()
    expect(env.RATE_LIMIT_TABLE_NAME).toBeUndefined()
    const custom = synthesizeApp({ stage: 'staging', 'staging.enterpriseLimits': '100/2000' })
    expect(
      envOf(functionByService(custom.stage('staging').api, 'authorizer')[1]).ENTERPRISE_LIMITS,
    ).toBe('100/2000')
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
          : undefined
      if (table && text.includes('Fn::ImportValue'))
        return index ? `${table}/index/${index}` : table
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
            Statement: { Effect: string; Action: string | string[]; Resource: unknown }[]
          }
        ).Statement
        return statements.flatMap((statement) => {
          expect(statement.Effect).toBe('Allow')
          const actions = [statement.Action].flat()
          const resources = [statement.Resource].flat()
          return actions.flatMap((action) => resources.map((r) => `${action} on ${label(r)}`))
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
  const RATE_LIMITER = [
    'dynamodb:GetItem on rate-limit-table',
    'dynamodb:PutItem on rate-limit-table',
    'dynamodb:UpdateItem on rate-limit-table',
  ]
  const index = PET_TABLE.statusIndex.name

  it.each(STAGES)('%s: list and get read the pet table and nothing writes it', (stage) => {
    for (const operationId of ['listPets', 'getPet']) {
      expect(grantsOf(apiOf(stage), operationId)).toEqual(
        [
          ...BASE,
          ...RATE_LIMITER,
          'dynamodb:GetItem on pet-table',
          `dynamodb:GetItem on pet-table/index/${index}`,
          'dynamodb:Query on pet-table',
          `dynamodb:Query on pet-table/index/${index}`,
          'dynamodb:Scan on pet-table',
          `dynamodb:Scan on pet-table/index/${index}`,
        ].sort(),
      )
    }
  })

  it.each(STAGES)('%s: create puts pets and updates the id counter, never scans', (stage) => {
    expect(grantsOf(apiOf(stage), 'createPet')).toEqual(
      [
        ...BASE,
        ...RATE_LIMITER,
        'dynamodb:GetItem on pet-table',
        'dynamodb:PutItem on pet-table',
        'dynamodb:UpdateItem on pet-table',
      ].sort(),
    )
  })

  it.each(STAGES)('%s: the authorizer only reads API keys and usage plans', (stage) => {
    expect(grantsOf(apiOf(stage), 'authorizer')).toEqual(
      [
        ...BASE,
        'apigateway:GET on apigateway:/apikeys',
        'apigateway:GET on apigateway:/usageplans',
        'apigateway:GET on apigateway:/usageplans/*/keys',
      ].sort(),
    )
  })
})

describe('bundles', () => {
  const bundleDirOf = (service: string): string => {
    const [, fn] = functionByService(apiOf('production'), service)
    const { S3Key } = propsOf(fn).Code as { S3Key: string }
    return join(assemblyDir, `asset.${S3Key.replace(/\.zip$/, '')}`)
  }
  /** The module's own import statements and import() calls, as esbuild parses them. */
  const importsOf = (file: string): string[] => {
    const { metafile } = buildSync({
      entryPoints: [file],
      bundle: true,
      write: false,
      metafile: true,
      platform: 'node',
      format: 'esm',
      packages: 'external',
      logLevel: 'silent',
    })
    return Object.values(metafile.inputs)
      .flatMap((input) => input.imports.map((entry) => entry.path))
      .sort()
  }

  it.each(SERVICES)('%s: minified ESM with a source map and the AWS SDK inside', (service) => {
    const dir = bundleDirOf(service)
    expect(readdirSync(dir).sort()).toEqual(['index.mjs', 'index.mjs.map'])
    const code = readFileSync(join(dir, 'index.mjs'), 'utf8')
    expect(
      code.startsWith("import { createRequire as __petstoreCreateRequire } from 'node:module'"),
    ).toBe(true)
    expect(code.trimEnd().endsWith('//# sourceMappingURL=index.mjs.map')).toBe(true)
    // Minified: a few very long lines, not one statement per line.
    expect(code.length / code.split('\n').length).toBeGreaterThan(1000)
    // Everything but Node built-ins is inside: nothing from the runtime's AWS SDK or any package.
    const imports = importsOf(join(dir, 'index.mjs'))
    expect(imports).toContain('node:module')
    for (const specifier of imports) {
      expect(builtinModules.includes(specifier.replace(/^node:/, '')), specifier).toBe(true)
    }
    const map = JSON.parse(readFileSync(join(dir, 'index.mjs.map'), 'utf8')) as {
      sources: string[]
    }
    expect(map.sources.some((source) => source.includes('node_modules/@aws-sdk/'))).toBe(true)
    // Well inside Lambda's 250 MB unzipped limit, and small enough for quick cold starts.
    expect(statSync(join(dir, 'index.mjs')).size).toBeLessThan(2.5 * 1024 * 1024)
  })

  it.each(SERVICES)('%s: loads on Node 24 as a module and exports its handler', (service) => {
    const result = spawnSync(
      process.execPath,
      [
        '--enable-source-maps',
        '--input-type=module',
        '-e',
        'const m = await import(process.argv[1]); console.log(typeof m.handler)',
        join(bundleDirOf(service), 'index.mjs'),
      ],
      {
        encoding: 'utf8',
        env: {
          PATH: process.env.PATH,
          AWS_REGION: 'eu-west-1',
          TABLE_NAME: 'pets',
          RATE_LIMIT_TABLE_NAME: 'rate-limits',
          POWERTOOLS_LOG_LEVEL: 'SILENT',
        },
      },
    )
    expect(result.stderr).toBe('')
    expect(result.stdout.trim()).toBe('function')
  })
})
