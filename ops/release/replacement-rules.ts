/**
 * Which property changes replace a resource, as the CDK CLI this project pins knows it: its
 * resource specification (`db.json.gz` in the `aws-cdk` package, what `cdk diff` reads to mark a
 * change "may be replaced" or "replace"). The offline plan of the release dry run
 * (template-changes.ts) reads it; a real plan takes CloudFormation's own answer.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import type { ReplacementRule } from './template-changes.ts'

interface SpecDatabase {
  schema: {
    resource: {
      entities: Record<
        string,
        {
          cloudFormationType: string
          properties: Record<string, { causesReplacement?: 'yes' | 'maybe' | 'no' }>
        }
      >
    }
  }
}

const specFile = (): string =>
  join(dirname(createRequire(import.meta.url).resolve('aws-cdk/package.json')), 'db.json.gz')

/** The rule of the pinned CDK CLI's specification (read once, about 3 MB unzipped per type set). */
export const cdkReplacementRule = (file = specFile()): ReplacementRule => {
  const database = JSON.parse(gunzipSync(readFileSync(file)).toString('utf8')) as SpecDatabase
  const byType = new Map<string, Record<string, { causesReplacement?: string }>>()
  for (const entity of Object.values(database.schema.resource.entities)) {
    byType.set(entity.cloudFormationType, entity.properties)
  }
  return (type, property) => {
    const properties = byType.get(type)
    // A custom resource is updated in place (its handler decides); a type the specification does
    // not know may be replaced.
    if (!properties) return type.startsWith('Custom::') ? 'no' : 'maybe'
    const answer = properties[property]?.causesReplacement
    return answer === 'yes' || answer === 'maybe' ? answer : 'no'
  }
}
