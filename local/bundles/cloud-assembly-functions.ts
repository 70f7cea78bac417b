// The Lambda functions of one stage as a cloud assembly (cdk.out) holds them: code, handler, environment.
import { existsSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { stackName } from '#shared/config/stack-names-config.ts'

/**
 * What `cdk deploy` uploads is the assembly, not the sources: each function's asset directory
 * (the bundle), the handler its template names and the environment its template gives it. The
 * local server's `--bundles` mode and the release pipeline's bundle tests load functions from here.
 */
export interface AssemblyFunction {
  /** The template's logical id, e.g. ApiGetPetFunction23B14ED0. */
  logicalId: string
  /** POWERTOOLS_SERVICE_NAME: the operation id, `authorizer` or `key-sync`. */
  service: string
  /** The template's Handler, `file.export` (index.handler). */
  handler: string
  /** The template's Runtime, e.g. nodejs24.x. */
  runtime: string
  /** The unpacked asset: the directory whose zip Lambda runs. */
  codeDir: string
  /** The template's variables; values CloudFormation resolves at deploy time are left as objects. */
  environment: Record<string, unknown>
  timeoutSeconds: number
  memoryMb: number
}

export class AssemblyError extends Error {
  override name = 'AssemblyError'
}

interface TemplateResource {
  Type: string
  Properties?: {
    Handler?: string
    Runtime?: string
    Code?: { S3Key?: unknown }
    Environment?: { Variables?: Record<string, unknown> }
    Timeout?: number
    MemorySize?: number
  }
}

interface AssetsManifest {
  files?: Record<string, { source: { path: string; packaging?: string } }>
}

const readJson = <T>(file: string): T => {
  if (!existsSync(file)) {
    throw new AssemblyError(
      `${file} does not exist: synthesize the cloud assembly first (npm run synth writes cdk.out)`,
    )
  }
  return JSON.parse(readFileSync(file, 'utf8')) as T
}

/** The functions of a stage's API stack in the assembly at `dir`, by service name. */
export const readAssemblyFunctions = (
  dir: string,
  stage: string,
): Map<string, AssemblyFunction> => {
  const root = resolve(dir)
  const stack = stackName(stage, 'api')
  const template = readJson<{ Resources: Record<string, TemplateResource> }>(
    join(root, `${stack}.template.json`),
  )
  const assets = readJson<AssetsManifest>(join(root, `${stack}.assets.json`)).files ?? {}
  const functions = new Map<string, AssemblyFunction>()
  for (const [logicalId, resource] of Object.entries(template.Resources)) {
    if (resource.Type !== 'AWS::Lambda::Function') continue
    const properties = resource.Properties ?? {}
    const environment = properties.Environment?.Variables ?? {}
    const service = environment.POWERTOOLS_SERVICE_NAME
    // Functions CDK adds itself (log retention, custom resource providers) are not the API's.
    if (typeof service !== 'string' || typeof properties.Handler !== 'string') continue
    const key = properties.Code?.S3Key
    const assetHash = typeof key === 'string' ? key.replace(/\.zip$/, '') : ''
    const asset = assets[assetHash]
    if (asset?.source.packaging !== 'zip') {
      throw new AssemblyError(`${stack}: ${logicalId}'s code is not a zip asset of the assembly`)
    }
    functions.set(service, {
      logicalId,
      service,
      handler: properties.Handler,
      runtime: properties.Runtime ?? '',
      codeDir: join(root, asset.source.path),
      environment,
      // CloudFormation's defaults when a template leaves them out (AWS::Lambda::Function).
      timeoutSeconds: properties.Timeout ?? 3,
      memoryMb: properties.MemorySize ?? 128,
    })
  }
  return functions
}
